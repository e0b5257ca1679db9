//! `LimitStore`: shared fixed-window counters. A hit is one upsert on the writer connection,
//! so hits are counted one after another in the order they reach it.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::Row;
use svc_ports::{
    LimitBucket, LimitDecision, LimitKey, LimitStore, StoreError,
    limits::{decide, window_end},
};

use super::{SqliteStore, backend, corrupt, from_millis, millis};

#[async_trait]
impl LimitStore for SqliteStore {
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
        .bind(millis(window_end(now, window)))
        .bind(millis(now))
        .fetch_one(self.writer())
        .await
        .map_err(|e| backend(e, "counting a limit hit"))?;
        let err = |e| backend(e, "reading a limit window");
        let hits: i64 = row.try_get("hits").map_err(err)?;
        let ends_at = from_millis(row.try_get("ends_at").map_err(err)?)?;
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
        .bind(millis(now))
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "giving back a limit hit"))?;
        Ok(())
    }

    async fn purge_limits(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM limit_windows WHERE ends_at <= $1")
            .bind(millis(now))
            .execute(self.writer())
            .await
            .map_err(|e| backend(e, "purging ended limit windows"))?;
        Ok(done.rows_affected())
    }
}
