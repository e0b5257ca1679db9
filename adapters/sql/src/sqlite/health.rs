//! `StoreHealth`: a trivial statement, the applied migrations, and both pools' connections.

use async_trait::async_trait;
use svc_ports::{PoolUsage, StoreError, StoreHealth};

use super::{SqliteStore, backend};

#[async_trait]
impl StoreHealth for SqliteStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "pinging SQLite"))?;
        Ok(())
    }

    async fn migrations_current(&self) -> Result<bool, StoreError> {
        let exists: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(|e| backend(e, "looking for the migrations table"))?;
        if exists == 0 {
            return Ok(false);
        }
        let applied: Vec<(i64, bool, Vec<u8>)> =
            sqlx::query_as("SELECT version, success, checksum FROM _sqlx_migrations")
                .fetch_all(&self.pool)
                .await
                .map_err(|e| backend(e, "reading the applied migrations"))?;
        Ok(crate::migrations::all_applied(
            &crate::migrations::sqlite(),
            &applied,
        ))
    }

    fn pool_usage(&self) -> Option<PoolUsage> {
        let of = |pool: &sqlx::SqlitePool| {
            let idle = u32::try_from(pool.num_idle()).unwrap_or(u32::MAX);
            PoolUsage {
                in_use: pool.size().saturating_sub(idle),
                idle,
            }
        };
        let readers = of(&self.pool);
        if self.shared_writer {
            return Some(readers);
        }
        let writer = of(&self.write_pool);
        Some(PoolUsage {
            in_use: readers.in_use + writer.in_use,
            idle: readers.idle + writer.idle,
        })
    }
}
