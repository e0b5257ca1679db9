//! Background jobs: page-cache, identity and limit-window purges, orphaned-task recovery, the
//! webhook sender, the telemetry writer, and rate-limit housekeeping.
//!
//! The store jobs stop when `stop` turns true (at shutdown), and only between two runs: a run
//! in progress (a recovery settling a task) is finished, never cut off half-way.

use std::{sync::Arc, time::Duration};

use kit::limits::RateLimits;
use svc_ports::PageCache;
use svc_services::{
    Services,
    hooks::{BATCH, CAPS, FAILING_CAPS, FAILING_SENDERS, SENDERS},
};
use tokio::{sync::watch, time::Interval};

/// Waits for the next tick; `false` once the service stops.
async fn next_run(every: &mut Interval, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow_and_update() {
        return false;
    }
    tokio::select! {
        _ = every.tick() => !*stop.borrow(),
        _ = stop.changed() => false,
    }
}

/// Hourly, drops cached pages older than the longest `max_age` a read may ask for.
pub async fn purge_page_cache(pages: Arc<dyn PageCache>, mut stop: watch::Receiver<bool>) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    while next_run(&mut every_hour, &mut stop).await {
        let cutoff = chrono::Utc::now()
            - chrono::Duration::seconds(svc_services::read::MAX_CACHE_AGE_SECONDS as i64);
        match pages.purge_pages(cutoff).await {
            Ok(n) => tracing::debug!(purged = n, "page cache purged"),
            Err(e) => tracing::warn!(error = %e, "page cache purge failed"),
        }
    }
}

/// Hourly, drops device grants, emailed codes and sessions a day past their expiry, and A2A
/// tasks past theirs.
pub async fn purge_identity(services: Arc<Services>, mut stop: watch::Receiver<bool>) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    while next_run(&mut every_hour, &mut stop).await {
        match services.identity.purge_expired().await {
            Ok(n) => tracing::debug!(purged = n, "expired identity records purged"),
            Err(e) => tracing::warn!(error = %e, "identity purge failed"),
        }
        match services.a2a.purge_expired().await {
            Ok(n) => tracing::debug!(purged = n, "expired A2A tasks purged"),
            Err(e) => tracing::warn!(error = %e, "A2A task purge failed"),
        }
    }
}

/// Every five minutes, deletes the ended windows of the shared limits (wrong codes, scans):
/// an ended window decides nothing, so this only keeps the table small.
pub async fn purge_limits(services: Arc<Services>, mut stop: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(Duration::from_secs(300));
    while next_run(&mut every, &mut stop).await {
        match services.purge_limits().await {
            Ok(n) => tracing::debug!(purged = n, "ended limit windows purged"),
            Err(e) => tracing::warn!(error = %e, "limit purge failed"),
        }
    }
}

/// At start and every third of the window: tasks that began but never settled (their process
/// died) are settled as failed and refunded once they are older than any action may run; and
/// tasks settled, payments credited and connections ended by a process that died before
/// recording their webhook event get it.
pub async fn recover_tasks(
    services: Arc<Services>,
    after_seconds: i64,
    mut stop: watch::Receiver<bool>,
) {
    // A third of the window: an orphan waits at most a third longer than the window.
    let mut every = tokio::time::interval(Duration::from_secs(
        u64::try_from(after_seconds / 3).unwrap_or(10).clamp(1, 30),
    ));
    while next_run(&mut every, &mut stop).await {
        match services.actions.recover(after_seconds).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(recovered = n, "orphaned tasks refunded"),
            Err(e) => tracing::warn!(error = %e, "task recovery failed"),
        }
        match services.actions.recover_task_events().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                recorded = n,
                "webhook events of settled tasks recorded late"
            ),
            Err(e) => tracing::warn!(error = %e, "webhook event sweep failed"),
        }
        match services.billing.recover_credit_events().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                recorded = n,
                "webhook events of credited payments recorded late"
            ),
            Err(e) => tracing::warn!(error = %e, "webhook event sweep failed"),
        }
        match services.connections.recover_expired_events().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                recorded = n,
                "webhook events of expired connections recorded late"
            ),
            Err(e) => tracing::warn!(error = %e, "webhook event sweep failed"),
        }
    }
}

