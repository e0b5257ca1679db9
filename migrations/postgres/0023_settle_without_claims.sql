-- A settlement serves and caps the freeze claims (0022) only when its account has one. 0022's
-- settlement took the account's lock in a statement of its own and ran the claims' CTEs in
-- every settlement, which cost executions 11-15% for accounts without a claim (bench/RESULTS.md).
-- Now the settlement is 0021's one statement (its `locked` CTE takes the lock) with the
-- entries written in order, and a statement after it, whose snapshot sees what billing
-- committed before the lock was granted, looks for a claim: only then does
-- `svc_serve_claims` freeze what a failed task gave back, after its refund and clawback, and
-- `svc_cap_claims` hold the claims to the credits still in flight.
--
-- Functions only: instances of 0022 and of this one settle alike.

-- What the failed task `p_task_id` gave back (its cost less its clawback) serves the open
-- disputes' claims on `p_account`, oldest first (`serve_claims` in ports/src/billing/mod.rs):
-- a `task_freezes` row per payment served, the claims lowered by as much, the credits moved
-- from spendable to frozen and one `freeze` entry recording the balance it leaves. The caller
-- holds the account's lock and settled the task in this transaction.
CREATE FUNCTION svc_serve_claims(p_task_id TEXT, p_account TEXT, p_at TIMESTAMPTZ,
    p_entry TEXT, p_reference TEXT, p_memo TEXT) RETURNS VOID
LANGUAGE sql AS $fn$
    WITH task AS (
        SELECT tasks.cost - tasks.owed AS returned FROM tasks WHERE tasks.id = p_task_id
    ),
    claims AS (
        SELECT freeze_claims.payment_id, freeze_claims.credits,
            COALESCE(SUM(freeze_claims.credits) OVER (
                ORDER BY freeze_claims.since, freeze_claims.payment_id COLLATE "C"
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::BIGINT AS before
        FROM freeze_claims WHERE freeze_claims.account_id = p_account
    ),
    taken AS (
        SELECT claims.payment_id, claims.credits AS claimed,
            LEAST(claims.credits, task.returned - claims.before) AS credits
        FROM claims, task
        WHERE claims.before < task.returned
    ),
    froze AS (
        INSERT INTO task_freezes (task_id, account_id, payment_id, credits, created_at)
        SELECT p_task_id, p_account, taken.payment_id, taken.credits, p_at FROM taken
    ),
    served AS (
        DELETE FROM freeze_claims USING taken
        WHERE freeze_claims.account_id = p_account
            AND freeze_claims.payment_id = taken.payment_id
            AND taken.credits >= taken.claimed
    ),
    partly AS (
        UPDATE freeze_claims SET credits = freeze_claims.credits - taken.credits
        FROM taken
        WHERE freeze_claims.account_id = p_account
            AND freeze_claims.payment_id = taken.payment_id
            AND taken.credits < taken.claimed
    ),
    freezing AS (
        SELECT COALESCE(SUM(taken.credits), 0)::BIGINT AS total FROM taken
    ),
    moved AS (
        UPDATE accounts
        SET spendable = accounts.spendable - freezing.total,
            frozen = accounts.frozen + freezing.total
        FROM freezing
        WHERE accounts.id = p_account AND freezing.total > 0
        RETURNING accounts.spendable, freezing.total
    )
    INSERT INTO ledger_entries
        (id, account_id, kind, delta, balance_after, reference, memo, created_at)
    SELECT p_entry, p_account, 'freeze', -moved.total, moved.spendable, p_reference, p_memo, p_at
    FROM moved;
$fn$;

-- svc_run_items (0022) again: the settle item as 0021's (`locked`, `settled`, `moved`,
-- `entries` for the refund and the clawback, `released`), then the claims only where there
-- are some.
CREATE OR REPLACE FUNCTION svc_run_items(items JSONB) RETURNS SETOF svc_item_result
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
    p_clawback_entry TEXT;
    p_clawback_reference TEXT;
    p_clawback_memo TEXT;
    p_freeze_entry TEXT;
    p_freeze_reference TEXT;
    p_freeze_memo TEXT;
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
            p_clawback_entry := item->>'clawback_entry';
            p_clawback_reference := item->>'clawback_reference';
            p_clawback_memo := item->>'clawback_memo';
            p_freeze_entry := item->>'freeze_entry';
            p_freeze_reference := item->>'freeze_reference';
            p_freeze_memo := item->>'freeze_memo';
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
                    tasks.verified_artifact, tasks.verified_at, tasks.owed
            ),
            moved AS (
                UPDATE accounts
                SET held = accounts.held - settled.cost,
                    spendable = accounts.spendable
                        + CASE WHEN p_completed THEN 0 ELSE settled.cost - settled.owed END
                FROM settled
                WHERE accounts.id = settled.account_id AND settled.cost > 0
                RETURNING accounts.spendable
            ),
            -- The refund (or the charge) and the clawback, in one statement so they are
            -- written in that order (CTEs that nothing reads run in no set order), each
            -- recording the balance it leaves.
            entries AS (
                INSERT INTO ledger_entries
                    (id, account_id, kind, delta, balance_after, reference, memo, created_at)
                SELECT e.id, settled.account_id, e.kind, e.delta, e.balance_after, e.reference,
                    e.memo, p_at
                FROM settled, moved, LATERAL (VALUES
                    (1, p_entry, p_entry_kind,
                        CASE WHEN p_completed THEN 0 ELSE settled.cost END,
                        moved.spendable + CASE WHEN p_completed THEN 0 ELSE settled.owed END,
                        p_reference, p_memo, TRUE),
                    (2, p_clawback_entry, 'clawback', -settled.owed, moved.spendable,
                        p_clawback_reference, p_clawback_memo,
                        NOT p_completed AND settled.owed > 0)
                ) AS e(n, id, kind, delta, balance_after, reference, memo, wanted)
                WHERE e.wanted
                ORDER BY e.n
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
                -- Billing writes the claims holding the account's lock, which `locked` took,
                -- and this statement's snapshot is newer than the lock: it sees them as
                -- billing left them. An account without claims, nearly every one, pays this
                -- one index probe. With claims, what a failed task gave back serves them, and
                -- the credits in flight went down, so may what they claim.
                IF EXISTS (SELECT 1 FROM freeze_claims
                           WHERE freeze_claims.account_id = landed.account_id) THEN
                    IF NOT p_completed THEN
                        PERFORM svc_serve_claims(p_task_id, landed.account_id, p_at,
                            p_freeze_entry, p_freeze_reference, p_freeze_memo);
                    END IF;
                    PERFORM svc_cap_claims(landed.account_id);
                END IF;
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
