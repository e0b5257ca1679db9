//! End to end in a real browser: the RFC 8628 device flow through the service's own web pages,
//! driven in headless Chromium over WebDriver (chromedriver).
//!
//! Needs `chromedriver` and `chromium` (Debian: `apt-get install chromium chromium-driver`); the
//! paths can be overridden with `SVC_CHROMEDRIVER` and `SVC_CHROMIUM`. A missing driver fails
//! the tests: they are not skipped.

use std::{
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "api/helpers.rs"]
mod helpers;

use helpers::{TestApp, TestClock, bearer};

/// The account page's activity list and usage chart at both widths.
#[path = "browser/activity.rs"]
mod activity;
/// Widths and labels, checked the same way on every page.
#[path = "browser/layout.rs"]
mod layout;
/// Every page at a phone's and a desktop's width.
#[path = "browser/pages.rs"]
mod pages;
#[path = "browser/webhooks.rs"]
mod webhooks;

const AGENT_NAME: &str = "Browser E2E Agent";
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// Longer than the poll interval the service asks for (5 s), so no poll gets `slow_down`.
const POLL_GAP: Duration = Duration::from_secs(6);
const PAGE_TIMEOUT: Duration = Duration::from_secs(20);

// ---- the browser ------------------------------------------------------------------------------

fn configured_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from)
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("no free local port")
        .port()
}

/// A chromedriver of this test's own (in its own process group, so that the Chromium it starts
/// goes with it) and the fresh profile directory of its browser.
struct Chromedriver {
    child: Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Chromedriver {
    fn start() -> Self {
        let driver = configured_path("SVC_CHROMEDRIVER", "/usr/bin/chromedriver");
        let profile = tempfile::tempdir().expect("temporary profile directory");
        let port = free_port();
        let log = profile.path().join("chromedriver.log");
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start chromedriver at {} ({e}): the browser tests need it. Install it \
                     (Debian: apt-get install chromium chromium-driver) or point SVC_CHROMEDRIVER at it.",
                    driver.display()
                )
            });
        let mut this = Self {
            child,
            port,
            profile,
        };
        this.wait_until_listening();
        this
    }

    fn wait_until_listening(&mut self) {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "chromedriver exited ({status}) before listening on port {}:\n{}",
                    self.port,
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on port {} within 15 s:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("chromedriver.log")).unwrap_or_default()
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        // The whole group: chromedriver and any Chromium left behind by a failed test.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One headless Chromium session. Close it with [`Browser::close`]; dropping it (a failed test)
/// kills the driver and the browser.
struct Browser {
    client: Client,
    driver: Chromedriver,
}

impl Browser {
    async fn start() -> Self {
        let driver = Chromedriver::start();
        let chromium = configured_path("SVC_CHROMIUM", "/usr/bin/chromium");
        let profile_dir = driver.profile.path().join("profile");
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile_dir.display()),
        ];
        let capabilities = json!({
            "goog:chromeOptions": { "binary": chromium, "args": args },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        // chromedriver speaks plain HTTP on loopback.
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&driver.url())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "no browser session (chromium at {}): {e}\n{}",
                    chromium.display(),
                    driver.log()
                )
            });
        Self { client, driver }
    }

    /// Waits for the element with this id; on timeout, says where the browser is and what it shows.
    async fn element(&self, id: &str) -> anyhow::Result<Element> {
        let deadline = std::time::Instant::now() + PAGE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self
                .client
                .wait()
                .at_most(left)
                .for_element(Locator::Id(id))
                .await
            {
                Ok(e) => return Ok(e),
                // chromedriver answers a find that meets the page being replaced (the redirects
                // after a click) "aborted by navigation": look again on the page that follows.
                Err(e) if e.to_string().contains("aborted by navigation") && !left.is_zero() => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => {
                    let url = self.client.current_url().await.map(|u| u.to_string());
                    let source = self.client.source().await.unwrap_or_default();
                    bail!("no #{id} on {url:?}: {e}\n{source}")
                }
            }
        }
    }

    async fn text_of(&self, id: &str) -> anyhow::Result<String> {
        Ok(self.element(id).await?.text().await?.trim().to_owned())
    }

    async fn click(&self, id: &str) -> anyhow::Result<()> {
        self.element(id)
            .await?
            .click()
            .await
            .with_context(|| format!("clicking #{id}"))
    }

    async fn type_into(&self, id: &str, text: &str) -> anyhow::Result<()> {
        self.element(id)
            .await?
            .send_keys(text)
            .await
            .with_context(|| format!("typing into #{id}"))
    }

    async fn close(self) -> anyhow::Result<()> {
        let Self { client, driver } = self;
        client
            .close()
            .await
            .context("closing the browser session")?;
        drop(driver);
        Ok(())
    }
}

