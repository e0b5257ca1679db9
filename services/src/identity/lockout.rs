//! The in-process lockout of a client address after too many wrong codes.

use std::{collections::HashMap, sync::Arc, sync::Mutex, time::Duration};

use chrono::{DateTime, Utc};
use svc_ports::{ClientAddress, Clock};

/// Counts wrong codes per client address in a fixed window (read from the `Clock` port) and
/// locks the address out past the limit. In process: each instance counts its own share (the
/// per-code limits are in the store).
pub struct WrongCodeCounter {
    limit: u32,
    window: chrono::Duration,
    clock: Arc<dyn Clock>,
    by_ip: Mutex<HashMap<ClientAddress, (u32, DateTime<Utc>)>>,
}

impl std::fmt::Debug for WrongCodeCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrongCodeCounter")
            .field("limit", &self.limit)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl WrongCodeCounter {
    pub fn new(limit: u32, window: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            limit,
            window: chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX),
            clock,
            by_ip: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<ClientAddress, (u32, DateTime<Utc>)>> {
        self.by_ip.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(wait)` while the address is locked out.
    pub fn check(&self, ip: Option<ClientAddress>) -> Result<(), Duration> {
        let Some(ip) = ip else { return Ok(()) };
        let now = self.clock.now();
        let mut map = self.entries();
        match map.get(&ip) {
            Some((_, start)) if now - *start >= self.window => {
                map.remove(&ip);
                Ok(())
            }
            Some((n, start)) if *n >= self.limit => {
                Err((self.window - (now - *start)).to_std().unwrap_or_default())
            }
            _ => Ok(()),
        }
    }

    pub fn record_failure(&self, ip: Option<ClientAddress>) {
        let Some(ip) = ip else { return };
        let now = self.clock.now();
        let mut map = self.entries();
        // Bound memory under a flood of addresses: forget finished windows first.
        if map.len() > 100_000 {
            let window = self.window;
            map.retain(|_, (_, start)| now - *start < window);
        }
        let entry = map.entry(ip).or_insert((0, now));
        if now - entry.1 >= self.window {
            *entry = (0, now);
        }
        entry.0 += 1;
        if entry.0 == self.limit {
            tracing::warn!(client_ip = %ip, "address locked out after too many wrong codes");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock the test moves.
    struct Manual(Mutex<DateTime<Utc>>);

    impl Clock for Manual {
        fn now(&self) -> DateTime<Utc> {
            *self.0.lock().unwrap()
        }
    }

    #[test]
    fn wrong_codes_lock_an_address_out_and_the_window_ends() {
        let clock = Arc::new(Manual(Mutex::new(DateTime::UNIX_EPOCH)));
        let counter = WrongCodeCounter::new(3, Duration::from_secs(900), clock.clone());
        let ip: Option<ClientAddress> = Some("203.0.113.7".parse().unwrap());
        let other: Option<ClientAddress> = Some("203.0.113.8".parse().unwrap());
        // Another host of the same IPv6 /64 is the same client (issue 15).
        let v6: Option<ClientAddress> = Some("2001:db8:5:6::1".parse().unwrap());
        let v6_other_host: Option<ClientAddress> = Some("2001:db8:5:6:abcd::9".parse().unwrap());
        for _ in 0..3 {
            counter.record_failure(v6);
        }
        assert!(counter.check(v6_other_host).is_err());
        for _ in 0..2 {
            counter.record_failure(ip);
            assert!(counter.check(ip).is_ok());
        }
        counter.record_failure(ip);
        *clock.0.lock().unwrap() += chrono::Duration::seconds(100);
        assert_eq!(counter.check(ip), Err(Duration::from_secs(800)));
        assert!(
            counter.check(other).is_ok(),
            "other addresses are not affected"
        );
        assert!(counter.check(None).is_ok());
        *clock.0.lock().unwrap() += chrono::Duration::seconds(800);
        assert!(
            counter.check(ip).is_ok(),
            "the lockout ends with the window"
        );
    }
}
