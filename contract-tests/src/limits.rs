//! Scenarios for `LimitStore`: fixed windows, independence of buckets and keys, giving a hit
//! back, purging ended windows, and exactly `limit` of many concurrent hits allowed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use svc_ports::{LimitBucket, LimitDecision, LimitKey};

use crate::{Backend, scenarios::t0};

fn key(s: &str) -> LimitKey {
    LimitKey::parse(s).unwrap()
}

fn at(seconds: i64) -> DateTime<Utc> {
    t0() + chrono::Duration::seconds(seconds)
}

const MINUTE: Duration = Duration::from_secs(60);

fn allowed(remaining: u32) -> LimitDecision {
    LimitDecision::Allowed { remaining }
}

fn limited(seconds: u64) -> LimitDecision {
    LimitDecision::Limited {
        retry_after: Duration::from_secs(seconds),
    }
}

async fn hit(
    b: &Backend,
    bucket: LimitBucket,
    k: &str,
    limit: u32,
    now: DateTime<Utc>,
) -> LimitDecision {
    b.limits
        .hit(bucket, &key(k), MINUTE, limit, now)
        .await
        .unwrap()
}

pub async fn hits_are_allowed_up_to_the_limit_then_limited_until_the_window_ends(b: &Backend) {
    let w = LimitBucket::WrongCode;
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(0)).await, allowed(2));
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(1)).await, allowed(1));
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(2)).await, allowed(0));
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(3)).await, limited(57));
    // Hits over the limit are counted but never move the window's end.
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(40)).await, limited(20));
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(59)).await, limited(1));
    // At the end a new window starts with this hit.
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(60)).await, allowed(2));
    assert_eq!(hit(b, w, "203.0.113.7", 3, at(119)).await, allowed(1));
    // A limit of 0 refuses every hit; the window still starts.
    assert_eq!(hit(b, w, "198.51.100.1", 0, at(0)).await, limited(60));
    // Times are kept to the millisecond.
    let odd = t0() + chrono::Duration::microseconds(1_500_400);
    let d = b
        .limits
        .hit(w, &key("ms"), Duration::from_millis(2_500), 0, odd)
        .await
        .unwrap();
    assert_eq!(
        d,
        LimitDecision::Limited {
            retry_after: Duration::from_millis(2_500)
        }
    );
}

pub async fn buckets_and_keys_are_independent(b: &Backend) {
    let (w, s) = (LimitBucket::WrongCode, LimitBucket::Scan);
    assert_eq!(hit(b, w, "2001:db8:1:2::/64", 1, at(0)).await, allowed(0));
    assert_eq!(hit(b, w, "2001:db8:1:2::/64", 1, at(0)).await, limited(60));
    assert_eq!(hit(b, s, "2001:db8:1:2::/64", 1, at(0)).await, allowed(0));
    assert_eq!(hit(b, w, "2001:db8:1:3::/64", 1, at(0)).await, allowed(0));
    // Each key's window starts at its own first hit.
    assert_eq!(hit(b, s, "203.0.113.9", 1, at(30)).await, allowed(0));
    assert_eq!(hit(b, s, "203.0.113.9", 1, at(31)).await, limited(59));
    assert_eq!(hit(b, s, "2001:db8:1:2::/64", 1, at(60)).await, allowed(0));
    assert_eq!(hit(b, s, "203.0.113.9", 1, at(60)).await, limited(30));
}

pub async fn a_released_hit_is_given_back_within_its_window_only(b: &Backend) {
    let w = LimitBucket::WrongCode;
    let k = key("192.0.2.1");
    // Nothing to give back: no window yet.
    b.limits.release(w, &k, at(0)).await.unwrap();
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(0)).await, allowed(1));
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(1)).await, allowed(0));
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(2)).await, limited(58));
    b.limits.release(w, &k, at(3)).await.unwrap();
    b.limits.release(w, &k, at(3)).await.unwrap();
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(4)).await, allowed(0));
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(5)).await, limited(55));
    // Another bucket's release does not touch this one.
    b.limits
        .release(LimitBucket::Scan, &k, at(6))
        .await
        .unwrap();
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(7)).await, limited(53));
    // The count never goes below zero.
    for _ in 0..5 {
        b.limits.release(w, &k, at(8)).await.unwrap();
    }
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(9)).await, allowed(1));
    // A release after the window ended gives nothing to the next window.
    b.limits.release(w, &k, at(60)).await.unwrap();
    assert_eq!(hit(b, w, "192.0.2.1", 2, at(61)).await, allowed(1));
}

pub async fn purging_deletes_only_ended_windows(b: &Backend) {
    let w = LimitBucket::WrongCode;
    assert_eq!(hit(b, w, "old", 5, at(0)).await, allowed(4));
    assert_eq!(hit(b, w, "young", 5, at(30)).await, allowed(4));
    assert_eq!(hit(b, w, "young", 5, at(31)).await, allowed(3));
    assert_eq!(b.limits.purge_limits(at(59)).await.unwrap(), 0);
    assert_eq!(b.limits.purge_limits(at(60)).await.unwrap(), 1);
    // The young window keeps its count; the old key starts afresh.
    assert_eq!(hit(b, w, "young", 5, at(61)).await, allowed(2));
    assert_eq!(hit(b, w, "old", 5, at(61)).await, allowed(4));
    assert_eq!(b.limits.purge_limits(at(200)).await.unwrap(), 2);
    assert_eq!(b.limits.purge_limits(at(200)).await.unwrap(), 0);
}

/// N concurrent hits on one key with limit L: exactly L allowed, whatever the interleaving.
pub async fn concurrent_hits_allow_exactly_the_limit(b: &Backend) {
    const N: usize = 40;
    const L: u32 = 7;
    let k = key("203.0.113.200");
    let hits = (0..N).map(|_| b.limits.hit(LimitBucket::Scan, &k, MINUTE, L, at(0)));
    let decisions: Vec<LimitDecision> = join_all(hits)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let ok = decisions.iter().filter(|d| d.is_allowed()).count();
    assert_eq!(ok, L as usize, "{decisions:?}");
    let mut remaining: Vec<u32> = decisions
        .iter()
        .filter_map(|d| match d {
            LimitDecision::Allowed { remaining } => Some(*remaining),
            LimitDecision::Limited { .. } => None,
        })
        .collect();
    remaining.sort_unstable();
    assert_eq!(
        remaining,
        (0..L).collect::<Vec<_>>(),
        "each count seen once"
    );
    // Concurrent give-backs and hits keep the count exact too.
    let gives = (0..3).map(|_| b.limits.release(LimitBucket::Scan, &k, at(1)));
    join_all(gives).await.into_iter().for_each(Result::unwrap);
    // 40 counted, 3 given back: 37, still over.
    assert!(
        !hit(b, LimitBucket::Scan, "203.0.113.200", L, at(2))
            .await
            .is_allowed()
    );
}
