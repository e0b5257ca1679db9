//! Target-site connections through the API and a browser without JavaScript: start, the human
//! signs in and decides at the sandbox's authorization server, poll; the connection is then
//! injected into the booking site's actions. Secrets never show in answers or logs.

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use serde_json::{Value, json};
use svc::startup::SANDBOX_EMAIL;

use crate::helpers::{Browser, TestApp, TestClock, bearer, problem};

const PROVIDER: &str = "booking-sandbox";
const BOOKING: &str = "booking.sandbox.test";

async fn app_with(clock: Option<Arc<TestClock>>) -> TestApp {
    let mut builder = TestApp::builder()
        .outbox()
        .action_sites()
        .await
        .auth_server()
        .await;
    if let Some(c) = clock {
        builder = builder.clock(c);
    }
    builder.spawn().await
}

async fn start(app: &TestApp, expected: Option<&str>) -> Value {
    let resp = start_at(app, PROVIDER, json!({ "expected_account": expected })).await;
    assert_eq!(resp.status(), 201);
    resp.json().await.unwrap()
}

/// `POST /api/connections/{provider}/start` with `body`, as the app's key, answered as it is.
async fn start_at(app: &TestApp, provider: &str, body: Value) -> reqwest::Response {
    app.http
        .post(app.url(&format!("/api/connections/{provider}/start")))
        .header("Authorization", bearer(&app.api_key))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn poll(app: &TestApp) -> Value {
    app.get_json_as_owner(&format!("/api/connections/{PROVIDER}/poll"))
        .await
}

async fn list_bookings(app: &TestApp) -> reqwest::Response {
    app.http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"domain": BOOKING, "action": "list_my_bookings", "params": {}}))
        .send()
        .await
        .unwrap()
}

async fn spendable(app: &TestApp) -> i64 {
    app.get_usage(Some(&bearer(&app.api_key)))
        .await
        .json::<Value>()
        .await
        .unwrap()["balance"]["spendable"]
        .as_i64()
        .unwrap()
}

/// Follows redirects across origins (the service and the authorization server).
async fn follow(browser: &Browser, mut resp: reqwest::Response) -> (StatusCode, String) {
    while resp.status().is_redirection() {
        let to = resp.headers()["location"].to_str().unwrap().to_owned();
        let absolute = if to.starts_with("http") {
            to
        } else {
            format!("{}{to}", browser.base)
        };
        resp = browser.http.get(&absolute).send().await.unwrap();
    }
    (resp.status(), resp.text().await.unwrap())
}

/// The hidden fields of the consent page's form whose button has `id`, as a /decide URL.
fn decide_url(auth_base: &str, consent: &str, id: &str) -> String {
    let at = consent.find(&format!("id=\"{id}\"")).expect("the button");
    let form_start = consent[..at].rfind("<form").unwrap();
    let form = &consent[form_start..at];
    let mut pairs = Vec::new();
    for input in form.split("<input").skip(1) {
        let get = |attr: &str| {
            let key = format!("{attr}=\"");
            let i = input.find(&key).unwrap() + key.len();
            input[i..i + input[i..].find('"').unwrap()]
                .replace("&#38;", "&")
                .replace("&amp;", "&")
        };
        pairs.push((get("name"), get("value")));
    }
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    format!("{auth_base}/decide?{query}")
}

