//! The web sign-in by an e-mailed code: which addresses it takes, how many codes it sends to
//! one address an hour, and whose codes a day of wrong guesses stops: strangers' and the
//! person's own browser's.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Browser, TestApp, attr, csrf_of, latest_code};

/// An address with an invisible or direction-changing character was an account of its own
/// that read as another's (`ana@example.com\u{202e}`); the sign-in form refuses it, and sends
/// nothing.
#[tokio::test]
async fn the_sign_in_form_refuses_an_address_that_hides_or_turns_its_text() {
    let app = TestApp::builder().outbox().spawn().await;
    let browser = Browser::new(&app);
    let csrf = csrf_of(&browser.page("/signin").await);
    for email in [
        "ana@example.com\u{202e}",
        "ana\u{200b}@example.com",
        "ana@exa\u{ad}mple.com",
    ] {
        let resp = browser
            .post("/signin", &[("csrf", &csrf), ("email", email)])
            .await;
        assert_ne!(resp.status(), 303, "{email:?}");
        let page = resp.text().await.unwrap();
        assert!(page.contains("direction-changing"), "{page}");
    }
    let outbox = app.get_json("/sandbox/outbox").await;
    assert_eq!(outbox["messages"], json!([]), "{outbox}");
    let ok = browser
        .post("/signin", &[("csrf", &csrf), ("email", "ana@example.com")])
        .await;
    assert_eq!(ok.status(), 303);
}

/// Asks for a sign-in code to `email` from `browser`: 303 to the code page when one was sent.
async fn ask_for_code(browser: &Browser, email: &str) -> StatusCode {
    let csrf = csrf_of(&browser.page("/signin").await);
    browser
        .post("/signin", &[("csrf", &csrf), ("email", email)])
        .await
        .status()
}

