//! Billing over HTTP against the sandbox's payment provider: checkout only from a signed-in
//! web session, credits only after a verified webhook (once, in any order), every bad
//! delivery refused without a change, the agent's handoff link, and internal meter events.

use reqwest::{StatusCode, redirect::Policy};
use serde_json::{Value, json};

use crate::helpers::{Browser, TestApp, bearer, csrf_of, problem};

pub(crate) async fn app() -> TestApp {
    TestApp::builder()
        .outbox()
        .payments()
        .await
        .runtime(|r| {
            r.internal_token = Some("internal-token-for-tests".into());
            // The balances asserted here count purchases alone.
            r.free_credits = Some(0);
        })
        .spawn()
        .await
}

/// Signs `email` in and returns the browser and the account page's CSRF token.
pub(crate) async fn signed_in(app: &TestApp, email: &str) -> (Browser, String) {
    let browser = Browser::new(app);
    let page = browser.sign_in(app, email, "/account").await;
    (browser, csrf_of(&page))
}

pub(crate) async fn create_checkout(
    app: &TestApp,
    browser: &Browser,
    csrf: &str,
    key: Option<&str>,
    sku: &str,
) -> reqwest::Response {
    let mut req = browser
        .http
        .post(app.url("/api/billing/create-checkout-session"))
        .header("Origin", &app.base_url)
        .header("Authorization", format!("Bearer {csrf}"))
        .json(&json!({ "sku": sku }));
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    req.send().await.unwrap()
}

