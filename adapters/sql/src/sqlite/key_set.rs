//! `KeySetStore`: the keys the instances sharing this database use, by identity (kid or HMAC
//! fingerprint), one row per key; at most one first key per kind (migration 0013). One SQLite
//! file usually has one instance, but recording is harmless and catches a lost key file.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{KeyFingerprint, KeyKind, KeySetStore, StoreError};

use super::{SqliteStore, backend, corrupt, millis};

impl SqliteStore {
    async fn key_set_of(&self, kind: KeyKind) -> Result<Vec<KeyFingerprint>, StoreError> {
        // Read on the writer: the answer must see the write just made.
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT fingerprint FROM key_set WHERE kind = $1 \
             ORDER BY is_first DESC, recorded_at, fingerprint",
        )
        .bind(kind.as_str())
        .fetch_all(self.writer())
        .await
        .map_err(|e| backend(e, "reading the recorded keys"))?;
        rows.iter()
            .map(|f| KeyFingerprint::parse(f).map_err(corrupt("key fingerprint")))
            .collect()
    }
    /// Records the key (once; a key already recorded stays as it is), then reads the record.
    async fn record_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        first: bool,
        at: DateTime<Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError> {
        sqlx::query(
            "INSERT INTO key_set (kind, fingerprint, is_first, recorded_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(kind.as_str())
        .bind(key.as_str())
        .bind(first)
        .bind(millis(at))
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "recording a key"))?;
        self.key_set_of(kind).await
    }
}

#[async_trait]
impl KeySetStore for SqliteStore {
    async fn recorded_keys(&self, kind: KeyKind) -> Result<Vec<KeyFingerprint>, StoreError> {
        self.key_set_of(kind).await
    }

    async fn record_first_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        at: DateTime<Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError> {
        // A second first key of the kind violates `key_set_one_first`: nothing happens, and the
        // read sees the winner's.
        self.record_key(kind, key, true, at).await
    }

    async fn record_rotated_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        at: DateTime<Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError> {
        self.record_key(kind, key, false, at).await
    }
}
