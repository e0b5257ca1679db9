-- Nothing changes on SQLite, whose single writer holds the whole database for a group's
-- transaction (adapters/sql/src/sqlite/group.rs). Postgres's 0027 makes a group lock its
-- accounts in id order before its items run; the numbering stays the same on both.
SELECT 1;
