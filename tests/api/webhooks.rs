//! Webhooks to the customer's systems (issue 20): a settled task reaches a receiver signed per
//! Standard Webhooks (checked with an independent HMAC and the reference Python library),
//! failures are retried with backoff on the Clock port and given up after 72 hours, a restart
//! during retries loses and duplicates nothing beyond at-least-once, other accounts see
//! nothing, and private addresses are refused at registration and at delivery.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use base64::Engine;
use serde_json::{Value, json};
use svc::{
    config::RuntimeSettings,
    startup::{self, Application, Mail, Sealing, Stores, World},
};
use svc_ports::{Clock, Environment};
use tokio::sync::{mpsc, oneshot};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

use crate::helpers::{TestApp, TestClock, bearer, capture_logs, captured_logs, problem};

const HOOK_HOST: &str = "hooks.sandbox.test";
pub(crate) const SHOP: &str = "shop.sandbox.test";

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
}

/// Answers each request with the next status of its script (then the last one), and reports
/// every request on a channel the test awaits (no sleeps).
struct Recorder {
    statuses: Mutex<VecDeque<u16>>,
    last: Arc<Mutex<u16>>,
    seen: mpsc::UnboundedSender<Received>,
}

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let headers = request
            .headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let _ = self.seen.send(Received {
            headers,
            body: String::from_utf8_lossy(&request.body).into_owned(),
        });
        let mut last = self.last.lock().unwrap();
        if let Some(s) = self.statuses.lock().unwrap().pop_front() {
            *last = s;
        }
        ResponseTemplate::new(*last)
    }
}

pub(crate) struct Receiver {
    pub(crate) server: MockServer,
    seen: mpsc::UnboundedReceiver<Received>,
    /// What it answers once its script is used up.
    last: Arc<Mutex<u16>>,
}

impl Receiver {
    pub(crate) async fn start(script: &[u16]) -> Self {
        let (tx, seen) = mpsc::unbounded_channel();
        let server = MockServer::start().await;
        let last = Arc::new(Mutex::new(200));
        Mock::given(any())
            .respond_with(Recorder {
                statuses: Mutex::new(script.iter().copied().collect()),
                last: last.clone(),
                seen: tx,
            })
            .mount(&server)
            .await;
        Self { server, seen, last }
    }

    /// Answers `status` from now on.
    fn answer(&self, status: u16) {
        *self.last.lock().unwrap() = status;
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{HOOK_HOST}:{}/hooks", self.server.address().port())
    }

    /// The next request, waited for (bounded, so a missing delivery fails instead of hanging).
    pub(crate) async fn next(&mut self) -> Received {
        tokio::time::timeout(Duration::from_secs(20), self.seen.recv())
            .await
            .expect("a delivery arrives")
            .expect("the receiver is running")
    }

    /// Requests already received, without waiting.
    fn drain(&mut self) -> Vec<Received> {
        std::iter::from_fn(|| self.seen.try_recv().ok()).collect()
    }
}

/// Checks a delivery's signature with `ring`'s HMAC (not the service's code); answers the
/// parsed body.
pub(crate) fn verify_independently(secret: &str, got: &Received) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let id = &got.headers["webhook-id"];
    let ts = &got.headers["webhook-timestamp"];
    let signed = format!("{id}.{ts}.{}", got.body);
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key),
        signed.as_bytes(),
    );
    let expected = format!("v1,{}", b64.encode(mac.as_ref()));
    assert!(
        got.headers["webhook-signature"]
            .split(' ')
            .any(|s| s == expected),
        "signature {} is not {expected}",
        got.headers["webhook-signature"]
    );
    assert_eq!(got.headers["content-type"], "application/json");
    let body: Value = serde_json::from_str(&got.body).unwrap();
    assert_eq!(
        body["id"].as_str(),
        Some(id.as_str()),
        "webhook-id is the event id"
    );
    body
}

