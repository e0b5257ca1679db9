//! `Idempotency-Key` on `/api/execute`: one key is one billing task, whatever the key's bytes,
//! however many callers send it at once, and whether or not the caller stays to hear the end.

use std::time::Duration;

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::actions::{FLAKY, SHOP, app, balance, execute};
use crate::helpers::{TestApp, bearer, problem};

#[tokio::test]
async fn one_idempotency_key_is_one_billing_task() {
    let app = app().await;
    let key = app.api_key.clone();
    let body = json!({"domain": SHOP, "action": "search_products", "params": {"query": "tea"}});
    let first = execute(&app, &key, body.clone(), Some("order-7")).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first: Value = first.json().await.unwrap();
    let again = execute(&app, &key, body.clone(), Some("order-7")).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    // Key order in params does not make it another request.
    let reordered =
        json!({"params": {"query": "tea"}, "action": "search_products", "domain": SHOP});
    assert_eq!(
        execute(&app, &key, reordered, Some("order-7"))
            .await
            .status(),
        200
    );
    let other = json!({"domain": SHOP, "action": "search_products", "params": {"query": "mug"}});
    problem(
        execute(&app, &key, other, Some("order-7")).await,
        422,
        "idempotency_conflict",
    )
    .await;
    assert_eq!(balance(&app, &key).await, (999, 0));

    // While the first is running, the same key gets 409 with Retry-After.
    let slow = json!({"domain": FLAKY, "action": "slow", "params": {}});
    let running = {
        let req = app
            .http
            .post(app.url("/api/execute"))
            .header("Authorization", bearer(&key))
            .header("Idempotency-Key", "slow-1")
            .json(&slow);
        tokio::spawn(async move { req.send().await.unwrap().status() })
    };
    // Once the first one holds its credit, it is running.
    while balance(&app, &key).await != (998, 1) {
        tokio::task::yield_now().await;
    }
    let dup = execute(&app, &key, slow.clone(), Some("slow-1")).await;
    assert!(dup.headers().contains_key("retry-after"));
    problem(dup, 409, "idempotency_in_flight").await;
    assert_eq!(running.await.unwrap(), StatusCode::GATEWAY_TIMEOUT);
    let replayed = execute(&app, &key, slow, Some("slow-1")).await;
    assert_eq!(replayed.headers()["idempotent-replayed"], "true");
    problem(replayed, 504, "upstream_timeout").await;
    assert_eq!(balance(&app, &key).await, (999, 0));
    let too_long = "k".repeat(256);
    problem(
        execute(&app, &key, body, Some(&too_long)).await,
        422,
        "invalid_request",
    )
    .await;
}

/// A key past visible ASCII was once handed to the handler as no key at all, so a retry ran
/// and was charged again. As UTF-8 it is a key like any other (as on MCP and A2A); bytes that
/// are not UTF-8 are refused, and charge nothing.
#[tokio::test]
async fn a_key_past_ascii_is_still_one_billing_task() {
    let app = app().await;
    let key = app.api_key.clone();
    let body = json!({"domain": SHOP, "action": "search_products", "params": {"query": "tea"}});
    let send = |raw: &'static [u8]| {
        app.http
            .post(app.url("/api/execute"))
            .header("Authorization", bearer(&key))
            .header(
                "Idempotency-Key",
                reqwest::header::HeaderValue::from_bytes(raw).unwrap(),
            )
            .json(&body)
            .send()
    };
    let first = send("caf\u{e9}".as_bytes()).await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    let again = send("caf\u{e9}".as_bytes()).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    assert_eq!(balance(&app, &key).await, (999, 0));
    for _ in 0..2 {
        problem(send(b"bad\xff\xfe").await.unwrap(), 422, "invalid_request").await;
    }
    assert_eq!(balance(&app, &key).await, (999, 0));
    // 255 characters is the limit, however many bytes they take (a review: 200 "é" were
    // refused as too long).
    let longest: &'static str = Box::leak("\u{e9}".repeat(255).into_boxed_str());
    assert_eq!(send(longest.as_bytes()).await.unwrap().status(), 200);
    let too_long: &'static str = Box::leak("\u{e9}".repeat(256).into_boxed_str());
    problem(
        send(too_long.as_bytes()).await.unwrap(),
        422,
        "invalid_request",
    )
    .await;
    assert_eq!(balance(&app, &key).await, (998, 0));
}

