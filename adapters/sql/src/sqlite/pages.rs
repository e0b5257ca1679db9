//! `PageCache`: fetched pages, one row per cache key.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    FetchedPage,
    store::{PageCache, StoreError},
};

use super::{SqliteStore, backend, corrupt, millis};
use crate::rows;

#[async_trait]
impl PageCache for SqliteStore {
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
        let (charset, body) = rows::page_body(page);
        let redirects = serde_json::to_string(&page.redirects).map_err(corrupt("redirects"))?;
        let robots = serde_json::to_string(&page.robots).map_err(corrupt("robots decision"))?;
        sqlx::query(
            "INSERT INTO page_cache (cache_key, requested_url, final_url, status, content_type, \
             charset, body, truncated, redirects, robots, fetched_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (cache_key) DO UPDATE SET requested_url = excluded.requested_url, \
             final_url = excluded.final_url, status = excluded.status, \
             content_type = excluded.content_type, charset = excluded.charset, \
             body = excluded.body, truncated = excluded.truncated, \
             redirects = excluded.redirects, robots = excluded.robots, \
             fetched_at = excluded.fetched_at",
        )
        .bind(key)
        .bind(&page.requested_url)
        .bind(&page.final_url)
        .bind(i64::from(page.status))
        .bind(page.content_type.as_deref())
        .bind(charset)
        .bind(body)
        .bind(i64::from(page.truncated))
        .bind(redirects)
        .bind(robots)
        .bind(millis(page.fetched_at))
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "caching page"))?;
        Ok(())
    }

    async fn fresh_page(
        &self,
        key: &str,
        not_before: DateTime<Utc>,
    ) -> Result<Option<FetchedPage>, StoreError> {
        sqlx::query(
            "SELECT requested_url, final_url, status, content_type, charset, body, truncated, \
             redirects, robots, fetched_at FROM page_cache \
             WHERE cache_key = $1 AND fetched_at >= $2",
        )
        .bind(key)
        .bind(millis(not_before))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading cached page"))?
        .map(|r| rows::fetched_page(&r))
        .transpose()
    }

    async fn purge_pages(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM page_cache WHERE fetched_at < $1")
            .bind(millis(before))
            .execute(self.writer())
            .await
            .map_err(|e| backend(e, "purging cached pages"))?;
        Ok(done.rows_affected())
    }
}
