-- Browsers that signed in as an address with an e-mailed code (ports/src/identity.rs,
-- `KnownBrowser`): such a browser may ask for more sign-in codes to that address than anyone
-- may, so strangers asking for codes cannot hold the person's own sign-in. The token is the
-- long-lived cookie's, stored as its SHA-256.
CREATE TABLE known_browsers (
    token_hash BYTEA PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    email TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX known_browsers_by_expiry ON known_browsers (expires_at);
