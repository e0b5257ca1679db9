//! The store's own insert rate for agent events, without HTTP: batches of 1,000 through
//! `TelemetryStore::insert_events` on a fresh SQLite file. `bench/telemetry.sh` prints it
//! beside the HTTP ingestion rate.

use std::time::Instant;

use svc::startup::Stores;
use svc_ports::StoredEvent;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("raw.db").display());
        let stores = Stores::open(&url, 8).await.expect("open SQLite");
        let events: u64 = std::env::var("RAW_EVENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
        let event = serde_json::json!({
            "event_id": "e", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s", "agent_protocol": "mcp",
            "discovery_surface": "llms_txt", "task_type": "read_page", "conversion_state": "capability_read",
            "privacy_redactions": []
        });
        let started = Instant::now();
        let mut written = 0;
        while written < events {
            let batch: Vec<StoredEvent> = (0..1000)
                .map(|_| StoredEvent {
                    id: format!("evt_{}", ulid::Ulid::new()),
                    received_at: chrono::Utc::now(),
                    event_id: "e".into(),
                    session_id: "s".into(),
                    agent_protocol: "mcp".into(),
                    discovery_surface: "llms_txt".into(),
                    conversion_state: "capability_read".into(),
                    task_type: "read_page".into(),
                    account_id: None,
                    event: event.clone(),
                })
                .collect();
            stores.telemetry.insert_events(&batch).await.expect("insert");
            written += 1000;
        }
        let secs = started.elapsed().as_secs_f64();
        println!("raw_insert_events_per_second {:.0} ({written} events in {secs:.2} s)", written as f64 / secs);
    });
}
