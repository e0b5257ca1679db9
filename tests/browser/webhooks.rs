//! The webhooks page in the browser (issue 20), at a phone's width and a desktop's: sign in,
//! add an endpoint (its secret shown once), see a task's delivery in the log, replay it, and
//! never scroll sideways.

use std::time::Duration;

use fantoccini::Locator;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

use super::{Browser, emailed_code, helpers::TestApp};

const HOOK_HOST: &str = "hooks.sandbox.test";

struct Recorder(mpsc::UnboundedSender<(String, String)>);

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let id = request
            .headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let _ = self
            .0
            .send((id, String::from_utf8_lossy(&request.body).into_owned()));
        ResponseTemplate::new(204)
    }
}

/// Fails when the page is wider than the window (a sideways scroll).
async fn assert_fits(browser: &Browser, width: u32, what: &str) -> anyhow::Result<()> {
    super::layout::assert_fits(browser, &format!("{what} at {width} px")).await
}

async fn run_at(width: u32) -> anyhow::Result<()> {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let receiver = MockServer::start().await;
    Mock::given(any())
        .respond_with(Recorder(tx))
        .mount(&receiver)
        .await;
    let app: TestApp = TestApp::builder()
        .outbox()
        .sandbox_host(HOOK_HOST, *receiver.address())
        .runtime(|r| r.webhook_poll_millis = 0)
        .action_sites()
        .await
        .spawn()
        .await;
    let browser = Browser::start().await;
    super::layout::set_width(&browser, width).await?;

    // Sign in as the sandbox account (the one the seeded key belongs to).
    let email = svc::startup::SANDBOX_EMAIL;
    browser
        .client
        .goto(&app.url("/signin?next=/account"))
        .await?;
    browser.type_into("email", email).await?;
    browser.click("send-code").await?;
    browser.element("code").await?;
    let code = emailed_code(&app, email).await;
    browser.type_into("code", &code).await?;
    browser.click("verify-code").await?;
    browser.click("webhooks-link").await?;
    browser.element("no-endpoints").await?;
    assert_fits(&browser, width, "the empty webhooks page").await?;

    // A private address is refused, with the reason, and the form keeps what was typed.
    browser
        .type_into("endpoint-url", "http://10.1.2.3/hooks")
        .await?;
    browser.click("add-endpoint-submit").await?;
    let error = browser.text_of("error").await?;
    assert!(error.contains("cannot be called"), "{error}");
    assert_fits(&browser, width, "the refused form").await?;

    let url = format!(
        "http://{HOOK_HOST}:{}/hooks/{width}",
        receiver.address().port()
    );
    let field = browser.element("endpoint-url").await?;
    field.clear().await?;
    field.send_keys(&url).await?;
    browser
        .type_into("endpoint-description", "order system")
        .await?;
    browser.click("add-endpoint-submit").await?;
    let secret = browser.text_of("webhook-secret").await?;
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_fits(&browser, width, "the secret page").await?;
    browser.click("back-to-webhooks").await?;
    let listed = browser
        .client
        .find(Locator::Css("#endpoint-list li.endpoint"))
        .await?
        .text()
        .await?;
    assert!(
        listed.contains(&url) && listed.contains("order system"),
        "{listed}"
    );
    assert!(
        !browser.client.source().await?.contains(&secret),
        "the secret is shown only once"
    );

    // A task completes; its delivery shows in the log, succeeded.
    let done: Value = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", format!("Bearer {}", app.api_key))
        .json(&json!({"domain": "shop.sandbox.test", "action": "search_products", "params": {"query": "tea"}}))
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(app.services.hooks.deliver_due().await?, 1);
    let (first_id, body) = tokio::time::timeout(Duration::from_secs(20), seen.recv())
        .await?
        .unwrap();
    assert!(body.contains(done["task_id"].as_str().unwrap()), "{body}");
    browser.client.refresh().await?;
    let delivery = browser
        .client
        .find(Locator::Css("#delivery-list li.delivery"))
        .await?;
    assert_eq!(
        delivery.attr("data-status").await?.as_deref(),
        Some("succeeded")
    );
    let text = delivery.text().await?;
    assert!(
        text.contains("task.completed") && text.contains("HTTP 204"),
        "{text}"
    );
    assert_fits(&browser, width, "the delivery log").await?;

    // Replay: a new delivery of the same event, same webhook-id.
    browser
        .client
        .find(Locator::Css("#delivery-list .replay-delivery"))
        .await?
        .click()
        .await?;
    let notice = browser.text_of("notice").await?;
    assert!(notice.contains("sent again"), "{notice}");
    assert_eq!(app.services.hooks.deliver_due().await?, 1);
    let (replayed_id, _) = tokio::time::timeout(Duration::from_secs(20), seen.recv())
        .await?
        .unwrap();
    assert_eq!(replayed_id, first_id);
    browser.client.refresh().await?;
    let rows = browser
        .client
        .find_all(Locator::Css("#delivery-list li.delivery"))
        .await?;
    assert_eq!(rows.len(), 2);
    assert_fits(&browser, width, "the log after a replay").await?;

    // Delete: gone from the list.
    browser
        .client
        .find(Locator::Css("#endpoint-list .delete-endpoint"))
        .await?
        .click()
        .await?;
    // The new page first: the old one's notice may still be there while the form posts.
    browser.element("no-endpoints").await?;
    assert!(browser.text_of("notice").await?.contains("deleted"));
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_setup_delivery_and_replay_on_a_phone() -> anyhow::Result<()> {
    run_at(390).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_setup_delivery_and_replay_on_a_desktop() -> anyhow::Result<()> {
    run_at(1280).await
}
