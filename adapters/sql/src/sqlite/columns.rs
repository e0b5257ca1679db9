//! How a SQLite row reads as plain values for the shared row functions (`crate::rows`): times
//! from INTEGER milliseconds, hashes from hex TEXT, JSON from TEXT, flags from INTEGER.

use chrono::{DateTime, Utc};
use sqlx::{Row, Sqlite, sqlite::SqliteRow};
use svc_ports::{KeyHash, StoreError};

use super::from_millis;
use crate::rows::{Columns, corrupt_column};

/// One column of a row, as the Rust type its SQLite value decodes to.
fn col<'r, T>(row: &'r SqliteRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Sqlite> + sqlx::Type<Sqlite>,
{
    row.try_get(name)
        .map_err(|e| StoreError(anyhow::Error::new(e).context(format!("reading `{name}`"))))
}

impl Columns for SqliteRow {
    fn text(&self, name: &str) -> Result<String, StoreError> {
        col(self, name)
    }
    fn text_opt(&self, name: &str) -> Result<Option<String>, StoreError> {
        col(self, name)
    }
    fn int(&self, name: &str) -> Result<i64, StoreError> {
        col(self, name)
    }
    fn int_opt(&self, name: &str) -> Result<Option<i64>, StoreError> {
        col(self, name)
    }
    fn flag(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.int(name)? != 0)
    }
    fn bytes(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        col(self, name)
    }
    fn bytes_opt(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        col(self, name)
    }
    fn time(&self, name: &str) -> Result<DateTime<Utc>, StoreError> {
        from_millis(self.int(name)?)
    }
    fn time_opt(&self, name: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.int_opt(name)?.map(from_millis).transpose()
    }
    fn hash(&self, name: &str) -> Result<KeyHash, StoreError> {
        KeyHash::from_hex(&self.text(name)?).ok_or_else(|| corrupt_column(name, "bad hex"))
    }
    /// Kept as hex: read back as written.
    fn hash_hex(&self, name: &str) -> Result<String, StoreError> {
        self.text(name)
    }
    fn json(&self, name: &str) -> Result<serde_json::Value, StoreError> {
        serde_json::from_str(&self.text(name)?).map_err(|e| corrupt_column(name, e))
    }
}