/// The human: signs in, opens the link, continues to the provider and presses `button`.
async fn human_decides(app: &TestApp, connect_url: &str, button: &str) -> (StatusCode, String) {
    let browser = Browser::new(app);
    let path = connect_url.strip_prefix(&app.base_url).unwrap();
    let page = browser.sign_in(app, SANDBOX_EMAIL, path).await;
    assert!(page.contains("id=\"continue\""), "{page}");
    let csrf = crate::helpers::csrf_of(&page);
    let link = crate::helpers::attr(&page, "c");
    // The form's answer is a page that sends the browser on (no cross-origin form redirect).
    let onward = browser
        .post("/connect", &[("csrf", &csrf), ("c", &link)])
        .await;
    assert_eq!(onward.status(), 200);
    let onward = onward.text().await.unwrap();
    let at = onward
        .find("id=\"continue-to-provider\"")
        .expect("a link onward");
    let href_at = onward[..at].rfind("href=\"").unwrap() + 6;
    let authorize = onward[href_at..href_at + onward[href_at..].find('"').unwrap()]
        .replace("&#38;", "&")
        .replace("&amp;", "&");
    let auth_base = app.auth.as_ref().unwrap().uri();
    assert!(
        authorize.starts_with(&format!("{auth_base}/authorize?")),
        "{authorize}"
    );
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );
    let consent = browser.http.get(&authorize).send().await.unwrap();
    assert_eq!(consent.status(), 200, "{authorize}");
    let consent = consent.text().await.unwrap();
    let decided = browser
        .http
        .get(decide_url(&auth_base, &consent, button))
        .send()
        .await
        .unwrap();
    let (status, page) = follow(&browser, decided).await;
    (status, page)
}

#[tokio::test]
async fn approve_connects_and_the_action_then_runs_with_the_humans_account() {
    crate::helpers::capture_logs();
    let app = app_with(None).await;
    let before = list_bookings(&app).await;
    problem(before, 403, "connection_required").await;
    let balance = spendable(&app).await;

    let started = start(&app, Some(svc::startup::BOOKING_ACCOUNT)).await;
    assert_eq!(started["state"], "pending");
    let connect_url = started["connect_url"].as_str().unwrap().to_owned();
    assert!(connect_url.starts_with(&format!("{}/connect?c=", app.base_url)));
    let pending = poll(&app).await;
    assert_eq!(
        (pending["state"].as_str(), pending["final"].as_bool()),
        (Some("pending"), Some(false))
    );
    assert_eq!(pending["poll_after_ms"], 2000);

    let (status, page) = human_decides(&app, &connect_url, "approve").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Connected"), "{page}");
    let connected = poll(&app).await;
    assert_eq!(connected["connected"], true, "{connected}");
    assert_eq!(connected["upstream_account"], svc::startup::BOOKING_ACCOUNT);

    let ran = list_bookings(&app).await;
    assert_eq!(ran.status(), 200);
    let body: Value = ran.json().await.unwrap();
    assert_eq!(
        body["result"]["bookings"][0]["booking_id"], "bk-0",
        "{body}"
    );
    assert_eq!(spendable(&app).await, balance - 1);

    // Nothing secret in any answer or log line: tokens, codes, the PKCE verifier, the state.
    let answers = format!("{started}{pending}{connected}{body}");
    let logs = crate::helpers::captured_logs();
    let state = connect_url.split("c=").nth(1).unwrap();
    for needle in [
        "sbxat.",
        "sbxrt.",
        "sbxc.",
        "access_token",
        "refresh_token",
        "code_verifier",
    ] {
        assert!(!answers.contains(needle), "{needle} in {answers}");
        assert!(!logs.contains(needle), "{needle} in the logs");
    }
    assert!(
        !logs.contains(state),
        "the connect link's state is in the logs"
    );
    assert!(logs.contains("task begun"), "the logs were captured");
}

#[tokio::test]
async fn refusing_ends_the_connection_and_the_agent_stops() {
    let app = app_with(None).await;
    let started = start(&app, None).await;
    let (status, page) =
        human_decides(&app, started["connect_url"].as_str().unwrap(), "refuse").await;
    assert_eq!(status, 200);
    assert!(page.contains("refused"), "{page}");
    let refused = poll(&app).await;
    assert_eq!(refused["state"], "refused");
    assert_eq!(refused["final"], true);
    assert_eq!(refused["connected"], false);
    assert!(refused["next_step"].as_str().unwrap().starts_with("Stop"));
    problem(list_bookings(&app).await, 403, "connection_required").await;
}

