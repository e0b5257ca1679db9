//! `PageCache`: fetched pages. The body is BYTEA (a page may hold a NUL, which TEXT refuses);
//! the redirects and the robots decision are JSONB.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    FetchedPage,
    store::{PageCache, StoreError},
};

use super::{PostgresStore, backend, corrupt, jsonb_safe, ms};
use crate::rows;

#[async_trait]
impl PageCache for PostgresStore {
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
        let (charset, body) = rows::page_body(page);
        let redirects = serde_json::to_value(&page.redirects).map_err(corrupt("redirects"))?;
        let robots = serde_json::to_value(&page.robots).map_err(corrupt("robots decision"))?;
        jsonb_safe(&redirects, "a page's redirects")?;
        jsonb_safe(&robots, "a page's robots decision")?;
        sqlx::query(
            r#"
            INSERT INTO page_cache (cache_key, requested_url, final_url, status, content_type,
                charset, body, truncated, redirects, robots, fetched_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (cache_key) DO UPDATE SET
                requested_url = excluded.requested_url, final_url = excluded.final_url,
                status = excluded.status, content_type = excluded.content_type,
                charset = excluded.charset, body = excluded.body, truncated = excluded.truncated,
                redirects = excluded.redirects, robots = excluded.robots,
                fetched_at = excluded.fetched_at
            "#,
        )
        .bind(key)
        .bind(&page.requested_url)
        .bind(&page.final_url)
        .bind(i64::from(page.status))
        .bind(page.content_type.as_deref())
        .bind(charset)
        .bind(body)
        .bind(page.truncated)
        .bind(redirects)
        .bind(robots)
        .bind(ms(page.fetched_at))
        .execute(&self.pool)
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
        .bind(ms(not_before))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading cached page"))?
        .map(|r| rows::fetched_page(&r))
        .transpose()
    }

    async fn purge_pages(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM page_cache WHERE fetched_at < $1")
            .bind(ms(before))
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "purging cached pages"))?;
        Ok(done.rows_affected())
    }
}
