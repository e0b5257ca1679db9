//! The clock and randomness are ports so tests can control expiry and identifiers.

use chrono::{DateTime, Utc};
use ulid::Ulid;

/// Current time, UTC.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// Unguessable identifiers and secrets. Implementations MUST use a cryptographically secure
/// generator: key secrets come from here.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Entropy: Send + Sync {
    /// A new ULID (time-ordered, 80 random bits).
    fn ulid(&self) -> Ulid;
    /// `len` characters drawn uniformly from [`crate::keys::BASE62`].
    fn base62(&self, len: usize) -> String {
        self.pick(crate::keys::BASE62, len)
    }
    /// `len` characters drawn uniformly and independently from `alphabet` (ASCII); one-time
    /// codes come from here. (A ULID's random part is not: it increments within a millisecond.)
    fn pick(&self, alphabet: &[u8], len: usize) -> String;
}

/// A clock a test moves by hand (with the `mock` feature): caches and windows are tested by
/// advancing it, never by sleeping.
#[cfg(feature = "mock")]
pub struct ManualClock(std::sync::Mutex<DateTime<Utc>>);

#[cfg(feature = "mock")]
impl ManualClock {
    pub fn at(t: DateTime<Utc>) -> Self {
        Self(std::sync::Mutex::new(t))
    }

    pub fn advance(&self, by: chrono::TimeDelta) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

#[cfg(feature = "mock")]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
