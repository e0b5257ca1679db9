//! `PageCache`: fetched pages, one row per cache key.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, sqlite::SqliteRow};
use svc_ports::{
    FetchedPage, RobotsDecision,
    store::{PageCache, StoreError},
};

use super::{SqliteStore, backend, corrupt, from_millis, millis};

fn page_from_row(r: &SqliteRow) -> Result<FetchedPage, StoreError> {
    let err = |e| backend(e, "reading cached page");
    let status: i64 = r.try_get("status").map_err(err)?;
    let truncated: i64 = r.try_get("truncated").map_err(err)?;
    Ok(FetchedPage {
        requested_url: r.try_get("requested_url").map_err(err)?,
        final_url: r.try_get("final_url").map_err(err)?,
        status: u16::try_from(status).map_err(corrupt("page status"))?,
        content_type: r.try_get("content_type").map_err(err)?,
        charset: r.try_get("charset").map_err(err)?,
        // Bound as a BLOB (migration 0010); rows from before hold TEXT: both read as bytes.
        body: String::from_utf8(r.try_get::<Vec<u8>, _>("body").map_err(err)?)
            .map_err(corrupt("cached page body"))?,
        truncated: truncated != 0,
        redirects: serde_json::from_str::<Vec<String>>(r.try_get("redirects").map_err(err)?)
            .map_err(corrupt("redirects"))?,
        robots: serde_json::from_str::<RobotsDecision>(r.try_get("robots").map_err(err)?)
            .map_err(corrupt("robots decision"))?,
        fetched_at: from_millis(r.try_get("fetched_at").map_err(err)?)?,
    })
}

#[async_trait]
impl PageCache for SqliteStore {
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
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
        .bind(&page.charset)
        .bind(page.body.as_bytes())
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
        .map(|r| page_from_row(&r))
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