#[tokio::test]
async fn another_upstream_account_ends_as_wrong_account_and_stores_no_token() {
    let app = app_with(None).await;
    let started = start(&app, Some(svc::startup::BOOKING_ACCOUNT)).await;
    let (status, page) = human_decides(
        &app,
        started["connect_url"].as_str().unwrap(),
        "other-account",
    )
    .await;
    assert_eq!(status, 409, "{page}");
    let wrong = poll(&app).await;
    assert_eq!(wrong["state"], "wrong_account");
    assert_eq!(wrong["final"], true);
    assert_eq!(
        wrong["upstream_account"],
        svc::startup::OTHER_BOOKING_ACCOUNT
    );
    problem(list_bookings(&app).await, 403, "connection_required").await;
}

#[tokio::test]
async fn an_expired_link_ends_as_expired_and_cannot_be_used() {
    let clock = TestClock::new();
    let app = app_with(Some(clock.clone())).await;
    let started = start(&app, None).await;
    clock.advance(Duration::from_secs(11 * 60));
    let expired = poll(&app).await;
    assert_eq!(
        (expired["state"].as_str(), expired["final"].as_bool()),
        (Some("expired"), Some(true))
    );
    let browser = Browser::new(&app);
    let path = started["connect_url"]
        .as_str()
        .unwrap()
        .strip_prefix(&app.base_url)
        .unwrap()
        .to_owned();
    browser.sign_in(&app, SANDBOX_EMAIL, "/account").await;
    let resp = browser.get(&path).await;
    assert_eq!(resp.status(), 410);
    let page = resp.text().await.unwrap();
    assert!(
        page.contains("Link expired") && !page.contains("id=\"continue\""),
        "{page}"
    );
}

#[tokio::test]
async fn unknown_providers_are_refused_and_nothing_is_created() {
    let app = app_with(None).await;
    for provider in [
        "shop-sandbox",
        "booking-sandbox2",
        "Booking-Sandbox",
        "x",
        "../etc",
    ] {
        let resp = start_at(&app, provider, json!({})).await;
        // A provider nothing declares does not exist: 404, like any unknown resource (a path
        // that is not a provider segment at all is the router's 404 `not_found`).
        assert_eq!(resp.status(), 404, "{provider}");
        if provider != "../etc" {
            problem(resp, 404, "unknown_provider").await;
        }
    }
    let status = app
        .http
        .get(app.url(&format!("/api/connections/{PROVIDER}")))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(status["state"], "none");
    let no_key = app
        .http
        .get(app.url(&format!("/api/connections/{PROVIDER}")))
        .send()
        .await
        .unwrap();
    problem(no_key, 401, "missing_api_key").await;
}

#[tokio::test]
async fn a_link_opened_by_another_account_connects_nothing() {
    let app = app_with(None).await;
    let started = start(&app, None).await;
    let browser = Browser::new(&app);
    let path = started["connect_url"]
        .as_str()
        .unwrap()
        .strip_prefix(&app.base_url)
        .unwrap()
        .to_owned();
    browser
        .sign_in(&app, "intruder@example.com", "/account")
        .await;
    let resp = browser.get(&path).await;
    assert_eq!(resp.status(), 403);
    let page = resp.text().await.unwrap();
    assert!(page.contains("belongs to another account"), "{page}");
    assert_eq!(poll(&app).await["state"], "pending");
}

