-- Issue 20, webhooks to the customer's systems (see the Postgres migration of the same number).
--
-- Endpoints with their sealed `whsec_` secret (AEAD ciphertext made by the service), events
-- stored once per account and source, and the outbox of deliveries a worker claims under a
-- lease. Times are INTEGER milliseconds.
CREATE TABLE webhook_endpoints (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    url         TEXT NOT NULL,
    description TEXT NOT NULL,
    events      TEXT NOT NULL,
    secret      BLOB NOT NULL,
    created_at  BIGINT NOT NULL,
    deleted_at  BIGINT
);
CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id, created_at);

CREATE TABLE webhook_events (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    type       TEXT NOT NULL,
    source     TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, source)
);

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    event_id         TEXT NOT NULL REFERENCES webhook_events (id),
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id),
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  BIGINT,
    lease            TEXT,
    lease_until      BIGINT,
    last_attempt_at  BIGINT,
    last_status_code INTEGER,
    last_error       TEXT,
    replay_of        TEXT,
    created_at       BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_by_account ON webhook_deliveries (account_id, created_at);

-- The sweep that records the event of a task settled by a process that died before it could
-- (`HookStore::tasks_missing_events`) reads recent settlements.
CREATE INDEX tasks_by_settled_at ON tasks (settled_at);
