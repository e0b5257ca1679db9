-- Issue 20, activity: an account's tasks newest first, a page at a time after a cursor
-- (keyset on created_at, id), and its purchases and grants per day.
CREATE INDEX tasks_by_account_created ON tasks (account_id, created_at, id);
CREATE INDEX ledger_entries_by_account_time ON ledger_entries (account_id, created_at);
