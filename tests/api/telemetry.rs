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

/// Sent with the app's key: the event also counts in that account's funnel.
async fn post_as(app: &TestApp, body: &Value) -> reqwest::Response {
    app.http
        .post(app.url("/telemetry/agent-event"))
        .header("Authorization", bearer(&app.api_key))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Issue 15: an event holding a NUL was answered 202, then Postgres refused the batch insert and
/// the writer dropped every event written with it. Now it is refused up front with a 422 naming
/// the field, and the events around it are all stored, on every store.
async fn a_nul_is_refused_and_takes_nothing_with_it(stores: Stores) {
    let app = TestApp::builder().stores(stores.clone()).spawn().await;
    let mut good = Vec::new();
    for i in 0..3 {
        let mut e = event();
        e["event_id"] = json!(format!("good-{i}"));
        good.push(e);
    }
    let mut in_value = event();
    in_value["session_id"] = json!("s\u{0}1");
    let mut nested = event();
    nested["properties"] = json!({"note": ["fine", "bad\u{0}"]});
    let mut in_key = event();
    in_key["properties"] = json!({"k\u{0}": 1});
    assert_eq!(post(&app, &good[0]).await.status(), 202);
    for (e, field) in [
        (&in_value, "/session_id"),
        (&nested, "/properties/note/1"),
        (&in_key, "/properties/k\\u0000"),
    ] {
        let p = problem(post(&app, e).await, 422, "invalid_request").await;
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(field), "{field}: {p}");
        assert!(!detail.contains('\u{0}'), "{p}");
    }
    assert_eq!(post(&app, &good[1]).await.status(), 202);
    assert_eq!(post(&app, &good[2]).await.status(), 202);
    app.services.telemetry.flushed().await;
    let stored: Vec<String> = stores
        .telemetry
        .recent_events(100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event_id)
        .filter(|id| id.starts_with("good-"))
        .collect();
    assert_eq!(stored, vec!["good-2", "good-1", "good-0"]);
}

#[tokio::test]
async fn a_nul_is_refused_and_takes_nothing_with_it_in_memory() {
    a_nul_is_refused_and_takes_nothing_with_it(Stores::memory()).await;
}

#[tokio::test]
async fn a_nul_is_refused_and_takes_nothing_with_it_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("svc.db").display());
    a_nul_is_refused_and_takes_nothing_with_it(Stores::open(&url, 4).await.unwrap()).await;
}

#[tokio::test]
async fn a_nul_is_refused_and_takes_nothing_with_it_on_postgres() {
    let url = svc_contract_tests::postgres_database().await;
    a_nul_is_refused_and_takes_nothing_with_it(Stores::open(&url, 8).await.unwrap()).await;
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
    // A key given twice is refused, not read as its last value (a review counted an event
    // under the second of two `conversion_state`s).
    let twice = app
        .http
        .post(app.url("/telemetry/agent-event"))
        .header("content-type", "application/json")
        .body(
            event()
                .to_string()
                .replacen('{', r#"{"conversion_state":"install_completed","#, 1),
        )
        .send()
        .await
        .unwrap();
    let refused = problem(twice, 400, "malformed_request").await;
    assert!(
        refused["detail"].as_str().unwrap().contains("given twice"),
        "{refused}"
    );

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
        .funnel(chrono::Utc::now() - chrono::Duration::hours(1), None)
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
        assert_eq!(post_as(&app, &e).await.status(), 202);
    }
    // Anonymous: counted service-wide, not in the account's funnel.
    assert_eq!(post(&app, &event()).await.status(), 202);
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
    let funnel: Value = app.get_json_as_owner("/api/telemetry/funnel?hours=1").await;
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
        .runtime(|r| r.internal_token = Some("operator-token-for-tests".into()))
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

    let funnel_with = |authorization: String| {
        let app = &app;
        async move {
            app.http
                .get(app.url("/api/telemetry/funnel?hours=1"))
                .header("Authorization", authorization)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let cells = |funnel: &Value| -> Vec<(String, String, u64)> {
        funnel["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["discovery_surface"].as_str().unwrap().to_owned(),
                    c["conversion_state"].as_str().unwrap().to_owned(),
                    c["events"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // A customer's key sees its own account's steps only (issue 15: it saw everyone's).
    let own = funnel_with(key.clone()).await;
    assert_eq!(
        cells(&own),
        vec![
            ("direct_api".into(), "capability_read".into(), 1),
            ("direct_api".into(), "failed".into(), 1),
            ("direct_api".into(), "verification_completed".into(), 1),
        ],
        "{own}"
    );
    let stranger = app.stranger_key("stranger@example.com", "read").await;
    let theirs = funnel_with(bearer(&stranger)).await;
    assert_eq!(cells(&theirs), vec![], "{theirs}");
    // The operator's internal token sees the whole service.
    let funnel = funnel_with(bearer("operator-token-for-tests")).await;
    let count = |surface: &str, state: &str| {
        cells(&funnel)
            .iter()
            .find(|c| c.0 == surface && c.1 == state)
            .map_or(0, |c| c.2)
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