/// Anyone may ask for sign-in codes to any address, with no credentials. Strangers filling
/// the per-address cap must not hold the person's own sign-in: a browser that signed in as the
/// address before (its `svc_known` mark) gets codes beyond what strangers can fill, up to four
/// times the cap; a mark of another address counts for nothing.
#[tokio::test]
async fn strangers_asking_for_codes_do_not_hold_a_known_browsers_sign_in() {
    let app = TestApp::builder()
        .runtime(|r| r.email_codes_per_hour = Some(3))
        .outbox()
        .spawn()
        .await;
    let email = "held@example.com";
    let own = Browser::new(&app);
    own.sign_in(&app, email, "/account").await;
    sign_out(&own).await;

    // Two strangers fill the cap (the person's own sign-in took the first code).
    for _ in 0..2 {
        assert_eq!(ask_for_code(&Browser::new(&app), email).await, 303);
    }
    assert_eq!(
        ask_for_code(&Browser::new(&app), email).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // A browser known as another address's is a stranger here.
    let other = Browser::new(&app);
    other.sign_in(&app, "other@example.com", "/account").await;
    assert_eq!(
        ask_for_code(&other, email).await,
        StatusCode::TOO_MANY_REQUESTS
    );

    // The person's own browser still gets a code, and signs in with it.
    let page = own.sign_in(&app, email, "/account").await;
    assert!(page.contains(email), "{page}");
    // Its allowance ends too: four times the cap (12) in the hour, strangers' codes counted.
    let sent = || async {
        let outbox = app.get_json(&format!("/sandbox/outbox?to={email}")).await;
        outbox["messages"].as_array().unwrap().len()
    };
    let mut more = 0;
    while ask_for_code(&own, email).await == 303 {
        more += 1;
        assert!(more <= 12, "the known browser's codes are not capped");
    }
    assert_eq!(sent().await, 12);
    assert_eq!(more, 12 - 4);
}

/// The mark is set by a sign-in with a code, as its own long-lived, script-hidden cookie, and
/// not by an agent's handoff link (which any key of the account may open).
#[tokio::test]
async fn a_code_sign_in_marks_the_browser_in_its_own_cookie() {
    let app = TestApp::builder().outbox().spawn().await;
    let browser = Browser::new(&app);
    let email = "mark@example.com";
    let csrf = csrf_of(&browser.page("/signin").await);
    let sent = browser
        .post("/signin", &[("csrf", &csrf), ("email", email)])
        .await;
    assert_eq!(sent.status(), 303);
    let to = sent.headers()["location"].to_str().unwrap().to_owned();
    let page = browser.page(&to).await;
    let done = browser
        .post(
            "/signin/code",
            &[
                ("csrf", &csrf_of(&page)),
                ("challenge", &attr(&page, "challenge")),
                ("code", &latest_code(&app, email).await),
            ],
        )
        .await;
    assert_eq!(done.status(), 303);
    let cookies: Vec<&str> = done
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    let mark = cookies
        .iter()
        .find(|c| c.starts_with("svc_known="))
        .unwrap_or_else(|| panic!("no mark among {cookies:?}"));
    assert!(mark.contains("HttpOnly"), "{mark}");
    assert!(mark.contains("SameSite=Lax"), "{mark}");
    assert!(
        mark.contains(&format!("Max-Age={}", 180 * 24 * 3600)),
        "{mark}"
    );
    let token = &mark["svc_known=".len()..mark.find(';').unwrap()];
    assert_eq!(token.len(), 43, "{mark}");
}

/// Asks for a sign-in code to `email` from `browser`, which must be sent; the code page.
async fn code_page(browser: &Browser, email: &str) -> String {
    let csrf = csrf_of(&browser.page("/signin").await);
    let sent = browser
        .post("/signin", &[("csrf", &csrf), ("email", email)])
        .await;
    assert_eq!(sent.status(), 303);
    browser
        .page(sent.headers()["location"].to_str().unwrap())
        .await
}

/// Submits `code` on a code page: the answer (303 when signed in).
async fn submit_code(browser: &Browser, page: &str, code: &str) -> StatusCode {
    browser
        .post(
            "/signin/code",
            &[
                ("csrf", &csrf_of(page)),
                ("challenge", &attr(page, "challenge")),
                ("code", code),
            ],
        )
        .await
        .status()
}

async fn sign_out(browser: &Browser) {
    let csrf = csrf_of(&browser.page("/account").await);
    assert_eq!(
        browser.post("/signout", &[("csrf", &csrf)]).await.status(),
        303
    );
}

/// Anyone may ask for codes to an address and guess them: ten wrong codes in a day stop the
/// address's codes (tests/api/signup.rs), which let strangers hold the person's own sign-in
/// for a day. The challenges of the browser that signed in as the address before (its mark)
/// are counted apart: it still signs in with its right code, while a stranger's browser, with
/// the right code of its own challenge, does not; and its own guesses stop at ten too.
#[tokio::test]
async fn strangers_guessing_codes_do_not_lock_a_known_browser_out() {
    let app = TestApp::builder()
        .runtime(|r| r.email_codes_per_hour = Some(20))
        .outbox()
        .spawn()
        .await;
    let email = "guessed@example.com";
    let own = Browser::new(&app);
    own.sign_in(&app, email, "/account").await;
    sign_out(&own).await;

    // Strangers guess through the agents' endpoint until the address is locked.
    let mut locked = false;
    for _ in 0..4 {
        let body: serde_json::Value = app
            .http
            .post(app.url("/api/register"))
            .json(&json!({"email": email, "agent_name": "Guesser"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let code = latest_code(&app, email).await;
        let wrong = if code == "999999" { "888888" } else { "999999" };
        for _ in 0..5 {
            let resp = app
                .http
                .post(app.url("/api/verify"))
                .json(&json!({"deviceId": body["deviceId"], "code": wrong}))
                .send()
                .await
                .unwrap();
            if resp.status() == StatusCode::TOO_MANY_REQUESTS {
                let problem = crate::helpers::problem(resp, 429, "locked_out").await;
                assert!(
                    problem["detail"]
                        .as_str()
                        .unwrap()
                        .contains("e-mail address")
                );
                locked = true;
                break;
            }
        }
        if locked {
            break;
        }
    }
    assert!(locked, "the address was never locked");

    let stranger = Browser::new(&app);
    let page = code_page(&stranger, email).await;
    assert_eq!(
        submit_code(&stranger, &page, &latest_code(&app, email).await).await,
        StatusCode::TOO_MANY_REQUESTS,
        "a stranger's browser is locked out"
    );
    let page = code_page(&own, email).await;
    assert_eq!(
        submit_code(&own, &page, &latest_code(&app, email).await).await,
        StatusCode::SEE_OTHER,
        "the person's own browser signs in"
    );
    assert!(own.page("/account").await.contains(email));

    // The browser's own wrong codes have a day's worth of their own: ten, then its codes stop
    // too (a mark outlives its sign-out, so whoever holds it guesses no more than strangers).
    sign_out(&own).await;
    let mut wrong = 0;
    'guessing: for _ in 0..4 {
        let page = code_page(&own, email).await;
        let right = latest_code(&app, email).await;
        let guess = if right == "999999" {
            "888888"
        } else {
            "999999"
        };
        for _ in 0..5 {
            if submit_code(&own, &page, guess).await == StatusCode::TOO_MANY_REQUESTS {
                break 'guessing;
            }
            wrong += 1;
        }
    }
    assert_eq!(
        wrong, 10,
        "the known browser's wrong codes are not capped for the day"
    );
}
