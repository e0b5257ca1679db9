//! How a Postgres row reads as plain values for the shared row functions (`crate::rows`):
//! TIMESTAMPTZ, BYTEA hashes, JSONB and BOOLEAN as they are.

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use svc_ports::{KeyHash, StoreError};

use super::col;
use crate::rows::{Columns, corrupt_column};

impl Columns for PgRow {
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
        col(self, name)
    }
    fn bytes(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        col(self, name)
    }
    fn bytes_opt(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        col(self, name)
    }
    fn time(&self, name: &str) -> Result<DateTime<Utc>, StoreError> {
        col(self, name)
    }
    fn time_opt(&self, name: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        col(self, name)
    }
    fn hash(&self, name: &str) -> Result<KeyHash, StoreError> {
        KeyHash::from_bytes(&self.bytes(name)?).ok_or_else(|| corrupt_column(name, "not 32 bytes"))
    }
    fn hash_hex(&self, name: &str) -> Result<String, StoreError> {
        Ok(self.hash(name)?.to_hex())
    }
    fn json(&self, name: &str) -> Result<serde_json::Value, StoreError> {
        col(self, name)
    }
}
