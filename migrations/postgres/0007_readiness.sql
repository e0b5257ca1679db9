-- Readiness scans (POST /api/readiness/scan), stored whole so a report reads back as answered.
CREATE TABLE readiness_scans (
    id           TEXT PRIMARY KEY,
    url          TEXT NOT NULL,
    score        INTEGER NOT NULL,
    level        TEXT NOT NULL,
    completed_at BIGINT NOT NULL,
    report       TEXT NOT NULL -- the ScanReport, JSON
);
CREATE INDEX readiness_scans_by_time ON readiness_scans (completed_at);
