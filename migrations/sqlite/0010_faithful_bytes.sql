-- A verified webhook body is kept as the bytes that were signed. SQLite keeps a BLOB in the
-- TEXT column `payment_events.body` as it is, so only new rows change (bound as BLOB).

-- Agent traffic events know the account they belong to, so a customer's funnel shows only its
-- own events.
ALTER TABLE agent_events ADD COLUMN account_id TEXT;
CREATE INDEX agent_events_by_account ON agent_events (account_id, received_at);
