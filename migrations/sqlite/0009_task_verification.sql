-- The verification of a payment's business outcome: a second signed artifact stored once (the
-- first verification wins) on a task settled with a payment_completed artifact, which itself
-- never changes.
ALTER TABLE tasks ADD COLUMN verified_artifact_id TEXT;
ALTER TABLE tasks ADD COLUMN verified_artifact TEXT;
ALTER TABLE tasks ADD COLUMN verified_at BIGINT;
CREATE UNIQUE INDEX tasks_verified_artifact_id ON tasks (verified_artifact_id);
