-- Issue 20, webhooks to the customer's systems.
--
-- Endpoints keep their `whsec_` secret sealed (AEAD ciphertext made by the service: it must
-- sign with it, so it cannot be a hash). An event is stored once per account and source (what
-- it is about), so the same fact recorded by two instances is one event. Deliveries are the
-- durable outbox: a worker claims due ones with `FOR UPDATE SKIP LOCKED` under a lease token
-- and records the attempt only under that token, so two instances never send one attempt at
-- once and a delivery whose instance died is claimed again when its lease ends.
CREATE TABLE webhook_endpoints (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    url         TEXT NOT NULL,
    description TEXT NOT NULL,
    events      TEXT NOT NULL,
    secret      BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    deleted_at  TIMESTAMPTZ
);
CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id, created_at);

CREATE TABLE webhook_events (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    type       TEXT NOT NULL,
    source     TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (account_id, source)
);

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    event_id         TEXT NOT NULL REFERENCES webhook_events (id),
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id),
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
    attempts         BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  TIMESTAMPTZ,
    lease            TEXT,
    lease_until      TIMESTAMPTZ,
    last_attempt_at  TIMESTAMPTZ,
    last_status_code BIGINT,
    last_error       TEXT,
    replay_of        TEXT,
    created_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_account ON webhook_deliveries (account_id, created_at);

-- The sweep that records the event of a task settled by a process that died before it could
-- (`HookStore::tasks_missing_events`) reads recent settlements.
CREATE INDEX tasks_by_settled_at ON tasks (settled_at);
