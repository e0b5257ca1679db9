//! In-memory shared limits: one process's counters (the sandbox runs alone), atomic under the
//! store's one lock like every other memory operation.

use std::{collections::HashMap, time::Duration};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    LimitBucket, LimitDecision, LimitKey, LimitStore, StoreError,
    limits::{decide, window_end},
};

use crate::MemoryStore;

/// Past this many windows, ended ones are dropped on the next hit (the purge job also runs).
const TIDY_ABOVE: usize = 100_000;

#[derive(Default)]
pub(crate) struct LimitState {
    /// (bucket, key) -> (hits, window end).
    windows: HashMap<(LimitBucket, LimitKey), (u64, DateTime<Utc>)>,
}

/// Times are kept to the millisecond, as the SQL stores keep them.
fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    chrono::SubsecRound::trunc_subsecs(t, 3)
}

#[async_trait]
impl LimitStore for MemoryStore {
    async fn hit(
        &self,
        bucket: LimitBucket,
        key: &LimitKey,
        window: Duration,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<LimitDecision, StoreError> {
        let now = ms(now);
        let mut s = self.lock();
        let windows = &mut s.limits.windows;
        if windows.len() > TIDY_ABOVE {
            windows.retain(|_, (_, ends_at)| *ends_at > now);
        }
        let entry = windows.entry((bucket, key.clone())).or_insert((0, now));
        if entry.1 <= now {
            *entry = (0, window_end(now, window));
        }
        entry.0 += 1;
        Ok(decide(entry.0, limit, entry.1, now))
    }

    async fn release(
        &self,
        bucket: LimitBucket,
        key: &LimitKey,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let now = ms(now);
        let mut s = self.lock();
        if let Some((hits, ends_at)) = s.limits.windows.get_mut(&(bucket, key.clone()))
            && *ends_at > now
            && *hits > 0
        {
            *hits -= 1;
        }
        Ok(())
    }

    async fn purge_limits(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        let now = ms(now);
        let mut s = self.lock();
        let before = s.limits.windows.len();
        s.limits.windows.retain(|_, (_, ends_at)| *ends_at > now);
        Ok((before - s.limits.windows.len()) as u64)
    }
}
