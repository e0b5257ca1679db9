use serde_json::Value;
use svc_ports::{ApiKeySecret, Environment};

use crate::helpers::{TestApp, TestClock, bearer, problem};

#[tokio::test]
async fn usage_answers_the_record_for_a_valid_key() {
    let app = TestApp::spawn().await;
    let resp = app.get_usage(Some(&bearer(&app.api_key))).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["plan"], "sandbox");
    assert_eq!(body["environment"], "test");
    assert_eq!(body["balance"]["spendable"], 1000);
    assert_eq!(body["balance"]["held"], 0);
    assert_eq!(body["metering"]["cost_per_completed_action"], 1);
    assert_eq!(body["metering"]["refund_on_failure"], true);
    assert_eq!(body["metering"]["idempotency_window_hours"], 24);
    let prefix = body["key"]["prefix"].as_str().unwrap();
    assert!(app.api_key.starts_with(prefix) && prefix.len() == 17);
    assert!(
        !body.to_string().contains(&app.api_key),
        "the secret must never be echoed"
    );
}

#[tokio::test]
async fn missing_key_is_401_with_a_bearer_challenge() {
    let app = TestApp::spawn().await;
    let resp = app.get_usage(None).await;
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(&format!(
        "resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
        app.base_url
    )));
    let body = problem(resp, 401, "missing_api_key").await;
    assert_eq!(body["next_action"]["kind"], "sign_up");
}

#[tokio::test]
async fn malformed_unknown_and_wrongly_schemed_keys_are_401() {
    let app = TestApp::spawn().await;
    for header in [
        "Bearer svc_test_short",
        "Bearer nonsense",
        "Basic abc",
        "Bearer",
    ] {
        let resp = app.get_usage(Some(header)).await;
        assert!(resp.headers().contains_key("www-authenticate"));
        problem(resp, 401, "invalid_api_key").await;
    }
    let unknown = format!("svc_test_{}", "A".repeat(32));
    problem(
        app.get_usage(Some(&bearer(&unknown))).await,
        401,
        "invalid_api_key",
    )
    .await;
}

#[tokio::test]
async fn revoked_key_is_401_revoked() {
    let app = TestApp::spawn().await;
    let prefix = ApiKeySecret::parse(&app.api_key).unwrap().prefix();
    app.services.keys.revoke(&prefix).await.unwrap();
    problem(
        app.get_usage(Some(&bearer(&app.api_key))).await,
        401,
        "revoked_api_key",
    )
    .await;
}

#[tokio::test]
async fn a_live_key_is_refused_by_the_sandbox_and_a_test_key_by_live() {
    let sandbox = TestApp::spawn().await;
    let live_key = format!("svc_live_{}", "B".repeat(32));
    problem(
        sandbox.get_usage(Some(&bearer(&live_key))).await,
        403,
        "wrong_environment",
    )
    .await;

    let live = TestApp::builder()
        .environment(Environment::Live)
        .spawn()
        .await;
    problem(
        live.get_usage(Some(&bearer(&sandbox.api_key))).await,
        403,
        "wrong_environment",
    )
    .await;
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_whether_announced_or_streamed() {
    let app = TestApp::builder()
        .runtime(|r| r.max_body_bytes = 1024)
        .spawn()
        .await;
    let announced = app
        .http
        .post(app.url("/api/usage"))
        .body(vec![b'x'; 2048])
        .send()
        .await
        .unwrap();
    problem(announced, 413, "payload_too_large").await;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(vec![b'y'; 700]), Ok(vec![b'y'; 700])];
    let streamed = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let resp = app
        .http
        .post(app.url("/mcp"))
        .body(streamed)
        .send()
        .await
        .unwrap();
    problem(resp, 413, "payload_too_large").await;
}

#[tokio::test]
async fn default_body_limit_is_one_mebibyte() {
    let app = TestApp::spawn().await;
    let resp = app
        .http
        .post(app.url("/mcp"))
        .body(vec![b'x'; 1024 * 1024 + 1])
        .send()
        .await
        .unwrap();
    problem(resp, 413, "payload_too_large").await;
}

#[tokio::test]
async fn per_ip_limit_gives_429_with_retry_after() {
    // The limits run on the service's clock: pinned, however slow the machine.
    let clock = TestClock::new();
    let app = TestApp::builder()
        .clock(clock.clone())
        .runtime(|r| r.rate_limit_per_ip = 3)
        .spawn()
        .await;
    for _ in 0..3 {
        assert_eq!(
            app.http
                .get(app.url("/health"))
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
    }
    let resp = app.http.get(app.url("/health")).send().await.unwrap();
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // Three a minute: one comes back every 20 s.
    assert_eq!(retry, 20, "Retry-After {retry}");
    let body = problem(resp, 429, "rate_limited").await;
    assert_eq!(body["retryable"], true);
    assert_eq!(body["retry_after_ms"], 20_000);
    clock.advance(std::time::Duration::from_secs(20));
    let resp = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn per_key_limit_gives_429_for_that_key_only() {
    let app = TestApp::builder()
        .clock(TestClock::new())
        .runtime(|r| r.rate_limit_per_key = 2)
        .spawn()
        .await;
    let auth = bearer(&app.api_key);
    for _ in 0..2 {
        assert_eq!(app.get_usage(Some(&auth)).await.status(), 200);
    }
    let resp = app.get_usage(Some(&auth)).await;
    assert!(resp.headers().contains_key("retry-after"));
    problem(resp, 429, "rate_limited").await;
    // Unauthenticated requests are not charged to the key.
    problem(app.get_usage(None).await, 401, "missing_api_key").await;
}

#[tokio::test]
async fn unknown_paths_and_methods_are_problems() {
    let app = TestApp::spawn().await;
    problem(
        app.http.get(app.url("/nowhere")).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
    let resp = app.http.delete(app.url("/api/usage")).send().await.unwrap();
    assert_eq!(resp.headers()["allow"], "GET");
    problem(resp, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn request_ids_are_echoed_when_sane_and_minted_otherwise() {
    let app = TestApp::spawn().await;
    let resp = app
        .http
        .get(app.url("/health"))
        .header("x-request-id", "trace-123_abc")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "trace-123_abc");
    let resp = app
        .http
        .get(app.url("/health"))
        .header("x-request-id", "bad id with spaces")
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
}

#[tokio::test]
async fn concurrent_requests_all_succeed() {
    let app = std::sync::Arc::new(TestApp::spawn().await);
    let auth = bearer(&app.api_key);
    let calls = (0..50).map(|_| {
        let (app, auth) = (app.clone(), auth.clone());
        tokio::spawn(async move { app.get_usage(Some(&auth)).await.status().as_u16() })
    });
    let statuses = futures_util::future::join_all(calls).await;
    assert!(statuses.into_iter().all(|s| s.unwrap() == 200));
}

#[tokio::test]
async fn usage_reads_the_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("api.db").display());
    let stores = svc::startup::Stores::open(&url, 2).await.unwrap();
    let app = TestApp::builder().stores(stores).spawn().await;
    let body: Value = app
        .get_usage(Some(&bearer(&app.api_key)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["balance"]["spendable"], 1000);
    assert!(dir.path().join("api.db").exists());
}
