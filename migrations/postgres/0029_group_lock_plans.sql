-- svc_lock_accounts (0027) found the group's accounts with one query over the items and the
-- tasks they name: Postgres planned it afresh at every call (its plan for any items was
-- dearer than each call's own), 0.46 ms of the group writer's ~2 ms per group, and
-- executions on Postgres fell by a quarter (bench/RESULTS.md). Now the accounts are gathered
-- item by item, each statement plain enough that its plan is made once per connection.
CREATE OR REPLACE FUNCTION svc_lock_accounts(items JSONB) RETURNS VOID
LANGUAGE plpgsql AS $fn$
DECLARE
    item JSONB;
    account TEXT;
    ids TEXT[] := '{}';
BEGIN
    FOR item IN SELECT value FROM jsonb_array_elements(items) LOOP
        account := item->>'account_id';
        IF account IS NULL AND item->>'task_id' IS NOT NULL THEN
            SELECT tasks.account_id INTO account FROM tasks WHERE tasks.id = item->>'task_id';
        END IF;
        IF account IS NOT NULL AND NOT account = ANY (ids) THEN
            ids := ids || account;
        END IF;
    END LOOP;
    PERFORM 1 FROM accounts
    WHERE accounts.id = ANY (ids)
    ORDER BY accounts.id
    FOR NO KEY UPDATE OF accounts;
END
$fn$;
