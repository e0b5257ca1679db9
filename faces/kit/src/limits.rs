//! Per-IP and per-key request rate limits (governor, GCRA), answered with 429 and
//! `Retry-After`. They only shed load, so each instance counts its own share: with N instances
//! behind a balancer that spreads requests evenly, a client gets up to about N times the
//! setting. The limits that protect accounts (wrong codes, readiness scans) are counted in the
//! store instead, shared by every instance (`svc_services::limits`).

use std::{num::NonZeroU32, sync::Arc, time::Duration, time::SystemTime};

use governor::{
    Quota, RateLimiter, clock::Clock as _, middleware::NoOpMiddleware,
    state::keyed::DefaultKeyedStateStore,
};
use svc_ports::{ApiKeyId, ClientAddress, Clock, FailureClass};

use super::problem::ApiProblem;

/// The service's [`Clock`] as governor reads one, so the limits run on the time every other
/// rule of the service runs on (a test moves them by moving its clock, and nothing waits on the
/// wall). A clock set back only makes the wait longer: governor saturates at zero.
#[derive(Clone)]
struct ServiceClock(Arc<dyn Clock>);

impl governor::clock::Clock for ServiceClock {
    type Instant = SystemTime;

    fn now(&self) -> SystemTime {
        self.0.now().into()
    }
}

type Limiter<K> =
    RateLimiter<K, DefaultKeyedStateStore<K>, ServiceClock, NoOpMiddleware<SystemTime>>;

#[derive(Clone)]
pub struct RateLimits {
    per_ip: Arc<Limiter<ClientAddress>>,
    per_key: Arc<Limiter<ApiKeyId>>,
    clock: ServiceClock,
}

fn quota(per_minute: u32) -> Quota {
    let n = NonZeroU32::new(per_minute.max(1)).unwrap_or(NonZeroU32::MIN);
    Quota::per_minute(n).allow_burst(n)
}

fn limiter<K: Clone + std::hash::Hash + Eq>(
    per_minute: u32,
    clock: &ServiceClock,
) -> Arc<Limiter<K>> {
    Arc::new(RateLimiter::new(
        quota(per_minute),
        DefaultKeyedStateStore::default(),
        clock.clone(),
    ))
}

impl RateLimits {
    pub fn new(per_ip_per_minute: u32, per_key_per_minute: u32, clock: Arc<dyn Clock>) -> Self {
        let clock = ServiceClock(clock);
        Self {
            per_ip: limiter(per_ip_per_minute, &clock),
            per_key: limiter(per_key_per_minute, &clock),
            clock,
        }
    }

    pub fn check_ip(&self, ip: ClientAddress) -> Result<(), ApiProblem> {
        self.per_ip.check_key(&ip).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            limited("Too many requests from this address.", wait)
        })
    }

    pub fn check_key(&self, key: &ApiKeyId) -> Result<(), ApiProblem> {
        self.per_key.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            limited("Too many requests with this API key.", wait)
        })
    }

    /// `n` more requests with this key at once (a batch); 0 is always allowed.
    pub fn check_key_n(&self, key: &ApiKeyId, n: usize) -> Result<(), ApiProblem> {
        let Some(n) = u32::try_from(n).ok().and_then(NonZeroU32::new) else {
            return Ok(());
        };
        match self.per_key.check_key_n(key, n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Err(limited("Too many requests with this API key.", wait))
            }
            // More than the whole burst: never allowed, however long one waits, so not a 429
            // to retry but a request to change.
            Err(_) => Err(ApiProblem::new(
                FailureClass::InvalidRequest,
                "This batch is larger than the key's rate limit allows at once: send fewer URLs per batch.",
            )),
        }
    }

    /// Forgets idle clients so the tables stay small; run on a timer.
    pub fn housekeep(&self) {
        self.per_ip.retain_recent();
        self.per_ip.shrink_to_fit();
        self.per_key.retain_recent();
        self.per_key.shrink_to_fit();
    }
}

