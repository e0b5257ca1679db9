//! Limits shared by every instance on one store: counted hits per key in fixed windows.
//!
//! Per-request rate limits stay in each process (they only shed load); the limits that protect
//! accounts and money (wrong codes per address, readiness scans per address) are counted here,
//! so N instances behind a load balancer allow what one would.

use std::{fmt, time::Duration};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{network::ClientAddress, store::StoreError};

/// What a limit counts. Each bucket is its own namespace of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitBucket {
    /// Wrong one-time codes (device user codes, emailed codes) per client address.
    WrongCode,
    /// Readiness scans per client address.
    Scan,
}

impl LimitBucket {
    pub const ALL: [LimitBucket; 2] = [LimitBucket::WrongCode, LimitBucket::Scan];

    pub fn as_str(self) -> &'static str {
        match self {
            LimitBucket::WrongCode => "wrong_code",
            LimitBucket::Scan => "scan",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.as_str() == s)
    }
}

impl fmt::Display for LimitBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a limit is counted by: 1 to [`LimitKey::MAX_LEN`] printable ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LimitKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a limit key is 1 to 128 printable ASCII characters")]
pub struct LimitKeyError;

impl LimitKey {
    pub const MAX_LEN: usize = 128;

    pub fn parse(s: &str) -> Result<Self, LimitKeyError> {
        let ok = (1..=Self::MAX_LEN).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(LimitKeyError)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<ClientAddress> for LimitKey {
    /// The counted address: an IPv4 address, or an IPv6 client's /64 (`2001:db8:1:2::/64`).
    fn from(ip: ClientAddress) -> Self {
        Self(ip.to_string())
    }
}

impl fmt::Display for LimitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How one hit was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitDecision {
    /// Within the limit; `remaining` more hits fit in this window.
    Allowed { remaining: u32 },
    /// Over the limit until the window ends, `retry_after` from now (never zero).
    Limited { retry_after: Duration },
}

impl LimitDecision {
    pub fn is_allowed(self) -> bool {
        matches!(self, LimitDecision::Allowed { .. })
    }
}

/// Counters of hits per (bucket, key) in fixed windows, shared by every instance on the store.
///
/// Contract (the suite in `contract-tests/src/limits.rs` holds every implementation to it):
/// - a window of a (bucket, key) starts at its first hit after the previous window ended, and
///   ends `window` later; a hit at or after the end starts a new window with a count of 1;
/// - [`LimitStore::hit`] counts one hit and decides in ONE atomic operation: of N concurrent
///   hits on one key with limit L in a fresh window, exactly min(N, L) are allowed, on every
///   instance sharing the store;
/// - hits over the limit are counted too, but never move the window's end;
/// - buckets and keys are independent of each other;
/// - times are kept to the millisecond; `window` is at least one millisecond.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait LimitStore: Send + Sync {
    /// Counts one hit on (`bucket`, `key`) at `now`. Answers `Allowed { remaining }` when the
    /// window's count, this hit included, is at most `limit` (`remaining` = `limit` - count),
    /// else `Limited { retry_after }` with the time left until the window ends.
    async fn hit(
        &self,
        bucket: LimitBucket,
        key: &LimitKey,
        window: Duration,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<LimitDecision, StoreError>;

    /// Gives back one hit of the window current at `now` (an attempt that turned out not to
    /// count, such as a right code); nothing when there is no current window or its count is 0.
    async fn release(
        &self,
        bucket: LimitBucket,
        key: &LimitKey,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Deletes every window that ended at or before `now`; answers how many. A later hit on
    /// such a key starts a new window, so purging never changes a decision.
    async fn purge_limits(&self, now: DateTime<Utc>) -> Result<u64, StoreError>;
}

/// `t` to the millisecond, as every store keeps times.
fn to_ms(t: DateTime<Utc>) -> DateTime<Utc> {
    chrono::SubsecRound::trunc_subsecs(t, 3)
}

/// The window's end as stored: `now + window` (to the millisecond; at least one later).
pub fn window_end(now: DateTime<Utc>, window: Duration) -> DateTime<Utc> {
    let ms = i64::try_from(window.as_millis())
        .unwrap_or(i64::MAX / 2)
        .clamp(1, 100 * 365 * 24 * 3600 * 1000);
    to_ms(now) + chrono::Duration::milliseconds(ms)
}

/// The answer to a hit that made the window's count `count`.
pub fn decide(count: u64, limit: u32, ends_at: DateTime<Utc>, now: DateTime<Utc>) -> LimitDecision {
    if count <= u64::from(limit) {
        LimitDecision::Allowed {
            remaining: u32::try_from(u64::from(limit) - count).unwrap_or(0),
        }
    } else {
        LimitDecision::Limited {
            retry_after: (ends_at - to_ms(now))
                .to_std()
                .unwrap_or_default()
                .max(Duration::from_millis(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_printable_and_bounded() {
        assert!(LimitKey::parse("203.0.113.7").is_ok());
        assert!(LimitKey::parse("").is_err());
        assert!(LimitKey::parse("a b").is_err());
        assert!(LimitKey::parse(&"x".repeat(129)).is_err());
        let v6: ClientAddress = "2001:db8:1:2::9".parse().unwrap();
        assert_eq!(LimitKey::from(v6).as_str(), "2001:db8:1:2::/64");
        for b in LimitBucket::ALL {
            assert_eq!(LimitBucket::parse(b.as_str()), Some(b));
        }
    }

    #[test]
    fn decisions_count_the_hit_itself() {
        let now = DateTime::UNIX_EPOCH;
        let end = window_end(now, Duration::from_secs(60));
        assert_eq!(
            decide(3, 3, end, now),
            LimitDecision::Allowed { remaining: 0 }
        );
        assert_eq!(
            decide(4, 3, end, now),
            LimitDecision::Limited {
                retry_after: Duration::from_secs(60)
            }
        );
        assert!(!decide(1, 0, end, now).is_allowed());
        assert_eq!(
            window_end(now, Duration::ZERO),
            now + chrono::Duration::milliseconds(1)
        );
    }
}
