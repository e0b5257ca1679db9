-- Issue 18, many instances on one database.
--
-- A2A tasks move from process memory to the store, so any instance answers GetTask for a task
-- another ran. The id is the capability that reads a task: only its SHA-256 is kept. The task
-- document stays JSON in TEXT, not JSONB: it quotes the caller's A2A message verbatim, and a
-- caller's text may hold a NUL, which JSONB refuses (as `\u0000`) while TEXT keeps the JSON
-- escape unchanged; nothing queries inside it.
CREATE TABLE a2a_tasks (
    id_hash    BYTEA PRIMARY KEY CHECK (octet_length(id_hash) = 32),
    document   TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX a2a_tasks_by_expiry ON a2a_tasks (expires_at);

-- The keys the instances sharing this database use: a signing key by its JWKS kid, the
-- connection-sealing key by an HMAC fingerprint (never the key). Keys only join: the first
-- start records one (`is_first`, at most one per kind, so racing first starts record exactly one
-- key), a rotation adds the new key while the recorded one is among the instance's retired keys.
CREATE TABLE key_set (
    kind        TEXT NOT NULL CHECK (kind IN ('signing', 'connection')),
    fingerprint TEXT NOT NULL,
    is_first    BOOLEAN NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (kind, fingerprint)
);
CREATE UNIQUE INDEX key_set_one_first ON key_set (kind) WHERE is_first;
