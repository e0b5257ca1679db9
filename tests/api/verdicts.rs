//! The faces translate, the services decide: for the same caller and the same request, REST,
//! MCP (and A2A where it offers the capability) give the same verdict, down to the
//! `failure_class`, because each decision (scopes, key kind, test vs live, consequential
//! actions, input validity) is made once, in the service.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, bearer};

const V: &str = "2025-11-25";

/// The REST verdict: `ok`, or the problem's `failure_class`.
async fn rest(resp: reqwest::Response) -> String {
    if resp.status().is_success() {
        return "ok".into();
    }
    let body: Value = resp.json().await.unwrap();
    body["failure_class"].as_str().unwrap_or("?").to_owned()
}

/// The MCP verdict of one tool call: `ok`, or the tool error's `failure_class`.
async fn mcp(app: &TestApp, key: Option<&str>, tool: &str, args: Value) -> String {
    let auth = key.map(bearer);
    let (status, body) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}),
            auth.as_deref(),
            V,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = &body["result"];
    if result["isError"] != true {
        return "ok".into();
    }
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let problem: Value = serde_json::from_str(text).unwrap_or_default();
    problem["failure_class"].as_str().unwrap_or("?").to_owned()
}

/// The A2A verdict of one `tasks/create`: `ok`, or the failed task's `failure_class`.
async fn a2a(app: &TestApp, params: Value) -> String {
    let body = app.a2a("tasks/create", params).await;
    let task = &body["result"];
    if task["status"]["state"] == "TASK_STATE_COMPLETED" {
        return "ok".into();
    }
    task["artifacts"][0]["parts"][0]["data"]["failure_class"]
        .as_str()
        .unwrap_or("?")
        .to_owned()
}

async fn get(app: &TestApp, key: Option<&str>, path: &str) -> reqwest::Response {
    let mut req = app.http.get(app.url(path));
    if let Some(k) = key {
        req = req.header("Authorization", bearer(k));
    }
    req.send().await.unwrap()
}