// ---- the agent and the mailbox (plain HTTP) ---------------------------------------------------

struct Agent {
    device_code: String,
    user_code: String,
    verification_uri_complete: String,
}

async fn start_agent(app: &TestApp) -> Agent {
    let resp = app
        .http
        .post(app.url("/agent/identity"))
        .json(&json!({ "client_id": "browser-e2e", "agent_name": AGENT_NAME }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["expires_in"], 900, "{body}");
    assert_eq!(body["interval"], 5, "{body}");
    let text = |field: &str| body[field].as_str().unwrap_or_default().to_owned();
    let user_code = text("user_code");
    assert!(
        user_code.len() == 9 && user_code.as_bytes()[4] == b'-',
        "user code {user_code:?} is not XXXX-XXXX"
    );
    assert_eq!(text("verification_uri"), app.url("/device"));
    Agent {
        device_code: text("device_code"),
        verification_uri_complete: text("verification_uri_complete"),
        user_code,
    }
}

/// One poll of the token endpoint, after the interval has passed on the pinned clock.
async fn poll(app: &TestApp, clock: &TestClock, agent: &Agent) -> (u16, Value) {
    clock.advance(POLL_GAP);
    let resp = app
        .http
        .post(app.url("/oauth2/token"))
        .form(&[
            ("grant_type", DEVICE_GRANT),
            ("device_code", agent.device_code.as_str()),
        ])
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn assert_poll_error(app: &TestApp, clock: &TestClock, agent: &Agent, error: &str) {
    let (status, body) = poll(app, clock, agent).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], error, "{body}");
}

