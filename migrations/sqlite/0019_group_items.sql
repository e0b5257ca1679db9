-- Nothing changes on SQLite, whose group writer runs each item as its own statements inside
-- one transaction (adapters/sql/src/sqlite/group.rs). Postgres's 0019 adds the function that
-- runs a group's items in one call; the numbering stays the same on both.
SELECT 1;
