//! Postgres: the store for more than one machine. Every statement is plain text next to the
//! Rust that runs it, one file per port family, except the three an execution writes (its
//! task's begin and settle, its webhook event): they are the body of `svc_run_items` and
//! `svc_store_event` in migration 0019, so a group of executions is one call (`group.rs`).
//! Values are bound as Postgres types (TIMESTAMPTZ, BYTEA, JSONB, BOOLEAN; see
//! `migrations/postgres/0011_postgres_types.sql`).
//!
//! Read committed is enough everywhere: balance changes are single `UPDATE ... RETURNING`
//! statements (row-locked), and uniqueness that guards money is a constraint.

mod a2a;
mod accounts;
mod activity;
mod authority;
mod billing;
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

use std::{fmt::Display, time::Duration};

pub(crate) use crate::errors::{backend, corrupt, is_foreign_key_violation, is_unique_violation};
use anyhow::{Context, anyhow};
use chrono::{DateTime, SubsecRound, Utc};
use sqlx::{
    PgPool, Postgres, Row,
    postgres::{PgPoolOptions, PgRow},
};
use svc_ports::{KeyHash, StoreError};

/// How long a pooled connection may sit unused before it is pinged on its next use.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    /// Begins (without an authority), settles and events, grouped into shared transactions.
    pub(crate) group: crate::group::GroupWriter,
}

impl PostgresStore {
    /// Connects to `postgres://...` without migrating.
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        // sqlx pings every connection before each use by default: a round trip per query, as
        // many as the execution path's statements. Only a connection idle for a while is
        // checked (one the server may have dropped, e.g. across a restart); one in steady use
        // is known alive, and if it died just now its statement fails as unreachable (503).
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for > IDLE_BEFORE_PING {
                        use sqlx::Connection;
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .connect(url)
            .await
            .with_context(|| "connecting to Postgres")?;
        Ok(Self {
            group: group::start(pool.clone()),
            pool,
        })
    }

    /// Applies pending migrations from `migrations/postgres`. sqlx takes an advisory lock, so
    /// instances starting together migrate once.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        crate::migrations::postgres()
            .run(&self.pool)
            .await
            .with_context(|| "applying Postgres migrations")
    }

    pub async fn open(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let store = Self::connect(url, max_connections).await?;
        store.migrate().await?;
        Ok(store)
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Times are kept to the millisecond, as the SQLite store keeps them and as every row written
/// before migration 0011 was, so both stores answer alike.
fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(3)
}

/// A time inside an item of `svc_run_items` (JSON), to the millisecond as `ms` keeps it.
fn item_time(t: DateTime<Utc>) -> String {
    ms(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// One column of a row, as the Rust type its Postgres type decodes to.
fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get(name)
        .map_err(|e| StoreError(anyhow::Error::new(e).context(format!("reading `{name}`"))))
}

/// A TEXT column parsed into a domain type.
fn parsed<T, E: Display>(
    row: &PgRow,
    name: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, StoreError> {
    parse(&col::<String>(row, name)?)
        .map_err(|e| StoreError(anyhow!("corrupt `{name}` in store: {e}")))
}

/// A nullable TEXT column parsed into a domain type.
fn parsed_opt<T, E: Display>(
    row: &PgRow,
    name: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<Option<T>, StoreError> {
    col::<Option<String>>(row, name)?
        .map(|s| parse(&s))
        .transpose()
        .map_err(|e| StoreError(anyhow!("corrupt `{name}` in store: {e}")))
}

/// A BYTEA SHA-256 column.
fn hash(row: &PgRow, name: &'static str) -> Result<KeyHash, StoreError> {
    KeyHash::from_bytes(&col::<Vec<u8>>(row, name)?).ok_or_else(|| corrupt(name)("not 32 bytes"))
}

/// JSONB cannot hold a NUL (`\u0000`): refused here with a clear error instead of a failed
/// statement. The callers never produce one (see migration 0011).
fn jsonb_safe(value: &serde_json::Value, what: &'static str) -> Result<(), StoreError> {
    use serde_json::Value;
    fn has_nul(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().any(has_nul),
            Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
            _ => false,
        }
    }
    if has_nul(value) {
        return Err(StoreError(anyhow!(
            "{what} holds a NUL character (U+0000), which Postgres JSONB cannot store"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    #[test]
    fn times_keep_milliseconds() {
        let t = chrono::Utc.timestamp_nanos(1_780_000_000_123_456_789);
        assert_eq!(
            super::ms(t).timestamp_nanos_opt(),
            Some(1_780_000_000_123_000_000)
        );
    }

    #[test]
    fn a_nul_anywhere_in_a_document_is_refused() {
        assert!(super::jsonb_safe(&json!({"a": ["x", {"b": 1}]}), "doc").is_ok());
        assert!(super::jsonb_safe(&json!({"a": ["x\u{0}"]}), "doc").is_err());
        assert!(super::jsonb_safe(&json!({"k\u{0}": 1}), "doc").is_err());
    }
}
