//! The in-process lockout of a client address after too many wrong codes.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use svc_ports::ClientAddress;

/// Counts wrong codes per client IP in a fixed window and locks the address out past the limit.
/// In process: each instance counts its own share (the per-code limits are in the store).
#[derive(Debug)]
pub struct WrongCodeCounter {
    limit: u32,
    window: Duration,
    by_ip: Mutex<HashMap<ClientAddress, (u32, Instant)>>,
}

impl WrongCodeCounter {
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            by_ip: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<ClientAddress, (u32, Instant)>> {
        self.by_ip.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(wait)` while the address is locked out.
    pub fn check(&self, ip: Option<ClientAddress>) -> Result<(), Duration> {
        let Some(ip) = ip else { return Ok(()) };
        let mut map = self.entries();
        match map.get(&ip) {
            Some((_, start)) if start.elapsed() >= self.window => {
                map.remove(&ip);
                Ok(())
            }
            Some((n, start)) if *n >= self.limit => {
                Err(self.window.saturating_sub(start.elapsed()))
            }
            _ => Ok(()),
        }
    }

    pub fn record_failure(&self, ip: Option<ClientAddress>) {
        let Some(ip) = ip else { return };
        let mut map = self.entries();
        // Bound memory under a flood of addresses: forget finished windows first.
        if map.len() > 100_000 {
            let window = self.window;
            map.retain(|_, (_, start)| start.elapsed() < window);
        }
        let entry = map.entry(ip).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= self.window {
            *entry = (0, Instant::now());
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

    #[test]
    fn wrong_codes_lock_an_address_out_and_the_window_ends() {
        let counter = WrongCodeCounter::new(3, Duration::from_millis(200));
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
        let wait = counter.check(ip).unwrap_err();
        assert!(wait <= Duration::from_millis(200));
        assert!(
            counter.check(other).is_ok(),
            "other addresses are not affected"
        );
        assert!(counter.check(None).is_ok());
        std::thread::sleep(Duration::from_millis(220));
        assert!(
            counter.check(ip).is_ok(),
            "the lockout ends with the window"
        );
    }
}
