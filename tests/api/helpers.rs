//! `TestApp`: the whole service on 127.0.0.1:0 with in-memory (or given) stores.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use reqwest::{StatusCode, redirect::Policy};
use serde_json::{Value, json};
use svc::{
    config::RuntimeSettings,
    services::Services,
    startup::{self, Application, Stores, World},
};
use svc_ports::Environment;

/// A clock the test moves by hand (expiry without waiting).
pub struct TestClock(std::sync::Mutex<chrono::DateTime<chrono::Utc>>);

impl TestClock {
    pub fn new() -> Arc<Self> {
        let now = chrono::DurationRound::duration_trunc(
            chrono::Utc::now(),
            chrono::TimeDelta::milliseconds(1),
        )
        .unwrap();
        Arc::new(Self(std::sync::Mutex::new(now)))
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += chrono::Duration::from_std(by).unwrap();
    }
}

impl svc_ports::Clock for TestClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        *self.0.lock().unwrap()
    }
}

pub struct TestApp {
    /// The sandbox's authorization server (`booking-sandbox`), when asked for.
    pub auth: Option<Arc<startup::SandboxAuthServer>>,
    /// The readiness-scan sites, when asked for.
    pub _readiness: Option<Arc<startup::ReadinessSites>>,
    /// The sandbox's action sites, when asked for (kept alive with the app).
    pub _sites: Option<Arc<startup::ActionSites>>,
    /// The sandbox's payment provider, when asked for.
    pub payments: Option<Arc<startup::SandboxPaymentProvider>>,
    pub base_url: String,
    /// `SVC_METRICS_BIND`'s origin, when the runtime set one.
    pub metrics_url: Option<String>,
    pub api_key: String,
    pub services: Arc<Services>,
    pub http: reqwest::Client,
}

pub struct TestAppBuilder {
    auth: Option<Arc<startup::SandboxAuthServer>>,
    bind: String,
    readiness: Option<Arc<startup::ReadinessSites>>,
    sites: Option<Arc<startup::ActionSites>>,
    payments: Option<Arc<startup::SandboxPaymentProvider>>,
    runtime: RuntimeSettings,
    stores: Option<Stores>,
    environment: Environment,
    world: World,
}

