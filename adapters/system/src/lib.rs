//! The real clock and the operating system's secure randomness.

use std::sync::Mutex;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use rand::Rng;
use svc_ports::{Clock, Entropy};
use ulid::Ulid;

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// Millisecond precision: what every store keeps.
    fn now(&self) -> DateTime<Utc> {
        let now = Utc::now();
        now.duration_trunc(TimeDelta::milliseconds(1))
            .unwrap_or(now)
    }
}

/// Draws from the thread-local CSPRNG (ChaCha seeded from the OS). ULIDs are monotonic within
/// the process, so ids sort in creation order even within one millisecond.
#[derive(Default)]
pub struct OsEntropy {
    ulids: Mutex<ulid::Generator>,
}

impl OsEntropy {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Entropy for OsEntropy {
    fn ulid(&self) -> Ulid {
        let mut generator = self.ulids.lock().unwrap_or_else(|p| p.into_inner());
        // Overflow needs 2^80 ids in one millisecond; fall back to a fresh random ULID.
        generator.generate().unwrap_or_else(|_| Ulid::new())
    }

    fn pick(&self, alphabet: &[u8], len: usize) -> String {
        let mut rng = rand::rng();
        // Alphabet sizes need not divide 256: sample indices uniformly, never bytes modulo n.
        (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::keys::BASE62;

    #[test]
    fn base62_has_the_asked_length_and_alphabet() {
        let e = OsEntropy::new();
        let s = e.base62(32);
        assert_eq!(s.len(), 32);
        assert!(s.bytes().all(|b| BASE62.contains(&b)));
        assert_ne!(s, e.base62(32));
    }

    #[test]
    fn ulids_increase_within_a_millisecond() {
        let e = OsEntropy::new();
        let ids: Vec<_> = (0..1000).map(|_| e.ulid()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn clock_has_millisecond_precision() {
        assert_eq!(SystemClock.now().timestamp_subsec_nanos() % 1_000_000, 0);
    }
}
