//! Keys in the browser (issue 20): the human grants `execute:consequential` on the device page
//! only by ticking it, and a rotated key's overlap is shown on the account page; both at a
//! phone's width (390 px) and a desktop's (1280 px), with nothing to scroll sideways.

use super::*;

use super::layout::{WIDTHS, assert_fits as assert_no_horizontal_overflow, set_width};

async fn start_consequential_agent(app: &TestApp) -> Agent {
    let resp = app
        .http
        .post(app.url("/agent/identity"))
        .json(&json!({
            "client_id": "browser-e2e",
            "agent_name": AGENT_NAME,
            "scope": "read discover execute execute:consequential",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    let text = |field: &str| body[field].as_str().unwrap_or_default().to_owned();
    Agent {
        device_code: text("device_code"),
        verification_uri_complete: text("verification_uri_complete"),
        user_code: text("user_code"),
    }
}

async fn scopes_of_key(app: &TestApp, key: &str) -> Value {
    let listed: Value = app
        .http
        .get(app.url("/api/keys"))
        .header("Authorization", bearer(key))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["prefix"] == key[..17])
        .map(|k| k["scopes"].clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consequential_scope_is_granted_only_when_ticked_at_both_widths() -> anyhow::Result<()> {
    let (app, clock) = spawn_app().await;
    let browser = Browser::start().await;
    for (n, width) in WIDTHS.into_iter().enumerate() {
        set_width(&browser, width).await?;
        let agent = start_consequential_agent(&app).await;
        if n == 0 {
            sign_in_through_link(&app, &browser, &agent, "shopper@example.com").await?;
        } else {
            browser
                .client
                .goto(&agent.verification_uri_complete)
                .await?;
        }
        browser.element("approve").await?;
        assert_no_horizontal_overflow(&browser, &format!("the approval page at {width} px"))
            .await?;
        // Apart from the ordinary scopes, in words, unticked.
        let ordinary = browser.text_of("scopes").await?;
        assert!(!ordinary.contains("consequential"), "{ordinary}");
        let apart = browser.text_of("consequential-request").await?;
        assert!(
            apart.contains("place orders, make bookings and make payments"),
            "{apart}"
        );
        let tick = browser.element("grant-consequential").await?;
        assert!(tick.is_displayed().await?);
        assert!(
            !tick.is_selected().await?,
            "the consequential box is ticked by default"
        );
        // The phone ticks it; the desktop leaves it.
        let ticked = width == 390;
        if ticked {
            tick.click().await?;
        }
        browser.click("approve").await?;
        assert_eq!(browser.text_of("heading").await?, "Agent approved");
        assert_no_horizontal_overflow(&browser, &format!("the approved page at {width} px"))
            .await?;

        let (status, token) = poll(&app, &clock, &agent).await;
        assert_eq!(status, 200, "{token}");
        let key = token["api_key"].as_str().unwrap();
        let scopes = scopes_of_key(&app, key).await;
        let expected = if ticked {
            json!(["discover", "execute", "execute:consequential", "read"])
        } else {
            json!(["discover", "execute", "read"])
        };
        assert_eq!(scopes, expected, "at {width} px");
    }
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_shows_the_overlap_at_both_widths() -> anyhow::Result<()> {
    let (app, clock) = spawn_app().await;
    let browser = Browser::start().await;
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
    browser.element("keys").await?;

    for width in WIDTHS {
        set_width(&browser, width).await?;
        // A key the agent runs on, made through the API.
        let made: Value = app
            .http
            .post(app.url("/api/keys"))
            .header("Authorization", bearer(&app.api_key))
            .json(&json!({"name": format!("agent at {width}")}))
            .send()
            .await?
            .json()
            .await?;
        let old = made["api_key"].as_str().unwrap().to_owned();
        let prefix = old[..17].to_owned();
        browser.client.goto(&app.url("/account")).await?;
        browser.element("keys").await?;
        assert_no_horizontal_overflow(&browser, &format!("the account page at {width} px")).await?;
        browser
            .client
            .find(Locator::Css(&format!(
                "tr[data-prefix=\"{prefix}\"] button.rotate"
            )))
            .await?
            .click()
            .await?;
        let shown_end = browser.text_of("overlap-end").await?;
        let new = browser.text_of("new-key").await?;
        assert_ne!(new, old);
        assert_no_horizontal_overflow(&browser, &format!("the rotated key page at {width} px"))
            .await?;

        browser.client.goto(&app.url("/account")).await?;
        let row = browser
            .client
            .find(Locator::Css(&format!("tr[data-prefix=\"{prefix}\"]")))
            .await?;
        assert_eq!(row.attr("data-status").await?.as_deref(), Some("rotating"));
        let status = row.find(Locator::Css(".key-status")).await?.text().await?;
        assert!(status.contains(&shown_end), "{status} vs {shown_end}");
        assert_no_horizontal_overflow(&browser, &format!("the account page at {width} px")).await?;

        // Both keys work in the overlap; past it only the new one.
        for key in [&old, &new] {
            assert_eq!(app.get_usage(Some(&bearer(key))).await.status(), 200);
        }
        clock.advance(Duration::from_secs(24 * 3600));
        assert_eq!(app.get_usage(Some(&bearer(&old))).await.status(), 401);
        assert_eq!(app.get_usage(Some(&bearer(&new))).await.status(), 200);
        browser.client.goto(&app.url("/account")).await?;
        let row = browser
            .client
            .find(Locator::Css(&format!("tr[data-prefix=\"{prefix}\"]")))
            .await?;
        assert_eq!(row.attr("data-status").await?.as_deref(), Some("expired"));
    }
    browser.close().await
}
