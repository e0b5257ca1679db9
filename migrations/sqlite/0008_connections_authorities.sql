-- Target-site connections and delegated payment authorities (issue 7).
-- The OAuth state is kept only as its hex SHA-256; the PKCE verifier and the credentials only
-- sealed (AEAD ciphertext made by the service).
CREATE TABLE connections (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id),
    provider              TEXT NOT NULL,
    expected_account      TEXT,
    upstream_account      TEXT,
    state                 TEXT NOT NULL
        CHECK (state IN ('pending', 'connected', 'expired', 'refused', 'wrong_account')),
    oauth_state_hash      TEXT NOT NULL UNIQUE,
    pkce_verifier         BLOB NOT NULL,
    credentials           BLOB,
    credentials_expire_at BIGINT,
    link_expires_at       BIGINT NOT NULL,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX connections_by_provider ON connections (account_id, provider, created_at);

CREATE TABLE payment_authorities (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id),
    principal_type        TEXT NOT NULL,
    principal_id          TEXT NOT NULL,
    agent_provider        TEXT NOT NULL,
    scope                 TEXT NOT NULL, -- JSON array of action families
    amount_value          BIGINT NOT NULL CHECK (amount_value > 0),
    amount_interval       TEXT NOT NULL
        CHECK (amount_interval IN ('single_use', 'day', 'week', 'month')),
    currency              TEXT NOT NULL,
    expires_at            BIGINT NOT NULL,
    revocation_url        TEXT NOT NULL,
    receipt_required      BOOLEAN NOT NULL,
    verification_required BOOLEAN NOT NULL,
    created_by            TEXT NOT NULL,
    created_at            BIGINT NOT NULL,
    revoked_at            BIGINT
);
CREATE INDEX payment_authorities_by_account ON payment_authorities (account_id, created_at);

-- One spend per task, stored with the task; given back (released_at) when the task fails.
-- The window limit is checked with the authority row locked; a single-use authority has at
-- most one live spend, which the partial unique index guards as well.
CREATE TABLE authority_spends (
    task_id      TEXT PRIMARY KEY REFERENCES tasks (id),
    authority_id TEXT NOT NULL REFERENCES payment_authorities (id),
    amount       BIGINT NOT NULL CHECK (amount > 0),
    currency     TEXT NOT NULL,
    scope        TEXT NOT NULL,
    single_use   BOOLEAN NOT NULL,
    window_start BIGINT NOT NULL,
    spent_at     BIGINT NOT NULL,
    released_at  BIGINT
);
CREATE INDEX authority_spends_by_window ON authority_spends (authority_id, window_start);
CREATE UNIQUE INDEX authority_spends_single_use ON authority_spends (authority_id)
    WHERE single_use AND released_at IS NULL;
