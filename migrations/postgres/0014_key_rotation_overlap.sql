-- Issue 20: a rotated key keeps working for an overlap, then stops. `expires_at` is set when
-- the key is rotated; NULL for a key that was never rotated. Adding a nullable column without
-- a default rewrites nothing, so a large table is not locked for long.
ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMPTZ;
