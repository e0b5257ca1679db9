-- Browsers that signed in as an address with an e-mailed code (ports/src/identity.rs,
-- `KnownBrowser`): such a browser may ask for more sign-in codes to that address than anyone
-- may, so strangers asking for codes cannot hold the person's own sign-in. The token is the
-- long-lived cookie's, stored as SHA-256 hex; times are milliseconds here.
CREATE TABLE known_browsers (
    token_hash TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX known_browsers_by_expiry ON known_browsers (expires_at);
