-- Nothing changes on SQLite (see 0027). Postgres's 0029 makes the lock of a group's accounts
-- cheap to plan; the numbering stays the same on both.
SELECT 1;
