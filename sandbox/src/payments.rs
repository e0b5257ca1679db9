//! The sandbox's payment provider: a wiremock server that speaks the hosted-checkout API the
//! service's HTTP adapter uses, serves a hosted checkout page whose buttons ("pay", "fail",
//! "refund", "dispute", and closing a dispute) send Standard-Webhooks-signed events back to the
//! service, and offers QA endpoints that send any event, well signed or deliberately not
//! (tampered, stale, future-dated, wrong secret, unsigned), and report what the service
//! answered.
//!
//! Deliveries are made synchronously from the responder (wiremock runs each server on its own
//! thread) over a plain HTTP/1.1 connection to the service's loopback address, so a button
//! press returns only once the service has answered the webhook.

use std::{
    collections::HashMap,
    io::{Read, Write},
    net::TcpStream,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use chrono::Utc;
use serde_json::{Value, json};
use svc_ports::webhooks::WebhookSecret;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

/// The API key the sandbox's provider expects (a sandbox value, not a secret of anyone's).
pub const SANDBOX_PROVIDER_KEY: &str = "sk_sandbox_payments";

#[derive(Debug, Clone)]
struct Session {
    id: String,
    client_reference_id: String,
    description: String,
    amount: i64,
    currency: String,
    success_url: String,
    cancel_url: String,
    payment_id: String,
    status: &'static str,
    disputes: Vec<(String, Option<bool>)>,
    refunds: u32,
}

/// One delivery as it was sent and answered.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub webhook_id: String,
    pub timestamp: i64,
    pub body: String,
    pub signature: Option<String>,
    /// The service's HTTP status (0 when it could not be reached).
    pub status: u16,
    pub answer: String,
}

struct State {
    uri: String,
    secret: WebhookSecret,
    webhook_url: Mutex<Option<String>>,
    sessions: Mutex<HashMap<String, Session>>,
    by_idempotency_key: Mutex<HashMap<String, String>>,
    deliveries: Mutex<Vec<Delivery>>,
    meter_events: Mutex<Vec<Value>>,
    hold: AtomicBool,
    held: Mutex<Vec<(String, String)>>,
}

pub struct SandboxPaymentProvider {
    _server: MockServer,
    state: Arc<State>,
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new().to_string().to_lowercase())
}

impl SandboxPaymentProvider {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let mut key = [0u8; 32];
        key.copy_from_slice(&ulid_bytes());
        let state = Arc::new(State {
            uri: server.uri(),
            secret: WebhookSecret::from_key(&key).expect("32 bytes make a secret"),
            webhook_url: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            by_idempotency_key: Mutex::new(HashMap::new()),
            deliveries: Mutex::new(Vec::new()),
            meter_events: Mutex::new(Vec::new()),
            hold: AtomicBool::new(false),
            held: Mutex::new(Vec::new()),
        });
        Mock::given(any())
            .respond_with(Router(state.clone()))
            .mount(&server)
            .await;
        Self {
            _server: server,
            state,
        }
    }

    /// The provider's origin (API, hosted pages and QA endpoints).
    pub fn uri(&self) -> String {
        self.state.uri.clone()
    }

    /// The secret it signs webhooks with; the service verifies with the same.
    pub fn webhook_secret(&self) -> WebhookSecret {
        self.state.secret.clone()
    }

    /// Where its webhooks go (set once the service is bound).
    pub fn deliver_to(&self, webhook_url: &str) {
        *lock(&self.state.webhook_url) = Some(webhook_url.to_owned());
    }

    /// Every delivery so far, oldest first.
    pub fn deliveries(&self) -> Vec<Delivery> {
        lock(&self.state.deliveries).clone()
    }

    /// Meter events the service forwarded.
    pub fn meter_events(&self) -> Vec<Value> {
        lock(&self.state.meter_events).clone()
    }
}

fn ulid_bytes() -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(&ulid::Ulid::new().to_bytes());
    out[16..].copy_from_slice(&ulid::Ulid::new().to_bytes());
    out
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How a QA delivery is (mis)signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Ok,
    Tampered,
    Stale,
    Future,
    WrongSecret,
    Unsigned,
}

impl Variant {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ok" => Variant::Ok,
            "tampered" => Variant::Tampered,
            "stale" => Variant::Stale,
            "future" => Variant::Future,
            "wrong_secret" => Variant::WrongSecret,
            "unsigned" => Variant::Unsigned,
            _ => return None,
        })
    }
}

impl State {
    fn event_body(&self, event_type: &str, data: Value) -> String {
        json!({
            "type": event_type,
            "timestamp": Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "data": data,
        })
        .to_string()
    }

