//! The embedded default: one SQLite file in WAL mode.

use std::{str::FromStr, time::Duration};

use anyhow::Context;
use sqlx::{
    Sqlite, SqlitePool, Transaction,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

#[derive(Clone)]
pub struct SqliteStore {
    /// Readers (WAL lets them run beside the writer).
    pool: SqlitePool,
    /// One connection for every write: writers queue here, in order, instead of spinning in
    /// SQLite's busy handler (which sleeps, and made the slowest writes wait ~100 ms).
    write_pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` (`sqlite://./svc.db`, or
    /// `sqlite::memory:` for a private in-memory database), without migrating it.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let options = SqliteConnectOptions::from_str(url)
            .with_context(|| "parsing the SQLite database URL")?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        // Switching a new file to WAL needs it alone: pools opening several connections at once
        // on a fresh file could see "database is locked" from that switch (its busy handler is
        // not consulted). One connection first makes the (persistent) switch; the rest find it.
        if !in_memory {
            use sqlx::{ConnectOptions, Connection};
            options
                .connect()
                .await
                .with_context(|| "opening the SQLite database")?
                .close()
                .await
                .with_context(|| "opening the SQLite database")?;
        }
        // A private in-memory database lives in one connection; more would each see their own.
        let max = if in_memory { 1 } else { 8 };
        let pool = SqlitePoolOptions::new()
            .max_connections(max)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
            .await
            .with_context(|| "opening the SQLite database")?;
        let write_pool = if in_memory {
            pool.clone()
        } else {
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(options)
                .await
                .with_context(|| "opening the SQLite database for writing")?
        };
        Ok(Self { pool, write_pool })
    }

    /// Applies pending migrations from `migrations/sqlite`.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        crate::common::migrate_context(
            crate::migrations::sqlite().run(&self.write_pool).await,
            "SQLite",
        )
    }

    /// Connects and migrates: what `svc serve` does at start.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        let store = Self::connect(url).await?;
        store.migrate().await?;
        Ok(store)
    }

    pub async fn close(&self) {
        self.write_pool.close().await;
        self.pool.close().await;
    }

    /// `BEGIN IMMEDIATE` takes the write lock up front, so a transaction that reads and then
    /// writes never fails half-way with SQLITE_BUSY.
    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        self.write_pool.begin_with("BEGIN IMMEDIATE").await
    }

    /// Events of one payment are applied one at a time: SQLite's one writer already does that.
    async fn lock_payment(
        _tx: &mut Transaction<'static, Sqlite>,
        _key: &str,
    ) -> Result<(), sqlx::Error> {
        Ok(())
    }

    /// Where single-statement writes go.
    fn writer(&self) -> &SqlitePool {
        &self.write_pool
    }
}

crate::common::impl_sql_stores!(SqliteStore, sqlx::Sqlite);
crate::identity::impl_sql_identity!(SqliteStore, sqlx::Sqlite);
crate::actions::impl_sql_actions!(SqliteStore, sqlx::Sqlite);
crate::telemetry::impl_sql_telemetry!(SqliteStore, sqlx::Sqlite);
crate::readiness::impl_sql_readiness!(SqliteStore);
crate::billing::impl_sql_billing!(SqliteStore, sqlx::Sqlite, "");
crate::connections::impl_sql_connections!(SqliteStore, sqlx::Sqlite);
crate::authority::impl_sql_authority!(SqliteStore, sqlx::Sqlite, "");
