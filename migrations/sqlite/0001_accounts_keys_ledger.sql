-- Accounts, API keys (stored only as SHA-256) and the credit ledger.
-- Timestamps are Unix milliseconds (UTC). Balances are kept beside the entries and changed only
-- in the same transaction that writes an entry.
CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL,
    plan        TEXT NOT NULL CHECK (plan IN ('sandbox', 'free', 'starter', 'enterprise')),
    environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
    spendable   BIGINT NOT NULL DEFAULT 0 CHECK (spendable >= 0),
    held        BIGINT NOT NULL DEFAULT 0 CHECK (held >= 0),
    created_at  BIGINT NOT NULL,
    UNIQUE (environment, email)
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    prefix     TEXT NOT NULL UNIQUE,
    hash       TEXT NOT NULL UNIQUE,
    scopes     TEXT NOT NULL,
    label      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

CREATE TABLE ledger_entries (
    -- Application order: balance changes of one account are serialised by its row lock.
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    kind          TEXT NOT NULL,
    delta         BIGINT NOT NULL,
    balance_after BIGINT NOT NULL,
    reference     TEXT,
    memo          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    -- A grant with a reference is applied at most once per account (NULLs never collide).
    UNIQUE (account_id, reference)
);
CREATE INDEX ledger_entries_by_account ON ledger_entries (account_id, seq);
