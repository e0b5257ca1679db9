//! Limits counted in the store, so that every instance on it shares them: wrong codes per
//! client address (the lockout) and readiness scans per client address.

use std::{sync::Arc, time::Duration};

use svc_ports::{
    ClientAddress, Clock, LimitBucket, LimitDecision, LimitKey, LimitStore, StoreError,
};

/// A wait as a person says it: "40 seconds", "15 minutes", "1 hour" (rounded up).
pub fn wait_in_words(wait: Duration) -> String {
    let secs = wait.as_secs().max(1);
    let (n, unit) = if secs < 60 {
        (secs, "second")
    } else if secs <= 90 * 60 {
        (secs.div_ceil(60), "minute")
    } else {
        (secs.div_ceil(3600), "hour")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Why a shared limit did not let a request through.
#[derive(Debug, thiserror::Error)]
pub enum Limited {
    #[error("over the limit; try again in {}", wait_in_words(*.retry_after))]
    Over { retry_after: Duration },
    /// The store that counts the limit failed: the request is refused rather than let through
    /// uncounted.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One limit: at most `limit` hits per key in a fixed `window`, counted in the store.
#[derive(Clone)]
pub struct SharedLimit {
    store: Arc<dyn LimitStore>,
    clock: Arc<dyn Clock>,
    bucket: LimitBucket,
    window: Duration,
    limit: u32,
}

impl std::fmt::Debug for SharedLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLimit")
            .field("bucket", &self.bucket)
            .field("window", &self.window)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Requests whose address is unknown share one key.
fn key_of(ip: Option<ClientAddress>) -> LimitKey {
    LimitKey::from(ip.unwrap_or(ClientAddress::of(std::net::IpAddr::V4(
        std::net::Ipv4Addr::UNSPECIFIED,
    ))))
}

impl SharedLimit {
    pub fn new(
        store: Arc<dyn LimitStore>,
        clock: Arc<dyn Clock>,
        bucket: LimitBucket,
        window: Duration,
        limit: u32,
    ) -> Self {
        Self {
            store,
            clock,
            bucket,
            window,
            limit,
        }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// Counts one hit for `ip` (requests without an address share one key).
    pub async fn hit(&self, ip: Option<ClientAddress>) -> Result<(), Limited> {
        let key = key_of(ip);
        let decision = self
            .store
            .hit(self.bucket, &key, self.window, self.limit, self.clock.now())
            .await?;
        match decision {
            LimitDecision::Allowed { remaining: 0 } if self.bucket == LimitBucket::WrongCode => {
                tracing::warn!(client_ip = %key, "address locked out after too many wrong codes");
                Ok(())
            }
            LimitDecision::Allowed { .. } => Ok(()),
            LimitDecision::Limited { retry_after } => Err(Limited::Over { retry_after }),
        }
    }

    /// Gives back a hit that turned out not to count (a right code). A failure is only logged:
    /// the hit then stays counted until its window ends.
    pub async fn release(&self, ip: Option<ClientAddress>) {
        let key = key_of(ip);
        if let Err(e) = self
            .store
            .release(self.bucket, &key, self.clock.now())
            .await
        {
            tracing::warn!(limit = %self.bucket, error = %e, "giving back a counted hit failed");
        }
    }
}

/// Deletes the windows of every shared limit that ended; run on a timer.
pub async fn purge_expired(store: &dyn LimitStore, clock: &dyn Clock) -> Result<u64, StoreError> {
    store.purge_limits(clock.now()).await
}

#[cfg(test)]
mod wait_tests {
    use super::wait_in_words;
    use std::time::Duration;

    #[test]
    fn waits_read_in_seconds_minutes_or_hours() {
        let w = |s| wait_in_words(Duration::from_secs(s));
        assert_eq!(w(0), "1 second");
        assert_eq!(w(40), "40 seconds");
        assert_eq!(w(60), "1 minute");
        assert_eq!(w(61), "2 minutes");
        assert_eq!(w(900), "15 minutes");
        assert_eq!(w(3600), "60 minutes");
        assert_eq!(w(5401), "2 hours");
    }
}
