-- A group whose items all belong to one account has no order to keep: its first item locks
-- that account as it always did. svc_lock_accounts (0029) now locks only when a group
-- touches two accounts or more, which spares the common group its one extra statement.
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
    IF cardinality(ids) > 1 THEN
        PERFORM 1 FROM accounts
        WHERE accounts.id = ANY (ids)
        ORDER BY accounts.id
        FOR NO KEY UPDATE OF accounts;
    END IF;
END
$fn$;
