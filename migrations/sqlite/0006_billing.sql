-- Billing: checkouts, verified payment events (deduplicated on the provider's webhook-id),
-- receipts of the credits they moved (one per reference and account, like ledger entries),
-- one-time checkout handoffs and internal meter events. Credits of disputed payments are
-- frozen beside the spendable balance.
ALTER TABLE accounts ADD COLUMN frozen BIGINT NOT NULL DEFAULT 0 CHECK (frozen >= 0);

CREATE TABLE checkouts (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id),
    sku                 TEXT NOT NULL,
    plan                TEXT NOT NULL,
    credits             BIGINT NOT NULL CHECK (credits > 0),
    amount              BIGINT NOT NULL CHECK (amount > 0),
    currency            TEXT NOT NULL,
    provider_session_id TEXT NOT NULL,
    checkout_url        TEXT NOT NULL,
    idempotency_key     TEXT,
    created_at          BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,
    -- One checkout per account and Idempotency-Key (NULL keys never collide).
    UNIQUE (account_id, idempotency_key)
);

CREATE TABLE payment_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    provider    TEXT NOT NULL,
    webhook_id  TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    payment_id  TEXT,
    fact        TEXT NOT NULL, -- JSON of what the event says
    body        TEXT NOT NULL, -- the verified raw body
    status      TEXT NOT NULL CHECK (status IN ('applied', 'pending', 'acknowledged', 'rejected')),
    detail      TEXT,
    received_at BIGINT NOT NULL,
    UNIQUE (provider, webhook_id)
);
CREATE INDEX payment_events_by_payment ON payment_events (provider, payment_id, seq);

CREATE TABLE receipts (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    kind            TEXT NOT NULL,
    credits         BIGINT NOT NULL CHECK (credits >= 0),
    spendable_delta BIGINT NOT NULL,
    frozen_delta    BIGINT NOT NULL,
    shortfall       BIGINT NOT NULL CHECK (shortfall >= 0),
    amount          BIGINT,
    currency        TEXT,
    payment_id      TEXT,
    checkout_id     TEXT,
    reference       TEXT NOT NULL,
    note            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    UNIQUE (account_id, reference)
);
CREATE INDEX receipts_by_account ON receipts (account_id, created_at);
CREATE INDEX receipts_by_payment ON receipts (payment_id);

CREATE TABLE checkout_handoffs (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    sku        TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    taken_at   BIGINT
);

CREATE TABLE meter_events (
    id           TEXT PRIMARY KEY,
    identifier   TEXT NOT NULL UNIQUE,
    event_name   TEXT NOT NULL,
    account_id   TEXT,
    value        BIGINT NOT NULL,
    occurred_at  BIGINT NOT NULL,
    recorded_at  BIGINT NOT NULL,
    forwarded_at BIGINT
);

-- The billing account lists settled tasks as action receipts.
CREATE INDEX tasks_by_account ON tasks (account_id, settled_at);
