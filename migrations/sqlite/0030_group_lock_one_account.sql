-- Nothing changes on SQLite (see 0027). Postgres's 0030 locks a group's accounts in order only
-- when it has two or more; the numbering stays the same on both.
SELECT 1;
