//! Postgres: the store for more than one machine.

use std::time::Duration;

use anyhow::Context;
use sqlx::{PgPool, Postgres, Transaction, postgres::PgPoolOptions};

#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to `postgres://...` without migrating.
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .with_context(|| "connecting to Postgres")?;
        Ok(Self { pool })
    }

    /// Applies pending migrations from `migrations/postgres`. sqlx takes an advisory lock, so
    /// instances starting together migrate once.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        crate::common::migrate_context(
            crate::migrations::postgres().run(&self.pool).await,
            "Postgres",
        )
    }

    pub async fn open(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let store = Self::connect(url, max_connections).await?;
        store.migrate().await?;
        Ok(store)
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Read committed is enough: balance changes are single `UPDATE ... RETURNING` statements
    /// (row-locked), and uniqueness that guards money is a constraint.
    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Events of one payment are applied one at a time across every instance: a transaction
    /// advisory lock on the payment, released at commit or rollback.
    async fn lock_payment(
        tx: &mut Transaction<'static, Postgres>,
        key: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(key)
            .execute(&mut **tx)
            .await
            .map(|_| ())
    }

    /// Where single-statement writes go: the one pool (Postgres locks rows, not the database).
    fn writer(&self) -> &PgPool {
        &self.pool
    }
}

crate::common::impl_sql_stores!(PostgresStore, sqlx::Postgres);
crate::identity::impl_sql_identity!(PostgresStore, sqlx::Postgres);
crate::actions::impl_sql_actions!(PostgresStore, sqlx::Postgres);
crate::telemetry::impl_sql_telemetry!(PostgresStore, sqlx::Postgres);
crate::readiness::impl_sql_readiness!(PostgresStore);
crate::billing::impl_sql_billing!(PostgresStore, sqlx::Postgres, " FOR UPDATE");
crate::connections::impl_sql_connections!(PostgresStore, sqlx::Postgres);
crate::authority::impl_sql_authority!(PostgresStore, sqlx::Postgres, " FOR UPDATE");
