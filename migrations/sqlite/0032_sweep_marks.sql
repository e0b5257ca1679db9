-- When each recovery sweep last went through everything it looks at (the start of that run).
-- The next run looks back from an hour before it, not only an hour before now, so facts left
-- without their webhook event before an outage longer than an hour are still found.
CREATE TABLE sweep_marks (
    name      TEXT PRIMARY KEY,
    swept_at  INTEGER NOT NULL
);
