//! The lockout of a client address after too many wrong codes, counted in the store so that
//! every instance on it shares one count.
//!
//! Each attempt takes a slot before its code is looked at and gives it back when the code
//! turns out right (or the attempt was about something else than a code): a wrong code keeps
//! its slot. So even concurrent attempts spread over many instances get at most the limit of
//! wrong codes checked per window; the next attempt is `locked_out` until the window ends.

use std::{sync::Arc, time::Duration};

use svc_ports::{ClientAddress, Clock, LimitBucket, LimitStore};

use super::IdentityFailure;
use crate::limits::{Limited, SharedLimit};

#[derive(Debug, Clone)]
pub struct WrongCodeCounter(SharedLimit);

impl WrongCodeCounter {
    pub fn new(
        store: Arc<dyn LimitStore>,
        clock: Arc<dyn Clock>,
        limit: u32,
        window: Duration,
    ) -> Self {
        Self(SharedLimit::new(
            store,
            clock,
            LimitBucket::WrongCode,
            window,
            limit,
        ))
    }

    /// Takes the slot of one attempt: `LockedOut` while the address is locked out. An attempt
    /// without a known address (the MCP and A2A faces do not pass one) is not counted here:
    /// one shared count would let anyone lock every such caller out; the per-code tries still
    /// bound it.
    pub async fn take(&self, ip: Option<ClientAddress>) -> Result<(), IdentityFailure> {
        if ip.is_none() {
            return Ok(());
        }
        match self.0.hit(ip).await {
            Ok(()) => Ok(()),
            Err(Limited::Over { retry_after }) => Err(IdentityFailure::LockedOut { retry_after }),
            Err(Limited::Store(e)) => Err(e.into()),
        }
    }

    /// Gives the slot back: the attempt did not present a wrong code.
    pub async fn give_back(&self, ip: Option<ClientAddress>) {
        if ip.is_some() {
            self.0.release(ip).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use svc_ports::{LimitDecision, limits::MockLimitStore, system::ManualClock};

    #[tokio::test]
    async fn a_limited_slot_is_a_lockout_and_a_store_failure_is_no_pass() {
        let mut store = MockLimitStore::new();
        let mut answers = vec![
            Ok(LimitDecision::Limited {
                retry_after: Duration::from_secs(800),
            }),
            Ok(LimitDecision::Allowed { remaining: 3 }),
            Err(svc_ports::StoreError(anyhow::anyhow!("down"))),
        ];
        store
            .expect_hit()
            .withf(|bucket, key, window, limit, _| {
                *bucket == LimitBucket::WrongCode
                    && key.as_str() == "2001:db8:5:6::/64"
                    && *window == Duration::from_secs(900)
                    && *limit == 20
            })
            .times(3)
            .returning(move |_, _, _, _, _| answers.pop().unwrap());
        store.expect_release().times(1).returning(|_, _, _| Ok(()));
        let clock = Arc::new(ManualClock::at(DateTime::<Utc>::UNIX_EPOCH));
        let counter = WrongCodeCounter::new(Arc::new(store), clock, 20, Duration::from_secs(900));
        let ip = Some("2001:db8:5:6::1".parse().unwrap());
        assert!(matches!(
            counter.take(ip).await,
            Err(IdentityFailure::Internal(_))
        ));
        counter.take(ip).await.unwrap();
        counter.give_back(ip).await;
        // Without an address nothing is counted (the mock would refuse a fourth hit).
        counter.take(None).await.unwrap();
        counter.give_back(None).await;
        match counter.take(ip).await {
            Err(IdentityFailure::LockedOut { retry_after }) => {
                assert_eq!(retry_after, Duration::from_secs(800))
            }
            other => panic!("{other:?}"),
        }
    }
}
