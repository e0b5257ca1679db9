//! Agent traffic events over HTTP: validation that names the field, redaction of everything
//! private before storage, and the funnel.

use serde_json::{Value, json};
use svc::startup::Stores;

use crate::helpers::{TestApp, bearer, problem};

fn event() -> Value {
    json!({
        "event_id": "e-1", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s-1",
        "agent_protocol": "mcp", "discovery_surface": "llms_txt", "task_type": "read_page",
        "conversion_state": "capability_read", "privacy_redactions": []
    })
}

async fn post(app: &TestApp, body: &Value) -> reqwest::Response {
    app.http
        .post(app.url("/telemetry/agent-event"))
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn hostile_events_get_the_right_answer_and_nothing_private_is_stored() {
    let stores = Stores::memory();
    let app = TestApp::builder().stores(stores.clone()).spawn().await;
    for field in [
        "event_id",
        "timestamp",
        "session_id",
        "agent_protocol",
        "discovery_surface",
        "task_type",
        "conversion_state",
        "privacy_redactions",
    ] {
        let mut e = event();
        e.as_object_mut().unwrap().remove(field);
        let p = problem(post(&app, &e).await, 422, "invalid_request").await;
        assert!(
            p["detail"].as_str().unwrap().contains(field),
            "{field}: {p}"
        );
    }
    let mut wrong = event();
    wrong["agent_protocol"] = json!("telepathy");
    let p = problem(post(&app, &wrong).await, 422, "invalid_request").await;
    assert!(
        p["detail"].as_str().unwrap().contains("/agent_protocol"),
        "{p}"
    );
    let mut bad_time = event();
    bad_time["timestamp"] = json!("yesterday");
    problem(post(&app, &bad_time).await, 422, "invalid_request").await;
    let mut huge = event();
    huge["notes"] = json!("x".repeat(70_000));
    problem(post(&app, &huge).await, 422, "invalid_request").await;
    let mut too_big = event();
    too_big["notes"] = json!("x".repeat(2 * 1024 * 1024));
    problem(post(&app, &too_big).await, 413, "payload_too_large").await;
    let not_json = app
        .http
        .post(app.url("/telemetry/agent-event"))
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), 400);

    let mut private = event();
    private["event_id"] = json!("e-private");
    private["privacy_redactions"] = json!(["client:referrer"]);
    private["referrer"] = json!(
        "https://chat.example.com/?q=my card is 4111 1111 1111 1111, mail me at ann@example.com"
    );
    private["prompt"] = json!("Buy the cheapest flight with my card 5555555555554444");
    private["extra"] = json!({"cvc": "123", "notes": ["key svc_live_0123456789abcdefghijABCDEFGHIJKL"], "order": "1234567"});
    let resp = post(&app, &private).await;
    assert_eq!(resp.status(), 202);
    let accepted: Value = resp.json().await.unwrap();
    let redactions: Vec<&str> = accepted["privacy_redactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for expected in [
        "client:referrer",
        "card_number:/referrer",
        "email:/referrer",
        "raw_prompt:/prompt",
        "credential:/extra/cvc",
        "api_key:/extra/notes/0",
    ] {
        assert!(
            redactions.contains(&expected),
            "{expected} missing from {redactions:?}"
        );
    }
    app.services.telemetry.flushed().await;
    let funnel = stores
        .telemetry
        .funnel(chrono::Utc::now() - chrono::Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(
        funnel.iter().map(|c| c.events).sum::<u64>(),
        1,
        "only the accepted event was stored"
    );
    let stored = stores.telemetry.recent_events(10).await.unwrap();
    assert_eq!(stored.len(), 1);
    let text = stored[0].event.to_string();
    for secret in [
        "4111",
        "5555555555554444",
        "ann@example.com",
        "Buy the cheapest",
        "\"cvc\"",
        "svc_live_0123",
    ] {
        assert!(!text.contains(secret), "{secret} was stored: {text}");
    }
    assert!(text.contains("1234567"), "ordinary values stay");
    assert_eq!(
        stored[0].event["privacy_redactions"],
        accepted["privacy_redactions"]
    );
}

