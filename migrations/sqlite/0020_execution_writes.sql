-- Nothing changes on SQLite: its settlement runs the event's statements in the same
-- savepoint (adapters/sql/src/sqlite/tasks.rs), its CHECKs are cheap and its rows are not
-- compressed. Postgres's 0020 moves the event into the settle item of `svc_run_items`, moves
-- single-column rules into domains and makes the task indexes partial; the numbering stays
-- the same on both.
SELECT 1;
