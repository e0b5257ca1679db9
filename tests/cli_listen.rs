//! `svc listen` behind an outbound proxy: the events it polls may go through `HTTP_PROXY`, but
//! the developer's local server is reached directly (as Go's clients, and so `stripe listen`,
//! do), or a proxy set for the way out would get every signed event instead.

use std::time::Duration;

use serde_json::json;
use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};

mod support;

#[tokio::test]
async fn events_reach_a_local_server_directly_though_a_proxy_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = support::start_sandbox(dir.path(), &[], &[]);
    // One event: a completed search on the sandbox's shop.
    let resp = reqwest::Client::new()
        .post(format!("{}/api/execute", sandbox.base))
        .bearer_auth(&sandbox.key)
        .json(&json!({
            "domain": "shop.sandbox.test",
            "action": "search_products",
            "params": {"query": "tea"}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());

    let local = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&local)
        .await;
    let port = local.address().port();
    let out = tokio::process::Command::from(support::svc(dir.path()))
        .args([
            "listen",
            "--all",
            "--max-events",
            "1",
            "--forward-to",
            &format!("http://localhost:{port}/hooks"),
            "--base-url",
            &sandbox.base,
            "--api-key",
            &sandbox.key,
        ])
        // A proxy that answers nothing; the service itself is exempt by NO_PROXY.
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1")
        .env("no_proxy", "127.0.0.1")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("svc listen ends after one event")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("task.completed"), "{stdout}");
    assert!(stdout.contains("-> 204"), "forwarded directly: {stdout}");
    assert_eq!(local.received_requests().await.unwrap().len(), 1);
}
