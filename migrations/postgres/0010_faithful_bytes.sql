-- A verified webhook body is kept as the bytes that were signed: a body that is not UTF-8 or
-- holds a NUL is stored, not refused (TEXT cannot hold either).
ALTER TABLE payment_events ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');

-- Agent traffic events know the account they belong to, so a customer's funnel shows only its
-- own events.
ALTER TABLE agent_events ADD COLUMN account_id TEXT;
CREATE INDEX agent_events_by_account ON agent_events (account_id, received_at);

-- A fetched page is kept as its bytes: a page whose text holds a NUL is cached and served, not
-- refused by the store.
ALTER TABLE page_cache ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
