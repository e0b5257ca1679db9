//! The account's keys for agents and scripts (issue 20): `GET`/`POST /api/keys`, rotation with
//! an overlap on the pinned clock, revocation, the MCP tools, and the human's approval of
//! `execute:consequential` on the device page and the account page.

use std::{sync::Arc, time::Duration};

use reqwest::Response;
use serde_json::{Value, json};

use crate::helpers::{Browser, TestApp, TestClock, bearer, csrf_of, problem};

const DAY: Duration = Duration::from_secs(24 * 3600);
const GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

async fn app() -> (TestApp, Arc<TestClock>) {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .clock(clock.clone())
        .spawn()
        .await;
    (app, clock)
}

fn prefix_of(key: &str) -> String {
    key[..17].to_owned()
}

async fn list(app: &TestApp, key: &str) -> Response {
    app.http
        .get(app.url("/api/keys"))
        .header("Authorization", bearer(key))
        .send()
        .await
        .unwrap()
}

async fn create(app: &TestApp, key: &str, body: Value) -> Response {
    app.http
        .post(app.url("/api/keys"))
        .header("Authorization", bearer(key))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn create_ok(app: &TestApp, key: &str, body: Value) -> Value {
    let resp = create(app, key, body).await;
    assert_eq!(resp.status(), 201);
    // The new secret is shown once: no cache on the way keeps it.
    assert_eq!(resp.headers()["cache-control"], "no-store");
    resp.json().await.unwrap()
}

async fn rotate(app: &TestApp, key: &str, prefix: &str) -> Response {
    app.http
        .post(app.url(&format!("/api/keys/{prefix}/rotate")))
        .header("Authorization", bearer(key))
        .send()
        .await
        .unwrap()
}

async fn revoke(app: &TestApp, key: &str, prefix: &str) -> Response {
    app.http
        .delete(app.url(&format!("/api/keys/{prefix}")))
        .header("Authorization", bearer(key))
        .send()
        .await
        .unwrap()
}

async fn works(app: &TestApp, key: &str) -> bool {
    app.get_usage(Some(&bearer(key))).await.status() == 200
}

fn time(v: &Value) -> chrono::DateTime<chrono::Utc> {
    v.as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn the_list_names_keys_by_prefix_and_never_shows_a_secret() {
    let (app, _) = app().await;
    let made = create_ok(&app, &app.api_key, json!({"name": "ci"})).await;
    let resp = list(&app, &app.api_key).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert!(!text.contains(&app.api_key), "a secret in the list");
    assert!(!text.contains(made["api_key"].as_str().unwrap()));
    assert!(!text.contains("hash"), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let keys = body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["prefix"], prefix_of(&app.api_key));
    assert_eq!(keys[0]["status"], "active");
    assert_eq!(keys[1]["name"], "ci");
    // Omitted scopes: the defaults, never the consequential scope the seed key holds.
    assert_eq!(keys[1]["scopes"], json!(["discover", "execute", "read"]));
    assert!(keys[1]["created_at"].is_string());
    assert!(keys[1].get("expires_at").is_none());
    // The seed key has just worked; the new one never has.
    assert!(keys[0]["last_used_at"].is_string(), "{body}");
    assert!(keys[1].get("last_used_at").is_none(), "{body}");
}

#[tokio::test]
async fn every_key_endpoint_needs_a_key() {
    let (app, _) = app().await;
    let prefix = prefix_of(&app.api_key);
    let http = &app.http;
    for resp in [
        http.get(app.url("/api/keys")).send().await.unwrap(),
        http.post(app.url("/api/keys"))
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
        http.post(app.url(&format!("/api/keys/{prefix}/rotate")))
            .send()
            .await
            .unwrap(),
        http.delete(app.url(&format!("/api/keys/{prefix}")))
            .send()
            .await
            .unwrap(),
    ] {
        problem(resp, 401, "missing_api_key").await;
    }
    let bad = http
        .get(app.url("/api/keys"))
        .header(
            "Authorization",
            "Bearer svc_test_00000000000000000000000000000000",
        )
        .send()
        .await
        .unwrap();
    problem(bad, 401, "invalid_api_key").await;
}

#[tokio::test]
async fn a_read_only_key_reads_and_grants_nothing_wider() {
    let (app, _) = app().await;
    let made = create_ok(
        &app,
        &app.api_key,
        json!({"name": "reader", "scopes": ["read"]}),
    )
    .await;
    assert_eq!(made["key"]["scopes"], json!(["read"]));
    let reader = made["api_key"].as_str().unwrap().to_owned();
    assert!(works(&app, &reader).await);
    // It cannot discover.
    let discover = app
        .http
        .get(app.url("/api/discover?domain=shop.sandbox.test"))
        .header("Authorization", bearer(&reader))
        .send()
        .await
        .unwrap();
    problem(discover, 403, "insufficient_scope").await;
    // Wider scopes are refused, naming exactly the ones it lacks; nothing is created.
    let wider = create(
        &app,
        &reader,
        json!({"scopes": ["read", "execute", "discover"]}),
    )
    .await;
    let body = problem(wider, 403, "insufficient_scope").await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("discover, execute"), "{detail}");
    assert!(!detail.contains("read"), "{detail}");
    let consequential = create(&app, &reader, json!({"scopes": ["execute:consequential"]})).await;
    problem(consequential, 403, "insufficient_scope").await;
    // A scope that does not exist is a bad request, not one the key lacks.
    for key in [&reader, &app.api_key] {
        let bogus = create(&app, key, json!({"scopes": ["read", "bogus"]})).await;
        let body = problem(bogus, 422, "invalid_request").await;
        assert!(
            body["detail"].as_str().unwrap().contains("`bogus`"),
            "{body}"
        );
    }
    // Within its own: fine, and the defaults narrow to what it holds.
    let same = create_ok(&app, &reader, json!({"scopes": ["read"]})).await;
    assert_eq!(same["key"]["scopes"], json!(["read"]));
    let defaults = create_ok(&app, &reader, json!({})).await;
    assert_eq!(defaults["key"]["scopes"], json!(["read"]));
    let listed: Value = list(&app, &app.api_key).await.json().await.unwrap();
    assert_eq!(listed["keys"].as_array().unwrap().len(), 4);
    // It may not rotate or revoke a wider key either.
    let seed = prefix_of(&app.api_key);
    problem(
        rotate(&app, &reader, &seed).await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(
        revoke(&app, &reader, &seed).await,
        403,
        "insufficient_scope",
    )
    .await;
    assert!(works(&app, &app.api_key).await);
}

#[tokio::test]
async fn bodies_of_the_wrong_shape_are_refused() {
    let (app, _) = app().await;
    for body in [
        json!({"scopes": "read"}),
        json!({"scopes": [1]}),
        json!({"name": 5}),
        json!({"name": true}),
        json!({"scopes": []}),
        json!({"unknown": 1}),
        json!([]),
    ] {
        let resp = create(&app, &app.api_key, body.clone()).await;
        assert_eq!(resp.status(), 400, "{body}");
        problem(resp, 400, "malformed_request").await;
    }
    for scopes in [json!(["READ"]), json!(["read execute"]), json!([""])] {
        let resp = create(&app, &app.api_key, json!({ "scopes": scopes })).await;
        problem(resp, 422, "invalid_request").await;
    }
    // A key given twice: refused, not read as its last.
    let twice = app
        .http
        .post(app.url("/api/keys"))
        .header("Authorization", bearer(&app.api_key))
        .header("Content-Type", "application/json")
        .body(r#"{"name": "a", "scopes": ["read"], "name": "b"}"#)
        .send()
        .await
        .unwrap();
    let body = problem(twice, 400, "malformed_request").await;
    assert!(body["detail"].as_str().unwrap().contains("twice"), "{body}");
    let long = create(&app, &app.api_key, json!({"name": "x".repeat(81)})).await;
    assert!(long.status().is_client_error());
    let control = create(&app, &app.api_key, json!({"name": "a\u{7}b"})).await;
    problem(control, 422, "invalid_request").await;
    let listed: Value = list(&app, &app.api_key).await.json().await.unwrap();
    assert_eq!(listed["keys"].as_array().unwrap().len(), 1, "{listed}");
}

#[tokio::test]
async fn a_rotated_key_works_for_the_overlap_then_stops() {
    let (app, clock) = app().await;
    let made = create_ok(&app, &app.api_key, json!({"name": "agent"})).await;
    let old = made["api_key"].as_str().unwrap().to_owned();
    let prefix = prefix_of(&old);
    // A key may rotate itself.
    let resp = rotate(&app, &old, &prefix).await;
    assert_eq!(resp.status(), 200);
    let rotated: Value = resp.json().await.unwrap();
    let new = rotated["api_key"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(rotated["key"]["name"], "agent");
    assert_eq!(rotated["key"]["scopes"], made["key"]["scopes"]);
    assert_eq!(rotated["previous"]["prefix"], prefix);
    assert_eq!(rotated["previous"]["status"], "rotating");
    let ends = time(&rotated["previous"]["expires_at"]);
    let created = time(&rotated["key"]["created_at"]);
    assert_eq!(ends - created, chrono::Duration::from_std(DAY).unwrap());
    assert!(works(&app, &old).await && works(&app, &new).await);

    // Rotated once: not again (rotate the replacement instead).
    problem(rotate(&app, &new, &prefix).await, 409, "key_not_active").await;
    // The old key works, but manages no key: a key rotated because it leaked must not mint
    // one that outlives it, nor rotate or revoke its replacement (a review did all three).
    let new_prefix = prefix_of(&new);
    let keys_before = list(&app, &new).await.json::<Value>().await.unwrap()["keys"]
        .as_array()
        .unwrap()
        .len();
    for refused in [
        create(
            &app,
            &old,
            json!({"scopes": ["read", "discover", "execute"]}),
        )
        .await,
        rotate(&app, &old, &new_prefix).await,
        revoke(&app, &old, &new_prefix).await,
    ] {
        let body = problem(refused, 403, "insufficient_scope").await;
        assert!(
            body["detail"].as_str().unwrap().contains("was rotated"),
            "{body}"
        );
    }
    let keys_after = list(&app, &new).await.json::<Value>().await.unwrap()["keys"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(keys_before, keys_after);
    assert!(works(&app, &new).await);

    clock.advance(DAY - Duration::from_secs(1));
    assert!(
        works(&app, &old).await,
        "the old key stopped inside the overlap"
    );
    clock.advance(Duration::from_secs(1));
    let refused = app.get_usage(Some(&bearer(&old))).await;
    let body = problem(refused, 401, "revoked_api_key").await;
    assert!(
        body["detail"].as_str().unwrap().contains("rotated"),
        "{body}"
    );
    assert!(works(&app, &new).await);
    let listed: Value = list(&app, &new).await.json().await.unwrap();
    let old_row = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["prefix"] == prefix)
        .unwrap()
        .clone();
    assert_eq!(old_row["status"], "expired");
    assert_eq!(time(&old_row["expires_at"]), ends);
}

#[tokio::test]
async fn the_overlap_is_a_setting() {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .clock(clock.clone())
        .runtime(|r| r.key_rotation_overlap_hours = 0)
        .spawn()
        .await;
    let made = create_ok(&app, &app.api_key, json!({})).await;
    let old = made["api_key"].as_str().unwrap().to_owned();
    let rotated: Value = rotate(&app, &app.api_key, &prefix_of(&old))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rotated["previous"]["status"], "expired");
    assert!(
        !works(&app, &old).await,
        "no overlap: the old key stops at once"
    );
    assert!(works(&app, rotated["api_key"].as_str().unwrap()).await);
}

#[tokio::test]
async fn revoking_stops_a_key_at_once_and_is_idempotent() {
    let (app, _) = app().await;
    let made = create_ok(&app, &app.api_key, json!({})).await;
    let key = made["api_key"].as_str().unwrap().to_owned();
    let prefix = prefix_of(&key);
    let resp = revoke(&app, &app.api_key, &prefix).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "revoked");
    assert!(body["revoked_at"].is_string());
    problem(
        app.get_usage(Some(&bearer(&key))).await,
        401,
        "revoked_api_key",
    )
    .await;
    let again: Value = revoke(&app, &app.api_key, &prefix)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again, body, "revoking again answers the same");
    // A revoked key is not rotated.
    problem(
        rotate(&app, &app.api_key, &prefix).await,
        409,
        "key_not_active",
    )
    .await;

    // Revoking during a rotation's overlap ends it now.
    let made = create_ok(&app, &app.api_key, json!({})).await;
    let old = made["api_key"].as_str().unwrap().to_owned();
    let rotated: Value = rotate(&app, &app.api_key, &prefix_of(&old))
        .await
        .json()
        .await
        .unwrap();
    assert!(works(&app, &old).await);
    assert_eq!(revoke(&app, &old, &prefix_of(&old)).await.status(), 200);
    assert!(!works(&app, &old).await);
    assert!(works(&app, rotated["api_key"].as_str().unwrap()).await);
}

#[tokio::test]
async fn another_accounts_key_is_not_found() {
    let (app, _) = app().await;
    let stranger = app
        .stranger_key("stranger@example.com", "read discover execute")
        .await;
    let theirs = prefix_of(&stranger);
    for resp in [
        rotate(&app, &app.api_key, &theirs).await,
        revoke(&app, &app.api_key, &theirs).await,
        rotate(&app, &app.api_key, "svc_test_nothere1").await,
        revoke(&app, &app.api_key, "not-a-prefix").await,
        revoke(&app, &app.api_key, "svc_live_00000000").await,
    ] {
        problem(resp, 404, "not_found").await;
    }
    assert!(
        works(&app, &stranger).await,
        "the stranger's key was touched"
    );
    let theirs_listed: Value = list(&app, &stranger).await.json().await.unwrap();
    assert_eq!(theirs_listed["keys"].as_array().unwrap().len(), 1);
    let ours: Value = list(&app, &app.api_key).await.json().await.unwrap();
    assert!(!ours.to_string().contains(&theirs));
}

// ---- MCP ---------------------------------------------------------------------------------------

fn call(name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

#[tokio::test]
async fn the_mcp_tools_follow_the_same_rules() {
    let (app, _) = app().await;
    let auth = bearer(&app.api_key);
    let (_, made) = app
        .mcp(
            call("svc_create_key", json!({"name": "sub", "scopes": ["read"]})),
            Some(&auth),
            "2025-11-25",
        )
        .await;
    let made = &made["result"]["structuredContent"];
    let sub = made["api_key"].as_str().unwrap_or_else(|| panic!("{made}"));
    assert_eq!(made["key"]["scopes"], json!(["read"]));

    let (_, wider) = app
        .mcp(
            call("svc_create_key", json!({"scopes": ["read", "execute"]})),
            Some(&bearer(sub)),
            "2025-11-25",
        )
        .await;
    assert_eq!(wider["result"]["isError"], true, "{wider}");
    let problem: Value =
        serde_json::from_str(wider["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(problem["failure_class"], "insufficient_scope");

    let (_, bad) = app
        .mcp(
            call("svc_create_key", json!({"scopes": "read"})),
            Some(&auth),
            "2025-11-25",
        )
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("invalid_request"),
        "{bad}"
    );

    let (_, listed) = app
        .mcp(call("svc_list_keys", json!({})), Some(&auth), "2025-11-25")
        .await;
    assert_eq!(
        listed["result"]["structuredContent"]["keys"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{listed}"
    );

    let (_, rotated) = app
        .mcp(
            call("svc_rotate_key", json!({"prefix": prefix_of(sub)})),
            Some(&auth),
            "2025-11-25",
        )
        .await;
    let rotated = &rotated["result"]["structuredContent"];
    assert_eq!(rotated["previous"]["status"], "rotating", "{rotated}");

    let (_, revoked) = app
        .mcp(
            call("svc_revoke_key", json!({"prefix": prefix_of(sub)})),
            Some(&auth),
            "2025-11-25",
        )
        .await;
    assert_eq!(
        revoked["result"]["structuredContent"]["status"], "revoked",
        "{revoked}"
    );
    assert!(!works(&app, sub).await);

    let (_, none) = app
        .mcp(call("svc_list_keys", json!({})), None, "2025-11-25")
        .await;
    assert_eq!(none["result"]["isError"], true, "{none}");
}

/// A form whose values are not UTF-8 once decoded is a 400, as a JSON body with those bytes
/// is; it was read as U+FFFD and shown to the human on the device page.
#[tokio::test]
async fn a_form_that_is_not_utf8_is_malformed() {
    let (app, _clock) = app().await;
    let resp = app
        .http
        .post(app.url("/agent/identity"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("client_id=my%FFagent&scope=read")
        .send()
        .await
        .unwrap();
    // An OAuth endpoint: RFC 6749's `error` beside the problem's fields, as JSON.
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["failure_class"], "malformed_request", "{answer}");
    assert_eq!(answer["error"], "invalid_request", "{answer}");
    assert!(start_device(&app, "read").await["user_code"].is_string());
}

// ---- the human's approval of consequential scope ---------------------------------------------

async fn start_device(app: &TestApp, scope: &str) -> Value {
    let resp = app
        .http
        .post(app.url("/agent/identity"))
        .form(&[("client_id", "shopping-agent"), ("scope", scope)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

/// The human approves on the device page, ticking the consequential box or not; the agent's
/// next poll gets the key, whose scopes are answered.
async fn approve(
    app: &TestApp,
    clock: &TestClock,
    browser: &Browser,
    started: &Value,
    tick: bool,
) -> String {
    let user_code = started["user_code"].as_str().unwrap();
    let page = browser
        .page(&format!("/device?user_code={user_code}"))
        .await;
    let mut form = vec![
        ("csrf", csrf_of(&page)),
        ("user_code", user_code.to_owned()),
        ("decision", "approve".to_owned()),
    ];
    if tick {
        form.push(("consequential", "1".to_owned()));
    }
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, done) = browser.follow(browser.post("/device", &form).await).await;
    assert_eq!(status, 200, "{done}");
    clock.advance(Duration::from_secs(6));
    let token: Value = app
        .http
        .post(app.url("/oauth2/token"))
        .form(&[
            ("grant_type", GRANT),
            ("device_code", started["device_code"].as_str().unwrap()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    token["api_key"]
        .as_str()
        .unwrap_or_else(|| panic!("{token}"))
        .to_owned()
}

async fn scopes_of(app: &TestApp, key: &str) -> Value {
    let listed: Value = list(app, key).await.json().await.unwrap();
    listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["prefix"] == prefix_of(key))
        .unwrap()["scopes"]
        .clone()
}

#[tokio::test]
async fn the_device_page_grants_consequential_scope_only_when_ticked() {
    let (app, clock) = app().await;
    let browser = Browser::new(&app);
    browser
        .sign_in(&app, "shopper@example.com", "/account")
        .await;

    let asked = start_device(&app, "read discover execute execute:consequential").await;
    let page = browser
        .page(&format!(
            "/device?user_code={}",
            asked["user_code"].as_str().unwrap()
        ))
        .await;
    // Shown apart, in words, unticked.
    assert!(page.contains("id=\"consequential-request\""), "{page}");
    assert!(page.contains("place orders, make bookings and make payments"));
    let box_at = page.find("id=\"grant-consequential\"").unwrap();
    let tag = &page[page[..box_at].rfind('<').unwrap()..box_at + 30];
    assert!(!tag.contains("checked"), "{tag}");
    let ordinary = &page[page.find("id=\"scopes\"").unwrap()..];
    let ordinary = &ordinary[..ordinary.find("</ul>").unwrap()];
    assert!(!ordinary.contains("execute:consequential"), "{ordinary}");

    let unticked = approve(&app, &clock, &browser, &asked, false).await;
    assert_eq!(
        scopes_of(&app, &unticked).await,
        json!(["discover", "execute", "read"])
    );
    // And that key can never grant it to another.
    let refused = create(
        &app,
        &unticked,
        json!({"scopes": ["execute:consequential"]}),
    )
    .await;
    problem(refused, 403, "insufficient_scope").await;

    let asked = start_device(&app, "read execute execute:consequential").await;
    let ticked = approve(&app, &clock, &browser, &asked, true).await;
    assert_eq!(
        scopes_of(&app, &ticked).await,
        json!(["execute", "execute:consequential", "read"])
    );

    // Ticking grants nothing the agent did not ask for.
    let plain = start_device(&app, "read").await;
    let page = browser
        .page(&format!(
            "/device?user_code={}",
            plain["user_code"].as_str().unwrap()
        ))
        .await;
    assert!(!page.contains("consequential-request"));
    let read_only = approve(&app, &clock, &browser, &plain, true).await;
    assert_eq!(scopes_of(&app, &read_only).await, json!(["read"]));

    // The email-code signup has no human approval page: it cannot ask for it.
    let resp = app
        .http
        .post(app.url("/api/register"))
        .json(&json!({"email": "x@example.com", "scope": "read execute:consequential"}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
}

#[tokio::test]
async fn the_account_page_grants_consequential_scope_only_when_confirmed() {
    let (app, _) = app().await;
    let browser = Browser::new(&app);
    let page = browser
        .sign_in(&app, svc::startup::SANDBOX_EMAIL, "/account")
        .await;
    let form = |confirm: bool| {
        let mut f = vec![
            ("csrf", csrf_of(&page)),
            ("scopes_chosen", "1".into()),
            ("label", "buyer".into()),
            ("scope_read", "1".into()),
            ("scope_execute", "1".into()),
            ("scope_consequential", "1".into()),
        ];
        if confirm {
            f.push(("confirm_consequential", "1".into()));
        }
        f
    };
    let unconfirmed = form(false);
    let unconfirmed: Vec<(&str, &str)> =
        unconfirmed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, shown) = browser
        .follow(browser.post("/account/keys", &unconfirmed).await)
        .await;
    assert_eq!(status, 200);
    assert!(shown.contains("id=\"error\""), "{shown}");
    assert!(shown.contains("place orders, make bookings and make payments"));
    assert!(!shown.contains("id=\"new-key\""));

    let confirmed = form(true);
    let confirmed: Vec<(&str, &str)> = confirmed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (_, made) = browser
        .follow(browser.post("/account/keys", &confirmed).await)
        .await;
    let at = made.find("id=\"new-key\">").unwrap() + 13;
    let key = &made[at..at + 41];
    assert_eq!(
        scopes_of(&app, key).await,
        json!(["execute", "execute:consequential", "read"])
    );

    // Rotating on the page: the old key keeps working, its end shown on both pages.
    let (_, rotated) = browser
        .follow(
            browser
                .post(
                    "/account/keys/rotate",
                    &[("csrf", &csrf_of(&made)), ("prefix", &prefix_of(key))],
                )
                .await,
        )
        .await;
    assert!(rotated.contains("id=\"overlap-end\""), "{rotated}");
    assert!(works(&app, key).await);
    let account = browser.page("/account").await;
    let row = &account[account
        .find(&format!("data-prefix=\"{}\"", prefix_of(key)))
        .unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains("data-status=\"rotating\""), "{row}");
    assert!(row.contains("works until"), "{row}");
}
