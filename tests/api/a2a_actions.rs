//! A2A's skills that act with an API key (issue 19): `read_page`, `discover_actions` and
//! `execute_action` as tasks, sent or streamed, charged as on every face, and shown only to the
//! account that ran them.

use serde_json::{Value, json};
use svc_sandbox::{DEMO_HOST, DemoSite};

use crate::helpers::{TestApp, bearer};

const SHOP: &str = "shop.sandbox.test";

async fn app() -> (TestApp, DemoSite) {
    let demo = DemoSite::start().await;
    let app = TestApp::builder()
        .sandbox_host(DEMO_HOST, demo.address())
        .action_sites()
        .await
        .spawn()
        .await;
    (app, demo)
}

/// One JSON-RPC call with `key` (or none); the raw response.
async fn call(app: &TestApp, key: Option<&str>, method: &str, params: Value) -> reqwest::Response {
    let mut req = app
        .http
        .post(app.url("/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": "c1", "method": method, "params": params}));
    if let Some(key) = key {
        req = req.header("Authorization", bearer(key));
    }
    req.send().await.unwrap()
}

async fn result(app: &TestApp, key: Option<&str>, method: &str, params: Value) -> Value {
    let body: Value = call(app, key, method, params).await.json().await.unwrap();
    body
}

/// The results of every event of a finished stream.
async fn stream(app: &TestApp, key: &str, params: Value) -> Vec<Value> {
    let resp = call(app, Some(key), "SendStreamingMessage", params).await;
    assert_eq!(resp.status(), 200);
    let body = resp.text().await.unwrap();
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let data = e.strip_prefix("data: ").unwrap_or_else(|| panic!("{e}"));
            serde_json::from_str::<Value>(data).unwrap()["result"].clone()
        })
        .collect()
}

fn message(data: Value) -> Value {
    json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"data": data}]}})
}

async fn spendable(app: &TestApp, key: &str) -> i64 {
    let usage: Value = app
        .get_usage(Some(&bearer(key)))
        .await
        .json()
        .await
        .unwrap();
    usage["balance"]["spendable"].as_i64().unwrap()
}

fn add_to_cart(quantity: u32, idempotency_key: &str) -> Value {
    json!({"task_type": "execute_action", "domain": SHOP, "action": "add_to_cart",
           "params": {"sku": "TEA-GREEN", "quantity": quantity}, "idempotency_key": idempotency_key})
}

#[tokio::test]
async fn a_streamed_execute_goes_submitted_working_artifact_completed_and_charges_once() {
    let (app, _demo) = app().await;
    let key = app.api_key.clone();
    let before = spendable(&app, &key).await;
    let got = stream(&app, &key, message(add_to_cart(2, "a2a-run-1"))).await;
    let states: Vec<&str> = got
        .iter()
        .filter_map(|e| {
            e.pointer("/task/status/state")
                .or_else(|| e.pointer("/statusUpdate/status/state"))
                .and_then(Value::as_str)
        })
        .collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ],
        "{got:#?}"
    );
    let data = &got[2]["artifactUpdate"]["artifact"]["parts"][0]["data"];
    assert_eq!(data["status"], "completed", "{data}");
    assert_eq!(data["result"]["total_cents"], 1300);
    assert_eq!(data["credits_charged"], 1);
    crate::helpers::verify_with_jwks(&app, &data["artifact"]).await;
    assert_eq!(spendable(&app, &key).await, before - 1);

    // The same idempotency key, sent again without streaming: the same task, not charged again.
    let again = result(
        &app,
        Some(&key),
        "SendMessage",
        message(add_to_cart(2, "a2a-run-1")),
    )
    .await;
    let task = &again["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{again}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"]["task_id"],
        data["task_id"]
    );
    assert_eq!(spendable(&app, &key).await, before - 1);
}