/// Sends due webhook deliveries, at most `SENDERS` at once on this instance: at once when it
/// stores an event or a replay, when sends end and free a batch of senders, and every `every` for
/// retries that came due and events other instances stored. Sends do not wait for each other,
/// so a slow endpoint holds only its own senders (at most `CAPS`) and every other
/// endpoint's deliveries go on; endpoints whose last attempt failed have `FAILING_SENDERS` of
/// their own (within `FAILING_CAPS`), so however many hang, those that answer keep the rest,
/// and a failing endpoint that recovers is still tried. At
/// shutdown the sends in flight finish (within the jobs' stop wait); one cut off keeps its
/// lease, and when that ends this or another instance sends it again (at least once).
pub async fn deliver_webhooks(
    services: Arc<Services>,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let hooks = services.hooks.clone();
    let wake = hooks.wake_signal();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Sends to endpoints that answer, and to those that failed last time.
    let mut sending = tokio::task::JoinSet::new();
    let mut failing = tokio::task::JoinSet::new();
    let used = |set: &tokio::task::JoinSet<()>| u32::try_from(set.len()).unwrap_or(u32::MAX);
    loop {
        if *stop.borrow_and_update() {
            break;
        }
        // Which lane a send that ended was in (`Some(true)`: the failing endpoints').
        let ended = tokio::select! {
            _ = tick.tick() => None,
            _ = wake.notified() => None,
            Some(_) = sending.join_next(), if !sending.is_empty() => Some(false),
            Some(_) = failing.join_next(), if !failing.is_empty() => Some(true),
            _ = stop.changed() => break,
        };
        while sending.try_join_next().is_some() {}
        while failing.try_join_next().is_some() {}
        // Each lane's free senders: the failing endpoints' lane keeps its own, so it is never
        // starved by those that answer, nor they by it.
        let answering_free = |sending: &tokio::task::JoinSet<()>| {
            (SENDERS - FAILING_SENDERS).saturating_sub(used(sending))
        };
        let failing_free =
            |failing: &tokio::task::JoinSet<()>| FAILING_SENDERS.saturating_sub(used(failing));
        // A send that ended claims again only once a batch of its lane is free (each claim
        // reads every endpoint's first deliveries, too much to do for every send).
        let (mut answering_done, mut failing_done) = match ended {
            None => (false, false),
            Some(false) => (answering_free(&sending) < BATCH, true),
            Some(true) => (true, failing_free(&failing) < FAILING_SENDERS / 2),
        };
        // Fill the free senders, answering endpoints first; a claim that filled its room may
        // leave more due.
        loop {
            let (caps, room, lane) = if !answering_done {
                (CAPS, answering_free(&sending), &mut sending)
            } else if !failing_done {
                (FAILING_CAPS, failing_free(&failing), &mut failing)
            } else {
                break;
            };
            let done = match hooks.claim_due(room, caps).await {
                Ok(claimed) => {
                    let full = room > 0 && claimed.len() >= room as usize;
                    for delivery in claimed {
                        let hooks = hooks.clone();
                        lane.spawn(async move { hooks.attempt(delivery).await });
                    }
                    !full
                }
                Err(e) => {
                    tracing::warn!(error = %e, "webhook deliveries could not be claimed");
                    true
                }
            };
            if done {
                if answering_done {
                    failing_done = true;
                } else {
                    answering_done = true;
                }
            }
        }
    }
    while sending.join_next().await.is_some() {}
    while failing.join_next().await.is_some() {}
}

/// Every minute, forgets idle clients of the rate limiters.
pub fn spawn_housekeeping(limits: RateLimits) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                limits.housekeep();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stop is seen between runs: the loop ends instead of waiting for its next tick.
    #[tokio::test]
    async fn jobs_stop_between_runs() {
        let (tx, mut rx) = watch::channel(false);
        let mut every = tokio::time::interval(Duration::from_secs(3600));
        assert!(
            next_run(&mut every, &mut rx).await,
            "the first tick is at once"
        );
        tx.send(true).unwrap();
        assert!(!next_run(&mut every, &mut rx).await);
        let (tx, mut rx) = watch::channel(false);
        let waiting = tokio::spawn(async move { next_run(&mut every, &mut rx).await });
        tx.send(true).unwrap();
        assert!(
            !waiting.await.unwrap(),
            "a stop ends the wait for the next tick"
        );
    }
}
