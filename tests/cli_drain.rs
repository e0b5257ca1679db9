//! `svc` drained, not dropped: on SIGTERM readiness turns 503 at once while requests are still
//! served, the listener closes after `SVC_SHUTDOWN_DELAY_SECONDS` (new connections refused),
//! the request in flight is answered, the agent events queued up to the end are written, and
//! the process exits 0.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

mod support;

use support::start_sandbox;

async fn held(base: &str, key: &str) -> i64 {
    let usage: Value = reqwest::Client::new()
        .get(format!("{base}/api/usage"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    usage["balance"]["held"].as_i64().unwrap()
}

#[tokio::test]
async fn sigterm_drains_answers_in_flight_writes_queued_events_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("drain.db").display());
    let support::Sandbox {
        process: sandbox,
        base,
        key,
    } = start_sandbox(
        dir.path(),
        &["--database-url", &db],
        &[("SVC_SHUTDOWN_DELAY_SECONDS", "5")],
    );
    let addr = base.trim_start_matches("http://").to_owned();
    let http = reqwest::Client::new();

    // An action in flight: the flaky site answers after 30 s, the request deadline is 15 s.
    let slow = json!({"domain": "flaky.sandbox.test", "action": "slow", "params": {}});
    let in_flight = tokio::spawn(
        http.post(format!("{base}/api/execute"))
            .bearer_auth(&key)
            .header("Idempotency-Key", "drain-1")
            .json(&slow)
            .send(),
    );
    let started = Instant::now();
    while held(&base, &key).await != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the task never began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // An agent event queued just before the signal.
    let event = json!({
        "event_id": "drain-event-1", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s-1",
        "agent_protocol": "mcp", "discovery_surface": "llms_txt", "task_type": "read_page",
        "conversion_state": "capability_read", "privacy_redactions": []
    });
    let sent = http
        .post(format!("{base}/telemetry/agent-event"))
        .json(&event)
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);

    let pid = sandbox.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );

    // Readiness turns 503 at once; everything else is still served until the listener closes.
    let started = Instant::now();
    let ready = loop {
        let r = http
            .get(format!("{base}/health/ready"))
            .send()
            .await
            .unwrap();
        if r.status() == 503 {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "readiness stayed 200"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let problem: Value = ready.json().await.unwrap();
    assert_eq!(problem["reason"], "draining", "{problem}");
    let usage = http
        .get(format!("{base}/api/usage"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        usage.status(),
        200,
        "still served while the balancer notices"
    );

    // Then the listener closes: new connections are refused while the action still runs.
    let started = Instant::now();
    while tokio::net::TcpStream::connect(&addr).await.is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the listener never closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!in_flight.is_finished(), "the action outlasts the delay");

    let answer = in_flight
        .await
        .unwrap()
        .expect("the request in flight was answered, not dropped");
    assert_eq!(answer.status(), 504);
    let failed: Value = answer.json().await.unwrap();
    assert_eq!(failed["credits_refunded"], 1, "{failed}");
    let mut process = sandbox;
    let status = tokio::task::spawn_blocking(move || process.0.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "exited with {status}");

    // Written before the exit: the event sent before the signal, and the funnel step the
    // service queued when the action failed, during the drain.
    let stores = svc::startup::Stores::open(&db, 2).await.unwrap();
    let events = stores.telemetry.recent_events(100).await.unwrap();
    assert!(
        events.iter().any(|e| e.event_id == "drain-event-1"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.task_type == "execute" && e.conversion_state == "failed"),
        "{events:?}"
    );
}
