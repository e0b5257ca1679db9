-- Agent Maps (versioned per domain, at most one published) and execution tasks with the
-- credits they hold, charge or refund.
CREATE TABLE agent_maps (
    domain     TEXT NOT NULL,
    version    BIGINT NOT NULL CHECK (version > 0),
    status     TEXT NOT NULL CHECK (status IN ('candidate', 'published', 'retired')),
    origin     TEXT NOT NULL,
    document   TEXT NOT NULL, -- JSON map document
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (domain, version)
);
CREATE UNIQUE INDEX agent_maps_one_published ON agent_maps (domain) WHERE status = 'published';

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    key_id          TEXT NOT NULL,
    domain          TEXT NOT NULL,
    action          TEXT NOT NULL,
    cost            BIGINT NOT NULL CHECK (cost >= 0),
    idempotency_key TEXT,
    fingerprint     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('in_flight', 'completed', 'failed')),
    response_status BIGINT,
    response_body   TEXT,
    artifact_id     TEXT UNIQUE,
    artifact        TEXT,
    created_at      BIGINT NOT NULL,
    settled_at      BIGINT,
    -- One task per account and Idempotency-Key, across every instance (NULL keys never collide).
    UNIQUE (account_id, idempotency_key),
    CHECK ((status = 'in_flight') = (settled_at IS NULL))
);
CREATE INDEX tasks_by_status ON tasks (status, created_at);
