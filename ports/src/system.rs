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
    fn base62(&self, len: usize) -> String;
}
