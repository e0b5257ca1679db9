-- Issue 20: a rotated key keeps working for an overlap, then stops. `expires_at` (ms since the
-- epoch) is set when the key is rotated; NULL for a key that was never rotated.
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