/// Two keys (or two bearers) on one request would mean two things; the first used to win,
/// silently. Refused at the edge before anything runs, on every face.
#[tokio::test]
async fn a_request_with_two_keys_or_two_bearers_is_refused_before_it_runs() {
    let app = app().await;
    let key = app.api_key.clone();
    let body = json!({"domain": SHOP, "action": "search_products", "params": {"query": "tea"}});
    let two_keys = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&key))
        .header("Idempotency-Key", "twice-1")
        .header("Idempotency-Key", "twice-2")
        .json(&body)
        .send()
        .await
        .unwrap();
    let said = problem(two_keys, 400, "malformed_request").await;
    assert!(
        said["detail"].as_str().unwrap().contains("idempotency-key"),
        "{said}"
    );
    let two_bearers = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&key))
        .header("Authorization", "Bearer svc_test_someone_else")
        .json(&body)
        .send()
        .await
        .unwrap();
    problem(two_bearers, 400, "malformed_request").await;
    let mcp = app
        .http
        .post(app.url("/mcp"))
        .header("Authorization", bearer(&key))
        .header("Authorization", bearer(&key))
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    problem(mcp, 400, "malformed_request").await;
    assert_eq!(balance(&app, &key).await, (1000, 0));
    // One of each is a request like any other.
    let once = execute(&app, &key, body, Some("twice-1")).await;
    assert_eq!(once.status(), 200);
    assert_eq!(balance(&app, &key).await, (999, 0));
}

/// A caller that hangs up mid-execution does not stop it: the action runs to its end and is
/// settled by what happened (dropped with the request, it was left in flight for recovery to
/// refund as interrupted a minute later, whatever the site had done). Closing the connection
/// with a reset is what made hyper drop the handler (an attack found it: actions done on the
/// site and refunded); a plain close did not.
#[tokio::test]
async fn an_execution_the_caller_hangs_up_on_is_settled_by_what_happened() {
    let app = app().await;
    let key = app.api_key.clone();
    let slow = json!({"domain": FLAKY, "action": "slow", "params": {}});
    let request = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&key))
        .header("Idempotency-Key", "gone-1")
        .json(&slow);
    let caller = tokio::spawn(async move { request.send().await });
    while balance(&app, &key).await != (999, 1) {
        tokio::task::yield_now().await;
    }
    caller.abort();
    settled_by_the_site(&app, &key, &slow, "gone-1", (1000, 0)).await;

    // The same, cut with a TCP reset once the credit is held.
    let body = slow.to_string();
    reset_once_held(
        &app,
        &key,
        "/api/execute",
        "Idempotency-Key: reset-1\r\n",
        &body,
    )
    .await;
    settled_by_the_site(&app, &key, &slow, "reset-1", (1000, 0)).await;
}

/// Sends `body` to `path` with `key` on a raw connection and, once the key's credit is held
/// (the execution began), closes it with a TCP reset.
async fn reset_once_held(app: &TestApp, key: &str, path: &str, headers: &str, body: &str) {
    let host = app.base_url.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        bearer(key),
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut socket, head.as_bytes())
        .await
        .unwrap();
    let mut tries = 0;
    while balance(app, key).await != (999, 1) {
        tries += 1;
        assert!(tries < 500, "the execution on {path} never began");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    socket.set_zero_linger().unwrap();
}

/// The same over A2A: `message/send` used to run the step inside the request, so a reset
/// dropped it mid-action (a review found it after the REST fix).
#[tokio::test]
async fn an_a2a_task_the_caller_resets_is_settled_by_what_happened() {
    let app = app().await;
    let key = app.api_key.clone();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "messageId": "m-reset", "role": "user", "kind": "message",
        "parts": [{"kind": "data", "data": {"task_type": "execute_action", "domain": FLAKY,
            "action": "slow", "params": {}, "idempotency_key": "a2a-reset-1"}}]}}})
    .to_string();
    reset_once_held(&app, &key, "/a2a", "", &body).await;
    let slow = json!({"domain": FLAKY, "action": "slow", "params": {}});
    settled_by_the_site(&app, &key, &slow, "a2a-reset-1", (1000, 0)).await;
}

