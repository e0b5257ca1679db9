//! `StoreHealth`: what readiness and the pool gauges rest on.

use crate::Backend;

/// A store opened as `svc serve` opens it answers, is current, and (with a pool) shows the
/// connection it just used. (How many are in use at an instant is not asserted: a connection
/// goes back to its pool on a task of its own.)
pub async fn a_migrated_store_answers_and_is_current(b: &Backend) {
    b.health.ping().await.expect("a trivial statement runs");
    assert!(
        b.health.migrations_current().await.unwrap(),
        "{}: freshly migrated, so current",
        b.name
    );
    match b.health.pool_usage() {
        None => assert_eq!(b.name, "memory", "only memory has no pool"),
        Some(usage) => assert!(usage.in_use + usage.idle >= 1, "{}: {usage:?}", b.name),
    }
}