    /// Signs and sends one event (or holds it, when deliveries are held).
    fn deliver(&self, webhook_id: &str, body: &str, variant: Variant) -> Delivery {
        if variant == Variant::Ok && self.hold.load(Ordering::SeqCst) {
            lock(&self.held).push((webhook_id.to_owned(), body.to_owned()));
            return Delivery {
                webhook_id: webhook_id.to_owned(),
                timestamp: 0,
                body: body.to_owned(),
                signature: None,
                status: 0,
                answer: "held".into(),
            };
        }
        let now = Utc::now().timestamp();
        let timestamp = match variant {
            Variant::Stale => now - 600,
            Variant::Future => now + 600,
            _ => now,
        };
        let signature = match variant {
            Variant::Unsigned => None,
            Variant::WrongSecret => {
                let other = WebhookSecret::from_key(&ulid_bytes()).expect("32 bytes");
                Some(other.sign(webhook_id, timestamp, body.as_bytes()))
            }
            _ => Some(self.secret.sign(webhook_id, timestamp, body.as_bytes())),
        };
        // Tampered: signed as it was, sent changed: the amount when there is one, else a byte
        // of white space (a `dispute.closed` has no amount).
        let sent = if variant == Variant::Tampered && body.contains("\"amount\":") {
            body.replacen("\"amount\":", "\"amount\":1", 1)
        } else if variant == Variant::Tampered {
            body.replacen('{', "{ ", 1)
        } else {
            body.to_owned()
        };
        let target = lock(&self.webhook_url).clone();
        let (status, answer) = match target {
            Some(url) => post(&url, webhook_id, timestamp, signature.as_deref(), &sent),
            None => (0, "no webhook address configured".into()),
        };
        let delivery = Delivery {
            webhook_id: webhook_id.to_owned(),
            timestamp,
            body: sent,
            signature,
            status,
            answer,
        };
        lock(&self.deliveries).push(delivery.clone());
        delivery
    }

    fn release_held(&self) -> Vec<Delivery> {
        self.hold.store(false, Ordering::SeqCst);
        let held = std::mem::take(&mut *lock(&self.held));
        held.iter()
            .map(|(id, body)| self.deliver(id, body, Variant::Ok))
            .collect()
    }

    /// The events an action on a session sends, or why it cannot.
    fn events_for(
        &self,
        session_id: &str,
        action: &str,
        amount: Option<i64>,
        tamper: &PaidTampering,
    ) -> Result<Vec<(String, String)>, String> {
        let mut sessions = lock(&self.sessions);
        let s = sessions
            .get_mut(session_id)
            .ok_or_else(|| format!("no checkout session {session_id}"))?;
        let payment = json!({
            "checkout_id": s.id,
            "client_reference_id": s.client_reference_id,
            "payment_id": s.payment_id,
            "amount": s.amount,
            "currency": s.currency,
        });
        // QA: a payment event that misstates the amount or currency, or names no checkout of
        // the service (signed correctly all the same).
        let mut misstated = payment.clone();
        if let Some(a) = amount {
            misstated["amount"] = json!(a);
        }
        if let Some(c) = &tamper.currency {
            misstated["currency"] = json!(c);
        }
        if tamper.unknown_checkout {
            misstated["client_reference_id"] = json!("chk_01JZZZZZZZZZZZZZZZZZZZZZZZ");
        }
        let amount = amount.unwrap_or(s.amount);
        let events = match action {
            "pay" => {
                s.status = "paid";
                vec![
                    ("checkout.completed", payment.clone()),
                    ("payment.succeeded", payment),
                ]
            }
            "checkout_completed" => vec![("checkout.completed", misstated)],
            "payment_succeeded" => vec![("payment.succeeded", misstated)],
            "fail" => {
                s.status = "failed";
                vec![(
                    "payment.failed",
                    json!({"checkout_id": s.id, "client_reference_id": s.client_reference_id}),
                )]
            }
            "refund" => {
                s.refunds += 1;
                vec![(
                    "payment.refunded",
                    json!({"payment_id": s.payment_id, "refund_id": format!("re_{}_{}", s.payment_id, s.refunds), "amount": amount}),
                )]
            }
            "dispute" => {
                let id = format!("dp_{}_{}", s.payment_id, s.disputes.len() + 1);
                s.disputes.push((id.clone(), None));
                vec![(
                    "dispute.created",
                    json!({"payment_id": s.payment_id, "dispute_id": id, "amount": amount}),
                )]
            }
            "dispute_won" | "dispute_lost" => {
                let won = action == "dispute_won";
                let open = s
                    .disputes
                    .iter_mut()
                    .rev()
                    .find(|(_, closed)| closed.is_none())
                    .ok_or("no open dispute on this payment")?;
                open.1 = Some(won);
                vec![(
                    "dispute.closed",
                    json!({"payment_id": s.payment_id, "dispute_id": open.0, "status": if won { "won" } else { "lost" }}),
                )]
            }
            // QA: a signed body holding raw NUL bytes (so not JSON), and one whose type holds an
            // escaped NUL: each is stored and answered, never retried forever.
            "nul_body" | "nul_type" => vec![("payment.succeeded\u{0}", payment)],
            other => return Err(format!("unknown action `{other}`")),
        };
        Ok(events
            .into_iter()
            .map(|(t, data)| {
                let body = self.event_body(t, data);
                let body = if action == "nul_body" {
                    body.replace("\\u0000", "\0")
                } else {
                    body
                };
                (new_id("msg"), body)
            })
            .collect())
    }
}