#[tokio::test]
async fn credentials_that_cannot_be_refreshed_expire_and_the_action_is_not_charged() {
    let clock = TestClock::new();
    let app = app_with(Some(clock.clone())).await;
    let started = start(&app, None).await;
    human_decides(&app, started["connect_url"].as_str().unwrap(), "approve").await;
    assert_eq!(poll(&app).await["connected"], true);

    // Past the access token's life: refreshed transparently, the action runs.
    clock.advance(Duration::from_secs(svc::startup::ACCESS_TOKEN_SECONDS + 60));
    assert_eq!(list_bookings(&app).await.status(), 200);

    // The provider stops honouring the refresh token: the connection expires, nothing is charged.
    clock.advance(Duration::from_secs(svc::startup::ACCESS_TOKEN_SECONDS + 60));
    app.auth.as_ref().unwrap().allow_refresh(false);
    let balance = spendable(&app).await;
    let refused = problem(list_bookings(&app).await, 403, "connection_expired").await;
    assert_eq!(refused["next_action"]["kind"], "connect");
    assert_eq!(spendable(&app).await, balance);
    let expired = poll(&app).await;
    assert_eq!(
        (expired["state"].as_str(), expired["connected"].as_bool()),
        (Some("expired"), Some(false))
    );
    // The account's webhooks are told (`connection.expired`), once.
    let feed = app.get_json_as_owner("/api/webhook-events").await;
    let events: Vec<Value> = feed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "connection.expired")
        .map(|e| serde_json::from_str(e["body"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{feed}");
    assert_eq!(events[0]["data"]["provider"], PROVIDER);
    assert_eq!(events[0]["data"]["connection_id"], started["connection_id"]);
    assert_eq!(events[0]["data"]["state"], "expired");
}

/// A second start ends the first link, and a new attempt (pending, then refused) does not take
/// a working connection away from the actions.
#[tokio::test]
async fn a_new_attempt_ends_the_old_link_and_does_not_hide_a_working_connection() {
    let app = app_with(None).await;
    let first = start(&app, None).await;
    let second = start(&app, None).await;
    let browser = Browser::new(&app);
    browser.sign_in(&app, SANDBOX_EMAIL, "/account").await;
    let old = first["connect_url"]
        .as_str()
        .unwrap()
        .strip_prefix(&app.base_url)
        .unwrap()
        .to_owned();
    assert_eq!(
        browser.get(&old).await.status(),
        410,
        "the first link no longer works"
    );

    human_decides(&app, second["connect_url"].as_str().unwrap(), "approve").await;
    assert_eq!(list_bookings(&app).await.status(), 200);
    let third = start(&app, None).await;
    assert_eq!(poll(&app).await["state"], "pending");
    assert_eq!(
        list_bookings(&app).await.status(),
        200,
        "still runs while a new attempt is pending"
    );
    human_decides(&app, third["connect_url"].as_str().unwrap(), "refuse").await;
    assert_eq!(poll(&app).await["state"], "refused");
    assert_eq!(
        list_bookings(&app).await.status(),
        200,
        "a refused new attempt leaves the old connection"
    );
}

/// Refresh tokens rotate (each works once, as at real providers): executions racing to refresh
/// an expired token all run, and the connection survives. A review made the provider's
/// userinfo slow, so the first refresh's tokens were not stored yet when the second refresh
/// (with the same, now spent token) was refused: the second ended the connection and the
/// first's tokens were lost. One refresh runs at a time per connection; the others use its
/// tokens.
#[tokio::test]
async fn concurrent_refreshes_keep_the_connection() {
    let clock = TestClock::new();
    let app = app_with(Some(clock.clone())).await;
    let started = start(&app, None).await;
    human_decides(&app, started["connect_url"].as_str().unwrap(), "approve").await;
    app.auth
        .as_ref()
        .unwrap()
        .slow_userinfo(Duration::from_millis(800));
    clock.advance(Duration::from_secs(svc::startup::ACCESS_TOKEN_SECONDS + 60));
    let statuses = futures_util::future::join_all((0..4).map(|_| list_bookings(&app)))
        .await
        .into_iter()
        .map(|r| r.status().as_u16())
        .collect::<Vec<_>>();
    assert_eq!(statuses, vec![200; 4]);
    assert_eq!(poll(&app).await["connected"], true);
    assert_eq!(list_bookings(&app).await.status(), 200);
}

/// A map of another site that names the booking provider never gets its credentials.
#[tokio::test]
async fn another_sites_map_never_receives_the_connection() {
    let app = app_with(None).await;
    let started = start(&app, None).await;
    human_decides(&app, started["connect_url"].as_str().unwrap(), "approve").await;
    let flaky = app
        ._sites
        .as_ref()
        .unwrap()
        .sites
        .iter()
        .find(|s| s.host == "flaky.sandbox.test")
        .unwrap();
    let mut map: Value = serde_json::from_str(&flaky.map_json()).unwrap();
    map["actions"][0]["auth_provider"] = json!(PROVIDER);
    let document: svc_ports::MapDocument = serde_json::from_value(map).unwrap();
    app.services
        .actions
        .import_map(&document, "test")
        .await
        .unwrap();
    app.services
        .actions
        .publish("flaky.sandbox.test", None)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await; // the published-map cache
    let balance = spendable(&app).await;
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"domain": "flaky.sandbox.test", "action": "server_error", "params": {}}))
        .send()
        .await
        .unwrap();
    problem(resp, 503, "connection_provider_unavailable").await;
    assert_eq!(spendable(&app).await, balance);
    assert_eq!(
        list_bookings(&app).await.status(),
        200,
        "the booking site still gets it"
    );
}

