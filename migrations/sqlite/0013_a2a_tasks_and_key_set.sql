-- Issue 18, many instances on one database (see the Postgres migration of the same number).
--
-- A2A tasks move from process memory to the store; only the SHA-256 of a task id (hex) is
-- kept, and the task document is JSON text.
CREATE TABLE a2a_tasks (
    id_hash    TEXT PRIMARY KEY,
    document   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX a2a_tasks_by_expiry ON a2a_tasks (expires_at);

-- The keys the instances sharing this database use (by kid or HMAC fingerprint, never the
-- key); at most one `is_first` per kind.
CREATE TABLE key_set (
    kind        TEXT NOT NULL CHECK (kind IN ('signing', 'connection')),
    fingerprint TEXT NOT NULL,
    is_first    INTEGER NOT NULL CHECK (is_first IN (0, 1)),
    recorded_at BIGINT NOT NULL,
    PRIMARY KEY (kind, fingerprint)
);
CREATE UNIQUE INDEX key_set_one_first ON key_set (kind) WHERE is_first = 1;
