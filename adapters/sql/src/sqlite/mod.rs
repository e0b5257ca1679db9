//! The embedded default: one SQLite file in WAL mode. Every statement is written out next to
//! the code that runs it, one file per port family. Times are stored as INTEGER milliseconds
//! (UTC), hashes as hex TEXT and JSON as TEXT.
//!
//! Reads go to `pool`; every write goes to the one connection of `write_pool`, so writes are
//! serialised in order. A write of more than one statement runs in a `BEGIN IMMEDIATE`
//! transaction; a write of one statement needs none. Beginning and settling tasks (two writes
//! per execution) are grouped: many share one transaction (`group.rs`).

mod a2a;
mod accounts;
mod activity;
mod authority;
mod billing;
mod checkpoint;
mod columns;
mod connections;
mod group;
mod health;
mod hooks;
mod identity;
mod key_set;
mod ledger;
mod liens;
mod limits;
mod maps;
mod pages;
mod readiness;
mod sealed;
mod tasks;
mod telemetry;

use std::{str::FromStr, time::Duration};

pub(crate) use crate::errors::{
    backend, corrupt, is_foreign_key_violation, is_unique_violation, undecodable,
};
use anyhow::{Context, anyhow};
use chrono::{DateTime, TimeZone, Utc};
use sqlx::{
    Sqlite, SqlitePool, Transaction,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};
use svc_ports::StoreError;

type Tx = Transaction<'static, Sqlite>;

#[derive(Clone)]
pub struct SqliteStore {
    /// Readers (WAL lets them run beside the writer).
    pool: SqlitePool,
    /// One connection for every write: writers queue here, in order, instead of spinning in
    /// SQLite's busy handler (which sleeps, and made the slowest writes wait ~100 ms).
    write_pool: SqlitePool,
    /// A private in-memory database: `write_pool` is `pool` (one connection for both).
    shared_writer: bool,
    /// Begins, settles and webhook events, grouped into shared transactions on `write_pool`.
    pub(crate) group: crate::group::GroupWriter,
    /// Owned by every clone: the WAL checkpointer ends when the last one is gone.
    _checkpointer: Option<std::sync::Arc<()>>,
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
            // Savepoint journals in memory: on the default (files) a group's savepoints spill
            // to a new temporary file past 64 KiB, about 70 writes per execution.
            .pragma("temp_store", "memory")
            // The checkpointer task copies the WAL back; the writer only past this (see
            // `checkpoint.rs`).
            .pragma("wal_autocheckpoint", checkpoint::BACKSTOP_PAGES.to_string())
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
        // No ping before each use (sqlx's default): a connection to a local file does not go
        // stale, and the ping is a round trip to the connection's thread on every query.
        let pool = SqlitePoolOptions::new()
            .max_connections(max)
            .test_before_acquire(false)
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
                .test_before_acquire(false)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(options)
                .await
                .with_context(|| "opening the SQLite database for writing")?
        };
        // A private in-memory database has no WAL to copy back.
        let checkpointer = if in_memory {
            None
        } else {
            let file = sync_target(&pool).await;
            let alive = std::sync::Arc::new(());
            checkpoint::start(pool.clone(), file, std::sync::Arc::downgrade(&alive));
            Some(alive)
        };
        Ok(Self {
            group: group::start(write_pool.clone(), in_memory),
            pool,
            write_pool,
            shared_writer: in_memory,
            _checkpointer: checkpointer,
        })
    }

    /// Applies pending migrations from `migrations/sqlite`.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        crate::migrations::sqlite()
            .run(&self.write_pool)
            .await
            .context("applying SQLite migrations")
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
    async fn begin_write(&self) -> Result<Tx, sqlx::Error> {
        self.write_pool.begin_with("BEGIN IMMEDIATE").await
    }

    /// Where single-statement writes go.
    fn writer(&self) -> &SqlitePool {
        &self.write_pool
    }
}

/// The database file the checkpointer syncs (see `checkpoint.rs`); without one (a temporary
/// database, or a file that cannot be opened again) it only copies, as before.
async fn sync_target(pool: &SqlitePool) -> Option<std::sync::Arc<std::fs::File>> {
    let path = match checkpoint::database_path(pool).await {
        Ok(path) => path?,
        Err(e) => {
            tracing::warn!(error = %e, "reading the SQLite database's path; the WAL checkpointer will not sync the file");
            return None;
        }
    };
    checkpoint::database_file(std::path::Path::new(&path))
        .inspect_err(|e| tracing::warn!(error = %e, "opening the SQLite database file; the WAL checkpointer will not sync it"))
        .ok()
}

fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn from_millis(ms: i64) -> Result<DateTime<Utc>, StoreError> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .ok_or_else(|| StoreError(anyhow!("timestamp {ms} out of range")))
}