pub(crate) async fn billing_account(app: &TestApp, browser: &Browser) -> Value {
    let resp = browser
        .http
        .get(app.url("/api/billing/account"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

fn provider(app: &TestApp) -> String {
    app.payments.as_ref().expect("payments").uri()
}

/// Asks the sandbox provider to send an event; returns the service's statuses.
pub(crate) async fn qa_send(app: &TestApp, session: &str, event: &str, variant: &str) -> Vec<u64> {
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/qa/send", provider(app)))
        .json(&json!({"session_id": session, "event": event, "variant": variant}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["deliveries"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|d| d["status"].as_u64().unwrap())
        .collect()
}

pub(crate) fn session_of(checkout_url: &str) -> String {
    checkout_url.rsplit('/').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_checkout_credits_once_and_only_after_the_verified_webhook() {
    let app = app().await;
    let (browser, csrf) = signed_in(&app, "buyer@example.com").await;
    let created = create_checkout(&app, &browser, &csrf, Some("k1"), "starter").await;
    assert_eq!(created.status(), 201);
    let checkout: Value = created.json().await.unwrap();
    assert_eq!(checkout["amount"], 900);
    assert_eq!(checkout["currency"], "usd");
    assert_eq!(checkout["credits"], 1000);
    assert_eq!(checkout["status"], "pending");
    let again = create_checkout(&app, &browser, &csrf, Some("k1"), "starter").await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["checkout_id"], checkout["checkout_id"]);
    assert_eq!(again["checkout_url"], checkout["checkout_url"]);

    // Nothing yet: the return page says pending, the account has no credits.
    let url = checkout["checkout_url"].as_str().unwrap();
    let return_page = browser
        .page(&format!(
            "/billing/return?checkout={}",
            checkout["checkout_id"].as_str().unwrap()
        ))
        .await;
    assert!(return_page.contains("Purchase pending"), "{return_page}");
    assert_eq!(
        billing_account(&app, &browser).await["credits"]["spendable"],
        0
    );

    // "Pay" on the provider's page: it sends checkout.completed and payment.succeeded.
    let paid = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
        .post(format!("{url}/pay"))
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), 303);
    assert!(
        paid.headers()["location"]
            .to_str()
            .unwrap()
            .contains("/billing/return?checkout=chk_")
    );
    let deliveries = app.payments.as_ref().unwrap().deliveries();
    assert_eq!(deliveries.len(), 2);
    assert!(deliveries.iter().all(|d| d.status == 200), "{deliveries:?}");
    assert!(
        deliveries[1].answer.contains("acknowledged"),
        "{}",
        deliveries[1].answer
    );

    let account = billing_account(&app, &browser).await;
    assert_eq!(account["credits"]["spendable"], 1000, "{account}");
    // Sandbox accounts keep their plan; a live `free` account becomes `starter` (contract suite).
    assert_eq!(account["plan"], "sandbox");
    let receipts = account["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1, "{account}");
    assert_eq!(receipts[0]["kind"], "purchase");
    assert_eq!(receipts[0]["checkout_id"], checkout["checkout_id"]);
    assert_eq!(receipts[0]["amount"], 900);
    let return_page = browser
        .page(&format!(
            "/billing/return?checkout={}",
            checkout["checkout_id"].as_str().unwrap()
        ))
        .await;
    assert!(return_page.contains("Purchase confirmed"), "{return_page}");

    // A replay, and every kind of bad delivery: refused or ignored, nothing moves.
    let session = session_of(url);
    assert_eq!(qa_send(&app, &session, "replay", "ok").await, vec![200]);
    for variant in ["tampered", "stale", "future", "wrong_secret", "unsigned"] {
        assert_eq!(
            qa_send(&app, &session, "refund", variant).await,
            vec![400],
            "{variant}"
        );
    }
    assert_eq!(
        billing_account(&app, &browser).await["credits"]["spendable"],
        1000
    );

    // A real refund takes the credits back, once.
    assert_eq!(qa_send(&app, &session, "refund", "ok").await, vec![200]);
    assert_eq!(qa_send(&app, &session, "replay", "ok").await, vec![200]);
    let account = billing_account(&app, &browser).await;
    assert_eq!(account["credits"]["spendable"], 0, "{account}");
    assert_eq!(account["receipts"][0]["kind"], "refund_clawback");
}

#[tokio::test]
async fn disputes_freeze_then_release_or_forfeit() {
    let app = app().await;
    let (browser, csrf) = signed_in(&app, "buyer@example.com").await;
    for (key, won) in [("k-won", true), ("k-lost", false)] {
        let checkout: Value = create_checkout(&app, &browser, &csrf, Some(key), "starter")
            .await
            .json()
            .await
            .unwrap();
        let session = session_of(checkout["checkout_url"].as_str().unwrap());
        // Out of order: the dispute opens before the payment arrives.
        assert_eq!(qa_send(&app, &session, "dispute", "ok").await, vec![200]);
        let before = billing_account(&app, &browser).await["credits"].clone();
        assert_eq!(qa_send(&app, &session, "pay", "ok").await, vec![200, 200]);
        let during = billing_account(&app, &browser).await["credits"].clone();
        assert_eq!(
            during["frozen"],
            before["frozen"].as_i64().unwrap() + 1000,
            "{during}"
        );
        assert_eq!(during["spendable"], before["spendable"], "{during}");
        let close = if won { "dispute_won" } else { "dispute_lost" };
        assert_eq!(qa_send(&app, &session, close, "ok").await, vec![200]);
        let after = billing_account(&app, &browser).await["credits"].clone();
        assert_eq!(after["frozen"], before["frozen"]);
        let gained = if won { 1000 } else { 0 };
        assert_eq!(
            after["spendable"],
            before["spendable"].as_i64().unwrap() + gained,
            "{after}"
        );
    }
}

#[tokio::test]
async fn checkout_is_a_signed_in_web_sessions_act() {
    let app = app().await;
    let (browser, csrf) = signed_in(&app, "buyer@example.com").await;
    let endpoint = app.url("/api/billing/create-checkout-session");
    // An API key is refused, whatever else the request carries.
    let with_key = browser
        .http
        .post(&endpoint)
        .header("Origin", &app.base_url)
        .header("Authorization", bearer(&app.api_key))
        .header("Idempotency-Key", "k")
        .json(&json!({"sku": "starter"}))
        .send()
        .await
        .unwrap();
    problem(with_key, 403, "api_key_not_allowed").await;
    // No session.
    let anonymous = reqwest::Client::new()
        .post(&endpoint)
        .header("Origin", &app.base_url)
        .header("Authorization", format!("Bearer {csrf}"))
        .header("Idempotency-Key", "k")
        .json(&json!({"sku": "starter"}))
        .send()
        .await
        .unwrap();
    problem(anonymous, 401, "sign_in_required").await;
    // Another origin, and a wrong CSRF bearer.
    for (origin, token) in [
        ("https://evil.example", csrf.as_str()),
        (app.base_url.as_str(), "0000"),
    ] {
        let resp = browser
            .http
            .post(&endpoint)
            .header("Origin", origin)
            .header("Authorization", format!("Bearer {token}"))
            .header("Idempotency-Key", "k")
            .json(&json!({"sku": "starter"}))
            .send()
            .await
            .unwrap();
        problem(resp, 403, "csrf_rejected").await;
    }
    problem(
        create_checkout(&app, &browser, &csrf, None, "starter").await,
        400,
        "idempotency_key_required",
    )
    .await;
    // A key past ASCII is refused by name, not taken for no key.
    let accented = browser
        .http
        .post(&endpoint)
        .header("Origin", &app.base_url)
        .header("Authorization", format!("Bearer {csrf}"))
        .header(
            "Idempotency-Key",
            reqwest::header::HeaderValue::from_bytes("caf\u{e9}".as_bytes()).unwrap(),
        )
        .json(&json!({"sku": "starter"}))
        .send()
        .await
        .unwrap();
    let body = problem(accented, 422, "invalid_request").await;
    assert!(
        body["detail"].as_str().unwrap().contains("Idempotency-Key"),
        "{body}"
    );
    let sales = problem(
        create_checkout(&app, &browser, &csrf, Some("k2"), "enterprise").await,
        422,
        "contact_sales",
    )
    .await;
    assert_eq!(sales["next_action"]["kind"], "contact_sales");
    problem(
        create_checkout(&app, &browser, &csrf, Some("k3"), "platinum").await,
        422,
        "invalid_request",
    )
    .await;
    // The body is held to what every JSON endpoint's is: its type, UTF-8, known fields.
    for (content_type, body) in [
        ("text/plain", br#"{"sku": "starter"}"#.to_vec()),
        (
            "application/json",
            b"{\"sku\": \"starter\", \"x\": \"\xff\"}".to_vec(),
        ),
        (
            "application/json",
            br#"{"sku": "starter", "quantity": -5}"#.to_vec(),
        ),
    ] {
        let resp = browser
            .http
            .post(&endpoint)
            .header("Origin", &app.base_url)
            .header("Authorization", format!("Bearer {csrf}"))
            .header("Idempotency-Key", "k5")
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = if content_type == "text/plain" {
            415
        } else {
            400
        };
        let class = if status == 415 {
            "unsupported_media_type"
        } else {
            "malformed_request"
        };
        problem(resp, status, class).await;
    }
    assert_eq!(
        create_checkout(&app, &browser, &csrf, Some("k4"), "starter")
            .await
            .status(),
        201
    );
    // The billing account is the session's too.
    let with_key = reqwest::Client::new()
        .get(app.url("/api/billing/account"))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    problem(with_key, 403, "api_key_not_allowed").await;
    let anonymous = reqwest::Client::new()
        .get(app.url("/api/billing/account"))
        .send()
        .await
        .unwrap();
    problem(anonymous, 401, "sign_in_required").await;
    // None of the refusals opened a checkout at the provider: only k4's.
    let sessions: Value = reqwest::get(format!("{}/qa/sessions", provider(&app)))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "{sessions}"
    );
}

async fn tool(app: &TestApp, name: &str, args: Value, key: Option<&str>) -> Value {
    let auth = key.map(bearer);
    let (status, body) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}),
            auth.as_deref(),
            "2025-11-25",
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

/// A handoff link for the Starter plan, asked for with `key`: its path on this site.
async fn handoff_path(app: &TestApp, key: &str) -> String {
    let started = tool(
        app,
        "svc_create_checkout_session",
        json!({"plan": "starter"}),
        Some(key),
    )
    .await;
    let url = started["structuredContent"]["handoff_url"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"));
    url.strip_prefix(&app.base_url).unwrap().to_owned()
}

#[tokio::test]
async fn an_agents_handoff_link_signs_in_and_opens_checkout_once() {
    let app = app().await;
    let no_key = tool(&app, "svc_create_checkout_session", json!({}), None).await;
    assert_eq!(no_key["isError"], true, "{no_key}");
    let sales = tool(
        &app,
        "svc_create_checkout_session",
        json!({"plan": "enterprise"}),
        Some(&app.api_key),
    )
    .await;
    assert_eq!(sales["isError"], true);
    assert!(
        sales["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("contact_sales")
    );
    let started = tool(
        &app,
        "svc_create_checkout_session",
        json!({"plan": "starter"}),
        Some(&app.api_key),
    )
    .await;
    let out = &started["structuredContent"];
    assert_eq!(out["status"], "awaiting_human", "{started}");
    assert_eq!(out["credits"], 1000);
    let url = out["handoff_url"].as_str().unwrap();
    let path = url.strip_prefix(&app.base_url).unwrap();
    // A browser that was never signed in: the page shows the offer, the form takes the link.
    let browser = Browser::new(&app);
    let page = browser.page(path).await;
    assert!(page.contains("Continue to checkout"), "{page}");
    // It names the account the link signs in, masked for whoever holds the link.
    assert!(
        page.contains("<strong>a***@sandbox.example.com</strong>"),
        "{page}"
    );
    assert!(!page.contains("agent@sandbox.example.com"), "{page}");
    let token = path.split("token=").nth(1).unwrap();
    let form = [("csrf", csrf_of(&page)), ("token", token.to_owned())];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let resp = browser.post("/billing/handoff", &form).await;
    assert_eq!(resp.status(), 200);
    // Only a code sign-in marks the browser as the address's own (more codes than strangers).
    assert!(
        resp.headers()
            .get_all("set-cookie")
            .iter()
            .all(|c| !c.to_str().unwrap().starts_with("svc_known=")),
        "{:?}",
        resp.headers()
    );
    let page = resp.text().await.unwrap();
    assert!(page.contains(&provider(&app)), "{page}");
    assert!(page.contains("http-equiv=\"refresh\""));
    // Signed in for this checkout only: the account page asks for the e-mailed code.
    let account = browser.get("/account").await;
    assert_eq!(account.status(), 303);
    assert!(
        account.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/signin"),
        "{:?}",
        account.headers()
    );
    let returned = browser.page("/billing/return?checkout=chk_unknown").await;
    assert!(returned.contains("Sign in to your account"), "{returned}");
    // The link works once: its page now says so and offers nothing; a replayed form is refused
    // (the session rotated the CSRF seed: a fresh page's token).
    let used = browser.get(path).await;
    assert_eq!(used.status(), 410);
    let page = used.text().await.unwrap();
    assert!(page.contains("This link was already used"), "{page}");
    assert!(page.contains("a***@sandbox.example.com"), "{page}");
    assert!(!page.contains("Continue to checkout"), "{page}");
    let form = [
        ("csrf", csrf_of(&browser.page("/signin").await)),
        ("token", token.to_owned()),
    ];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let again = browser.post("/billing/handoff", &form).await;
    assert_eq!(again.status(), 422);
    assert!(again.text().await.unwrap().contains("used or expired"));
}

/// Any key of the account, a read-only one too, can ask for a handoff link, and its agent can
/// open the link itself: the session the link opens is for its checkout only. The account
/// page, keys and payment authorities ask for the e-mailed code. (An attack on the self-serve
/// pages found that the link opened a full session: a read-only key's way to an
/// `execute:consequential` key and a payment authority.)
#[tokio::test]
async fn a_handoff_link_signs_in_for_its_checkout_and_nothing_more() {
    let app = app().await;
    let keys_now = || async {
        app.http
            .get(app.url("/api/keys"))
            .header("Authorization", bearer(&app.api_key))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()["keys"]
            .as_array()
            .unwrap()
            .len()
    };
    let read_only = app.key_with_scopes(&["read"]).await;
    let keys_before = keys_now().await;
    let path = &handoff_path(&app, &read_only).await;
    let token = path.split("token=").nth(1).unwrap();
    // The agent opens its own link.
    let agent = Browser::new(&app);
    let page = agent.page(path).await;
    assert!(page.contains("for this checkout only"), "{page}");
    let resp = agent
        .post(
            "/billing/handoff",
            &[("csrf", &csrf_of(&page)), ("token", token)],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let page = agent.page("/signin").await;
    let csrf = csrf_of(&page);
    let attempts: [(&str, Vec<(&str, &str)>); 2] = [
        (
            "/account/keys",
            vec![
                ("csrf", &csrf),
                ("scopes_chosen", "1"),
                ("scope_read", "1"),
                ("scope_execute", "1"),
                ("scope_consequential", "1"),
                ("confirm_consequential", "1"),
            ],
        ),
        (
            "/account/payment-authorities",
            vec![
                ("csrf", &csrf),
                ("scope_order", "1"),
                ("amount", "50000"),
                ("interval", "month"),
                ("currency", "usd"),
                ("expires_in_days", "30"),
                ("agent_provider", "anthropic"),
            ],
        ),
    ];
    for (path, form) in &attempts {
        let resp = agent.post(path, form).await;
        assert_eq!(resp.status(), 303, "{path}");
        assert!(
            resp.headers()["location"]
                .to_str()
                .unwrap()
                .starts_with("/signin"),
            "{path}: {:?}",
            resp.headers()
        );
    }
    for path in ["/account", "/account/webhooks", "/account/activity"] {
        assert_eq!(agent.get(path).await.status(), 303, "{path}");
    }
    assert_eq!(keys_now().await, keys_before, "no key was made");
    let authorities = app.get_json_as_owner("/api/payment-authorities").await;
    assert_eq!(authorities["authorities"], json!([]), "{authorities}");
    // A person signed in as another account is told so before the link signs them out.
    let path = handoff_path(&app, &app.api_key).await;
    let other = Browser::new(&app);
    other.sign_in(&app, "other@example.com", "/account").await;
    let page = other.page(&path).await;
    assert!(page.contains("id=\"elsewhere\""), "{page}");
    assert!(page.contains("other@example.com"), "{page}");
    let own = agent.page(&path).await;
    assert!(!own.contains("id=\"elsewhere\""), "{own}");
}

#[tokio::test]
async fn an_expired_handoff_link_says_so_and_offers_nothing() {
    let clock = crate::helpers::TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .payments()
        .await
        .clock(clock.clone())
        .spawn()
        .await;
    let path = handoff_path(&app, &app.api_key).await;
    clock.advance(std::time::Duration::from_secs(11 * 60));
    let resp = Browser::new(&app).get(&path).await;
    assert_eq!(resp.status(), 410);
    let page = resp.text().await.unwrap();
    assert!(page.contains("This link has expired"), "{page}");
    assert!(page.contains("a***@sandbox.example.com"), "{page}");
    assert!(!page.contains("Continue to checkout"), "{page}");
}

#[tokio::test]
async fn meter_events_need_the_internal_token_and_count_once() {
    let app = app().await;
    let endpoint = app.url("/api/billing/report-meter-event");
    let body = json!({"identifier": "m-1", "event_name": "actions", "value": 3});
    // No credentials: 401 with a challenge; wrong ones: 403.
    let bare = reqwest::Client::new().post(&endpoint).json(&body);
    let resp = bare.send().await.unwrap();
    assert!(resp.headers().contains_key("www-authenticate"));
    problem(resp, 401, "internal_token_required").await;
    for auth in ["Bearer wrong".to_owned(), bearer(&app.api_key)] {
        let req = reqwest::Client::new()
            .post(&endpoint)
            .json(&body)
            .header("Authorization", auth);
        problem(req.send().await.unwrap(), 403, "internal_only").await;
    }
    let send = || {
        reqwest::Client::new()
            .post(&endpoint)
            .header("Authorization", "Bearer internal-token-for-tests")
            .json(&body)
            .send()
    };
    let first: Value = send().await.unwrap().json().await.unwrap();
    assert_eq!(first["forwarded"], true, "{first}");
    assert_eq!(first["replayed"], false);
    let second = send().await.unwrap();
    assert_eq!(second.status(), StatusCode::ACCEPTED);
    let second: Value = second.json().await.unwrap();
    assert_eq!(second["replayed"], true);
    assert_eq!(second["meter_event_id"], first["meter_event_id"]);
    assert_eq!(app.payments.as_ref().unwrap().meter_events().len(), 1);
}

#[tokio::test]
async fn without_a_provider_checkout_is_unavailable_and_webhooks_are_refused() {
    let app = TestApp::builder().outbox().spawn().await;
    let (browser, csrf) = signed_in(&app, "buyer@example.com").await;
    problem(
        create_checkout(&app, &browser, &csrf, Some("k"), "starter").await,
        503,
        "unavailable",
    )
    .await;
    let resp = reqwest::Client::new()
        .post(app.url("/api/billing/webhook"))
        .header("webhook-id", "msg_1")
        .header(
            "webhook-timestamp",
            chrono::Utc::now().timestamp().to_string(),
        )
        .header("webhook-signature", "v1,AAAA")
        .body("{}")
        .send()
        .await
        .unwrap();
    problem(resp, 400, "webhook_rejected").await;
}

/// A review: the provider's own answer ("Invalid API Key provided: sk_live_****abcd") reached
/// the customer as the problem's detail, with a Retry-After a refusal does not deserve, and as
/// "unavailable, retryable" though retrying cannot help. The customer is told it failed; the
/// operators' log has what the provider said.
#[tokio::test]
async fn a_failing_provider_is_reported_without_its_words() {
    use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};
    crate::helpers::capture_logs();
    let provider = MockServer::start().await;
    let app = TestApp::builder()
        .outbox()
        .payments_at(&provider.uri())
        .spawn()
        .await;
    let (browser, csrf) = signed_in(&app, "buyer@example.com").await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_string("Invalid API Key provided: sk_live_****abcd"),
        )
        .up_to_n_times(1)
        .mount(&provider)
        .await;
    let refused = create_checkout(&app, &browser, &csrf, Some("k1"), "starter").await;
    assert!(refused.headers().get("retry-after").is_none());
    // A refusal is the operators' to fix: not retryable, and not told "did not answer".
    let body = problem(refused, 502, "payment_provider_refused").await;
    assert_eq!(body["retryable"], false, "{body}");
    assert!(
        !body["hint"].as_str().unwrap().contains("did not answer"),
        "{body}"
    );
    let detail = body["detail"].as_str().unwrap();
    assert!(
        !detail.contains("Invalid API Key") && !detail.contains("sk_live"),
        "{detail}"
    );
    assert!(
        crate::helpers::captured_logs().contains("Invalid API Key provided"),
        "the operators are told what the provider said"
    );
    // Too many requests is the provider's passing state, not a refusal.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_string("Too many requests"))
        .up_to_n_times(1)
        .mount(&provider)
        .await;
    let busy = create_checkout(&app, &browser, &csrf, Some("k3"), "starter").await;
    let body = problem(busy, 502, "payment_provider_unavailable").await;
    assert_eq!(body["retryable"], true, "{body}");
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503).set_body_string("upstream connect error at 10.0.0.7"),
        )
        .mount(&provider)
        .await;
    let unavailable = create_checkout(&app, &browser, &csrf, Some("k2"), "starter").await;
    assert!(unavailable.headers().get("retry-after").is_some());
    let body = problem(unavailable, 502, "payment_provider_unavailable").await;
    assert_eq!(body["retryable"], true, "{body}");
    assert!(
        !body["detail"].as_str().unwrap().contains("10.0.0.7"),
        "{body}"
    );
}
