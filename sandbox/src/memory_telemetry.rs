//! In-memory agent traffic events, bounded: the sandbox keeps the newest 100,000.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, FunnelCount, StoredEvent,
    store::{StoreError, TelemetryStore},
};

use crate::MemoryStore;

const MAX_EVENTS: usize = 100_000;

#[derive(Default)]
pub(crate) struct TelemetryState {
    events: std::collections::VecDeque<StoredEvent>,
}

#[async_trait]
impl TelemetryStore for MemoryStore {
    async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        let mut s = self.lock();
        for e in events {
            if s.telemetry.events.len() >= MAX_EVENTS {
                s.telemetry.events.pop_front();
            }
            s.telemetry.events.push_back(e.clone());
        }
        Ok(())
    }

    async fn funnel<'a>(
        &self,
        since: DateTime<Utc>,
        account: Option<&'a AccountId>,
    ) -> Result<Vec<FunnelCount>, StoreError> {
        let s = self.lock();
        let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
        for e in s.telemetry.events.iter().filter(|e| {
            e.received_at >= since && account.is_none_or(|a| e.account_id.as_ref() == Some(a))
        }) {
            *counts
                .entry((e.discovery_surface.clone(), e.conversion_state.clone()))
                .or_default() += 1;
        }
        Ok(counts
            .into_iter()
            .map(
                |((discovery_surface, conversion_state), events)| FunnelCount {
                    discovery_surface,
                    conversion_state,
                    events,
                },
            )
            .collect())
    }

    async fn recent_events(&self, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let s = self.lock();
        Ok(s.telemetry
            .events
            .iter()
            .rev()
            .take(limit as usize)
            .cloned()
            .collect())
    }
}
