-- Identity: RFC 8628 device grants, emailed one-time codes and signed-in web sessions.
-- Secrets (device codes, email codes, session tokens) are stored only as SHA-256 hex.
CREATE TABLE device_grants (
    id               TEXT PRIMARY KEY,
    device_code_hash TEXT NOT NULL UNIQUE,
    user_code        TEXT NOT NULL UNIQUE,
    client_id        TEXT NOT NULL,
    agent_name       TEXT,
    scopes           TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'issued')),
    account_id       TEXT REFERENCES accounts (id),
    -- Set in the transaction that stores the key: one key per device code.
    key_id           TEXT UNIQUE REFERENCES api_keys (id),
    interval_secs    BIGINT NOT NULL CHECK (interval_secs > 0),
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    last_polled_at   BIGINT,
    CHECK (status IN ('pending', 'denied') OR account_id IS NOT NULL),
    CHECK ((status = 'issued') = (key_id IS NOT NULL))
);
CREATE INDEX device_grants_by_expiry ON device_grants (expires_at);

CREATE TABLE email_challenges (
    id          TEXT PRIMARY KEY,
    purpose     TEXT NOT NULL CHECK (purpose IN ('sign_in', 'api_key')),
    email       TEXT NOT NULL,
    code_hash   TEXT NOT NULL,
    agent_name  TEXT,
    scopes      TEXT NOT NULL,
    attempts    BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    consumed_at BIGINT
);
CREATE INDEX email_challenges_by_email ON email_challenges (email, created_at);
CREATE INDEX email_challenges_by_expiry ON email_challenges (expires_at);

CREATE TABLE web_sessions (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX web_sessions_by_expiry ON web_sessions (expires_at);