/// The answer to a shared limit (`svc_services::limits::SharedLimit`): 429 with `Retry-After`
/// when over it, 503 when the store that counts it cannot be reached (nothing is let through
/// uncounted).
pub fn shared_limit(
    outcome: Result<(), svc_services::limits::Limited>,
    detail: &str,
) -> Result<(), ApiProblem> {
    match outcome {
        Ok(()) => Ok(()),
        Err(svc_services::limits::Limited::Over { retry_after }) => {
            Err(limited(detail, retry_after))
        }
        Err(svc_services::limits::Limited::Store(e)) => Err(ApiProblem::failure(&e)),
    }
}

fn limited(detail: &str, wait: Duration) -> ApiProblem {
    ApiProblem::new(FailureClass::RateLimited, detail)
        .retry_after(wait.max(Duration::from_millis(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::system::ManualClock;
    use ulid::Ulid;

    fn limits(per_ip: u32, per_key: u32) -> (RateLimits, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::at(chrono::Utc::now()));
        (RateLimits::new(per_ip, per_key, clock.clone()), clock)
    }

    #[test]
    fn the_burst_passes_then_429_with_a_wait() {
        let (limits, _) = limits(3, 2);
        let ip: ClientAddress = "203.0.113.9".parse().unwrap();
        for _ in 0..3 {
            limits.check_ip(ip).unwrap();
        }
        let p = limits.check_ip(ip).unwrap_err();
        assert_eq!(p.class, FailureClass::RateLimited);
        assert!(p.retry_after.unwrap() > Duration::from_secs(1));
        // Another address is not affected.
        limits.check_ip("203.0.113.10".parse().unwrap()).unwrap();

        let key = ApiKeyId::from_ulid(Ulid::nil());
        limits.check_key(&key).unwrap();
        limits.check_key(&key).unwrap();
        assert!(limits.check_key(&key).is_err());
    }

    /// A batch of n URLs spends n from the key's budget; one larger than the burst never passes.
    #[test]
    fn a_batch_spends_one_per_url() {
        let (limits, _) = limits(100, 5);
        let key = ApiKeyId::from_ulid(Ulid::nil());
        limits.check_key(&key).unwrap();
        limits.check_key_n(&key, 0).unwrap();
        limits.check_key_n(&key, 3).unwrap();
        assert!(limits.check_key_n(&key, 2).is_err(), "1 + 3 + 2 > 5");
        limits.check_key(&key).unwrap();
        let other = ApiKeyId::from_ulid(Ulid::from_parts(1, 1));
        let p = limits.check_key_n(&other, 6).unwrap_err();
        assert!(p.detail.contains("larger than"), "{}", p.detail);
        assert_eq!(
            (p.class, p.retry_after),
            (FailureClass::InvalidRequest, None)
        );
    }

    /// Issue 15: the request limit keyed IPv6 clients by their full address, so one client
    /// rotating through its /64 was never limited.
    #[test]
    fn requests_share_one_budget_per_ipv6_64() {
        let (limits, _) = limits(2, 100);
        for host in ["2001:db8:9:9::1", "2001:db8:9:9::2"] {
            limits.check_ip(host.parse().unwrap()).unwrap();
        }
        assert!(
            limits
                .check_ip("2001:db8:9:9:1:2:3:4".parse().unwrap())
                .is_err()
        );
        limits.check_ip("2001:db8:9:a::1".parse().unwrap()).unwrap();
    }

    /// The limits run on the service's clock: a burst spent stays spent however long the test
    /// takes, the wait it names is the quota's, and it comes back as the clock moves.
    #[test]
    fn the_budget_comes_back_as_the_service_clock_moves() {
        let (limits, clock) = limits(100, 2);
        let key = ApiKeyId::from_ulid(Ulid::nil());
        limits.check_key(&key).unwrap();
        limits.check_key(&key).unwrap();
        let p = limits.check_key(&key).unwrap_err();
        // Two a minute: the next one is 30 s after the first.
        assert_eq!(p.retry_after, Some(Duration::from_secs(30)));
        clock.advance(chrono::TimeDelta::seconds(29));
        let p = limits.check_key(&key).unwrap_err();
        assert_eq!(p.retry_after, Some(Duration::from_secs(1)));
        clock.advance(chrono::TimeDelta::seconds(1));
        limits.check_key(&key).unwrap();
        assert!(limits.check_key(&key).is_err());
        // A clock set back lends nothing.
        clock.advance(chrono::TimeDelta::seconds(-600));
        assert!(limits.check_key(&key).is_err());
    }
}
