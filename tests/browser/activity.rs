//! The account page's activity list and usage chart in headless Chromium at a phone's width
//! (390 px) and a desktop's (1280 px): no horizontal overflow, the chart an accessible image
//! with its figures beside it, and the artifact and verify links working without script.

use std::time::Duration;

use fantoccini::Locator;
use serde_json::{Value, json};

use super::{Browser, emailed_code, helpers::TestApp, helpers::TestClock, helpers::bearer};

const EMAIL: &str = "activity-browser@example.com";

/// A key of `EMAIL`'s account with 100 credits.
async fn owner_key(app: &TestApp) -> String {
    app.services
        .keys
        .create_key(svc::services::CreateKey {
            email: svc_ports::Email::parse(EMAIL).unwrap(),
            plan: svc_ports::Plan::Sandbox,
            credits: Some(svc_ports::CreditAmount::new(100).unwrap()),
            scopes: svc_ports::Scopes::parse_list("read discover execute").unwrap(),
            label: "browser activity".into(),
        })
        .await
        .unwrap()
        .secret
        .expose()
        .to_owned()
}

async fn run(app: &TestApp, key: &str, complete: bool) {
    let body = if complete {
        json!({"domain": "shop.sandbox.test", "action": "search_products", "params": {"query": "a rather long query about tea"}})
    } else {
        json!({"domain": "flaky.sandbox.test", "action": "server_error", "params": {}})
    };
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(key))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), if complete { 200 } else { 502 });
}

/// The page's width in CSS pixels, how wide its content is, and the right edge of the
/// activity list's items, the chart and the figures (0 when absent).
async fn layout(browser: &Browser) -> anyhow::Result<Value> {
    Ok(browser
        .client
        .execute(
            r#"
            const right = (sel) => Math.max(0, ...[...document.querySelectorAll(sel)]
                .map((e) => e.getBoundingClientRect().right));
            const chart = document.getElementById('usage-chart');
            return {
                viewport: document.documentElement.clientWidth,
                content: document.documentElement.scrollWidth,
                section: right('#activity'),
                items: right('#activity-list li, #activity-list li *'),
                chart: right('#usage-chart'),
                chart_width: chart ? chart.getBoundingClientRect().width : 0,
                figures: right('#usage-totals, #usage-totals *'),
            };
            "#,
            vec![],
        )
        .await?)
}

fn fits(l: &Value, what: &str) {
    let viewport = l["viewport"].as_f64().unwrap();
    for part in ["section", "items", "chart", "figures"] {
        let right = l[part].as_f64().unwrap();
        assert!(right > 0.0, "{what}: no {part} ({l})");
        assert!(right <= viewport + 0.5, "{what}: {part} overflows ({l})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_list_and_usage_chart_fit_a_phone_and_a_desktop() -> anyhow::Result<()> {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .clock(clock.clone())
        .action_sites()
        .await
        .spawn()
        .await;
    let key = owner_key(&app).await;
    // Two days of tasks: the chart has bars on both, the list has both outcomes.
    run(&app, &key, true).await;
    run(&app, &key, false).await;
    clock.advance(Duration::from_secs(24 * 3600));
    run(&app, &key, true).await;
    run(&app, &key, true).await;

    let browser = Browser::start().await;
    browser.client.set_window_size(1280, 900).await?;
    browser
        .client
        .goto(&app.url("/signin?next=/account"))
        .await?;
    browser.type_into("email", EMAIL).await?;
    browser.click("send-code").await?;
    browser.element("code").await?;
    let code = emailed_code(&app, EMAIL).await;
    browser.type_into("code", &code).await?;
    browser.click("verify-code").await?;
    browser.element("activity").await?;

    for width in [1280u32, 390] {
        browser.client.set_window_size(width, 900).await?;
        browser.client.goto(&app.url("/account")).await?;
        browser.element("activity").await?;
        let l = layout(&browser).await?;
        assert!(
            l["viewport"].as_f64().unwrap() <= f64::from(width),
            "the window is {width} px wide: {l}"
        );
        fits(&l, &format!("/account at {width} px"));
        assert!(
            l["chart_width"].as_f64().unwrap() >= 300.0,
            "the chart is readable at {width} px: {l}"
        );

        // The list: newest first, each task with its outcome and links.
        let items = browser
            .client
            .find_all(Locator::Css("#activity-list li.task"))
            .await?;
        assert_eq!(items.len(), 4);
        assert_eq!(
            items[0].attr("data-status").await?.as_deref(),
            Some("completed")
        );
        assert_eq!(
            items[3].attr("data-status").await?.as_deref(),
            Some("completed")
        );
        assert!(items[2].text().await?.contains("1 credit refunded"));

        // The chart: an image with its title and description, and its figures as text.
        let chart = browser.element("usage-chart").await?;
        assert_eq!(chart.attr("role").await?.as_deref(), Some("img"));
        assert_eq!(
            chart.attr("aria-labelledby").await?.as_deref(),
            Some("usage-chart-title usage-chart-desc")
        );
        let desc = browser
            .client
            .execute(
                "return document.getElementById('usage-chart-desc').textContent",
                vec![],
            )
            .await?;
        assert!(
            desc.as_str()
                .unwrap()
                .contains("3 credits charged, 1 credit refunded"),
            "{desc}"
        );
        assert_eq!(browser.text_of("usage-charged").await?, "3");
        assert_eq!(browser.text_of("usage-refunded").await?, "1");
        assert_eq!(browser.text_of("usage-taken-back").await?, "0");
        let bars = browser
            .client
            .find_all(Locator::Css("#usage-chart rect.charged"))
            .await?;
        assert_eq!(bars.len(), 30, "one bar per day");

        // The whole activity page fits as well.
        browser.client.goto(&app.url("/account/activity")).await?;
        browser.element("activity-list").await?;
        let l = layout(&browser).await?;
        fits(&l, &format!("/account/activity at {width} px"));
        assert!(
            l["content"].as_f64() <= l["viewport"].as_f64(),
            "/account/activity scrolls sideways at {width} px: {l}"
        );

        // The verify link: a plain link to the server's check.
        let verify = browser
            .client
            .find(Locator::Css("#activity-list li.task .verify-link"))
            .await?;
        verify.click().await?;
        let verdict = browser.element("verdict").await?;
        assert_eq!(verdict.attr("data-valid").await?.as_deref(), Some("true"));
        let l = layout(&browser).await?;
        assert!(
            l["content"].as_f64() <= l["viewport"].as_f64(),
            "the check page scrolls sideways at {width} px: {l}"
        );
        // And the artifact it checked, as JSON.
        browser.click("artifact-download").await?;
        let source = browser.client.source().await?;
        assert!(source.contains("\"signature\""), "{source}");
        assert!(source.contains("art_"), "{source}");
    }
    browser.close().await
}
