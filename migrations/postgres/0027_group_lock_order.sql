-- A group's items lock their account's row as they run, in the order they were queued, so two
-- instances' groups holding [an item of account A, one of B] and [one of B, one of A] could
-- each hold one row and wait for the other: Postgres breaks that deadlock after
-- deadlock_timeout (1 s by default), and a group that meets it again and again fails an item.
-- A group now takes the rows of every account it touches first, in id order, the way the
-- items take them (FOR NO KEY UPDATE: balance changes exclude each other, other inserts'
-- foreign-key checks do not wait). A settle item names its task; the task names the account.
CREATE FUNCTION svc_lock_accounts(items JSONB) RETURNS VOID
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM 1 FROM accounts
    WHERE accounts.id IN (
        SELECT item->>'account_id' FROM jsonb_array_elements(items) AS item
        UNION
        SELECT tasks.account_id FROM jsonb_array_elements(items) AS item
        JOIN tasks ON tasks.id = item->>'task_id')
    ORDER BY accounts.id
    FOR NO KEY UPDATE OF accounts;
END
$fn$;

-- A whole group in one call, as svc_run_items (0019, last restated in 0023) after the locks.
CREATE FUNCTION svc_run_group(items JSONB) RETURNS SETOF svc_item_result
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM svc_lock_accounts(items);
    RETURN QUERY SELECT * FROM svc_run_items(items);
END
$fn$;
