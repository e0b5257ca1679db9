-- Issue 20: a rotated key keeps working for an overlap, then stops. `expires_at` (ms since the
-- epoch) is set when the key is rotated; NULL for a key that was never rotated.
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
-- When the key last authenticated (written at most once a minute per key); NULL: not yet.
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;