impl TestApp {
    /// A new key of the app's account holding `scopes`, made with the app's key.
    pub async fn key_with_scopes(&self, scopes: &[&str]) -> String {
        let created: serde_json::Value = self
            .http
            .post(self.url("/api/keys"))
            .header("Authorization", bearer(&self.api_key))
            .json(&serde_json::json!({ "scopes": scopes }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        created["api_key"].as_str().unwrap().to_owned()
    }

    pub fn builder() -> TestAppBuilder {
        TestAppBuilder {
            auth: None,
            bind: "127.0.0.1:0".into(),
            readiness: None,
            sites: None,
            payments: None,
            runtime: RuntimeSettings::default(),
            stores: None,
            environment: Environment::Test,
            // A scan's findings, not its speed, are under test: a loaded CI machine once ran
            // a local scan past the 9 s budget.
            world: World {
                scan_deadlines: Some((Duration::from_secs(60), Duration::from_secs(120))),
                ..World::default()
            },
        }
    }

    pub async fn spawn() -> Self {
        Self::builder().spawn().await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// One A2A JSON-RPC request (protocol 1.0); returns the parsed answer.
    pub async fn a2a(&self, method: &str, params: Value) -> Value {
        let resp = self
            .http
            .post(self.url("/a2a"))
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": "1", "method": method, "params": params}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "JSON-RPC answers are HTTP 200");
        resp.json().await.unwrap()
    }

    /// A key of another sandbox account (created with it), carrying `scopes`.
    pub async fn stranger_key(&self, email: &str, scopes: &str) -> String {
        self.services
            .keys
            .create_key(svc::services::CreateKey {
                email: svc_ports::Email::parse(email).unwrap(),
                plan: svc_ports::Plan::Sandbox,
                credits: None,
                scopes: svc_ports::Scopes::parse_list(scopes).unwrap(),
                label: "stranger".into(),
            })
            .await
            .unwrap()
            .secret
            .expose()
            .to_owned()
    }

    /// GET a path with the app's key; asserts 200 and parses the JSON answer.
    pub async fn get_json_as_owner(&self, path: &str) -> Value {
        let resp = self
            .http
            .get(self.url(path))
            .header("Authorization", bearer(&self.api_key))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "GET {path}");
        resp.json().await.unwrap()
    }

    /// GET a path and parse the JSON answer.
    pub async fn get_json(&self, path: &str) -> Value {
        self.http
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// GET a path with `key` and parse the JSON answer.
    pub async fn get_json_with_key(&self, path: &str, key: &str) -> Value {
        self.http
            .get(self.url(path))
            .header("Authorization", bearer(key))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// GET a path and read the answer as text.
    pub async fn get_text(&self, path: &str) -> String {
        self.http
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub async fn get_usage(&self, authorization: Option<&str>) -> reqwest::Response {
        let mut req = self.http.get(self.url("/api/usage"));
        if let Some(a) = authorization {
            req = req.header("Authorization", a);
        }
        req.send().await.unwrap()
    }

    /// One JSON-RPC request to `/mcp`; returns the parsed JSON-RPC answer.
    pub async fn mcp(
        &self,
        body: Value,
        authorization: Option<&str>,
        version: &str,
    ) -> (reqwest::StatusCode, Value) {
        let mut req = self
            .http
            .post(self.url("/mcp"))
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", version)
            .json(&body);
        if let Some(a) = authorization {
            req = req.header("Authorization", a);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(json!({ "raw": text })),
        )
    }
}

impl TestAppBuilder {
    pub fn runtime(mut self, f: impl FnOnce(&mut RuntimeSettings)) -> Self {
        f(&mut self.runtime);
        self
    }

    pub fn stores(mut self, stores: Stores) -> Self {
        self.stores = Some(stores);
        self
    }

    pub fn environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// Lets the reader fetch `name` (on `addr`'s port only), as the sandbox does for its demo site.
    pub fn sandbox_host(mut self, name: &str, addr: SocketAddr) -> Self {
        self.world.sandbox_hosts.insert(name.to_owned(), addr);
        self
    }

    /// Pins `name` to `addr` as the operator does with `SVC_PINNED_HOSTS` (for maps' sites).
    pub fn pinned_host(mut self, name: &str, addr: SocketAddr) -> Self {
        self.world.pinned_hosts.insert(name.to_owned(), addr);
        self
    }

    /// Starts the sandbox's action sites (shop, booking, flaky) and publishes their maps.
    pub async fn action_sites(mut self) -> Self {
        let sites = startup::ActionSites::start().await;
        for site in &sites.sites {
            self.world
                .sandbox_hosts
                .insert(site.host.to_owned(), site.address());
        }
        self.sites = Some(Arc::new(sites));
        self
    }

    /// Starts the sandbox's authorization server, the `booking-sandbox` connection provider.
    pub async fn auth_server(mut self) -> Self {
        let server = startup::SandboxAuthServer::start().await;
        self.world = std::mem::take(&mut self.world).with_auth_server(&server);
        self.auth = Some(Arc::new(server));
        self
    }

    /// Starts the readiness-scan sites (`ready.sandbox.test`, `lacks-*.sandbox.test`).
    pub async fn readiness_sites(mut self) -> Self {
        let sites = startup::ReadinessSites::start().await;
        self.world = std::mem::take(&mut self.world).with_readiness_sites(&sites);
        self.readiness = Some(Arc::new(sites));
        self
    }

    /// Names the service `svc.sandbox.test` on a port chosen now, so that it can scan (read)
    /// itself through the guarded client, as in the sandbox. Returns the builder and its origin.
    pub fn named_in_sandbox(mut self) -> (Self, String) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let origin = format!("http://svc.sandbox.test:{port}");
        self.runtime.base_url = Some(origin.clone());
        self.bind = format!("127.0.0.1:{port}");
        (self, origin)
    }

    /// Seals connection credentials and webhook secrets with this key (kept across restarts).
    pub fn sealing(mut self, sealing: startup::Sealing) -> Self {
        self.world.sealing = sealing;
        self
    }

    /// Pins the service's clock.
    pub fn clock(mut self, clock: Arc<TestClock>) -> Self {
        self.world.clock = Some(clock);
        self
    }

    /// The sandbox's payment provider, its webhooks delivered to this app.
    pub async fn payments(mut self) -> Self {
        let provider = Arc::new(startup::SandboxPaymentProvider::start().await);
        self.payments = Some(provider.clone());
        self.world.payments = startup::Payments::Sandbox(provider);
        self
    }

    /// A payment provider over HTTP at `base_url` (a test's own wiremock server).
    pub fn payments_at(mut self, base_url: &str) -> Self {
        self.world.payments = startup::Payments::Http {
            base_url: base_url.to_owned(),
            api_key: "sk_test_provider_key".into(),
            webhook_secrets: vec!["whsec_dGVzdC1wcm92aWRlci13ZWJob29rLXNlY3JldC0zMmI=".into()],
        };
        self
    }

    /// Keeps mail in the sandbox outbox (readable at `/sandbox/outbox`).
    pub fn outbox(mut self) -> Self {
        self.world.mail = svc::startup::Mail::SandboxOutbox;
        self
    }

    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.world.fetch_timeout = Some(timeout);
        self
    }

    pub async fn spawn(mut self) -> TestApp {
        self.world.billing = self.runtime.billing_config().unwrap();
        let stores = self.stores.unwrap_or_else(Stores::memory);
        let app = Application::build(
            &self.runtime,
            &self.bind,
            stores,
            self.environment,
            self.world,
        )
        .await
        .unwrap();
        let base_url = format!("http://{}", app.local_addr());
        let metrics_url = app.metrics_addr().map(|a| format!("http://{a}"));
        let services = app.context().services.clone();
        let api_key = match self.environment {
            Environment::Test => startup::seed_sandbox(&services)
                .await
                .unwrap()
                .secret
                .expose()
                .to_owned(),
            Environment::Live => String::new(),
        };
        if let Some(sites) = &self.sites {
            startup::publish_sandbox_maps(&services, sites)
                .await
                .unwrap();
        }
        tokio::spawn(app.run_until_stopped());
        TestApp {
            auth: self.auth,
            _readiness: self.readiness,
            _sites: self.sites,
            payments: self.payments,
            base_url,
            metrics_url,
            api_key,
            services,
            http: reqwest::Client::new(),
        }
    }
}

pub fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

pub async fn problem(resp: reqwest::Response, status: u16, failure_class: &str) -> Value {
    assert_eq!(resp.status().as_u16(), status);
    assert_eq!(resp.headers()["content-type"], "application/problem+json");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert_eq!(body["failure_class"], failure_class, "{body}");
    assert_eq!(body["type"], format!("/problems/{failure_class}"));
    for field in ["title", "detail", "hint"] {
        assert!(
            body[field].as_str().is_some_and(|s| !s.is_empty()),
            "{field} missing in {body}"
        );
    }
    assert!(body["retryable"].is_boolean());
    body
}

/// A browser without JavaScript: a cookie jar, redirects followed by hand.
pub struct Browser {
    pub http: reqwest::Client,
    pub base: String,
}

pub fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .expect("page has a CSRF field")
        + 19;
    html[at..at + 64].to_owned()
}

pub fn attr(html: &str, name: &str) -> String {
    let needle = format!("name=\"{name}\" value=\"");
    let at = html
        .find(&needle)
        .unwrap_or_else(|| panic!("no {name} in page"))
        + needle.len();
    html[at..].split('"').next().unwrap().to_owned()
}

impl Browser {
    pub fn new(app: &TestApp) -> Self {
        Self {
            http: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(Policy::none())
                .build()
                .unwrap(),
            base: app.base_url.clone(),
        }
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }

    /// GET a page and read its text.
    pub async fn page(&self, path: &str) -> String {
        self.get(path).await.text().await.unwrap()
    }

    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .header("Origin", &self.base)
            .form(form)
            .send()
            .await
            .unwrap()
    }

    /// Follows one redirect chain and returns the last page's text.
    pub async fn follow(&self, mut resp: reqwest::Response) -> (StatusCode, String) {
        while resp.status() == StatusCode::SEE_OTHER {
            let to = resp.headers()["location"].to_str().unwrap().to_owned();
            resp = self.get(&to).await;
        }
        (resp.status(), resp.text().await.unwrap())
    }

    pub async fn sign_in(&self, app: &TestApp, email: &str, next: &str) -> String {
        let page = self
            .get(&format!("/signin?next={}", urlencode(next)))
            .await
            .text()
            .await
            .unwrap();
        let sent = self
            .post(
                "/signin",
                &[("csrf", &csrf_of(&page)), ("email", email), ("next", next)],
            )
            .await;
        let (status, page) = self.follow(sent).await;
        assert_eq!(status, 200, "{page}");
        let challenge = attr(&page, "challenge");
        let code = latest_code(app, email).await;
        let done = self
            .post(
                "/signin/code",
                &[
                    ("csrf", &csrf_of(&page)),
                    ("challenge", &challenge),
                    ("code", &code),
                    ("next", next),
                ],
            )
            .await;
        let (status, page) = self.follow(done).await;
        assert_eq!(status, 200, "{page}");
        page
    }

    pub async fn decide(&self, user_code: &str, decision: &str) -> String {
        let page = self
            .get(&format!("/device?user_code={user_code}"))
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("id=\"approve\""), "{page}");
        let resp = self
            .post(
                "/device",
                &[
                    ("csrf", &csrf_of(&page)),
                    ("user_code", user_code),
                    ("decision", decision),
                ],
            )
            .await;
        let (status, page) = self.follow(resp).await;
        assert_eq!(status, 200, "{page}");
        page
    }
}