/// The 6-digit code of the newest mail to `email` in the sandbox outbox.
async fn emailed_code(app: &TestApp, email: &str) -> String {
    let outbox = app
        .http
        .get(app.url("/sandbox/outbox"))
        .query(&[("to", email)])
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let text = outbox["messages"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no mail to {email}: {outbox}"));
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no 6-digit code in {text:?}"))
        .to_owned()
}

// ---- the human's part ---------------------------------------------------------------------------

/// Opens the agent's link signed out, and signs in with the emailed code; the browser ends on
/// whatever the link shows a signed-in human.
async fn sign_in_through_link(
    app: &TestApp,
    browser: &Browser,
    agent: &Agent,
    email: &str,
) -> anyhow::Result<()> {
    browser
        .client
        .goto(&agent.verification_uri_complete)
        .await?;
    browser.element("email").await?;
    let url = browser.client.current_url().await?;
    assert_eq!(url.path(), "/signin", "{url}");
    let next = url
        .query_pairs()
        .find(|(k, _)| k == "next")
        .map(|(_, v)| v.into_owned());
    assert_eq!(
        next.as_deref(),
        Some(format!("/device?user_code={}", agent.user_code).as_str()),
        "{url}"
    );

    browser.type_into("email", email).await?;
    browser.click("send-code").await?;
    browser.element("code").await?;
    let code = emailed_code(app, email).await;
    browser.type_into("code", &code).await?;
    browser.click("verify-code").await?;
    Ok(())
}

/// Signs in through the agent's link and checks the approval page it lands on.
async fn reach_approval_page(
    app: &TestApp,
    browser: &Browser,
    agent: &Agent,
    email: &str,
) -> anyhow::Result<()> {
    sign_in_through_link(app, browser, agent, email).await?;
    browser.element("approve").await?;
    let url = browser.client.current_url().await?;
    assert_eq!(url.path(), "/device", "{url}");
    assert_eq!(browser.text_of("agent-name").await?, AGENT_NAME);
    assert_eq!(browser.text_of("user-code").await?, agent.user_code);
    assert_eq!(browser.text_of("client-id").await?, "browser-e2e");
    let source = browser.client.source().await?;
    assert!(source.contains(email), "the page does not name the account");
    for (id, path) in [("terms-link", "/terms"), ("privacy-link", "/privacy")] {
        let href = browser.element(id).await?.attr("href").await?;
        assert_eq!(href.as_deref(), Some(path), "#{id}");
        let page = app.http.get(app.url(path)).send().await?;
        assert_eq!(page.status(), 200, "{path}");
    }
    browser.element("deny").await?;
    Ok(())
}

async fn spawn_app() -> (TestApp, std::sync::Arc<TestClock>) {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .clock(clock.clone())
        .spawn()
        .await;
    (app, clock)
}

// ---- the tests ----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_in_the_browser_then_the_key_works() -> anyhow::Result<()> {
    let (app, clock) = spawn_app().await;
    let agent = start_agent(&app).await;
    assert_poll_error(&app, &clock, &agent, "authorization_pending").await;

    let browser = Browser::start().await;
    reach_approval_page(&app, &browser, &agent, "approver@example.com").await?;
    browser.click("approve").await?;
    assert_eq!(browser.text_of("heading").await?, "Agent approved");
    assert!(
        browser.text_of("message").await?.contains("API key"),
        "the page does not say what happens next"
    );

    let (status, token) = poll(&app, &clock, &agent).await;
    assert_eq!(status, 200, "{token}");
    assert_eq!(token["token_type"], "Bearer");
    let api_key = token["api_key"].as_str().expect("api_key").to_owned();
    assert_eq!(token["access_token"], api_key.as_str());
    for field in ["welcome_message", "mcp_setup_command"] {
        assert!(
            token[field].as_str().is_some_and(|s| !s.is_empty()),
            "{field} missing in {token}"
        );
    }
    let usage = app.get_usage(Some(&bearer(&api_key))).await;
    assert_eq!(usage.status(), 200);

    assert_poll_error(&app, &clock, &agent, "invalid_grant").await;
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_in_the_browser_stops_the_agent() -> anyhow::Result<()> {
    let (app, clock) = spawn_app().await;
    let agent = start_agent(&app).await;

    let browser = Browser::start().await;
    reach_approval_page(&app, &browser, &agent, "denier@example.com").await?;
    browser.click("deny").await?;
    assert_eq!(browser.text_of("heading").await?, "Request denied");

    assert_poll_error(&app, &clock, &agent, "access_denied").await;
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_link_cannot_be_approved() -> anyhow::Result<()> {
    let (app, clock) = spawn_app().await;
    let agent = start_agent(&app).await;
    clock.advance(Duration::from_secs(16 * 60));

    let browser = Browser::start().await;
    sign_in_through_link(&app, &browser, &agent, "late@example.com").await?;
    assert_eq!(browser.text_of("heading").await?, "Code expired or used up");
    let message = browser.text_of("message").await?;
    assert!(message.contains("expired"), "{message}");
    assert!(
        browser.client.find(Locator::Id("approve")).await.is_err(),
        "an expired request still offers Approve"
    );

    assert_poll_error(&app, &clock, &agent, "expired_token").await;
    browser.close().await
}

// ---- billing: the human's checkout, credits only after the webhook ---------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_handoff_then_pay_credits_only_after_the_webhook() -> anyhow::Result<()> {
    let app = TestApp::builder().outbox().payments().await.spawn().await;
    let provider = app.payments.as_ref().expect("payments").uri();
    let http = reqwest::Client::new();
    let spendable = |app: &TestApp| {
        let (http, url, key) = (app.http.clone(), app.url("/api/usage"), app.api_key.clone());
        async move {
            let usage: Value = http
                .get(url)
                .header("Authorization", bearer(&key))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            usage["balance"]["spendable"].as_i64().unwrap()
        }
    };
    // The agent asks for a handoff link.
    let (status, answer) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "svc_create_checkout_session", "arguments": {"plan": "starter"}}}),
            Some(&bearer(&app.api_key)),
            "2025-11-25",
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let handoff_url = answer["result"]["structuredContent"]["handoff_url"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();

    // The human signs in with the emailed code.
    let browser = Browser::start().await;
    let email = "agent@sandbox.example.com";
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
    assert!(
        browser
            .text_of("credits")
            .await?
            .starts_with("1000 spendable")
    );

    // The provider holds its webhooks, so the browser gets back before the payment is confirmed.
    http.post(format!("{provider}/qa/hold"))
        .send()
        .await?
        .error_for_status()?;
    browser.client.goto(&handoff_url).await?;
    browser.click("continue").await?;
    // The meta refresh takes the browser to the provider's hosted page.
    browser.click("pay").await?;
    assert_eq!(browser.text_of("heading").await?, "Purchase pending");
    let url = browser.client.current_url().await?;
    assert_eq!(url.path(), "/billing/return", "{url}");
    assert_eq!(spendable(&app).await, 1000, "credits before the webhook");
    browser.client.goto(&app.url("/account")).await?;
    assert!(
        browser
            .text_of("credits")
            .await?
            .starts_with("1000 spendable")
    );

    // The webhooks arrive: now, and only now, the credits.
    let released: Value = http
        .post(format!("{provider}/qa/release"))
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(
        released["delivered"].as_array().map(Vec::len),
        Some(2),
        "{released}"
    );
    assert_eq!(spendable(&app).await, 2000);
    browser.client.goto(url.as_str()).await?;
    assert_eq!(browser.text_of("heading").await?, "Purchase confirmed");
    browser.client.goto(&app.url("/account")).await?;
    assert!(
        browser
            .text_of("credits")
            .await?
            .starts_with("2000 spendable")
    );
    let receipts = browser.text_of("receipts").await?;
    assert!(receipts.contains("1000 credits bought"), "{receipts}");
    browser.close().await
}

