-- The event feed (`GET /api/webhook-events`, `svc listen`) pages in commit order, not id order.
-- An event's id is drawn before its transaction commits, so a reader whose cursor passed a
-- newer id stepped over an older one that committed later, and never forwarded it. Each event
-- now gets `seq` as it is inserted: one writer at a time, so numbers follow commits. Events
-- stored before keep their id order.
ALTER TABLE webhook_events ADD COLUMN seq INTEGER;
UPDATE webhook_events SET seq = o.n
FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM webhook_events) AS o
WHERE o.id = webhook_events.id;
CREATE UNIQUE INDEX webhook_events_seq ON webhook_events (seq);
CREATE INDEX webhook_events_feed ON webhook_events (account_id, seq);