pub fn urlencode(s: &str) -> String {
    s.replace('?', "%3F")
        .replace('=', "%3D")
        .replace('&', "%26")
}

pub async fn latest_code(app: &TestApp, email: &str) -> String {
    let outbox = app.get_json(&format!("/sandbox/outbox?to={email}")).await;
    let text = outbox["messages"][0]["text"]
        .as_str()
        .expect("a message")
        .to_owned();
    text.split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() == 6)
        .expect("a 6-digit code")
        .to_owned()
}

static LOG: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

struct LogSink;

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends this test process's logs (JSON, info and up) to a buffer that [`captured_logs`]
/// reads. nextest runs each test in its own process, so one test installs it once.
pub fn capture_logs() {
    let installed = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::INFO)
        .with_writer(|| LogSink)
        .try_init();
    assert!(installed.is_ok(), "another subscriber was installed first");
}

pub fn captured_logs() -> String {
    String::from_utf8(LOG.lock().unwrap().clone()).unwrap()
}

/// Makes fresh stores for each case of a property test.
pub type StoresFactory = Box<dyn Fn() -> futures_util::future::BoxFuture<'static, Stores>>;

pub fn memory_stores() -> StoresFactory {
    Box::new(|| Box::pin(async { Stores::memory() }))
}

/// A new SQLite file in `dir` for each case.
pub fn sqlite_stores(dir: &std::path::Path) -> StoresFactory {
    let dir = dir.to_owned();
    Box::new(move || {
        let url = format!(
            "sqlite://{}",
            dir.join(format!("{}.db", ulid::Ulid::new())).display()
        );
        Box::pin(async move { Stores::open(&url, 8).await.unwrap() })
    })
}

