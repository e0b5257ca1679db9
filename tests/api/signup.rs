//! Signup and sign-in over HTTP: the RFC 8628 device flow with every error it names, the
//! email-code fallback with its expiry, tries and lock-outs, the web pages' session, CSRF and
//! Origin checks, and key management by the account owner.

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use serde_json::{Value, json};
use svc_ports::{Email, Environment};

use crate::helpers::{
    Browser, TestApp, TestClock, bearer, capture_logs, captured_logs, csrf_of, latest_code, problem,
};

const GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

async fn app_with_clock() -> (TestApp, Arc<TestClock>) {
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

// ---- email-code fallback ------------------------------------------------------------------------

async fn register(app: &TestApp, email: &str) -> reqwest::Response {
    app.http
        .post(app.url("/api/register"))
        .json(&json!({"email": email, "agent_name": "Test Agent"}))
        .send()
        .await
        .unwrap()
}

async fn verify(app: &TestApp, device_id: &str, code: &str) -> reqwest::Response {
    app.http
        .post(app.url("/api/verify"))
        .json(&json!({"deviceId": device_id, "code": code}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn email_code_signup_issues_a_working_key_once() {
    let app = TestApp::builder().outbox().spawn().await;
    let email = "agent-owner@example.com";
    let resp = register(&app, email).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    let device_id = body["deviceId"].as_str().unwrap().to_owned();
    assert_eq!(
        (body["expires_in"].as_u64(), body["max_attempts"].as_u64()),
        (Some(600), Some(5))
    );
    // No account exists from an email address alone.
    let parsed = Email::parse(email).unwrap();
    assert!(
        app.services
            .keys
            .account_by_email(&parsed)
            .await
            .unwrap()
            .is_none()
    );

    let code = latest_code(&app, email).await;
    let ok = verify(&app, &device_id, &code).await;
    assert_eq!(ok.status(), 200);
    let key: Value = ok.json().await.unwrap();
    let secret = key["api_key"].as_str().unwrap();
    assert!(key["mcp_setup_command"].as_str().unwrap().contains(secret));
    assert!(key["welcome_message"].as_str().is_some());
    assert_eq!(app.get_usage(Some(&bearer(secret))).await.status(), 200);
    assert!(
        app.services
            .keys
            .account_by_email(&parsed)
            .await
            .unwrap()
            .is_some()
    );

    let again = verify(&app, &device_id, &code).await;
    problem(again, 422, "code_expired").await;
    problem(
        verify(&app, "dev_01ARZ3NDEKTSV4RRFFQ69G5FAV", "123456").await,
        404,
        "not_found",
    )
    .await;
    problem(
        register(&app, "not-an-address").await,
        422,
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn email_codes_die_after_five_wrong_tries_and_after_ten_minutes() {
    let (app, clock) = app_with_clock().await;
    let email = "tries@example.com";
    let body: Value = register(&app, email).await.json().await.unwrap();
    let device_id = body["deviceId"].as_str().unwrap().to_owned();
    let code = latest_code(&app, email).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for left in (1..5).rev() {
        let p = problem(verify(&app, &device_id, wrong).await, 422, "invalid_code").await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("{left} tries left")),
            "{p}"
        );
    }
    problem(verify(&app, &device_id, wrong).await, 422, "code_expired").await;
    // Dead: even the right code is refused now.
    problem(verify(&app, &device_id, &code).await, 422, "code_expired").await;

    let body: Value = register(&app, email).await.json().await.unwrap();
    let device_id = body["deviceId"].as_str().unwrap().to_owned();
    let code = latest_code(&app, email).await;
    clock.advance(Duration::from_secs(601));
    let p = problem(verify(&app, &device_id, &code).await, 422, "code_expired").await;
    assert_eq!(p["next_action"]["kind"], "sign_up");
}

#[tokio::test]
async fn codes_per_address_are_capped() {
    let app = TestApp::builder()
        .runtime(|r| r.email_codes_per_hour = Some(3))
        .outbox()
        .spawn()
        .await;
    for _ in 0..3 {
        assert_eq!(register(&app, "flood@example.com").await.status(), 200);
    }
    let resp = register(&app, "flood@example.com").await;
    assert!(resp.headers().contains_key("retry-after"));
    problem(resp, 429, "rate_limited").await;
    let outbox = app.get_json("/sandbox/outbox?to=flood@example.com").await;
    assert_eq!(outbox["messages"].as_array().unwrap().len(), 3);
    // Anyone may ask for signup codes, with no credentials: that must not lock the person out
    // of signing in (an attack found it did; the cap is per purpose).
    let browser = Browser::new(&app);
    let page = browser.sign_in(&app, "flood@example.com", "/account").await;
    assert!(page.contains("flood@example.com"), "{page}");
}

#[tokio::test]
async fn the_sandbox_lets_one_developer_sign_up_again_and_again() {
    let app = TestApp::builder().outbox().spawn().await;
    let limits = &app.get_json("/.well-known/sandbox.json").await["limits"];
    assert_eq!(limits["codes_per_address_per_hour"], 60, "{limits}");
    assert_eq!(limits["free_credits_per_new_account"], 1000, "{limits}");
    for _ in 0..10 {
        assert_eq!(register(&app, "again@example.com").await.status(), 200);
    }
}

/// Signs up `email` by e-mail code and answers the new key's spendable credits.
async fn signed_up_credits(app: &TestApp, email: &str) -> i64 {
    let body: Value = register(app, email).await.json().await.unwrap();
    let device_id = body["deviceId"].as_str().unwrap().to_owned();
    let code = latest_code(app, email).await;
    let key: Value = verify(app, &device_id, &code).await.json().await.unwrap();
    let secret = key["api_key"].as_str().unwrap();
    let usage: Value = app
        .get_usage(Some(&bearer(secret)))
        .await
        .json()
        .await
        .unwrap();
    usage["balance"]["spendable"].as_i64().unwrap()
}

#[tokio::test]
async fn a_new_account_gets_the_free_credits_once() {
    // The sandbox's default is the seeded account's figure.
    let app = TestApp::builder().outbox().spawn().await;
    assert_eq!(signed_up_credits(&app, "first@example.com").await, 1000);

    let app = TestApp::builder()
        .runtime(|r| r.free_credits = Some(25))
        .outbox()
        .spawn()
        .await;
    assert_eq!(signed_up_credits(&app, "new@example.com").await, 25);
    // Signing up again (a second key) finds the account: nothing more is granted.
    assert_eq!(signed_up_credits(&app, "new@example.com").await, 25);

    let app = TestApp::builder()
        .runtime(|r| r.free_credits = Some(0))
        .outbox()
        .spawn()
        .await;
    assert_eq!(signed_up_credits(&app, "none@example.com").await, 0);
}

#[tokio::test]
async fn wrong_codes_from_one_address_lock_it_out() {
    let app = TestApp::builder().outbox().spawn().await;
    let mut locked = None;
    // 20 wrong codes per IP; each challenge takes 5.
    'outer: for i in 0..6 {
        let email = format!("lock{i}@example.com");
        let body: Value = register(&app, &email).await.json().await.unwrap();
        let device_id = body["deviceId"].as_str().unwrap().to_owned();
        let code = latest_code(&app, &email).await;
        let wrong = if code == "999999" { "888888" } else { "999999" };
        for _ in 0..5 {
            let resp = verify(&app, &device_id, wrong).await;
            if resp.status() == 429 {
                locked = Some(resp);
                break 'outer;
            }
        }
    }
    let resp = locked.expect("locked out after 20 wrong codes");
    assert!(resp.headers().contains_key("retry-after"));
    problem(resp, 429, "locked_out").await;
    // The right code from this address is refused while locked out.
    let body: Value = register(&app, "after@example.com")
        .await
        .json()
        .await
        .unwrap();
    let code = latest_code(&app, "after@example.com").await;
    problem(
        verify(&app, body["deviceId"].as_str().unwrap(), &code).await,
        429,
        "locked_out",
    )
    .await;
}

/// A review guessed 50 codes an hour at one address, each challenge's five tries from another
/// client address, never locked out. Ten wrong codes a day at an address stop its codes,
/// wherever the guesses come from; other addresses are untouched.
#[tokio::test]
async fn wrong_codes_at_one_email_address_stop_its_codes_for_the_day() {
    let (app, clock) = app_with_clock().await;
    let email = "target@example.com";
    let mut last = None;
    for _ in 0..3 {
        let body: Value = register(&app, email).await.json().await.unwrap();
        let device_id = body["deviceId"].as_str().unwrap().to_owned();
        let code = latest_code(&app, email).await;
        let wrong = if code == "999999" { "888888" } else { "999999" };
        for _ in 0..5 {
            let resp = verify(&app, &device_id, wrong).await;
            if resp.status() == 429 {
                last = Some(resp);
                break;
            }
        }
        if last.is_some() {
            break;
        }
    }
    let resp = last.expect("the address locked after ten wrong codes");
    assert!(resp.headers().contains_key("retry-after"));
    let body = problem(resp, 429, "locked_out").await;
    assert!(
        body["detail"].as_str().unwrap().contains("e-mail address"),
        "{body}"
    );
    // Even the right code of a new challenge for it is refused, today.
    let fresh: Value = register(&app, email).await.json().await.unwrap();
    let code = latest_code(&app, email).await;
    let device_id = fresh["deviceId"].as_str().unwrap().to_owned();
    problem(verify(&app, &device_id, &code).await, 429, "locked_out").await;
    // Another address signs up from the same client as ever.
    let other: Value = register(&app, "bystander@example.com")
        .await
        .json()
        .await
        .unwrap();
    let code = latest_code(&app, "bystander@example.com").await;
    let ok = verify(&app, other["deviceId"].as_str().unwrap(), &code).await;
    assert_eq!(ok.status(), 200);
    // A day after the guesses, the address's codes work again.
    clock.advance(Duration::from_secs(24 * 3600 + 60));
    let again: Value = register(&app, email).await.json().await.unwrap();
    let code = latest_code(&app, email).await;
    let ok = verify(&app, again["deviceId"].as_str().unwrap(), &code).await;
    assert_eq!(ok.status(), 200);
}

/// A review spent a web sign-in code's five tries through /api/verify: a challenge of the other
/// purpose answered "not found" there but took a try each time, so the owner's right code was
/// then dead. Another purpose's challenge is not tried at all.
#[tokio::test]
async fn a_sign_in_code_is_not_spent_through_the_agents_endpoint() {
    let app = TestApp::builder().outbox().spawn().await;
    let email = "owner@example.com";
    let browser = crate::helpers::Browser::new(&app);
    let page = browser
        .get("/signin?next=%2Faccount")
        .await
        .text()
        .await
        .unwrap();
    let sent = browser
        .post(
            "/signin",
            &[
                ("csrf", &csrf_of(&page)),
                ("email", email),
                ("next", "/account"),
            ],
        )
        .await;
    let (status, page) = browser.follow(sent).await;
    assert_eq!(status, 200, "{page}");
    let challenge = crate::helpers::attr(&page, "challenge");
    for _ in 0..6 {
        problem(verify(&app, &challenge, "000000").await, 404, "not_found").await;
    }
    let code = latest_code(&app, email).await;
    let done = browser
        .post(
            "/signin/code",
            &[
                ("csrf", &csrf_of(&page)),
                ("challenge", &challenge),
                ("code", &code),
                ("next", "/account"),
            ],
        )
        .await;
    let (status, page) = browser.follow(done).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(email), "signed in: {page}");
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
