//! Signup by an e-mailed code, the fallback to the device flow: the key it issues once, a
//! code's expiry and tries, the caps per address, the free credits, and the lock-outs of a
//! client address and of an e-mail address after wrong codes.

use std::time::Duration;

use serde_json::{Value, json};

use svc_ports::Email;

use crate::helpers::{Browser, TestApp, bearer, csrf_of, latest_code, problem};
use crate::signup::app_with_clock;

pub(crate) async fn register(app: &TestApp, email: &str) -> reqwest::Response {
    app.http
        .post(app.url("/api/register"))
        .json(&json!({"email": email, "agent_name": "Test Agent"}))
        .send()
        .await
        .unwrap()
}

pub(crate) async fn verify(app: &TestApp, device_id: &str, code: &str) -> reqwest::Response {
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
