-- Issue 20: a rotated key keeps working for an overlap, then stops. `expires_at` is set when
-- the key is rotated; NULL for a key that was never rotated. Adding a nullable column without
-- a default rewrites nothing, so a large table is not locked for long.
ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMPTZ;
-- When the key last authenticated (written at most once a minute per key); NULL: not yet.
ALTER TABLE api_keys ADD COLUMN last_used_at TIMESTAMPTZ;