/// The account the human is asked to confirm must read as it is: no invisible characters, no
/// direction overrides (`\u{202e}` shows the rest reversed), nothing but them.
#[tokio::test]
async fn an_expected_account_that_hides_or_turns_its_text_is_refused() {
    let app = app_with(None).await;
    for expected in [
        "ana@example.com\u{202e}",
        "\u{200e}\u{202e}",
        "ana\u{200b}@example.com",
        "ana\u{7}@example.com",
    ] {
        let resp = start_at(&app, PROVIDER, json!({ "expected_account": expected })).await;
        problem(resp, 422, "invalid_request").await;
    }
    assert!(start(&app, Some("ana@example.com")).await.is_object());
}

/// A provider's answer the site cannot read (a parameter twice) gets the connect flow's own
/// page, saying what to do next, whatever the client accepts (the edge's generic page said
/// "Malformed request: duplicate field `state`", and only to browsers); the pending connection
/// is untouched.
#[tokio::test]
async fn a_callback_the_site_cannot_read_gets_a_page_and_changes_nothing() {
    let app = app_with(None).await;
    start(&app, None).await;
    let browser = Browser::new(&app);
    browser.sign_in(&app, SANDBOX_EMAIL, "/account").await;
    for query in ["state=a&state=b", "state=a&code=x&code=y"] {
        let resp = browser.get(&format!("/connect/callback?{query}")).await;
        assert_eq!(resp.status(), 400, "{query}");
        let kind = resp.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(kind.starts_with("text/html"), "{query}: {kind}");
        let page = resp.text().await.unwrap();
        assert!(page.contains("could not be read"), "{query}: {page}");
    }
    assert_eq!(poll(&app).await["state"], "pending");
}

/// A connection's sealed grant is bound to that connection: copied into another connection's
/// record (a bad update, a mixed-up restore, someone who can write the store but has not the
/// key), it is refused rather than used as that connection's, and the action is not charged.
#[tokio::test]
async fn a_grant_copied_into_another_connection_is_refused() {
    crate::helpers::capture_logs();
    let stores = svc::startup::Stores::memory();
    let app = TestApp::builder()
        .outbox()
        .action_sites()
        .await
        .auth_server()
        .await
        .stores(stores.clone())
        .spawn()
        .await;
    let connection = async |app: &TestApp| {
        let started = start(app, None).await;
        human_decides(app, started["connect_url"].as_str().unwrap(), "approve").await;
        let id = svc_ports::ids::ConnectionId::parse(started["connection_id"].as_str().unwrap())
            .unwrap();
        stores.connections.connection(&id).await.unwrap().unwrap()
    };
    let first = connection(&app).await;
    let second = connection(&app).await;
    assert_eq!(list_bookings(&app).await.status(), 200);

    // The first grant written over the second's, as it is stored (sealed).
    stores
        .connections
        .refresh_credentials(
            &second.id,
            first.credentials.clone().unwrap(),
            first.credentials_expire_at,
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    let balance = spendable(&app).await;
    let refused = list_bookings(&app).await;
    assert_eq!(refused.status(), 500, "{:?}", refused.text().await);
    assert_eq!(spendable(&app).await, balance, "nothing charged");
    let logs = crate::helpers::captured_logs();
    assert!(
        logs.contains(&format!(
            "connection {}: a sealed secret could not be opened",
            second.id
        )),
        "{logs}"
    );

    // Its own grant, put back, works again.
    stores
        .connections
        .refresh_credentials(
            &second.id,
            second.credentials.clone().unwrap(),
            second.credentials_expire_at,
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(list_bookings(&app).await.status(), 200);
}
