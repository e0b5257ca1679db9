-- Limits shared by every instance on the store (wrong codes and readiness scans per client
-- address): one row per (bucket, key) holding the hits of its current fixed window and when
-- that window ends (milliseconds since the epoch). A hit is one upsert; rows of ended windows
-- are deleted by a background job.
CREATE TABLE limit_windows (
    bucket TEXT NOT NULL,
    limit_key TEXT NOT NULL,
    hits BIGINT NOT NULL CHECK (hits >= 0),
    ends_at BIGINT NOT NULL,
    PRIMARY KEY (bucket, limit_key)
);
CREATE INDEX limit_windows_ends_at ON limit_windows (ends_at);
