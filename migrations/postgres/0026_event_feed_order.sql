-- The event feed (`GET /api/webhook-events`, `svc listen`) pages in commit order, not id order.
-- An event's id is drawn before its transaction commits, so a reader whose cursor passed a
-- newer id stepped over an older one that committed later, and never forwarded it. Each event
-- now takes its account's next number (`seq`) as it is stored, updating the account's row: the
-- row stays locked until the transaction ends, so the account's next event waits for this one
-- to commit and the numbers follow commits. A settlement or a payment holds that lock already.
-- Events stored before have no number and come first, in id order (all of them committed).
-- Nothing is rewritten: both columns are added without a volatile default, so the tables are
-- locked only for the index build.
ALTER TABLE webhook_events ADD COLUMN seq BIGINT;
CREATE INDEX webhook_events_feed ON webhook_events (account_id, seq NULLS FIRST, id);
-- A claim reads each endpoint's first due deliveries, and what is in flight.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until)
    WHERE status = 'pending' AND lease_until IS NOT NULL;
-- Replays waiting per endpoint are counted at every replay.
CREATE INDEX webhook_deliveries_replays ON webhook_deliveries (endpoint_id)
    WHERE status = 'pending' AND replay_of IS NOT NULL;
ALTER TABLE accounts ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;

-- As in 0019, and the event takes the account's next number first. An unknown account has no
-- number: the insert then fails on the account's foreign key, as before.
CREATE OR REPLACE FUNCTION svc_store_event(ev JSONB)
RETURNS TABLE (inserted BIGINT, deliveries BIGINT)
LANGUAGE plpgsql AS $fn$
DECLARE
    p_id TEXT;
    p_account_id TEXT;
    p_type TEXT;
    p_source TEXT;
    p_payload TEXT;
    p_created_at TIMESTAMPTZ;
    p_head TEXT;
    p_tail TEXT;
    p_digits TEXT;
    p_max INT;
    p_seq BIGINT;
BEGIN
    p_id := ev->>'id';
    p_account_id := ev->>'account_id';
    p_type := ev->>'type';
    p_source := ev->>'source';
    p_payload := ev->>'payload';
    p_created_at := (ev->>'created_at')::TIMESTAMPTZ;
    p_head := ev->>'head';
    p_tail := ev->>'tail';
    p_digits := ev->>'digits';
    p_max := (ev->>'max')::INT;
    UPDATE accounts SET event_seq = accounts.event_seq + 1
    WHERE accounts.id = p_account_id
    RETURNING accounts.event_seq INTO p_seq;
    -- The deliveries are inserted only for an event this statement inserted, to the
    -- account's endpoints that are not deleted and subscribe to its type, the n-th
    -- (from 0, oldest first) taking the id `head || n in three base-32 digits || tail`
    -- (`DeliveryIds::nth` in ports/src/hooks.rs).
    RETURN QUERY
    WITH event AS (
        INSERT INTO webhook_events (id, account_id, type, source, payload, created_at, seq)
        VALUES (p_id, p_account_id, p_type, p_source,
            p_payload, p_created_at, p_seq)
        ON CONFLICT (account_id, source) DO NOTHING
        RETURNING webhook_events.id
    ), endpoint AS (
        SELECT webhook_endpoints.id,
            (row_number() OVER (ORDER BY webhook_endpoints.created_at,
                webhook_endpoints.id) - 1)::INT AS nth
        FROM webhook_endpoints
        WHERE webhook_endpoints.account_id = p_account_id
            AND webhook_endpoints.deleted_at IS NULL
            AND position(' ' || p_type || ' '
                IN ' ' || webhook_endpoints.events || ' ') > 0
    ), delivery AS (
        INSERT INTO webhook_deliveries (id, account_id, event_id, endpoint_id, status,
            attempts, next_attempt_at, created_at)
        SELECT p_head
                || substr(p_digits, endpoint.nth / 1024 + 1, 1)
                || substr(p_digits, endpoint.nth / 32 % 32 + 1, 1)
                || substr(p_digits, endpoint.nth % 32 + 1, 1)
                || p_tail,
            p_account_id, event.id, endpoint.id, 'pending', 0,
            p_created_at, p_created_at
        FROM event
        CROSS JOIN endpoint
        WHERE endpoint.nth < p_max
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM event), (SELECT count(*) FROM delivery);
END
$fn$;
