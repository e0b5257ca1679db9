-- The writes of an execution, run as one call per group (adapters/sql/src/postgres/group.rs):
-- `svc_run_items` takes a JSON array of items (a task's begin without an authority, its
-- settlement, a webhook event) and runs each, in order, as one statement of data-modifying
-- CTEs, all inside the caller's one statement, so a group of executions costs one round trip
-- and is stored whole or not at all. It returns rows of `svc_item_result`, each naming its
-- item (`item_no`, from 0): one per begin and per event, one per settle that settled.
-- A settle item may carry the webhook event that tells of it (`Settlement::event` in
-- ports/src/tasks.rs), stored by `svc_store_event` only when the settlement landed, and its
-- row then says what storing it came to (`inserted`, `deliveries`): a task is never settled
-- without its event, and an execution's writes are two items.
-- These are the only copies of these statements; the store reads each result by column name.

CREATE TYPE svc_item_result AS (
    item_no INT,
    -- a begin: the account's spendable credits before (NULL: no such account) and after the
    -- hold (NULL: not held); the task row below when the idempotency key was taken
    account_spendable BIGINT,
    held_spendable BIGINT,
    -- a begin's existing task, or the task a settle settled
    id TEXT,
    account_id TEXT,
    key_id TEXT,
    domain TEXT,
    action TEXT,
    cost BIGINT,
    idempotency_key TEXT,
    fingerprint TEXT,
    status TEXT,
    response_status BIGINT,
    response_body TEXT,
    artifact_id TEXT,
    artifact TEXT,
    created_at TIMESTAMPTZ,
    settled_at TIMESTAMPTZ,
    verified_artifact TEXT,
    verified_at TIMESTAMPTZ,
    -- an event: whether it was stored (0: its source was recorded before) and its deliveries
    inserted BIGINT,
    deliveries BIGINT
);