// ---- target-site connections: the human connects their booking account -----------------------

const BOOKING_PROVIDER: &str = "booking-sandbox";

async fn spawn_connections_app() -> (TestApp, std::sync::Arc<TestClock>) {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .outbox()
        .clock(clock.clone())
        .action_sites()
        .await
        .auth_server()
        .await
        .spawn()
        .await;
    (app, clock)
}

/// The agent starts a connection (expecting the sandbox's traveller account) and gets its link.
async fn start_connection(app: &TestApp) -> String {
    let started: Value = app
        .http
        .post(app.url(&format!("/api/connections/{BOOKING_PROVIDER}/start")))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"expected_account": svc::startup::BOOKING_ACCOUNT}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    started["connect_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no connect_url: {started}"))
        .to_owned()
}

async fn connection_state(app: &TestApp) -> Value {
    app.http
        .get(app.url(&format!("/api/connections/{BOOKING_PROVIDER}/poll")))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn run_booking_action(app: &TestApp) -> (u16, Value) {
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(
            &json!({"domain": "booking.sandbox.test", "action": "list_my_bookings", "params": {}}),
        )
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// The human opens the link signed out, signs in as the agent's account with the emailed code,
/// and lands on the connect page.
async fn open_connect_link(app: &TestApp, browser: &Browser, link: &str) -> anyhow::Result<()> {
    browser.client.goto(link).await?;
    browser.element("email").await?;
    assert_eq!(browser.client.current_url().await?.path(), "/signin");
    browser
        .type_into("email", svc::startup::SANDBOX_EMAIL)
        .await?;
    browser.click("send-code").await?;
    browser.element("code").await?;
    let code = emailed_code(app, svc::startup::SANDBOX_EMAIL).await;
    browser.type_into("code", &code).await?;
    browser.click("verify-code").await?;
    Ok(())
}

/// From the connect page to the provider's consent page, where `button` is pressed.
async fn decide_at_provider(app: &TestApp, browser: &Browser, button: &str) -> anyhow::Result<()> {
    assert_eq!(browser.text_of("provider").await?, BOOKING_PROVIDER);
    browser.click("continue").await?;
    browser.element(button).await?;
    let at = browser.client.current_url().await?;
    let auth = app.auth.as_ref().unwrap().uri();
    assert!(
        at.as_str().starts_with(&format!("{auth}/authorize?")),
        "{at}"
    );
    assert!(
        at.query_pairs()
            .any(|(k, v)| k == "code_challenge_method" && v == "S256"),
        "{at}"
    );
    browser.click(button).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_approve_in_the_browser_then_the_action_runs() -> anyhow::Result<()> {
    let (app, _clock) = spawn_connections_app().await;
    let (status, refused) = run_booking_action(&app).await;
    assert_eq!(
        (status, refused["failure_class"].as_str()),
        (403, Some("connection_required"))
    );
    let link = start_connection(&app).await;

    let browser = Browser::start().await;
    open_connect_link(&app, &browser, &link).await?;
    decide_at_provider(&app, &browser, "approve").await?;
    assert_eq!(browser.text_of("heading").await?, "Connected");
    let url = browser.client.current_url().await?;
    assert_eq!(url.path(), "/connect/callback", "{url}");

    let state = connection_state(&app).await;
    assert_eq!(state["connected"], true, "{state}");
    let (status, done) = run_booking_action(&app).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["artifact"]["status"], "completed");
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_refuse_in_the_browser_stops_the_agent() -> anyhow::Result<()> {
    let (app, _clock) = spawn_connections_app().await;
    let link = start_connection(&app).await;
    let browser = Browser::start().await;
    open_connect_link(&app, &browser, &link).await?;
    decide_at_provider(&app, &browser, "refuse").await?;
    assert_eq!(browser.text_of("heading").await?, "Not connected");

    let state = connection_state(&app).await;
    assert_eq!(
        (state["state"].as_str(), state["final"].as_bool()),
        (Some("refused"), Some(true))
    );
    let (status, _) = run_booking_action(&app).await;
    assert_eq!(status, 403);
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_as_another_account_in_the_browser_ends_as_wrong_account() -> anyhow::Result<()> {
    let (app, _clock) = spawn_connections_app().await;
    let link = start_connection(&app).await;
    let browser = Browser::start().await;
    open_connect_link(&app, &browser, &link).await?;
    decide_at_provider(&app, &browser, "other-account").await?;
    assert_eq!(browser.text_of("heading").await?, "Another account");
    let message = browser.text_of("message").await?;
    assert!(
        message.contains(svc::startup::OTHER_BOOKING_ACCOUNT),
        "{message}"
    );

    let state = connection_state(&app).await;
    assert_eq!(
        (state["state"].as_str(), state["final"].as_bool()),
        (Some("wrong_account"), Some(true))
    );
    let (status, _) = run_booking_action(&app).await;
    assert_eq!(status, 403);
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_link_expired_in_the_browser_offers_nothing() -> anyhow::Result<()> {
    let (app, clock) = spawn_connections_app().await;
    let link = start_connection(&app).await;
    clock.advance(Duration::from_secs(11 * 60));

    let browser = Browser::start().await;
    open_connect_link(&app, &browser, &link).await?;
    assert_eq!(browser.text_of("heading").await?, "Link expired");
    assert!(
        browser.client.find(Locator::Id("continue")).await.is_err(),
        "an expired link still offers Continue"
    );
    let state = connection_state(&app).await;
    assert_eq!(
        (state["state"].as_str(), state["final"].as_bool()),
        (Some("expired"), Some(true))
    );
    browser.close().await
}

// Keys: consequential approval and rotation with its overlap, at phone and desktop width.
#[path = "browser/keys.rs"]
mod keys;
