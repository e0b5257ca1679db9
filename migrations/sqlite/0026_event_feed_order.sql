-- The event feed (`GET /api/webhook-events`, `svc listen`) pages in commit order, not id order.
-- An event's id is drawn before its transaction commits, so a reader whose cursor passed a
-- newer id stepped over an older one that committed later, and never forwarded it. Each event
-- now gets `seq` as it is stored: one writer at a time, so numbers follow commits. Events
-- stored before have no number and come first, in id order (as on Postgres).
ALTER TABLE webhook_events ADD COLUMN seq INTEGER;
CREATE UNIQUE INDEX webhook_events_seq ON webhook_events (seq);
CREATE INDEX webhook_events_feed ON webhook_events (account_id, seq, id);
-- A claim reads each endpoint's first due deliveries, and what is in flight.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until)
    WHERE status = 'pending' AND lease_until IS NOT NULL;
-- Replays waiting per endpoint are counted at every replay.
CREATE INDEX webhook_deliveries_replays ON webhook_deliveries (endpoint_id)
    WHERE status = 'pending' AND replay_of IS NOT NULL;
