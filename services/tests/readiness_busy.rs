//! The readiness scan's bound on scans running at once: a scan past it waits its turn briefly,
//! then is refused as busy (the faces answer 503 with `Retry-After`), storing nothing; a slot
//! given back is taken by the next scan. Tokio's paused clock makes the wait instant and the
//! order certain: the clock only moves when every task is idle.

use std::{sync::Arc, time::Duration};

use svc_ports::{
    ActionTransport, FetchError, FetchRequest, FetchedPage, PageFetcher,
    fetch::MockActionTransport, page::MockPageExtractor, store::MockScanStore, system::*,
};
use svc_services::readiness::{ReadinessService, ScanFailure};
use tokio::sync::mpsc;

/// A site that takes every request and never answers; says when one arrives (a scan's first
/// request, robots.txt, goes out only once the scan holds a slot).
struct Hanging(mpsc::UnboundedSender<String>);

#[async_trait::async_trait]
impl PageFetcher for Hanging {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        let _ = self.0.send(request.url.clone());
        std::future::pending().await
    }

    async fn robots(&self, _: &str) -> Result<svc_ports::RobotsDecision, FetchError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn readiness_scans_past_the_bound_are_busy_and_a_freed_slot_is_taken() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut store = MockScanStore::new();
    // No scan finishes here, and a refused one stores nothing.
    store.expect_insert_scan().never();
    let mut clock = MockClock::new();
    clock.expect_now().returning(chrono::Utc::now);
    let mut entropy = MockEntropy::new();
    entropy.expect_ulid().returning(ulid::Ulid::new);
    let transport: Arc<dyn ActionTransport> = Arc::new(MockActionTransport::new());
    let service = Arc::new(
        ReadinessService::new(
            Arc::new(Hanging(tx)),
            transport,
            Arc::new(MockPageExtractor::new()),
            Arc::new(store),
            Arc::new(clock),
            Arc::new(entropy),
        )
        // Longer than the wait for a slot: a running scan holds its slot throughout.
        .with_deadlines(Duration::from_secs(3600), Duration::from_secs(3600)),
    );
    let start = |service: &Arc<ReadinessService>| {
        let service = service.clone();
        tokio::spawn(async move { service.scan("https://busy.example/", &|_| {}).await })
    };

    // Scans start until one is refused: each before it sent its first request (it held a
    // slot); the refused one never sent any.
    let mut running = Vec::new();
    let refused = loop {
        assert!(running.len() < 64, "no scan was ever refused");
        let mut scan = start(&service);
        tokio::select! {
            Some(url) = rx.recv() => {
                assert_eq!(url, "https://busy.example/robots.txt");
                running.push(scan);
            }
            done = &mut scan => break done.unwrap(),
        }
    };
    assert!(
        matches!(refused, Err(ScanFailure::Busy)),
        "{:?}",
        refused.map(|r| r.scan_id)
    );
    assert!(!running.is_empty(), "at least one scan runs at a time");
    assert!(rx.try_recv().is_err(), "the refused scan sent nothing");

    // One running scan ends (its slot is given back): the next scan gets the slot and starts.
    running.pop().unwrap().abort();
    let mut next = start(&service);
    tokio::select! {
        Some(url) = rx.recv() => assert_eq!(url, "https://busy.example/robots.txt"),
        done = &mut next => panic!("the freed slot was not taken: {:?}", done.unwrap().err()),
    }
    for scan in running.into_iter().chain([next]) {
        scan.abort();
    }
}