/// A2A 1.0 spells fields in camelCase: `idempotencyKey` used to be read as no key, so the
/// retry was charged again (found by an attack). Both spellings are one field; a field the step
/// does not take is refused, as MCP refuses it, and runs nothing.
#[tokio::test]
async fn a_camel_case_idempotency_key_is_the_same_key_and_unknown_fields_are_refused() {
    let (app, _demo) = app().await;
    let key = app.api_key.clone();
    let before = spendable(&app, &key).await;
    let camel = json!({"taskType": "execute_action", "domain": SHOP, "action": "add_to_cart",
        "params": {"sku": "TEA-GREEN", "quantity": 1}, "idempotencyKey": "camel-1"});
    let mut ids = Vec::new();
    for _ in 0..2 {
        let sent = result(&app, Some(&key), "SendMessage", message(camel.clone())).await;
        let task = &sent["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
        ids.push(task["artifacts"][0]["parts"][0]["data"]["task_id"].clone());
    }
    assert_eq!(ids[0], ids[1], "one billing task");
    assert_eq!(spendable(&app, &key).await, before - 1);
    // The snake_case spelling names the same key.
    let snake = add_to_cart(1, "camel-1");
    let sent = result(&app, Some(&key), "SendMessage", message(snake)).await;
    assert_eq!(
        sent["result"]["task"]["artifacts"][0]["parts"][0]["data"]["task_id"],
        ids[0]
    );
    for odd in [
        json!({"taskType": "execute_action", "domain": SHOP, "action": "add_to_cart",
            "params": {"sku": "TEA-GREEN", "quantity": 1}, "idempotency_key": "a",
            "idempotencyKey": "b"}),
        json!({"taskType": "execute_action", "domain": SHOP, "action": "add_to_cart",
            "params": {"sku": "TEA-GREEN", "quantity": 1}, "idempotency-key": "c"}),
    ] {
        let sent = result(&app, Some(&key), "SendMessage", message(odd)).await;
        let task = &sent["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{sent}");
    }
    assert_eq!(spendable(&app, &key).await, before - 1);
}

#[tokio::test]
async fn a_failed_execute_is_a_failed_task_with_its_problem_and_nothing_charged() {
    let (app, _demo) = app().await;
    let key = app.api_key.clone();
    let before = spendable(&app, &key).await;
    let sent = result(
        &app,
        Some(&key),
        "SendMessage",
        message(add_to_cart(99, "a2a-bad")),
    )
    .await;
    let task = &sent["result"]["task"];
    let state = task["status"]["state"].as_str().unwrap();
    assert!(
        state == "TASK_STATE_FAILED" || state == "TASK_STATE_REJECTED",
        "{sent}"
    );
    let data = &task["artifacts"][0]["parts"][0]["data"];
    assert!(data["failure_class"].as_str().is_some(), "{data}");
    assert!(
        task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    assert_eq!(spendable(&app, &key).await, before);
}

#[tokio::test]
async fn without_a_key_or_with_wrong_types_the_task_is_rejected_and_nothing_runs() {
    let (app, _demo) = app().await;
    let sent = result(&app, None, "SendMessage", message(add_to_cart(2, "no-key"))).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"]["status"], 401);
    for (data, field) in [
        (
            json!({"task_type": "execute_action", "domain": SHOP, "action": 5}),
            "action",
        ),
        (
            json!({"task_type": "execute_action", "domain": SHOP, "action": "add_to_cart", "params": []}),
            "params",
        ),
        (
            json!({"task_type": "read_page", "url": "https://example.com/", "exclude_selectors": [true]}),
            "exclude_selectors",
        ),
        (json!({"task_type": "discover_actions"}), "domain"),
    ] {
        let sent = result(
            &app,
            Some(&app.api_key),
            "SendMessage",
            message(data.clone()),
        )
        .await;
        let task = &sent["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_REJECTED",
            "{data}: {sent}"
        );
        let problem = &task["artifacts"][0]["parts"][0]["data"];
        assert_eq!(
            problem["failure_class"], "invalid_request",
            "{data}: {problem}"
        );
        assert!(
            problem["detail"].as_str().unwrap().contains(field),
            "{problem}"
        );
    }
    // A key given twice is refused, not read as its last: nothing runs, nothing is charged.
    let before = spendable(&app, &app.api_key).await;
    let twice = app
        .http
        .post(app.url("/a2a"))
        .header("Authorization", format!("Bearer {}", app.api_key))
        .header("Content-Type", "application/json")
        .body(format!(
            r#"{{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {{"message": {{"role": "ROLE_USER", "messageId": "m-twice", "parts": [{{"data": {{"task_type": "execute_action", "domain": "{SHOP}", "action": "add_to_cart", "action": "checkout", "params": {{}}}}}}]}}}}}}"#
        ))
        .send()
        .await
        .unwrap();
    let body: Value = twice.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(body["id"], 7);
    assert_eq!(spendable(&app, &app.api_key).await, before);
}

#[tokio::test]
async fn read_and_discover_answer_what_rest_answers() {
    let (app, demo) = app().await;
    let key = app.api_key.clone();
    let url = demo.url("/articles/tides");
    let sent = result(
        &app,
        Some(&key),
        "SendMessage",
        message(json!({"task_type": "read_page", "url": url})),
    )
    .await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let page = &task["artifacts"][0]["parts"][0]["data"];
    let rest: Value = app
        .http
        .post(app.url("/api/read"))
        .header("Authorization", bearer(&key))
        .json(&json!({"url": url}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["outcome"], "page", "{page}");
    assert_eq!(page["content"]["markdown"], rest["content"]["markdown"]);

    let sent = result(
        &app,
        Some(&key),
        "SendMessage",
        message(json!({"task_type": "discover_actions", "domain": SHOP})),
    )
    .await;
    let map = &sent["result"]["task"]["artifacts"][0]["parts"][0]["data"];
    let rest = app
        .get_json_with_key(&format!("/api/discover?domain={SHOP}"), &key)
        .await;
    assert_eq!(map, &rest);
}

#[tokio::test]
async fn a_task_run_with_a_key_exists_only_for_that_account() {
    let (app, _demo) = app().await;
    let key = app.api_key.clone();
    let sent = result(
        &app,
        Some(&key),
        "SendMessage",
        message(add_to_cart(1, "mine")),
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let stranger = app
        .stranger_key("stranger@example.com", "read discover execute")
        .await;
    for who in [None, Some(stranger.as_str())] {
        for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
            let body: Value = call(&app, who, method, json!({"id": id}))
                .await
                .json()
                .await
                .unwrap();
            assert_eq!(body["error"]["code"], -32001, "{method} as {who:?}: {body}");
        }
    }
    let mine = result(&app, Some(&key), "GetTask", json!({"id": id})).await;
    assert_eq!(
        mine["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{mine}"
    );
    assert_eq!(
        mine["result"]["artifacts"][0]["parts"][0]["data"]["status"],
        "completed"
    );
}

/// Only JSON is read: another site's page can post a form or a `text/plain` body from its
/// visitors' browsers without a CORS preflight, and a review started sign-ups (and their mail)
/// that way. Refused with 415 before anything runs.
#[tokio::test]
async fn a_body_that_is_not_sent_as_json_is_refused_before_anything_runs() {
    let app = TestApp::builder().outbox().spawn().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/create", "params":
        {"task_type": "start_api_key_signup", "email": "victim@example.com"}})
    .to_string();
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut req = app
            .http
            .post(app.url("/a2a"))
            .header("Origin", "http://evil.example")
            .body(body.clone());
        if let Some(c) = content_type {
            req = req.header("Content-Type", c);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 415, "{content_type:?}");
        let answer: Value = resp.json().await.unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
    }
    let outbox = app.get_json("/sandbox/outbox?to=victim@example.com").await;
    assert_eq!(outbox["messages"], json!([]), "no mail was sent");
    // With the JSON type (and `charset`), the same request runs.
    let resp = app
        .http
        .post(app.url("/a2a"))
        .header("Content-Type", "application/json; charset=utf-8")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}
