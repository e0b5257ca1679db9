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
