-- Nothing changes on SQLite, which keeps times as integer milliseconds, hashes as hex and JSON
-- as text (its column types are affinities). Postgres's 0011 moves it to TIMESTAMPTZ, BYTEA,
-- JSONB and more CHECK and foreign-key constraints; the numbering stays the same on both.
SELECT 1;