/// The reference library (Python `standardwebhooks`) verifies the delivery.
fn verify_with_reference_library(secret: &str, got: &Received) {
    let python = std::env::var("SVC_TEST_PYTHON")
        .expect("SVC_TEST_PYTHON names a Python with standardwebhooks (source /tmp/env.sh)");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/clients/verify_outbound_webhook.py"
    );
    let mut child = std::process::Command::new(python)
        .arg(script)
        .arg(secret)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = json!({"headers": got.headers, "body": got.body}).to_string();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "standardwebhooks refused it: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("task.completed evt_"), "{stdout}");
}

pub(crate) async fn register(app: &TestApp, key: &str, body: Value) -> reqwest::Response {
    app.http
        .post(app.url("/api/webhook-endpoints"))
        .header("Authorization", bearer(key))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Registers `url` for the task events; answers the endpoint id and its secret.
pub(crate) async fn register_ok(app: &TestApp, url: &str) -> (String, String) {
    let resp = register(
        app,
        &app.api_key,
        json!({"url": url, "events": ["task.completed", "task.failed"], "description": "CI"}),
    )
    .await;
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["cache-control"], "no-store", "the secret");
    let created: Value = resp.json().await.unwrap();
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{created}");
    (
        created["endpoint"]["id"].as_str().unwrap().to_owned(),
        secret,
    )
}

pub(crate) async fn search(app: &TestApp, query: &str) -> Value {
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"domain": SHOP, "action": "search_products", "params": {"query": query}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

pub(crate) async fn deliveries(app: &TestApp, key: &str) -> Vec<Value> {
    let log = app.get_json_with_key("/api/webhook-deliveries", key).await;
    log["deliveries"].as_array().unwrap().clone()
}

pub(crate) fn sealing() -> Sealing {
    Sealing::Key {
        active: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 32]),
        retired: Vec::new(),
    }
}

pub(crate) async fn app_with(
    receiver: &Receiver,
    clock: Option<Arc<TestClock>>,
    worker: bool,
    stores: Option<Stores>,
) -> TestApp {
    let mut builder = TestApp::builder()
        .sandbox_host(HOOK_HOST, *receiver.server.address())
        .runtime(|r| r.webhook_poll_millis = if worker { 1000 } else { 0 })
        .sealing(sealing())
        .action_sites()
        .await;
    if let Some(c) = clock {
        builder = builder.clock(c);
    }
    if let Some(s) = stores {
        builder = builder.stores(s);
    }
    builder.spawn().await
}

