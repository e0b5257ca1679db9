//! A2A over HTTP as portable clients reach it (issue 19): JSON-RPC at `/a2a/` too, streamed
//! task updates (`SendStreamingMessage`, `message/stream`) in order, and `SubscribeToTask`
//! replaying a finished task.

use serde_json::{Value, json};

use crate::helpers::TestApp;

/// One JSON-RPC request to `path`; the raw response.
async fn post(app: &TestApp, path: &str, method: &str, params: Value) -> reqwest::Response {
    app.http
        .post(app.url(path))
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": "s1", "method": method, "params": params}))
        .send()
        .await
        .unwrap()
}

/// The results of every `data:` event of a finished stream, checking each envelope.
async fn events(resp: reqwest::Response) -> Vec<Value> {
    assert_eq!(resp.status(), 200);
    let kind = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let body = resp.text().await.unwrap();
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let data = e.strip_prefix("data: ").unwrap_or_else(|| panic!("{e}"));
            let envelope: Value = serde_json::from_str(data).unwrap();
            assert_eq!(envelope["jsonrpc"], "2.0");
            assert_eq!(envelope["id"], "s1");
            envelope["result"].clone()
        })
        .collect()
}

fn start_message(email: &str) -> Value {
    json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
        {"data": {"task_type": "start_api_key_signup", "email": email}}]}})
}

#[tokio::test]
async fn jsonrpc_answers_with_and_without_the_trailing_slash_as_the_card_says() {
    let app = TestApp::builder().outbox().spawn().await;
    let card = app.get_json("/.well-known/agent-card.json").await;
    assert_eq!(card["capabilities"]["streaming"], true);
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        assert_eq!(interface["url"], app.url("/a2a"));
    }
    for path in ["/a2a", "/a2a/"] {
        let resp = post(&app, path, "GetTask", json!({"id": "nope"})).await;
        assert_eq!(resp.status(), 200, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], -32001, "{path}: {body}");
    }
}

#[tokio::test]
async fn a_streamed_task_goes_submitted_working_artifact_completed_and_is_kept() {
    let app = TestApp::builder().outbox().spawn().await;
    let got = events(
        post(
            &app,
            "/a2a/",
            "SendStreamingMessage",
            start_message("stream@example.com"),
        )
        .await,
    )
    .await;
    assert_eq!(got.len(), 4, "{got:#?}");
    let task = &got[0]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{got:#?}");
    assert_eq!(task["history"][0]["messageId"], "m1");
    let id = task["id"].as_str().unwrap();
    let working = &got[1]["statusUpdate"];
    assert_eq!(working["taskId"], id);
    assert_eq!(working["contextId"], task["contextId"]);
    assert_eq!(working["status"]["state"], "TASK_STATE_WORKING");
    let artifact = &got[2]["artifactUpdate"];
    assert_eq!(artifact["taskId"], id);
    assert_eq!(artifact["lastChunk"], true);
    let data = &artifact["artifact"]["parts"][0]["data"];
    assert_eq!(data["task_type"], "start_api_key_signup");
    assert!(data["deviceId"].as_str().is_some(), "{data}");
    let done = &got[3]["statusUpdate"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        done["status"]["message"]["parts"][0]["text"]
            .as_str()
            .is_some()
    );

    // Kept: GetTask reads it, and a resubscription replays the final state, then ends.
    let read = app.a2a("GetTask", json!({"id": id})).await;
    assert_eq!(read["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        read["result"]["artifacts"][0]["parts"][0]["data"]["deviceId"],
        data["deviceId"]
    );
    let again = events(post(&app, "/a2a", "SubscribeToTask", json!({"id": id})).await).await;
    assert_eq!(again.len(), 1, "{again:#?}");
    assert_eq!(again[0]["task"]["id"], id);
    assert_eq!(again[0]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_failing_step_streams_its_problem_and_a_rejected_end() {
    let app = TestApp::builder().outbox().spawn().await;
    let params = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
        {"data": {"task_type": "start_api_key_signup"}}]}});
    let got = events(post(&app, "/a2a", "SendStreamingMessage", params).await).await;
    let states: Vec<&Value> = got
        .iter()
        .filter_map(|e| e.pointer("/statusUpdate/status/state"))
        .collect();
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_REJECTED"]);
    assert_eq!(
        got[2]["artifactUpdate"]["artifact"]["parts"][0]["data"]["failure_class"],
        "invalid_request",
        "{got:#?}"
    );
}

#[tokio::test]
async fn the_0_3_names_stream_in_the_0_3_shape() {
    let app = TestApp::builder().outbox().spawn().await;
    let params = json!({"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [
        {"kind": "data", "data": {"task_type": "start_api_key_signup", "email": "old@example.com"}}]}});
    let got = events(post(&app, "/a2a", "message/stream", params).await).await;
    let kinds: Vec<&str> = got.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["task", "status-update", "artifact-update", "status-update"]
    );
    assert_eq!(got[0]["status"]["state"], "submitted");
    assert_eq!(got[1]["final"], false);
    assert_eq!(got[3]["final"], true);
    assert_eq!(got[3]["status"]["state"], "completed");
    let again = events(
        post(
            &app,
            "/a2a",
            "tasks/resubscribe",
            json!({"id": got[0]["id"]}),
        )
        .await,
    )
    .await;
    assert_eq!(again[0]["status"]["state"], "completed");
}

#[tokio::test]
async fn stream_errors_come_before_any_stream_as_plain_jsonrpc() {
    let app = TestApp::builder().outbox().spawn().await;
    let unknown = post(&app, "/a2a", "SubscribeToTask", json!({"id": "nope"})).await;
    assert!(
        unknown.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = unknown.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32001, "{body}");
    let bad: Value = post(&app, "/a2a", "SendStreamingMessage", json!({}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    // A message without a task type gets the guide as one message event.
    let help = events(
        post(
            &app,
            "/a2a",
            "SendStreamingMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        )
        .await,
    )
    .await;
    assert_eq!(help.len(), 1);
    assert_eq!(help[0]["message"]["role"], "ROLE_AGENT");
}
