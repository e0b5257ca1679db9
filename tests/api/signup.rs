//! Signup and sign-in over HTTP: the RFC 8628 device flow with every error it names, the web
//! pages' session, CSRF and Origin checks, key management by the account owner, and signup
//! through MCP and A2A (the e-mailed code's own tests are in `signup_email.rs`).

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use serde_json::{Value, json};
use svc_ports::{Email, Environment};

use crate::helpers::{
    Browser, TestApp, TestClock, bearer, capture_logs, captured_logs, csrf_of, latest_code, problem,
};
use crate::signup_email::{register, verify};

const GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

pub(crate) async fn app_with_clock() -> (TestApp, Arc<TestClock>) {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .clock(clock.clone())
        .spawn()
        .await;
    (app, clock)
}

async fn start_device(app: &TestApp) -> Value {
    let resp = app
        .http
        .post(app.url("/agent/identity"))
        .form(&[("client_id", "test-agent"), ("scope", "read discover")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    resp.json().await.unwrap()
}

async fn poll(app: &TestApp, device_code: &str) -> (StatusCode, Value) {
    let resp = app
        .http
        .post(app.url("/oauth2/token"))
        .form(&[("grant_type", GRANT), ("device_code", device_code)])
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap())
}

fn oauth_error(got: &(StatusCode, Value), error: &str) {
    assert_eq!(got.0, 400, "{}", got.1);
    assert_eq!(got.1["error"], error, "{}", got.1);
    assert_eq!(got.1["failure_class"], error, "{}", got.1);
    assert!(
        got.1["error_description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
}

// ---- device flow --------------------------------------------------------------------------------

#[tokio::test]
async fn device_flow_pending_slow_down_then_one_key() {
    let (app, clock) = app_with_clock().await;
    let started = start_device(&app).await;
    let user_code = started["user_code"].as_str().unwrap().to_owned();
    assert_eq!(user_code.len(), 9);
    assert_eq!(&user_code[4..5], "-");
    assert!(
        user_code
            .chars()
            .filter(|c| *c != '-')
            .all(|c| "BCDFGHJKLMNPQRSTVWXZ".contains(c))
    );
    assert_eq!(started["verification_uri"], app.url("/device"));
    assert_eq!(
        started["verification_uri_complete"],
        app.url(&format!("/device?user_code={user_code}"))
    );
    assert_eq!(
        (started["expires_in"].as_u64(), started["interval"].as_u64()),
        (Some(900), Some(5))
    );
    let code = started["device_code"].as_str().unwrap();

    oauth_error(&poll(&app, code).await, "authorization_pending");
    // Too soon: slow_down, and the interval grows by 5 s.
    let fast = poll(&app, code).await;
    oauth_error(&fast, "slow_down");
    assert_eq!(fast.1["interval"], 10);
    clock.advance(Duration::from_secs(6));
    oauth_error(&poll(&app, code).await, "slow_down"); // 6 s < the new 10 s
    clock.advance(Duration::from_secs(16));
    oauth_error(&poll(&app, code).await, "authorization_pending");

    let browser = Browser::new(&app);
    browser.sign_in(&app, "owner@example.com", "/account").await;
    // No agent_name was sent: the page names the agent by its client id.
    let asking = browser
        .page(&format!("/device?user_code={user_code}"))
        .await;
    assert!(
        asking.contains("<td id=\"agent-name\">test-agent</td>"),
        "{asking}"
    );
    let page = browser.decide(&user_code, "approve").await;
    assert!(page.contains("Agent approved"), "{page}");

    clock.advance(Duration::from_secs(16));
    let (status, token) = poll(&app, code).await;
    assert_eq!(status, 200, "{token}");
    assert_eq!(token["token_type"], "Bearer");
    assert_eq!(token["access_token"], token["api_key"]);
    assert_eq!(token["scope"], "discover read");
    let key = token["api_key"].as_str().unwrap();
    assert!(
        token["welcome_message"]
            .as_str()
            .unwrap()
            .contains("owner@example.com")
    );
    assert!(token["mcp_setup_command"].as_str().unwrap().contains(key));
    assert_eq!(app.get_usage(Some(&bearer(key))).await.status(), 200);

    clock.advance(Duration::from_secs(16));
    oauth_error(&poll(&app, code).await, "invalid_grant");
    let owner = app
        .services
        .keys
        .list(Some(&Email::parse("owner@example.com").unwrap()))
        .await
        .unwrap();
    assert_eq!(owner.len(), 1, "one key per device code");
}

#[tokio::test]
async fn denied_and_expired_device_codes_stop_the_agent() {
    let (app, clock) = app_with_clock().await;
    let denied = start_device(&app).await;
    let browser = Browser::new(&app);
    browser.sign_in(&app, "owner@example.com", "/account").await;
    let page = browser
        .decide(denied["user_code"].as_str().unwrap(), "deny")
        .await;
    assert!(page.contains("Request denied"));
    oauth_error(
        &poll(&app, denied["device_code"].as_str().unwrap()).await,
        "access_denied",
    );

    let late = start_device(&app).await;
    clock.advance(Duration::from_secs(901));
    oauth_error(
        &poll(&app, late["device_code"].as_str().unwrap()).await,
        "expired_token",
    );
    let page = browser
        .get(&format!(
            "/device?user_code={}",
            late["user_code"].as_str().unwrap()
        ))
        .await;
    assert_eq!(page.status(), 422);
    assert!(page.text().await.unwrap().contains("expired"));
}

#[tokio::test]
async fn token_endpoint_names_every_request_error() {
    let app = TestApp::builder().outbox().spawn().await;
    let post = |form: Vec<(&'static str, &'static str)>| {
        let req = app.http.post(app.url("/oauth2/token")).form(&form);
        async move {
            let r = req.send().await.unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }
    };
    oauth_error(&post(vec![("device_code", "x")]).await, "invalid_request");
    oauth_error(&post(vec![("grant_type", GRANT)]).await, "invalid_request");
    oauth_error(
        &post(vec![("grant_type", "authorization_code"), ("code", "x")]).await,
        "unsupported_grant_type",
    );
    oauth_error(
        &post(vec![("grant_type", GRANT), ("device_code", "nope")]).await,
        "invalid_grant",
    );

    let scope = app
        .http
        .post(app.url("/agent/identity"))
        .form(&[("client_id", "a"), ("scope", "read admin")])
        .send()
        .await
        .unwrap();
    let body: Value = scope.json().await.unwrap();
    assert_eq!(body["error"], "invalid_scope", "{body}");
    let no_client = app
        .http
        .post(app.url("/agent/identity"))
        .form(&[("scope", "read")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_client.status(), 400);
    assert_eq!(
        no_client.json::<Value>().await.unwrap()["error"],
        "invalid_request"
    );

    // JSON naming the agent: the name reaches the approval page.
    let named = app
        .http
        .post(app.url("/agent/identity"))
        .json(&json!({"agent_name": "Research Bot"}))
        .send()
        .await
        .unwrap();
    assert_eq!(named.status(), 200);
    let named: Value = named.json().await.unwrap();
    let browser = Browser::new(&app);
    browser.sign_in(&app, "owner@example.com", "/account").await;
    let page = browser
        .page(&format!(
            "/device?user_code={}",
            named["user_code"].as_str().unwrap()
        ))
        .await;
    assert!(page.contains("Research Bot") && page.contains("/terms") && page.contains("/privacy"));
    let unknown = app
        .http
        .post(app.url("/agent/identity"))
        .json(&json!({"agent_name": "x", "extra": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
}

#[tokio::test]
async fn authorization_server_metadata_names_both_endpoints() {
    let app = TestApp::spawn().await;
    let meta = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(
        meta["device_authorization_endpoint"],
        app.url("/oauth2/device_authorization")
    );
    assert_eq!(meta["token_endpoint"], app.url("/oauth2/token"));
    assert_eq!(meta["grant_types_supported"][0], GRANT);
    let resource = app.get_json("/.well-known/oauth-protected-resource").await;
    assert_eq!(resource["resource"], app.base_url);
}

// ---- web pages ----------------------------------------------------------------------------------

#[tokio::test]
async fn forms_need_a_csrf_token_an_origin_and_no_api_key() {
    let app = TestApp::builder().outbox().spawn().await;
    let browser = Browser::new(&app);
    let page = browser.get("/signin").await;
    let cookies: Vec<String> = page
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert!(
        cookies.iter().any(|c| c.starts_with("svc_csrf=")
            && c.contains("HttpOnly")
            && c.contains("SameSite=Lax")),
        "{cookies:?}"
    );
    let csrf = csrf_of(&page.text().await.unwrap());

    let no_token = browser.post("/signin", &[("email", "a@example.com")]).await;
    assert_eq!(no_token.status(), 403);
    let other_origin = browser
        .http
        .post(app.url("/signin"))
        .header("Origin", "https://evil.example")
        .form(&[("csrf", csrf.as_str()), ("email", "a@example.com")])
        .send()
        .await
        .unwrap();
    assert_eq!(other_origin.status(), 403);
    let no_origin = browser
        .http
        .post(app.url("/signin"))
        .form(&[("csrf", csrf.as_str()), ("email", "a@example.com")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status(), 403);
    let with_key = browser
        .http
        .post(app.url("/signin"))
        .header("Origin", &app.base_url)
        .header("Authorization", bearer(&app.api_key))
        .form(&[("csrf", csrf.as_str()), ("email", "a@example.com")])
        .send()
        .await
        .unwrap();
    problem(with_key, 403, "api_key_not_allowed").await;
    let outbox = app.get_json("/sandbox/outbox?to=a@example.com").await;
    assert!(
        outbox["messages"].as_array().unwrap().is_empty(),
        "a refused form sent mail"
    );

    let ok = browser
        .post("/signin", &[("csrf", &csrf), ("email", "a@example.com")])
        .await;
    assert_eq!(ok.status(), 303);
}

#[tokio::test]
async fn the_account_page_creates_rotates_and_revokes_keys() {
    let app = TestApp::builder().outbox().spawn().await;
    let browser = Browser::new(&app);
    let signed_out = browser.get("/account").await;
    assert_eq!(signed_out.status(), 303);
    assert!(
        signed_out.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/signin")
    );

    let page = browser.sign_in(&app, "keys@example.com", "/account").await;
    assert!(
        page.contains("keys@example.com") && page.contains("id=\"usage\""),
        "{page}"
    );
    let created = browser
        .post(
            "/account/keys",
            &[("csrf", &csrf_of(&page)), ("label", "laptop agent")],
        )
        .await
        .text()
        .await
        .unwrap();
    let key = new_key_of(&created);
    assert_eq!(app.get_usage(Some(&bearer(&key))).await.status(), 200);

    let page = browser.page("/account").await;
    let prefix = &key[..17];
    assert!(page.contains(prefix) && page.contains("laptop agent"));
    let rotated = browser
        .post(
            "/account/keys/rotate",
            &[("csrf", &csrf_of(&page)), ("prefix", prefix)],
        )
        .await
        .text()
        .await
        .unwrap();
    let new_key = new_key_of(&rotated);
    // The old key keeps working for the overlap (its end is checked in tests/api/keys.rs);
    // revoking it stops it now.
    assert!(rotated.contains("id=\"overlap-end\""), "{rotated}");
    assert_eq!(app.get_usage(Some(&bearer(&key))).await.status(), 200);
    assert_eq!(app.get_usage(Some(&bearer(&new_key))).await.status(), 200);
    let page = browser.page("/account").await;
    let revoked = browser
        .post(
            "/account/keys/revoke",
            &[("csrf", &csrf_of(&page)), ("prefix", prefix)],
        )
        .await;
    assert_eq!(revoked.status(), 303);
    problem(
        app.get_usage(Some(&bearer(&key))).await,
        401,
        "revoked_api_key",
    )
    .await;

    // Another account's key cannot be touched from here.
    let page = browser.page("/account").await;
    let seeded_prefix = &app.api_key[..17];
    let refused = browser
        .post(
            "/account/keys/revoke",
            &[("csrf", &csrf_of(&page)), ("prefix", seeded_prefix)],
        )
        .await;
    assert_eq!(refused.status(), 200);
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("no key of this account")
    );
    assert_eq!(
        app.get_usage(Some(&bearer(&app.api_key))).await.status(),
        200
    );

    let revoked = browser
        .post(
            "/account/keys/revoke",
            &[("csrf", &csrf_of(&page)), ("prefix", &new_key[..17])],
        )
        .await;
    assert_eq!(revoked.status(), 303);
    problem(
        app.get_usage(Some(&bearer(&new_key))).await,
        401,
        "revoked_api_key",
    )
    .await;

    let page = browser.page("/account").await;
    let out = browser.post("/signout", &[("csrf", &csrf_of(&page))]).await;
    assert_eq!(out.status(), 303);
    assert_eq!(browser.get("/account").await.status(), 303);
}

#[tokio::test]
async fn the_outbox_exists_only_in_the_sandbox() {
    let live = TestApp::builder()
        .environment(Environment::Live)
        .spawn()
        .await;
    let resp = live
        .http
        .get(live.url("/sandbox/outbox"))
        .send()
        .await
        .unwrap();
    problem(resp, 404, "not_found").await;
    let sandbox = TestApp::builder().outbox().spawn().await;
    let resp = sandbox
        .http
        .get(sandbox.url("/sandbox/outbox"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

// ---- MCP ---------------------------------------------------------------------------------------

async fn tool(app: &TestApp, name: &str, args: Value) -> Value {
    let (status, body) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}),
            None,
            "2025-11-25",
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

#[tokio::test]
async fn mcp_signup_tools_work_without_a_key() {
    let app = TestApp::builder().outbox().spawn().await;
    let started = tool(
        &app,
        "svc_start_claim_link_signup",
        json!({"agent_name": "MCP Agent"}),
    )
    .await;
    let s = &started["structuredContent"];
    assert!(
        s["verification_uri_complete"]
            .as_str()
            .unwrap()
            .contains("/device?user_code=")
    );
    let polled = tool(
        &app,
        "svc_poll_claim_link_signup",
        json!({"deviceCode": s["deviceCode"]}),
    )
    .await;
    assert_eq!(polled["structuredContent"]["status"], "pending", "{polled}");
    let bad = tool(
        &app,
        "svc_poll_claim_link_signup",
        json!({"deviceCode": "nope"}),
    )
    .await;
    assert_eq!(bad["isError"], true);

    let started = tool(
        &app,
        "svc_start_api_key_signup",
        json!({"email": "mcp@example.com"}),
    )
    .await;
    let device_id = started["structuredContent"]["deviceId"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = latest_code(&app, "mcp@example.com").await;
    let wrong = tool(
        &app,
        "svc_complete_api_key_signup",
        json!({"deviceId": device_id, "code": "12"}),
    )
    .await;
    assert_eq!(wrong["isError"], true);
    assert!(
        wrong["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("invalid_code")
    );
    let done = tool(
        &app,
        "svc_complete_api_key_signup",
        json!({"deviceId": device_id, "code": code}),
    )
    .await;
    let key = done["structuredContent"]["api_key"].as_str().unwrap();
    assert_eq!(app.get_usage(Some(&bearer(key))).await.status(), 200);
}

#[tokio::test]
async fn wrong_user_codes_lock_the_address_out() {
    let app = TestApp::builder().outbox().spawn().await;
    let browser = Browser::new(&app);
    browser
        .sign_in(&app, "guesser@example.com", "/account")
        .await;
    let mut statuses = Vec::new();
    for _ in 0..21 {
        statuses.push(
            browser
                .get("/device?user_code=BBBB-BBBB")
                .await
                .status()
                .as_u16(),
        );
    }
    assert!(statuses[..20].iter().all(|s| *s == 422), "{statuses:?}");
    let locked = browser.get("/device?user_code=BBBB-BBBB").await;
    assert_eq!(locked.status(), 429);
    assert!(locked.headers().contains_key("retry-after"));
    // A real code from a locked-out address is refused too.
    let started = start_device(&app).await;
    let real = browser
        .get(&format!(
            "/device?user_code={}",
            started["user_code"].as_str().unwrap()
        ))
        .await;
    assert_eq!(real.status(), 429);
}

// ---- A2A ---------------------------------------------------------------------------------------

async fn a2a(app: &TestApp, method: &str, params: Value) -> Value {
    app.a2a(method, params).await
}

#[tokio::test]
async fn a2a_tasks_create_runs_the_email_code_signup() {
    let app = TestApp::builder().outbox().spawn().await;
    let card = app.get_json("/.well-known/agent-card.json").await;
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["url"], app.url("/a2a"));
    assert_eq!(app.get_json("/.well-known/agent.json").await, card);
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        skills,
        [
            "start_api_key_signup",
            "complete_api_key_signup",
            "read_page",
            "discover_actions",
            "execute_action"
        ]
    );

    let started = a2a(
        &app,
        "tasks/create",
        json!({"task_type": "start_api_key_signup", "email": "a2a@example.com"}),
    )
    .await;
    let task = &started["result"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{started}");
    let device_id = task["artifacts"][0]["parts"][0]["data"]["deviceId"]
        .as_str()
        .unwrap()
        .to_owned();

    let wrong = a2a(
        &app,
        "tasks/create",
        json!({"task_type": "complete_api_key_signup", "deviceId": device_id, "code": "00000x"}),
    )
    .await;
    assert_eq!(wrong["result"]["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        wrong["result"]["artifacts"][0]["parts"][0]["data"]["failure_class"],
        "invalid_code"
    );

    let code = latest_code(&app, "a2a@example.com").await;
    let done = a2a(
        &app,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
            {"data": {"task_type": "complete_api_key_signup", "deviceId": device_id, "code": code}, "mediaType": "application/json"}
        ]}, "configuration": {}}),
    )
    .await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let key = task["artifacts"][0]["parts"][0]["data"]["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(app.get_usage(Some(&bearer(&key))).await.status(), 200);

    let again = a2a(&app, "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(again["result"]["id"], task["id"]);
    assert!(
        !again.to_string().contains(&key),
        "GetTask showed the key again"
    );
    let missing = a2a(&app, "GetTask", json!({"id": "nope"})).await;
    assert_eq!(missing["error"]["code"], -32001);
    assert_eq!(
        a2a(&app, "tasks/nonsense", json!({})).await["error"]["code"],
        -32601
    );
    let unknown_type = a2a(&app, "tasks/create", json!({"task_type": "buy_everything"})).await;
    assert_eq!(
        unknown_type["result"]["status"]["state"],
        "TASK_STATE_REJECTED"
    );

    // 0.3 names get 0.3 shapes.
    let v03 = a2a(&app, "message/send", json!({"message": {"kind": "message", "messageId": "m2", "role": "user",
        "parts": [{"kind": "data", "data": {"task_type": "start_api_key_signup", "email": "old@example.com"}}]}})).await;
    assert_eq!(v03["result"]["kind"], "task");
    assert_eq!(v03["result"]["status"]["state"], "completed");
    let bad = app
        .http
        .post(app.url("/a2a"))
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.json::<Value>().await.unwrap()["error"]["code"], -32700);
}

// ---- logs ----------------------------------------------------------------------------------------

/// Everything the service logs in this test process (nextest runs each test in its own).
#[tokio::test]
async fn signup_and_key_management_log_prefixes_never_secrets() {
    capture_logs();
    let (app, clock) = app_with_clock().await;

    let started = start_device(&app).await;
    let device_code = started["device_code"].as_str().unwrap().to_owned();
    let browser = Browser::new(&app);
    browser.sign_in(&app, "logs@example.com", "/account").await;
    let sign_in_code = latest_code(&app, "logs@example.com").await;
    browser
        .decide(started["user_code"].as_str().unwrap(), "approve")
        .await;
    clock.advance(Duration::from_secs(6));
    let (_, token) = poll(&app, &device_code).await;
    let device_key = token["api_key"].as_str().unwrap().to_owned();

    let page = browser.page("/account").await;
    let rotated = browser
        .post(
            "/account/keys/rotate",
            &[("csrf", &csrf_of(&page)), ("prefix", &device_key[..17])],
        )
        .await
        .text()
        .await
        .unwrap();
    let rotated_key = new_key_of(&rotated);

    let body: Value = register(&app, "logs@example.com")
        .await
        .json()
        .await
        .unwrap();
    let email_code = latest_code(&app, "logs@example.com").await;
    let verified: Value = verify(&app, body["deviceId"].as_str().unwrap(), &email_code)
        .await
        .json()
        .await
        .unwrap();
    let email_key = verified["api_key"].as_str().unwrap().to_owned();

    let log = captured_logs();
    for event in [
        "device grant started",
        "api key issued by device grant",
        "api key rotated",
        "api key issued by email code",
        "email code sent",
        "signed in",
    ] {
        assert!(log.contains(event), "no `{event}` in the log");
    }
    assert!(
        log.contains(&device_key[..17]) && log.contains(&rotated_key[..17]),
        "key prefixes are logged"
    );
    for secret in [&device_key, &rotated_key, &email_key, &device_code] {
        assert!(!log.contains(secret.as_str()), "a secret reached the log");
    }
    for code in [&sign_in_code, &email_code] {
        assert!(
            !log.contains(&format!("\"{code}\"")) && !log.contains(&format!(" {code}")),
            "a code reached the log"
        );
    }
}

/// The key a page shows once, after it was made or rotated.
fn new_key_of(html: &str) -> String {
    html.split("<pre id=\"new-key\">")
        .nth(1)
        .unwrap()
        .split('<')
        .next()
        .unwrap()
        .to_owned()
}
