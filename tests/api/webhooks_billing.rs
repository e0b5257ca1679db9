//! `credits.added` and `credits.low`: money events reach the endpoints that chose them.

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

/// `credits.low`: the charge that takes spendable credits below 10 sends it, once per crossing.
#[tokio::test]
async fn the_charge_that_crosses_the_low_mark_sends_credits_low() {
    let mut receiver = Receiver::start(&[]).await;
    let app = crate::webhooks::app_with(&receiver, None, false, None).await;
    let key = app
        .services
        .keys
        .create_key(svc::services::CreateKey {
            email: svc_ports::Email::parse("low@example.com").unwrap(),
            plan: svc_ports::Plan::Sandbox,
            credits: Some(svc_ports::CreditAmount::new(11).unwrap()),
            scopes: svc_ports::Scopes::parse_list("read discover execute").unwrap(),
            label: "low".into(),
        })
        .await
        .unwrap()
        .secret
        .expose()
        .to_owned();
    let resp = app
        .http
        .post(app.url("/api/webhook-endpoints"))
        .header("Authorization", format!("Bearer {key}"))
        .json(&json!({"url": receiver.url(), "events": ["credits.low"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let secret = resp.json::<Value>().await.unwrap()["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = |q: &'static str| {
        app.http
            .post(app.url("/api/execute"))
            .header("Authorization", format!("Bearer {key}"))
            .json(&json!({"domain": "shop.sandbox.test", "action": "search_products", "params": {"query": q}}))
            .send()
    };
    assert_eq!(run("tea").await.unwrap().status(), 200);
    // 10 left: not yet low; the task events are not this endpoint's.
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 0);
    assert_eq!(run("mugs").await.unwrap().status(), 200);
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let got = receiver.next().await;
    let body = verify_independently(&secret, &got);
    assert_eq!(body["type"], "credits.low");
    assert_eq!(body["data"]["spendable"], 9);
    assert_eq!(body["data"]["threshold"], 10);
    assert_eq!(body["data"]["next_action"]["kind"], "top_up");
    // Further charges below the mark do not repeat it.
    assert_eq!(run("pots").await.unwrap().status(), 200);
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 0);
}