#[tokio::test]
async fn the_funnel_counts_by_discovery_surface_and_needs_a_key() {
    let app = TestApp::spawn().await;
    for (surface, state) in [
        ("llms_txt", "discovered"),
        ("llms_txt", "capability_read"),
        ("mcp_registry", "discovered"),
        ("llms_txt", "discovered"),
    ] {
        let mut e = event();
        e["discovery_surface"] = json!(surface);
        e["conversion_state"] = json!(state);
        assert_eq!(post(&app, &e).await.status(), 202);
    }
    app.services.telemetry.flushed().await;
    problem(
        app.http
            .get(app.url("/api/telemetry/funnel"))
            .send()
            .await
            .unwrap(),
        401,
        "missing_api_key",
    )
    .await;
    let funnel: Value = app
        .http
        .get(app.url("/api/telemetry/funnel?hours=1"))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        funnel["cells"],
        json!([
            {"discovery_surface": "llms_txt", "conversion_state": "capability_read", "events": 1},
            {"discovery_surface": "llms_txt", "conversion_state": "discovered", "events": 2},
            {"discovery_surface": "mcp_registry", "conversion_state": "discovered", "events": 1}
        ])
    );
}

/// The service's own steps land in the funnel: discovery files read, capabilities read,
/// executions completed and failed, scans, signups, checkouts; sessions are salted hashes.
#[tokio::test]
async fn the_service_records_its_own_funnel_steps() {
    let app = TestApp::builder()
        .action_sites()
        .await
        .readiness_sites()
        .await
        .spawn()
        .await;
    let key = bearer(&app.api_key);
    for path in [
        "/llms.txt",
        "/openapi.json",
        "/.well-known/agent-card.json",
        "/.well-known/mcp/server-card.json",
    ] {
        assert_eq!(
            app.http.get(app.url(path)).send().await.unwrap().status(),
            200
        );
    }
    let discover = app
        .http
        .post(app.url("/api/discover"))
        .header("Authorization", &key)
        .json(&json!({"domain": "shop.sandbox.test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(discover.status(), 200);
    for (domain, action, params) in [
        (
            "shop.sandbox.test",
            "search_products",
            json!({"query": "tea"}),
        ),
        ("flaky.sandbox.test", "server_error", json!({})),
    ] {
        app.http
            .post(app.url("/api/execute"))
            .header("Authorization", &key)
            .json(&json!({"domain": domain, "action": action, "params": params}))
            .send()
            .await
            .unwrap();
    }
    let ready = app
        ._readiness
        .clone()
        .unwrap()
        .origin(svc::startup::READY_HOST);
    for url in [ready.as_str(), "http://10.1.2.3/"] {
        app.http
            .post(app.url("/api/readiness/scan"))
            .json(&json!({ "url": url }))
            .send()
            .await
            .unwrap();
    }
    let started = app
        .http
        .post(app.url("/agent/identity"))
        .json(&json!({"client_id": "funnel-test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);
    app.services.telemetry.flushed().await;

    let funnel: Value = app
        .http
        .get(app.url("/api/telemetry/funnel?hours=1"))
        .header("Authorization", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let count = |surface: &str, state: &str| {
        funnel["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["discovery_surface"] == surface && c["conversion_state"] == state)
            .map_or(0, |c| c["events"].as_u64().unwrap())
    };
    assert_eq!(count("llms_txt", "discovered"), 1, "{funnel}");
    assert_eq!(count("openapi_spec", "discovered"), 1, "{funnel}");
    assert_eq!(count("a2a_agent_card", "discovered"), 1, "{funnel}");
    assert_eq!(count("mcp_registry", "discovered"), 1, "{funnel}");
    assert_eq!(count("direct_api", "capability_read"), 1, "{funnel}");
    assert_eq!(count("direct_api", "verification_completed"), 1, "{funnel}");
    assert_eq!(count("direct_api", "scan_requested"), 2, "{funnel}");
    assert_eq!(count("direct_api", "scan_completed"), 1, "{funnel}");
    assert_eq!(
        count("direct_api", "failed"),
        2,
        "an action and a scan failed: {funnel}"
    );
    assert_eq!(count("direct_api", "setup_session_created"), 1, "{funnel}");

    let events = app.services.telemetry.recent(100).await.unwrap();
    let failed: Vec<&Value> = events
        .iter()
        .map(|e| &e.event)
        .filter(|e| e["conversion_state"] == "failed")
        .collect();
    let classes: Vec<&str> = failed
        .iter()
        .filter_map(|e| e["failure_class"].as_str())
        .collect();
    assert!(
        classes.contains(&"action_failed") && classes.contains(&"url_refused"),
        "{classes:?}"
    );
    let completed = events
        .iter()
        .find(|e| e.conversion_state == "verification_completed")
        .unwrap();
    assert!(
        completed.event["artifact_ids"][0]
            .as_str()
            .unwrap()
            .starts_with("art_")
    );
    for e in &events {
        let text = e.event.to_string();
        assert!(
            !text.contains("127.0.0.1") && !text.contains("acct_"),
            "{text}"
        );
        assert!(e.session_id.starts_with("ses_"));
    }
}
