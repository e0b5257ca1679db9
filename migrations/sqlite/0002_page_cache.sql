-- Fetched pages for /api/read's max_age. Bodies are at most 10 MiB (the fetcher's cap).
CREATE TABLE page_cache (
    cache_key     TEXT PRIMARY KEY,
    requested_url TEXT NOT NULL,
    final_url     TEXT NOT NULL,
    status        BIGINT NOT NULL,
    content_type  TEXT,
    charset       TEXT NOT NULL,
    body          TEXT NOT NULL,
    truncated     BIGINT NOT NULL CHECK (truncated IN (0, 1)),
    redirects     TEXT NOT NULL, -- JSON array of URLs
    robots        TEXT NOT NULL, -- JSON robots decision
    fetched_at    BIGINT NOT NULL
);
CREATE INDEX page_cache_by_age ON page_cache (fetched_at);
