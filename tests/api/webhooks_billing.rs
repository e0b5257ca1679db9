//! `credits.added`: a verified payment that credits the account is sent to its endpoints.

use reqwest::redirect::Policy;
use serde_json::{Value, json};

use crate::helpers::{Browser, TestApp, csrf_of};
use crate::webhooks::{Receiver, verify_independently};

#[tokio::test]
async fn a_verified_payment_sends_credits_added() {
    let mut receiver = Receiver::start(&[]).await;
    let app = TestApp::builder()
        .outbox()
        .payments()
        .await
        .sandbox_host("hooks.sandbox.test", *receiver.server.address())
        .runtime(|r| r.webhook_poll_millis = 0)
        .spawn()
        .await;
    let resp = app
        .http
        .post(app.url("/api/webhook-endpoints"))
        .header("Authorization", format!("Bearer {}", app.api_key))
        .json(&json!({"url": receiver.url(), "events": ["credits.added"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let secret = resp.json::<Value>().await.unwrap()["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    // The sandbox key's human buys credits on the web and the provider confirms the payment.
    let browser = Browser::new(&app);
    let page = browser
        .sign_in(&app, svc::startup::SANDBOX_EMAIL, "/account")
        .await;
    let checkout: Value = browser
        .http
        .post(app.url("/api/billing/create-checkout-session"))
        .header("Origin", &app.base_url)
        .header("Authorization", format!("Bearer {}", csrf_of(&page)))
        .header("Idempotency-Key", "hooks-1")
        .json(&json!({"sku": "starter"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = checkout["checkout_url"].as_str().unwrap();
    let paid = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
        .post(format!("{url}/pay"))
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), 303);

    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let got = receiver.next().await;
    let body = verify_independently(&secret, &got);
    assert_eq!(body["type"], "credits.added");
    assert_eq!(body["data"]["credits"], checkout["credits"]);
    assert_eq!(body["data"]["checkout_id"], checkout["checkout_id"]);
    assert_eq!(body["data"]["currency"], "usd");
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 0, "once");
}
