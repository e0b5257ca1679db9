//! In-memory readiness scans, bounded: the sandbox keeps the newest 10,000 reports.

use std::collections::{HashMap, VecDeque};

use anyhow::anyhow;
use async_trait::async_trait;
use svc_ports::{
    ScanId, ScanReport,
    store::{ScanStore, StoreError},
};

use crate::MemoryStore;

const MAX_SCANS: usize = 10_000;

#[derive(Default)]
pub(crate) struct ReadinessState {
    scans: HashMap<ScanId, ScanReport>,
    order: VecDeque<ScanId>,
}

#[async_trait]
impl ScanStore for MemoryStore {
    async fn insert_scan(&self, report: &ScanReport) -> Result<(), StoreError> {
        let mut s = self.lock();
        let state = &mut s.readiness;
        if state.scans.contains_key(&report.scan_id) {
            return Err(StoreError(anyhow!(
                "scan {} is already stored",
                report.scan_id
            )));
        }
        if state.order.len() >= MAX_SCANS
            && let Some(oldest) = state.order.pop_front()
        {
            state.scans.remove(&oldest);
        }
        state.order.push_back(report.scan_id.clone());
        state.scans.insert(report.scan_id.clone(), report.clone());
        Ok(())
    }

    async fn scan(&self, id: &ScanId) -> Result<Option<ScanReport>, StoreError> {
        Ok(self.lock().readiness.scans.get(id).cloned())
    }
}
