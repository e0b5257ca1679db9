//! The in-memory record of the keys in use (one process: it only matters to the contract
//! suite, and to a sandbox that shares nothing).

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{KeyFingerprint, KeyKind, KeySetStore, StoreError};

use crate::MemoryStore;

#[derive(Default)]
pub(crate) struct KeySetState {
    recorded: HashMap<KeyKind, Vec<KeyFingerprint>>,
}

#[async_trait]
impl KeySetStore for MemoryStore {
    async fn recorded_keys(&self, kind: KeyKind) -> Result<Vec<KeyFingerprint>, StoreError> {
        Ok(self
            .lock()
            .key_set
            .recorded
            .get(&kind)
            .cloned()
            .unwrap_or_default())
    }

    async fn record_first_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        _at: DateTime<Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError> {
        let mut s = self.lock();
        let keys = s.key_set.recorded.entry(kind).or_default();
        if keys.is_empty() {
            keys.push(key.clone());
        }
        Ok(keys.clone())
    }

    async fn record_rotated_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        _at: DateTime<Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError> {
        let mut s = self.lock();
        let keys = s.key_set.recorded.entry(kind).or_default();
        if !keys.contains(key) {
            keys.push(key.clone());
        }
        Ok(keys.clone())
    }
}