/// A fresh database on the test Postgres server for each case.
pub fn postgres_stores() -> StoresFactory {
    Box::new(|| {
        Box::pin(async {
            let url = svc_contract_tests::postgres_database().await;
            Stores::open(&url, 16).await.unwrap()
        })
    })
}

/// Checks an artifact with only the served JWKS, a generic Ed25519 implementation (ring) and
/// RFC 8785 canonical JSON of the artifact without its signature.
pub async fn verify_with_jwks(app: &TestApp, artifact: &Value) {
    use base64::Engine;
    let jwks = app.get_json("/.well-known/jwks.json").await;
    let kid = artifact["signature"]["kid"].as_str().unwrap();
    let jwk = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid)
        .expect("the artifact's kid is in the JWKS");
    assert_eq!(
        (jwk["kty"].as_str(), jwk["crv"].as_str()),
        (Some("OKP"), Some("Ed25519"))
    );
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let x = b64.decode(jwk["x"].as_str().unwrap()).unwrap();
    let sig = b64
        .decode(artifact["signature"]["value"].as_str().unwrap())
        .unwrap();
    let mut unsigned = artifact.clone();
    unsigned.as_object_mut().unwrap().remove("signature");
    let message = serde_jcs::to_vec(&unsigned).unwrap();
    ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &x)
        .verify(&message, &sig)
        .expect("the artifact verifies against the JWKS");
    let mut tampered = unsigned.clone();
    let other = if tampered["status"] == "verified" {
        "failed"
    } else {
        "verified"
    };
    tampered["status"] = json!(other);
    assert!(
        ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &x)
            .verify(&serde_jcs::to_vec(&tampered).unwrap(), &sig)
            .is_err()
    );
}
