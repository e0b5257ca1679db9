//! `LimitStore`: shared fixed-window counters. A hit is one `INSERT ... ON CONFLICT DO UPDATE
//! ... RETURNING` statement: the conflicting row is locked, so concurrent hits from every
//! instance are counted one after another and exactly `limit` of them are allowed.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    LimitBucket, LimitDecision, LimitKey, LimitStore, StoreError,
    limits::{decide, window_end},
};

use super::{PostgresStore, backend, col, corrupt, ms};

#[async_trait]
impl LimitStore for PostgresStore {
    async fn hit(
        &self,
        bucket: LimitBucket,
        key: &LimitKey,
        window: Duration,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<LimitDecision, StoreError> {
        // Every SET expression reads the row as it was before this update.
        let row = sqlx::query(
            "INSERT INTO limit_windows (bucket, limit_key, hits, ends_at) VALUES ($1, $2, 1, $3) \
             ON CONFLICT (bucket, limit_key) DO UPDATE SET \
             hits = CASE WHEN limit_windows.ends_at <= $4 THEN 1 ELSE limit_windows.hits + 1 END, \
             ends_at = CASE WHEN limit_windows.ends_at <= $4 THEN excluded.ends_at \
             ELSE limit_windows.ends_at END \
             RETURNING hits, ends_at",
        )
        .bind(bucket.as_str())
        .bind(key.as_str())
        .bind(ms(window_end(now, window)))
        .bind(ms(now))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| backend(e, "counting a limit hit"))?;
        let hits: i64 = col(&row, "hits")?;
        let ends_at: DateTime<Utc> = col(&row, "ends_at")?;
        let hits = u64::try_from(hits).map_err(corrupt("limit hits"))?;
        Ok(decide(hits, limit, ends_at, now))
    }

    async fn release(
        &self,
        bucket: LimitBucket,
        key: &LimitKey,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE limit_windows SET hits = hits - 1 \
             WHERE bucket = $1 AND limit_key = $2 AND ends_at > $3 AND hits > 0",
        )
        .bind(bucket.as_str())
        .bind(key.as_str())
        .bind(ms(now))
        .execute(&self.pool)
        .await
        .map_err(|e| backend(e, "giving back a limit hit"))?;
        Ok(())
    }

    async fn purge_limits(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM limit_windows WHERE ends_at <= $1")
            .bind(ms(now))
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "purging ended limit windows"))?;
        Ok(done.rows_affected())
    }
}