#[tokio::test]
async fn a_completed_task_reaches_the_receiver_signed_per_standard_webhooks() {
    let mut receiver = Receiver::start(&[]).await;
    // The worker the composition root starts sends it: nothing here drives it.
    let app = app_with(&receiver, None, true, None).await;
    let (_, secret) = register_ok(&app, &receiver.url()).await;
    let done = search(&app, "tea").await;

    let got = receiver.next().await;
    let body = verify_independently(&secret, &got);
    verify_with_reference_library(&secret, &got);
    assert_eq!(body["type"], "task.completed");
    assert_eq!(body["data"]["task_id"], done["task_id"]);
    assert_eq!(body["data"]["domain"], SHOP);
    assert_eq!(body["data"]["credits_charged"], done["credits_charged"]);
    assert_eq!(body["data"]["artifact_id"], done["artifact"]["artifact_id"]);
    let ts: i64 = got.headers["webhook-timestamp"].parse().unwrap();
    assert!((chrono::Utc::now().timestamp() - ts).abs() < 300);

    // The feed `svc listen` polls carries the same event, its body byte for byte.
    let feed = app.get_json_as_owner("/api/webhook-events").await;
    let events = feed["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{feed}");
    assert_eq!(
        events[0]["id"].as_str(),
        Some(got.headers["webhook-id"].as_str())
    );
    assert_eq!(events[0]["body"].as_str(), Some(got.body.as_str()));
    assert_eq!(feed["next_after"], events[0]["id"]);
    let after = app
        .get_json_as_owner(&format!(
            "/api/webhook-events?after={}",
            events[0]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(after["events"], json!([]));
}

/// Asks for a delivery to be sent again, with the app's key.
pub(crate) async fn replay_delivery(app: &TestApp, id: &str) -> reqwest::Response {
    app.http
        .post(app.url(&format!("/api/webhook-deliveries/{id}/replay")))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn failures_are_retried_with_backoff_and_given_up_after_72_hours() {
    capture_logs();
    let clock = TestClock::new();
    let mut receiver = Receiver::start(&[]).await;
    receiver.answer(500);
    let app = app_with(&receiver, Some(clock.clone()), false, None).await;
    let (_, secret) = register_ok(&app, &receiver.url()).await;
    let started = clock.now();
    search(&app, "tea").await;
    let hooks = &app.services.hooks;

    assert_eq!(hooks.deliver_due().await.unwrap(), 1);
    let first = receiver.next().await;
    verify_independently(&secret, &first);
    let log = deliveries(&app, &app.api_key).await;
    assert_eq!(log.len(), 1);
    assert_eq!(
        (
            &log[0]["status"],
            &log[0]["attempts"],
            &log[0]["last_status_code"]
        ),
        (&json!("pending"), &json!(1), &json!(500))
    );
    let next: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(log[0]["next_attempt_at"].clone()).unwrap();
    assert_eq!(
        next - started,
        chrono::Duration::seconds(5),
        "first retry after 5 s"
    );
    // Not due yet: nothing is sent, however often the worker looks.
    assert_eq!(hooks.deliver_due().await.unwrap(), 0);
    clock.advance(Duration::from_secs(4));
    assert_eq!(hooks.deliver_due().await.unwrap(), 0);

    // Each retry when it falls due, on the schedule; the same webhook-id every time.
    let mut gaps = Vec::new();
    let mut at = next;
    loop {
        clock.advance((at - clock.now()).to_std().unwrap());
        assert_eq!(hooks.deliver_due().await.unwrap(), 1);
        let got = receiver.next().await;
        verify_independently(&secret, &got);
        assert_eq!(got.headers["webhook-id"], first.headers["webhook-id"]);
        assert_eq!(got.headers["webhook-timestamp"], at.timestamp().to_string());
        let d = &deliveries(&app, &app.api_key).await[0];
        if d["status"] != "pending" {
            assert_eq!(d["status"], "failed", "{d}");
            break;
        }
        let next: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(d["next_attempt_at"].clone()).unwrap();
        gaps.push((next - at).num_seconds());
        at = next;
    }
    assert_eq!(&gaps[..5], &[300, 1800, 7200, 18000, 36000], "{gaps:?}");
    assert_eq!(
        at - started,
        chrono::Duration::hours(72),
        "the last try ends the window"
    );
    let d = deliveries(&app, &app.api_key).await[0].clone();
    assert_eq!(d["attempts"], json!(gaps.len() + 2));
    assert_eq!(d["next_attempt_at"], Value::Null);
    assert!(d["last_error"].as_str().unwrap().contains("500"), "{d}");
    clock.advance(Duration::from_secs(86_400));
    assert_eq!(
        hooks.deliver_due().await.unwrap(),
        0,
        "given up: never sent again"
    );
    assert!(receiver.drain().is_empty());
    let logs = captured_logs();
    assert!(logs.contains("webhook delivery given up"), "{logs}");

    // A replay sends the event again, a new delivery with the same webhook-id.
    receiver.answer(200);
    let replay = replay_delivery(&app, d["id"].as_str().unwrap()).await;
    assert_eq!(replay.status(), 202);
    let replay: Value = replay.json().await.unwrap();
    assert_eq!(replay["replay_of"], d["id"]);
    assert_eq!(hooks.deliver_due().await.unwrap(), 1);
    let again = receiver.next().await;
    assert_eq!(again.headers["webhook-id"], first.headers["webhook-id"]);
    let log = deliveries(&app, &app.api_key).await;
    assert_eq!(log[0]["id"], replay["id"]);
    assert_eq!(log[0]["status"], "succeeded");

    // A replay's retries have a window of their own: asked for days after the event, a
    // failing one is tried again (a review saw one given up after its first attempt).
    receiver.answer(500);
    let second: Value = replay_delivery(&app, d["id"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(hooks.deliver_due().await.unwrap(), 1);
    receiver.next().await;
    let log = deliveries(&app, &app.api_key).await;
    assert_eq!(log[0]["id"], second["id"]);
    assert_eq!(log[0]["status"], "pending", "{}", log[0]);
}

/// A stoppable instance of the sandbox on `stores`, its sender off (the test drives it).
async fn instance(
    stores: Stores,
    clock: Arc<TestClock>,
    receiver: &Receiver,
    seed: bool,
) -> (
    TestApp,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let sites = startup::ActionSites::start().await;
    let mut world = World {
        mail: Mail::SandboxOutbox,
        clock: Some(clock),
        sealing: sealing(),
        ..World::default()
    };
    world
        .sandbox_hosts
        .insert(HOOK_HOST.into(), *receiver.server.address());
    for s in &sites.sites {
        world.sandbox_hosts.insert(s.host.to_owned(), s.address());
    }
    let runtime = RuntimeSettings {
        webhook_poll_millis: 0,
        ..RuntimeSettings::default()
    };
    let app = Application::build(&runtime, "127.0.0.1:0", stores, Environment::Test, world)
        .await
        .unwrap();
    let base_url = format!("http://{}", app.local_addr());
    let services = app.context().services.clone();
    let api_key = if seed {
        let key = startup::seed_sandbox(&services).await.unwrap();
        key.secret.expose().to_owned()
    } else {
        String::new()
    };
    // Each instance's sites listen on their own ports: the maps name this instance's.
    startup::publish_sandbox_maps(&services, &sites)
        .await
        .unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    let app = TestApp {
        auth: None,
        _readiness: None,
        _sites: Some(Arc::new(sites)),
        payments: None,
        base_url,
        metrics_url: None,
        api_key,
        services,
        http: reqwest::Client::new(),
    };
    (app, stop, running)
}

type OpenStores = Box<dyn Fn() -> futures_util::future::BoxFuture<'static, Stores>>;

async fn restart_during_retries(open: OpenStores) {
    let clock = TestClock::new();
    // Down for the first two attempts, then up.
    let mut receiver = Receiver::start(&[503, 503, 200]).await;
    let stores = open().await;
    let (one, stop, running) = instance(stores.clone(), clock.clone(), &receiver, true).await;
    let (_, secret) = register_ok(&one, &receiver.url()).await;
    search(&one, "tea").await;
    search(&one, "mugs").await;
    assert_eq!(one.services.hooks.deliver_due().await.unwrap(), 2);
    let failed: Vec<String> = (0..2)
        .map(|_| receiver.seen.try_recv().unwrap().headers["webhook-id"].clone())
        .collect();
    // A third event is claimed by a sender that dies before it records (a crash mid-attempt).
    search(&one, "pots").await;
    let now = clock.now();
    let leased = stores
        .hooks
        .claim_due(
            now,
            "dead-sender",
            now + chrono::Duration::seconds(60),
            16,
            svc_ports::ClaimCaps {
                endpoints: svc_ports::EndpointHealth::Any,
                ..svc_services::hooks::CAPS
            },
        )
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let key = one.api_key.clone();
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    drop(one);

    // A new process on the same store: the two retries come due after 5 s, the leased one
    // when its lease ends; each event arrives once more, none lost. The endpoint failed last,
    // so it has one delivery in flight at most: while the dead sender's lease lasts, none.
    let (two, stop, running) = instance(open().await, clock.clone(), &receiver, false).await;
    clock.advance(Duration::from_secs(5));
    assert_eq!(two.services.hooks.deliver_due().await.unwrap(), 0);
    // The lease ends: one goes alone; delivered, the endpoint answers again and the others
    // follow.
    clock.advance(Duration::from_secs(60));
    assert_eq!(two.services.hooks.deliver_due().await.unwrap(), 1);
    assert_eq!(two.services.hooks.deliver_due().await.unwrap(), 2);
    assert_eq!(two.services.hooks.deliver_due().await.unwrap(), 0);
    let delivered: Vec<Received> = receiver.drain();
    assert_eq!(delivered.len(), 3, "{delivered:?}");
    let mut ids: Vec<String> = delivered
        .iter()
        .map(|d| {
            verify_independently(&secret, d);
            d.headers["webhook-id"].clone()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "one webhook-id per event");
    for id in &failed {
        assert!(ids.contains(id), "the failed ones were retried");
    }
    let log = deliveries(&two, &key).await;
    assert_eq!(log.len(), 3);
    assert!(log.iter().all(|d| d["status"] == "succeeded"), "{log:?}");
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_restart_during_retries_loses_and_duplicates_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("hooks.db").display());
    restart_during_retries(Box::new(move || {
        let url = url.clone();
        Box::pin(async move { Stores::open(&url, 4).await.unwrap() })
    }))
    .await;
}

#[tokio::test]
async fn a_restart_during_retries_loses_and_duplicates_nothing_on_postgres() {
    let url = svc_contract_tests::postgres_database().await;
    restart_during_retries(Box::new(move || {
        let url = url.clone();
        Box::pin(async move { Stores::open(&url, 4).await.unwrap() })
    }))
    .await;
}

#[tokio::test]
async fn other_accounts_see_none_of_it() {
    let mut receiver = Receiver::start(&[]).await;
    let app = app_with(&receiver, None, false, None).await;
    let (endpoint, _) = register_ok(&app, &receiver.url()).await;
    search(&app, "tea").await;
    app.services.hooks.deliver_due().await.unwrap();
    receiver.next().await;
    let delivery = deliveries(&app, &app.api_key).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let stranger = app
        .stranger_key("stranger@example.com", "read discover execute")
        .await;

    let theirs = app
        .get_json_with_key("/api/webhook-endpoints", &stranger)
        .await;
    assert_eq!(theirs["endpoints"], json!([]));
    assert_eq!(theirs["event_types"].as_array().unwrap().len(), 6);
    assert!(deliveries(&app, &stranger).await.is_empty());
    let events = app
        .get_json_with_key("/api/webhook-events", &stranger)
        .await;
    assert_eq!(events["events"], json!([]));
    let delete = app
        .http
        .delete(app.url(&format!("/api/webhook-endpoints/{endpoint}")))
        .header("Authorization", bearer(&stranger))
        .send()
        .await
        .unwrap();
    problem(delete, 404, "not_found").await;
    let replay = app
        .http
        .post(app.url(&format!("/api/webhook-deliveries/{delivery}/replay")))
        .header("Authorization", bearer(&stranger))
        .send()
        .await
        .unwrap();
    problem(replay, 404, "not_found").await;

    // The owner deletes it: gone from the list, and nothing more is sent to it.
    let delete = app
        .http
        .delete(app.url(&format!("/api/webhook-endpoints/{endpoint}")))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 204);
    let mine = app.get_json_as_owner("/api/webhook-endpoints").await;
    assert_eq!(mine["endpoints"], json!([]));
    search(&app, "mugs").await;
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 0);
    assert!(receiver.drain().is_empty());
    let unauthenticated = app
        .http
        .get(app.url("/api/webhook-endpoints"))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
}

/// A review: a name the operator pinned to a private address for a map's site
/// (`SVC_PINNED_HOSTS`) was a webhook URL like any other, so a customer's endpoint reached the
/// operator's internal service, path and query of its choosing. Pins are for maps alone: the
/// name is looked up as any other (here it resolves nowhere) and nothing reaches the address.
#[tokio::test]
async fn names_pinned_for_maps_are_no_webhook_endpoints() {
    let mut receiver = Receiver::start(&[]).await;
    let app = TestApp::builder()
        .pinned_host("crm.partner.example", *receiver.server.address())
        .runtime(|r| r.webhook_poll_millis = 0)
        .sealing(sealing())
        .action_sites()
        .await
        .spawn()
        .await;
    let port = receiver.server.address().port();
    let url = format!("http://crm.partner.example:{port}/internal/admin/reset?all=1");
    let resp = register(&app, &app.api_key, json!({"url": url})).await;
    assert_eq!(
        resp.status(),
        201,
        "an unresolvable name is judged when it is sent to"
    );
    search(&app, "tea").await;
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    assert!(
        receiver.drain().is_empty(),
        "nothing reached the pinned address"
    );
    let d = &deliveries(&app, &app.api_key).await[0];
    assert_eq!(d["last_status_code"], Value::Null, "{d}");
}

#[tokio::test]
async fn private_addresses_are_refused_at_registration_and_at_delivery() {
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let app = app_with(&receiver, None, false, Some(stores.clone())).await;
    let port = receiver.server.address().port();
    for url in [
        format!("http://127.0.0.1:{port}/hooks"),
        "http://10.0.0.7/hooks".into(),
        "http://169.254.169.254/latest/meta-data".into(),
        "http://[::1]/hooks".into(),
        "http://localhost:8080/hooks".into(),
        "http://metadata.google.internal/".into(),
        "ftp://example.com/hooks".into(),
    ] {
        let resp = register(&app, &app.api_key, json!({"url": url})).await;
        let body = problem(resp, 422, "url_refused").await;
        assert!(
            body["detail"].as_str().unwrap().contains("refused"),
            "{url}: {body}"
        );
    }
    for bad in [
        json!({"url": "https://example.com/h", "events": ["task.done"]}),
        json!({"url": "https://example.com/h", "events": ["task.failed", "task.failed"]}),
        json!({"url": " https://example.com/h"}),
        json!({"url": "https://example.com/h", "description": "a\u{7}b"}),
        // A URL parser drops these, so the URL checked was not the one stored (a NUL cannot
        // be stored in Postgres at all: it was a 500 there).
        json!({"url": "https://example.com/h\u{0}"}),
        json!({"url": "https://example.com/h\u{1f}"}),
    ] {
        let resp = register(&app, &app.api_key, bad.clone()).await;
        problem(resp, 422, "invalid_request").await;
    }
    assert_eq!(
        app.get_json_as_owner("/api/webhook-endpoints").await["endpoints"],
        json!([]),
        "nothing stored"
    );

    // An endpoint stored when its address was allowed (here: written to the store directly,
    // sealed with the instance's key) is refused by the guarded client at delivery: nothing
    // reaches the address.
    let account = app
        .services
        .auth
        .authenticate_header(Some(&bearer(&app.api_key)))
        .await
        .unwrap()
        .account
        .id;
    let Sealing::Key { active, .. } = sealing() else {
        unreachable!()
    };
    let sealer = svc_oauth::AesGcmSealer::from_settings(&active, &[]).unwrap();
    let secret = svc_ports::webhooks::WebhookSecret::from_key(&[9u8; 32]).unwrap();
    let id = svc_ports::WebhookEndpointId::from_ulid(ulid::Ulid::new());
    let context = svc_ports::seal_context("webhook_endpoint", id.as_str(), "secret");
    stores
        .hooks
        .insert_endpoint(&svc_ports::WebhookEndpoint {
            id,
            account_id: account,
            url: format!("http://127.0.0.1:{port}/hooks"),
            description: String::new(),
            events: vec![svc_ports::HookEventType::TaskCompleted],
            secret: svc_ports::SecretSealer::seal(&sealer, secret.expose().as_bytes(), &context),
            created_at: chrono::Utc::now(),
        })
        .await
        .unwrap();
    search(&app, "tea").await;
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    assert!(
        receiver.drain().is_empty(),
        "nothing reached the private address"
    );
    let d = &deliveries(&app, &app.api_key).await[0];
    assert_eq!(d["status"], "pending");
    assert_eq!(d["last_status_code"], Value::Null);
    assert!(d["last_error"].as_str().unwrap().contains("refused"), "{d}");
}
