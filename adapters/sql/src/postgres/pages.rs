//! `PageCache`: fetched pages. The body is BYTEA (a page may hold a NUL, which TEXT refuses);
//! the redirects and the robots decision are JSONB.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{postgres::PgRow, types::Json};
use svc_ports::{
    FetchedPage, RobotsDecision,
    store::{PageCache, StoreError},
};

use super::{PostgresStore, backend, col, corrupt, jsonb_safe, ms};

fn page_from_row(r: &PgRow) -> Result<FetchedPage, StoreError> {
    let status: i64 = col(r, "status")?;
    Ok(FetchedPage {
        requested_url: col(r, "requested_url")?,
        final_url: col(r, "final_url")?,
        status: u16::try_from(status).map_err(corrupt("page status"))?,
        content_type: col(r, "content_type")?,
        charset: col(r, "charset")?,
        body: String::from_utf8(col(r, "body")?).map_err(corrupt("cached page body"))?,
        truncated: col(r, "truncated")?,
        redirects: col::<Json<Vec<String>>>(r, "redirects")?.0,
        robots: col::<Json<RobotsDecision>>(r, "robots")?.0,
        fetched_at: col(r, "fetched_at")?,
    })
}

#[async_trait]
impl PageCache for PostgresStore {
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
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
        .bind(&page.charset)
        .bind(page.body.as_bytes())
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
        .map(|r| page_from_row(&r))
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
