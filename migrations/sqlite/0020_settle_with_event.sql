-- Nothing changes on SQLite, whose settlement runs the event's statements in the same
-- savepoint (adapters/sql/src/sqlite/tasks.rs). Postgres's 0020 moves the event into the
-- settle item of `svc_run_items`; the numbering stays the same on both.
SELECT 1;
