//! `StoreHealth`: a trivial statement, the applied migrations, and the pool's connections.

use async_trait::async_trait;
use svc_ports::{PoolUsage, StoreError, StoreHealth};

use super::{PostgresStore, backend};

#[async_trait]
impl StoreHealth for PostgresStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "pinging Postgres"))?;
        Ok(())
    }

    async fn migrations_current(&self) -> Result<bool, StoreError> {
        // `to_regclass` follows the search path, as the migrator does.
        let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| backend(e, "looking for the migrations table"))?;
        if !exists {
            return Ok(false);
        }
        let applied: Vec<(i64, bool, Vec<u8>)> =
            sqlx::query_as("SELECT version, success, checksum FROM _sqlx_migrations")
                .fetch_all(&self.pool)
                .await
                .map_err(|e| backend(e, "reading the applied migrations"))?;
        Ok(crate::migrations::all_applied(
            &crate::migrations::postgres(),
            &applied,
        ))
    }

    fn pool_usage(&self) -> Option<PoolUsage> {
        let idle = u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX);
        Some(PoolUsage {
            in_use: self.pool.size().saturating_sub(idle),
            idle,
        })
    }
}