async fn post(app: &TestApp, key: Option<&str>, path: &str, body: Value) -> reqwest::Response {
    let mut req = app.http.post(app.url(path)).json(&body);
    if let Some(k) = key {
        req = req.header("Authorization", bearer(k));
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn reading_gets_one_verdict_on_every_face() {
    let demo = svc_sandbox::DemoSite::start().await;
    let app = TestApp::builder()
        .sandbox_host(svc_sandbox::DEMO_HOST, demo.address())
        .spawn()
        .await;
    let reader = app.stranger_key("reader@example.com", "read").await;
    let no_read = app.stranger_key("discoverer@example.com", "discover").await;
    let page = format!("{}/articles/tides", demo.origin());
    for (key, want) in [
        (None, "missing_api_key"),
        (
            Some("svc_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            "invalid_api_key",
        ),
        (Some(no_read.as_str()), "insufficient_scope"),
        (Some(reader.as_str()), "ok"),
    ] {
        let path = format!("/api/read?url={}", crate::helpers::urlencode(&page));
        let over_rest = rest(get(&app, key, &path).await).await;
        let over_mcp = mcp(&app, key, "read_page", json!({"url": page})).await;
        assert_eq!(
            (over_rest.as_str(), over_mcp.as_str()),
            (want, want),
            "{key:?}"
        );
    }
    // A URL that may not be fetched: refused alike.
    let refused_rest =
        rest(get(&app, Some(&reader), "/api/read?url=http://127.0.0.1:9/").await).await;
    let refused_mcp = mcp(
        &app,
        Some(&reader),
        "read_page",
        json!({"url": "http://127.0.0.1:9/"}),
    )
    .await;
    assert_eq!(
        (refused_rest.as_str(), refused_mcp.as_str()),
        ("url_refused", "url_refused")
    );
}

#[tokio::test]
async fn discovering_and_executing_get_one_verdict_on_every_face() {
    let app = TestApp::builder().action_sites().await.spawn().await;
    let no_discover = app.stranger_key("reads-only@example.com", "read").await;
    let plain = app
        .stranger_key("plain@example.com", "read discover execute")
        .await;
    let domain = json!({"domain": "shop.sandbox.test"});
    for (key, want) in [
        (no_discover.as_str(), "insufficient_scope"),
        (plain.as_str(), "ok"),
    ] {
        let over_rest = rest(post(&app, Some(key), "/api/discover", domain.clone()).await).await;
        let over_mcp = mcp(&app, Some(key), "discover", domain.clone()).await;
        let listed = mcp(&app, Some(key), "list_actions", domain.clone()).await;
        assert_eq!(
            (over_rest.as_str(), over_mcp.as_str(), listed.as_str()),
            (want, want, want)
        );
    }
    let unknown = json!({"domain": "nowhere.sandbox.test"});
    assert_eq!(
        rest(post(&app, Some(&plain), "/api/discover", unknown.clone()).await).await,
        mcp(&app, Some(&plain), "discover", unknown).await
    );
    // A consequential action needs execute:consequential: refused alike, before any charge.
    let order = json!({"domain": "shop.sandbox.test", "action": "place_order",
                       "params": {"cart_id": "cart-1"}});
    let over_rest = rest(post(&app, Some(&plain), "/api/execute", order.clone()).await).await;
    let over_mcp = mcp(&app, Some(&plain), "execute", order).await;
    assert_eq!(
        (over_rest.as_str(), over_mcp.as_str()),
        ("insufficient_scope", "insufficient_scope")
    );
    // Params that do not fit the action's schema.
    let bad = json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": 5}});
    let over_rest = rest(post(&app, Some(&plain), "/api/execute", bad.clone()).await).await;
    let over_mcp = mcp(&app, Some(&plain), "execute", bad).await;
    assert_eq!(
        (over_rest.as_str(), over_mcp.as_str()),
        ("invalid_request", "invalid_request")
    );
    let usage: Value = app
        .get_usage(Some(&bearer(&plain)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        usage["balance"]["held"], 0,
        "nothing was held for a refused execute"
    );
}

#[tokio::test]
async fn signing_up_gets_one_verdict_on_every_face() {
    let app = TestApp::builder().outbox().spawn().await;
    for (email, want) in [
        ("not-an-address", "invalid_request"),
        ("human@example.com", "ok"),
    ] {
        let over_rest =
            rest(post(&app, None, "/api/register", json!({"email": email})).await).await;
        let over_mcp = mcp(
            &app,
            None,
            "svc_start_api_key_signup",
            json!({"email": email}),
        )
        .await;
        let over_a2a = a2a(
            &app,
            json!({"task_type": "start_api_key_signup", "email": email}),
        )
        .await;
        assert_eq!(
            (over_rest.as_str(), over_mcp.as_str(), over_a2a.as_str()),
            (want, want, want),
            "{email}"
        );
    }
    // A code for a challenge that does not exist: the same verdict.
    let unknown = "chl_01JZZZZZZZZZZZZZZZZZZZZZZZ";
    let over_rest = rest(
        post(
            &app,
            None,
            "/api/verify",
            json!({"deviceId": unknown, "code": "123456"}),
        )
        .await,
    )
    .await;
    let over_mcp = mcp(
        &app,
        None,
        "svc_complete_api_key_signup",
        json!({"deviceId": unknown, "code": "123456"}),
    )
    .await;
    let over_a2a = a2a(
        &app,
        json!({"task_type": "complete_api_key_signup", "deviceId": unknown, "code": "123456"}),
    )
    .await;
    assert_eq!(over_rest, over_mcp);
    assert_eq!(over_mcp, over_a2a);
    assert_ne!(over_rest, "ok");
}

#[tokio::test]
async fn a_test_key_on_the_live_service_gets_one_verdict() {
    let live = TestApp::builder()
        .environment(svc_ports::Environment::Live)
        .spawn()
        .await;
    let test_key = "svc_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let over_rest = rest(get(&live, Some(test_key), "/api/usage").await).await;
    let over_mcp = mcp(
        &live,
        Some(test_key),
        "discover",
        json!({"domain": "x.example.com"}),
    )
    .await;
    assert_eq!(over_rest, over_mcp);
    assert_eq!(over_rest, "wrong_environment");
}