/// How a QA payment event misstates the payment.
#[derive(Debug, Default)]
struct PaidTampering {
    currency: Option<String>,
    unknown_checkout: bool,
}

/// A plain HTTP/1.1 POST to the service on loopback; returns (status, body).
fn post(url: &str, id: &str, timestamp: i64, signature: Option<&str>, body: &str) -> (u16, String) {
    let Some(rest) = url.strip_prefix("http://") else {
        return (0, "the sandbox delivers over http only".into());
    };
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let Ok(mut stream) = TcpStream::connect(host) else {
        return (0, format!("could not connect to {host}"));
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         webhook-id: {id}\r\nwebhook-timestamp: {timestamp}\r\nUser-Agent: svc-sandbox-payments\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(sig) = signature {
        request.push_str(&format!("webhook-signature: {sig}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, "the connection broke".into());
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

struct Router(Arc<State>);

fn json_response(status: u16, body: Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(body)
}

fn see_other(to: &str) -> ResponseTemplate {
    ResponseTemplate::new(303).insert_header("location", to)
}

impl Respond for Router {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let state = &self.0;
        let path = request.url.path().to_owned();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let post = request.method.as_str() == "POST";
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        match (post, segments.as_slice()) {
            (true, ["v1", "checkout", "sessions"]) => self.create_session(request, &body),
            (true, ["v1", "meter_events"]) => {
                if !authorised(request) {
                    return json_response(401, json!({"error": "invalid API key"}));
                }
                lock(&state.meter_events).push(body);
                json_response(200, json!({"received": true}))
            }
            (false, ["checkout", id]) => self.page(id),
            (true, ["checkout", id, action]) => {
                let action = action.replace('-', "_");
                match state.events_for(id, &action, None, &PaidTampering::default()) {
                    Ok(events) => {
                        for (webhook_id, body) in &events {
                            state.deliver(webhook_id, body, Variant::Ok);
                        }
                        let session = lock(&state.sessions).get(*id).cloned();
                        match (action.as_str(), session) {
                            ("pay", Some(s)) => see_other(&s.success_url),
                            ("fail", Some(s)) => see_other(&s.cancel_url),
                            _ => see_other(&format!("/checkout/{id}")),
                        }
                    }
                    Err(e) => ResponseTemplate::new(409).set_body_string(e),
                }
            }
            (false, ["qa", "sessions"]) => {
                let sessions: Vec<Value> = lock(&state.sessions)
                    .values()
                    .map(|s| json!({"id": s.id, "client_reference_id": s.client_reference_id,
                        "payment_id": s.payment_id, "amount": s.amount, "currency": s.currency, "status": s.status}))
                    .collect();
                json_response(200, json!({"sessions": sessions}))
            }
            (true, ["qa", "send"]) => self.qa_send(&body),
            // What was sent, with the secret it was signed with: for checking the signatures
            // with another implementation (the sandbox's own secret, on loopback).
            (false, ["qa", "deliveries"]) => {
                let sent: Vec<Value> = lock(&state.deliveries)
                    .iter()
                    .map(|d| {
                        json!({"webhook_id": d.webhook_id, "timestamp": d.timestamp,
                        "signature": d.signature, "body": d.body, "status": d.status})
                    })
                    .collect();
                json_response(
                    200,
                    json!({"secret": state.secret.expose(), "deliveries": sent}),
                )
            }
            (true, ["qa", "hold"]) => {
                state.hold.store(true, Ordering::SeqCst);
                json_response(200, json!({"holding": true}))
            }
            (true, ["qa", "release"]) => {
                let sent: Vec<Value> = state
                    .release_held()
                    .iter()
                    .map(|d| json!({"webhook_id": d.webhook_id, "status": d.status}))
                    .collect();
                json_response(200, json!({"delivered": sent}))
            }
            _ => json_response(404, json!({"error": "not found"})),
        }
    }
}

fn authorised(request: &Request) -> bool {
    request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {SANDBOX_PROVIDER_KEY}"))
}

impl Router {
    fn create_session(&self, request: &Request, body: &Value) -> ResponseTemplate {
        if !authorised(request) {
            return json_response(401, json!({"error": "invalid API key"}));
        }
        let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(reference), Some(currency), Some(success_url), Some(cancel_url), Some(amount)) = (
            text("client_reference_id"),
            text("currency"),
            text("success_url"),
            text("cancel_url"),
            body.get("amount").and_then(Value::as_i64),
        ) else {
            return json_response(
                400,
                json!({"error": "client_reference_id, amount, currency, success_url and cancel_url are required"}),
            );
        };
        let idempotency = request
            .headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let state = &self.0;
        let existing = idempotency
            .as_ref()
            .and_then(|k| lock(&state.by_idempotency_key).get(k).cloned());
        let id = match existing {
            Some(id) => id,
            None => {
                let session = Session {
                    id: new_id("cs"),
                    client_reference_id: reference,
                    description: text("description").unwrap_or_else(|| "Credits".into()),
                    amount,
                    currency,
                    success_url,
                    cancel_url,
                    payment_id: new_id("pay"),
                    status: "open",
                    disputes: Vec::new(),
                    refunds: 0,
                };
                let id = session.id.clone();
                lock(&state.sessions).insert(id.clone(), session);
                if let Some(k) = idempotency {
                    lock(&state.by_idempotency_key).insert(k, id.clone());
                }
                id
            }
        };
        json_response(
            200,
            json!({
                "id": id,
                "url": format!("{}/checkout/{id}", state.uri),
                "expires_at": Utc::now().timestamp() + 3600,
            }),
        )
    }

    fn page(&self, id: &str) -> ResponseTemplate {
        let Some(s) = lock(&self.0.sessions).get(id).cloned() else {
            return ResponseTemplate::new(404).set_body_string("No such checkout.");
        };
        let button = |action: &str, label: &str| {
            format!(
                "<form method=\"post\" action=\"/checkout/{}/{action}\"><button type=\"submit\" id=\"{action}\">{label}</button></form>",
                escape(&s.id)
            )
        };
        let mut actions = String::new();
        if s.status == "open" {
            actions.push_str(&button("pay", "Pay"));
            actions.push_str(&button("fail", "Fail the payment"));
        }
        if s.status == "paid" {
            actions.push_str(&button("refund", "Refund"));
            actions.push_str(&button("dispute", "Open a dispute"));
            if s.disputes.iter().any(|(_, c)| c.is_none()) {
                actions.push_str(&button("dispute-won", "Close dispute: won"));
                actions.push_str(&button("dispute-lost", "Close dispute: lost"));
            }
        }
        let html = format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sandbox checkout</title></head><body>\
             <h1>Sandbox checkout</h1><p>{}</p><p id=\"price\">{} {} (minor units)</p><p id=\"status\">Status: {}</p>{actions}\
             <p>This is the sandbox's payment provider: no money moves. Each button sends a signed webhook to the service.</p>\
             </body></html>",
            escape(&s.description),
            s.amount,
            escape(&s.currency.to_uppercase()),
            s.status,
        );
        ResponseTemplate::new(200).set_body_raw(html, "text/html; charset=utf-8")
    }

    /// `{"session_id", "event", "variant"?, "amount"?, "currency"?, "unknown_checkout"?}`: sends
    /// the event and answers with what the service said. `event: "replay"` resends the last
    /// delivery under its webhook-id. For `checkout_completed` and `payment_succeeded`,
    /// `amount`, `currency` and `unknown_checkout` misstate the payment (correctly signed).
    fn qa_send(&self, body: &Value) -> ResponseTemplate {
        let state = &self.0;
        let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
        let Some(variant) = Variant::parse(if text("variant").is_empty() {
            "ok"
        } else {
            text("variant")
        }) else {
            return json_response(
                400,
                json!({"error": "variant must be ok, tampered, stale, future, wrong_secret or unsigned"}),
            );
        };
        let events = if text("event") == "replay" {
            match lock(&state.deliveries)
                .iter()
                .rev()
                .find(|d| (200..300).contains(&d.status))
            {
                Some(d) => vec![(d.webhook_id.clone(), d.body.clone())],
                None => return json_response(409, json!({"error": "nothing was delivered yet"})),
            }
        } else {
            let tamper = PaidTampering {
                currency: body
                    .get("currency")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                unknown_checkout: body
                    .get("unknown_checkout")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            };
            match state.events_for(
                text("session_id"),
                text("event"),
                body.get("amount").and_then(Value::as_i64),
                &tamper,
            ) {
                Ok(events) => events,
                Err(e) => return json_response(409, json!({"error": e})),
            }
        };
        let sent: Vec<Value> = events
            .iter()
            .map(|(id, body)| {
                let d = state.deliver(id, body, variant);
                json!({"webhook_id": d.webhook_id, "status": d.status, "answer": d.answer})
            })
            .collect();
        json_response(200, json!({"deliveries": sent}))
    }
}