/// And over MCP, where rmcp runs each call in a task of its own: guarded here, so that a new
/// rmcp that ran calls inside the request would be seen.
#[tokio::test]
async fn an_mcp_call_the_caller_resets_is_settled_by_what_happened() {
    let app = app().await;
    let key = app.api_key.clone();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "execute", "arguments": {"domain": FLAKY, "action": "slow", "params": {},
            "idempotency_key": "mcp-reset-1"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let headers = "Accept: application/json, text/event-stream\r\n\
                   MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
                   Mcp-Name: execute\r\n";
    reset_once_held(&app, &key, "/mcp", headers, &body).await;
    let slow = json!({"domain": FLAKY, "action": "slow", "params": {}});
    settled_by_the_site(&app, &key, &slow, "mcp-reset-1", (1000, 0)).await;
}

/// Retries `idempotency_key` until it is no longer in flight: the site timed out after the
/// fetcher's 5 s, and that is the answer stored for the key, refunded.
async fn settled_by_the_site(
    app: &TestApp,
    key: &str,
    body: &Value,
    idempotency_key: &str,
    expected_balance: (i64, i64),
) {
    let mut tries = 0;
    let settled = loop {
        let again = execute(app, key, body.clone(), Some(idempotency_key)).await;
        if again.status() != StatusCode::CONFLICT {
            break again;
        }
        tries += 1;
        assert!(tries < 200, "still in flight after the caller hung up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(settled.headers()["idempotent-replayed"], "true");
    problem(settled, 504, "upstream_timeout").await;
    assert_eq!(balance(app, key).await, expected_balance);
}

async fn two_hundred_concurrent_requests(stores: svc::startup::Stores) {
    let app = TestApp::builder()
        .stores(stores)
        .action_sites()
        .await
        .spawn()
        .await;
    let key = app.api_key.clone();
    let body = json!({"domain": SHOP, "action": "add_to_cart", "params": {"sku": "MUG-BLUE", "quantity": 1}});
    let answers = join_all((0..200).map(|_| {
        let req = app
            .http
            .post(app.url("/api/execute"))
            .header("Authorization", bearer(&key))
            .header("Idempotency-Key", "burst-1")
            .json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    }))
    .await;
    let completed: Vec<&String> = answers
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, b)| b)
        .collect();
    assert!(!completed.is_empty());
    assert!(
        completed.iter().all(|b| *b == completed[0]),
        "every 200 carries the same body"
    );
    assert!(
        answers.iter().all(|(s, _)| *s == 200 || *s == 409),
        "only 200 or 409"
    );
    assert_eq!(balance(&app, &key).await, (999, 0), "charged once");
}

#[tokio::test]
async fn two_hundred_concurrent_requests_with_one_key_charge_once_in_memory() {
    two_hundred_concurrent_requests(svc::startup::Stores::memory()).await;
}

#[tokio::test]
async fn two_hundred_concurrent_requests_with_one_key_charge_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("burst.db").display());
    two_hundred_concurrent_requests(svc::startup::Stores::open(&url, 8).await.unwrap()).await;
}

#[tokio::test]
async fn two_hundred_concurrent_requests_with_one_key_charge_once_on_postgres() {
    let url = svc_contract_tests::postgres_database().await;
    two_hundred_concurrent_requests(svc::startup::Stores::open(&url, 16).await.unwrap()).await;
}

/// A review: a replay depended on today's checks. With the map retired since, the same
/// request under its key answered 404 unknown_domain about an order that went through, and an
/// agent told so might order again under a new key. What the key got stands.
#[tokio::test]
async fn a_key_keeps_its_answer_after_the_map_is_retired() {
    let clock = crate::helpers::TestClock::new();
    let app = TestApp::builder()
        .clock(clock.clone())
        .action_sites()
        .await
        .spawn()
        .await;
    let key = app.api_key.clone();
    let body = json!({"domain": SHOP, "action": "search_products", "params": {"query": "tea"}});
    let first = execute(&app, &key, body.clone(), Some("before-retire")).await;
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    app.services.actions.retire(SHOP).await.unwrap();
    // Past the published-map cache.
    clock.advance(std::time::Duration::from_secs(60));
    let again = execute(&app, &key, body.clone(), Some("before-retire")).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    // Another request under the key, and the same one under a new key, meet today's map.
    let other = json!({"domain": SHOP, "action": "search_products", "params": {"query": "milk"}});
    problem(
        execute(&app, &key, other, Some("before-retire")).await,
        404,
        "unknown_domain",
    )
    .await;
    problem(
        execute(&app, &key, body.clone(), Some("after-retire")).await,
        404,
        "unknown_domain",
    )
    .await;
    // A key of the account that may not execute hears today's answer, not the earlier one.
    let reader = app.key_with_scopes(&["read", "discover"]).await;
    problem(
        execute(&app, &reader, body, Some("before-retire")).await,
        404,
        "unknown_domain",
    )
    .await;
    assert_eq!(balance(&app, &key).await, (999, 0), "charged once");
}
