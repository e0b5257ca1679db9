//! Background jobs: page-cache and identity purges, orphaned-task recovery, the telemetry
//! writer, and rate-limit housekeeping.

use std::{sync::Arc, time::Duration};

use kit::limits::RateLimits;
use svc_ports::PageCache;
use svc_services::Services;

/// Hourly, drops cached pages older than the longest `max_age` a read may ask for.
pub async fn purge_page_cache(pages: Arc<dyn PageCache>) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    loop {
        every_hour.tick().await;
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
pub async fn purge_identity(services: Arc<Services>) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    loop {
        every_hour.tick().await;
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

/// At start and every third of the window: tasks that began but never settled (their process
/// died) are settled as failed and refunded once they are older than any action may run.
pub async fn recover_tasks(services: Arc<Services>, after_seconds: i64) {
    // A third of the window: an orphan waits at most a third longer than the window.
    let mut every = tokio::time::interval(Duration::from_secs(
        u64::try_from(after_seconds / 3).unwrap_or(10).clamp(1, 30),
    ));
    loop {
        every.tick().await;
        match services.actions.recover(after_seconds).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(recovered = n, "orphaned tasks refunded"),
            Err(e) => tracing::warn!(error = %e, "task recovery failed"),
        }
    }
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