CREATE FUNCTION svc_store_event(ev JSONB)
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
    -- The deliveries are inserted only for an event this statement inserted, to the
    -- account's endpoints that are not deleted and subscribe to its type, the n-th
    -- (from 0, oldest first) taking the id `head || n in three base-32 digits || tail`
    -- (`DeliveryIds::nth` in ports/src/hooks.rs).
    RETURN QUERY
    WITH event AS (
        INSERT INTO webhook_events (id, account_id, type, source, payload, created_at)
        VALUES (p_id, p_account_id, p_type, p_source,
            p_payload, p_created_at)
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

CREATE FUNCTION svc_run_items(items JSONB) RETURNS SETOF svc_item_result
LANGUAGE plpgsql AS $fn$
DECLARE
    item JSONB;
    item_no INT := 0;
    -- The item's fields, typed: the statements below see plain parameters, so their plans
    -- are cached as a prepared statement's are.
    p_id TEXT;
    p_account_id TEXT;
    p_key_id TEXT;
    p_domain TEXT;
    p_action TEXT;
    p_cost BIGINT;
    p_idempotency_key TEXT;
    p_fingerprint TEXT;
    p_created_at TIMESTAMPTZ;
    p_hold_entry TEXT;
    p_reference TEXT;
    p_memo TEXT;
    p_task_id TEXT;
    p_status TEXT;
    p_response_status BIGINT;
    p_response_body TEXT;
    p_artifact_id TEXT;
    p_artifact TEXT;
    p_at TIMESTAMPTZ;
    p_completed BOOLEAN;
    p_entry TEXT;
    p_entry_kind TEXT;
    p_release_spend BOOLEAN;
    -- The row of a settle or an event item.
    landed svc_item_result;
BEGIN
    FOR item IN SELECT value FROM jsonb_array_elements(items) LOOP
        CASE item->>'kind'
        WHEN 'begin' THEN
            p_id := item->>'id';
            p_account_id := item->>'account_id';
            p_key_id := item->>'key_id';
            p_domain := item->>'domain';
            p_action := item->>'action';
            p_cost := (item->>'cost')::BIGINT;
            p_idempotency_key := item->>'idempotency_key';
            p_fingerprint := item->>'fingerprint';
            p_created_at := (item->>'created_at')::TIMESTAMPTZ;
            p_hold_entry := item->>'hold_entry';
            p_reference := item->>'reference';
            p_memo := item->>'memo';
            -- The idempotency lookup, the balance check and hold (with the account row locked
            -- FOR NO KEY UPDATE: balance changes exclude each other, other inserts' foreign
            -- key checks do not wait), the task and the hold entry. `existing` is read first
            -- and everything else runs only without it; `hold` only when spendable covers the
            -- cost. A racing begin with the same key that committed first makes the task
            -- INSERT fail with a unique violation, and the whole call with it.
            RETURN QUERY
            WITH existing AS (
                SELECT tasks.id, tasks.account_id, tasks.key_id, tasks.domain, tasks.action,
                    tasks.cost, tasks.idempotency_key, tasks.fingerprint, tasks.status,
                    tasks.response_status, tasks.response_body, tasks.artifact_id,
                    tasks.artifact, tasks.created_at, tasks.settled_at,
                    tasks.verified_artifact, tasks.verified_at
                FROM tasks
                -- Without a key there is nothing to look up: said outright, so a cached
                -- generic plan skips the scan instead of walking the account's tasks.
                WHERE p_idempotency_key IS NOT NULL
                    AND tasks.account_id = p_account_id
                    AND tasks.idempotency_key = p_idempotency_key
            ),
            account AS (
                SELECT accounts.id, accounts.spendable FROM accounts
                WHERE accounts.id = p_account_id
                FOR NO KEY UPDATE
            ),
            hold AS (
                UPDATE accounts
                SET spendable = accounts.spendable - p_cost,
                    held = accounts.held + p_cost
                FROM account
                WHERE accounts.id = account.id
                    AND accounts.spendable >= p_cost
                    AND NOT EXISTS (SELECT 1 FROM existing)
                RETURNING accounts.spendable
            ),
            task AS (
                INSERT INTO tasks (id, account_id, key_id, domain, action, cost,
                    idempotency_key, fingerprint, status, created_at)
                SELECT p_id, p_account_id, p_key_id, p_domain,
                    p_action, p_cost, p_idempotency_key,
                    p_fingerprint, 'in_flight', p_created_at
                FROM hold
            ),
            entry AS (
                INSERT INTO ledger_entries
                    (id, account_id, kind, delta, balance_after, reference, memo, created_at)
                SELECT p_hold_entry, p_account_id, 'hold',
                    -p_cost, hold.spendable, p_reference,
                    p_memo, p_created_at
                FROM hold
                WHERE p_cost > 0
            )
            -- The base types of the result type (migration 0020 makes some columns domains).
            SELECT item_no, account.spendable::BIGINT, hold.spendable::BIGINT,
                existing.id, existing.account_id, existing.key_id, existing.domain,
                existing.action, existing.cost::BIGINT, existing.idempotency_key,
                existing.fingerprint, existing.status::TEXT, existing.response_status::BIGINT,
                existing.response_body,
                existing.artifact_id, existing.artifact, existing.created_at,
                existing.settled_at, existing.verified_artifact, existing.verified_at,
                NULL::BIGINT, NULL::BIGINT
            FROM (SELECT) AS one
            LEFT JOIN account ON TRUE
            LEFT JOIN hold ON TRUE
            LEFT JOIN existing ON TRUE;
        WHEN 'settle' THEN
            p_task_id := item->>'task_id';
            p_status := item->>'status';
            p_response_status := (item->>'response_status')::BIGINT;
            p_response_body := item->>'response_body';
            p_artifact_id := item->>'artifact_id';
            p_artifact := item->>'artifact';
            p_at := (item->>'at')::TIMESTAMPTZ;
            p_completed := (item->>'completed')::BOOLEAN;
            p_entry := item->>'entry';
            p_entry_kind := item->>'entry_kind';
            p_reference := item->>'reference';
            p_memo := item->>'memo';
            p_release_spend := (item->>'release_spend')::BOOLEAN;
            -- `locked` takes the account's row lock before the task's, the order every begin
            -- takes them in (account, then the idempotency key's task row): a settle that
            -- locked the task first deadlocked with a begin of the same key waiting on it.
            -- `settled` matches only a task in flight (a racing settlement waits for the row
            -- and then matches nothing); everything else reads from it, so nothing is written
            -- for a task that was not in flight. `moved` captures (completed) or refunds
            -- (failed) the hold and returns the spendable balance the entry records;
            -- `released` gives a failed task's authority spend back when asked. The event
            -- (when the item names one) is stored only when this settlement landed.
            WITH locked AS (
                SELECT accounts.id FROM accounts
                WHERE accounts.id = (SELECT tasks.account_id FROM tasks
                                     WHERE tasks.id = p_task_id)
                FOR NO KEY UPDATE
            ),
            settled AS (
                UPDATE tasks SET status = p_status,
                    response_status = p_response_status,
                    response_body = p_response_body,
                    artifact_id = p_artifact_id, artifact = p_artifact,
                    settled_at = p_at
                FROM locked
                WHERE tasks.id = p_task_id AND tasks.account_id = locked.id
                    AND tasks.status = 'in_flight'
                RETURNING tasks.id, tasks.account_id, tasks.key_id, tasks.domain, tasks.action,
                    tasks.cost, tasks.idempotency_key, tasks.fingerprint, tasks.status,
                    tasks.response_status, tasks.response_body, tasks.artifact_id,
                    tasks.artifact, tasks.created_at, tasks.settled_at,
                    tasks.verified_artifact, tasks.verified_at
            ),
            moved AS (
                UPDATE accounts
                SET held = accounts.held - settled.cost,
                    spendable = accounts.spendable
                        + CASE WHEN p_completed THEN 0 ELSE settled.cost END
                FROM settled
                WHERE accounts.id = settled.account_id AND settled.cost > 0
                RETURNING accounts.spendable
            ),
            entry AS (
                INSERT INTO ledger_entries
                    (id, account_id, kind, delta, balance_after, reference, memo, created_at)
                SELECT p_entry, settled.account_id, p_entry_kind,
                    CASE WHEN p_completed THEN 0 ELSE settled.cost END,
                    moved.spendable, p_reference, p_memo,
                    p_at
                FROM settled, moved
            ),
            released AS (
                UPDATE authority_spends SET released_at = p_at
                FROM settled
                WHERE authority_spends.task_id = settled.id
                    AND authority_spends.released_at IS NULL
                    AND p_release_spend
            )
            SELECT item_no, NULL::BIGINT, NULL::BIGINT,
                settled.id, settled.account_id, settled.key_id, settled.domain,
                settled.action, settled.cost, settled.idempotency_key, settled.fingerprint,
                settled.status, settled.response_status, settled.response_body,
                settled.artifact_id, settled.artifact, settled.created_at,
                settled.settled_at, settled.verified_artifact, settled.verified_at,
                NULL::BIGINT, NULL::BIGINT
            INTO landed
            FROM settled;
            IF FOUND THEN
                IF item ? 'event' THEN
                    SELECT stored.inserted, stored.deliveries
                    INTO landed.inserted, landed.deliveries
                    FROM svc_store_event(item->'event') AS stored;
                END IF;
                RETURN NEXT landed;
            END IF;
        WHEN 'event' THEN
            landed := NULL;
            landed.item_no := item_no;
            SELECT stored.inserted, stored.deliveries
            INTO landed.inserted, landed.deliveries
            FROM svc_store_event(item) AS stored;
            RETURN NEXT landed;
        ELSE
            RAISE EXCEPTION 'unknown item kind %', item->>'kind';
        END CASE;
        item_no := item_no + 1;
    END LOOP;
END
$fn$;
