//! The RFC 8628 device authorization endpoint at its standard path (issue 19), as clients
//! configured without discovery call it, and the welcome message that says only what the
//! granted scopes allow.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Browser, TestApp, TestClock};

const GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

async fn start(app: &TestApp, path: &str, scope: &str) -> Value {
    let resp = app
        .http
        .post(app.url(path))
        .form(&[("client_id", "manual-client"), ("scope", scope)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{path}");
    assert_eq!(resp.headers()["cache-control"], "no-store");
    resp.json().await.unwrap()
}

/// The whole flow from `path` with `scope`, approved in the browser; the token answer.
async fn key_for(scope: &str, path: &str) -> Value {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .clock(clock.clone())
        .spawn()
        .await;
    let started = start(&app, path, scope).await;
    let browser = Browser::new(&app);
    browser
        .sign_in(&app, "scoped@example.com", "/account")
        .await;
    let page = browser
        .decide(started["user_code"].as_str().unwrap(), "approve")
        .await;
    assert!(page.contains("Agent approved"), "{page}");
    clock.advance(Duration::from_secs(6));
    let device_code = started["device_code"].as_str().unwrap();
    let redeem = |client_id: Option<&'static str>| {
        let mut form = vec![("grant_type", GRANT), ("device_code", device_code)];
        form.extend(client_id.map(|c| ("client_id", c)));
        app.http.post(app.url("/oauth2/token")).form(&form).send()
    };
    // Bound to the client it was issued to (RFC 6749 §5.2): another one gets nothing, and
    // the code still works for its own.
    let other = redeem(Some("another-client")).await.unwrap();
    assert_eq!(other.status(), 400);
    assert_eq!(
        other.json::<Value>().await.unwrap()["error"],
        "invalid_grant"
    );
    let resp = redeem(if scope == "read" {
        None
    } else {
        Some("manual-client")
    })
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn the_standard_path_answers_like_agent_identity_and_is_the_advertised_one() {
    let app = TestApp::builder().outbox().spawn().await;
    let meta = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(
        meta["device_authorization_endpoint"],
        app.url("/oauth2/device_authorization")
    );
    assert_eq!(meta["token_endpoint"], app.url("/oauth2/token"));
    let standard = start(&app, "/oauth2/device_authorization", "read").await;
    let kept = start(&app, "/agent/identity", "read").await;
    for field in ["verification_uri", "expires_in", "interval"] {
        assert_eq!(standard[field], kept[field], "{field}");
    }
    assert_ne!(standard["device_code"], kept["device_code"]);
    assert!(standard["user_code"].as_str().is_some());
    // The same errors as well: an unknown scope is `invalid_scope`.
    let bad = app
        .http
        .post(app.url("/oauth2/device_authorization"))
        .form(&[("client_id", "c"), ("scope", "admin")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"], "invalid_scope", "{body}");
    // A client id the human is shown must read as it is: no direction override, no
    // invisible characters, in any plane (tag characters are plane 14's).
    for client_id in ["\u{202e}cihporhtna", "shop\u{ad}agent", "agent\u{e07f8}"] {
        let spoof = app
            .http
            .post(app.url("/oauth2/device_authorization"))
            .form(&[("client_id", client_id), ("scope", "read")])
            .send()
            .await
            .unwrap();
        assert_eq!(spoof.status(), 400, "{client_id:?}");
        let body: Value = spoof.json().await.unwrap();
        assert_eq!(body["error"], "invalid_request", "{body}");
    }
}

#[tokio::test]
async fn a_read_key_is_welcomed_with_only_reading() {
    let token = key_for("read", "/oauth2/device_authorization").await;
    assert_eq!(token["scope"], "read");
    let welcome = token["welcome_message"].as_str().unwrap();
    assert!(welcome.contains("it can read public pages;"), "{welcome}");
    assert!(
        welcome.contains("it cannot discover actions or run actions"),
        "{welcome}"
    );
    assert!(!welcome.contains("credit"), "{welcome}");
}

#[tokio::test]
async fn a_full_key_is_welcomed_with_discovering_and_running() {
    let token = key_for("read discover execute", "/agent/identity").await;
    let welcome = token["welcome_message"].as_str().unwrap();
    assert!(
        welcome.contains(
            "it can read public pages, discover a site's mapped actions and run them, paying about \
             one credit per completed action"
        ),
        "{welcome}"
    );
    assert!(!welcome.contains("cannot"), "{welcome}");
}

/// A body refused before the handler reads it (not UTF-8, too large) still answers an OAuth
/// client in RFC 6749's shape: `error` and `error_description`, beside the problem's fields.
#[tokio::test]
async fn bodies_refused_before_the_handler_get_oauth_errors_too() {
    let app = TestApp::spawn().await;
    for path in [
        "/oauth2/token",
        "/oauth2/device_authorization",
        "/agent/identity",
    ] {
        for body in [b"grant_type=%ff".to_vec(), vec![b'a'; 2 * 1024 * 1024]] {
            let resp = app
                .http
                .post(app.url(path))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            assert!(matches!(status, 400 | 413), "{path}: {status}");
            assert_eq!(resp.headers()["content-type"], "application/json", "{path}");
            let answer: Value = resp.json().await.unwrap();
            assert_eq!(answer["error"], "invalid_request", "{path}: {answer}");
            assert!(answer["error_description"].is_string(), "{answer}");
            assert_eq!(answer["status"], status, "{answer}");
        }
    }
}
