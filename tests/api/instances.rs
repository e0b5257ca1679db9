//! Many instances on one database (issue 18): whatever one instance started, another answers
//! for. A2A tasks lived in process memory, so a `GetTask` routed to another instance than the
//! one that ran the task answered "not found".

use std::time::Duration;

use serde_json::{Value, json};
use svc::{
    config::RuntimeSettings,
    startup::{Application, Mail, Stores, World},
};
use svc_ports::Environment;

use crate::helpers::{TestApp, TestClock, bearer, latest_code};

/// A second instance on `stores`: the sandbox environment with its own outbox, nothing seeded
/// (the first instance seeded the shared database).
async fn second_instance(stores: Stores) -> TestApp {
    let app = Application::build(
        &RuntimeSettings::default(),
        "127.0.0.1:0",
        stores,
        Environment::Test,
        World {
            mail: Mail::SandboxOutbox,
            ..World::default()
        },
    )
    .await
    .unwrap();
    let base_url = format!("http://{}", app.local_addr());
    let services = app.context().services.clone();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        auth: None,
        _readiness: None,
        _sites: None,
        payments: None,
        base_url,
        metrics_url: None,
        api_key: String::new(),
        services,
        http: reqwest::Client::new(),
    }
}

fn data_of(task: &Value) -> &Value {
    &task["artifacts"][0]["parts"][0]["data"]
}

#[tokio::test]
async fn an_a2a_task_run_on_one_instance_is_read_and_cancelled_on_another() {
    let url = svc_contract_tests::postgres_database().await;
    let one = TestApp::builder()
        .outbox()
        .stores(Stores::open(&url, 4).await.unwrap())
        .spawn()
        .await;
    let two = second_instance(Stores::open(&url, 4).await.unwrap()).await;

    // Started on the second instance (its outbox gets the code) ...
    let started = two
        .a2a(
            "tasks/create",
            json!({"task_type": "start_api_key_signup", "email": "many@example.com"}),
        )
        .await;
    let start_task = &started["result"];
    assert_eq!(
        start_task["status"]["state"], "TASK_STATE_COMPLETED",
        "{started}"
    );
    let device_id = data_of(start_task)["deviceId"].as_str().unwrap().to_owned();
    let read = one.a2a("GetTask", json!({"id": start_task["id"]})).await;
    assert_eq!(read["result"]["id"], start_task["id"], "{read}");
    assert_eq!(data_of(&read["result"])["deviceId"], device_id.as_str());

    // ... completed on the first, which issues the key once ...
    let code = latest_code(&two, "many@example.com").await;
    let done = one
        .a2a(
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
                {"data": {"task_type": "complete_api_key_signup", "deviceId": device_id, "code": code},
                 "mediaType": "application/json"}
            ]}}),
        )
        .await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let key = data_of(task)["api_key"].as_str().unwrap().to_owned();
    assert_eq!(two.get_usage(Some(&bearer(&key))).await.status(), 200);

    // ... and read back on the second, without the key, in both protocol versions.
    let mut again = two.a2a("GetTask", json!({"id": task["id"]})).await;
    assert!(
        again["result"]["status"]["timestamp"].is_string(),
        "{again}"
    );
    again["result"]["status"]["timestamp"] = Value::Null;
    assert_eq!(again["result"], *task_without_key(task), "{again}");
    assert!(
        !again.to_string().contains(&key),
        "GetTask showed the key again"
    );
    let v03 = two.a2a("tasks/get", json!({"id": task["id"]})).await;
    assert_eq!(v03["result"]["id"], task["id"], "{v03}");

    // Cancelling a finished task is refused as finished, not as unknown, on either instance.
    for app in [&one, &two] {
        let cancel = app.a2a("CancelTask", json!({"id": task["id"]})).await;
        assert_eq!(cancel["error"]["code"], -32002, "{cancel}");
        let unknown = app.a2a("GetTask", json!({"id": "no-such-task"})).await;
        assert_eq!(unknown["error"]["code"], -32001, "{unknown}");
    }
}

/// The answer's task as it is kept: the key and the setup command (which holds it) removed.
fn task_without_key(task: &Value) -> Box<Value> {
    let mut kept = task.clone();
    kept["status"]["timestamp"] = Value::Null;
    let data = kept["artifacts"][0]["parts"][0]["data"]
        .as_object_mut()
        .unwrap();
    data.remove("api_key");
    data.remove("mcp_setup_command");
    Box::new(kept)
}

#[tokio::test]
async fn a2a_tasks_are_kept_for_an_hour_by_the_clock() {
    let clock = TestClock::new();
    let app = TestApp::builder().clock(clock.clone()).spawn().await;
    let created = app
        .a2a("tasks/create", json!({"task_type": "buy_everything"}))
        .await;
    let id = created["result"]["id"].clone();
    assert_eq!(created["result"]["status"]["state"], "TASK_STATE_REJECTED");
    clock.advance(Duration::from_secs(3599));
    let read = app.a2a("GetTask", json!({"id": id})).await;
    assert_eq!(read["result"]["id"], id, "{read}");
    clock.advance(Duration::from_secs(1));
    let gone = app.a2a("GetTask", json!({"id": id})).await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
}

/// The `data:` results of a finished event stream.
async fn stream_results(app: &TestApp, method: &str, params: Value) -> Vec<Value> {
    let resp = app
        .http
        .post(app.url("/a2a/"))
        .header("Accept", "text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let body = resp.text().await.unwrap();
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["result"].clone())
        .collect()
}

#[tokio::test]
async fn a_task_streamed_on_one_instance_is_replayed_to_a_subscriber_on_another() {
    let url = svc_contract_tests::postgres_database().await;
    let one = TestApp::builder()
        .outbox()
        .stores(Stores::open(&url, 4).await.unwrap())
        .spawn()
        .await;
    let two = second_instance(Stores::open(&url, 4).await.unwrap()).await;
    let streamed = stream_results(
        &one,
        "SendStreamingMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
            {"data": {"task_type": "start_api_key_signup", "email": "streams@example.com"}}]}}),
    )
    .await;
    let id = streamed[0]["task"]["id"].clone();
    assert_eq!(
        streamed.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{streamed:#?}"
    );
    let replayed = stream_results(&two, "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(replayed.len(), 1, "{replayed:#?}");
    assert_eq!(replayed[0]["task"]["id"], id);
    assert_eq!(
        replayed[0]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(
        replayed[0]["task"]["artifacts"][0]["parts"][0]["data"]["deviceId"]
            .as_str()
            .is_some()
    );
}
