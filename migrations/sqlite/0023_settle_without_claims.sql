-- Nothing changes on SQLite, whose settlement statements live in adapters/sql/src/sqlite/tasks.rs
-- (and there, too, touch the freeze claims only when the account has one). Postgres's 0023
-- restates the function a settlement runs in; the numbering stays the same on both.
SELECT 1;
