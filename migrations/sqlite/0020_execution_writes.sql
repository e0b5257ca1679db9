-- Nothing changes on SQLite, whose CHECKs are cheap and whose rows are not compressed.
-- Postgres's 0020 moves single-column rules into domains, makes the task indexes partial and
-- keeps task rows uncompressed; the numbering stays the same on both.
SELECT 1;
