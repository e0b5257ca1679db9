//! Agent traffic events: validated against the published schema, stripped of raw prompts,
//! payment credentials, secrets, email addresses and card-like numbers (each removal named in
//! `privacy_redactions`), then written in batches.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use svc_ports::{AccountId, Clock, Entropy, FunnelCount, StoredEvent, TelemetryStore};
use tokio::sync::mpsc;

/// Events waiting to be written; past this the endpoint answers 503 with `Retry-After`.
const QUEUE: usize = 50_000;
/// At most this many events per write, and at most this long between an event and its write.
const BATCH: usize = 1_000;
const BATCH_WINDOW: Duration = Duration::from_millis(25);
/// Largest event accepted (the body limit applies too).
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

mod redact;
use redact::redact;

/// The agent traffic event schema (draft 2020-12) as the spec lists it; served at
/// `/.well-known/agent-traffic-event.schema.json` and used to validate every event.
pub fn event_schema(site_url: &str) -> Value {
    let string = |d: &str| json!({"type": "string", "description": d});
    let strings = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("{site_url}/.well-known/agent-traffic-event.schema.json"),
        "title": "Agent traffic event",
        "description": "A public agent attribution event, recorded through POST /telemetry/agent-event. Raw prompts, payment credentials and private customer payloads are removed before storage and each removal is named in privacy_redactions.",
        "type": "object",
        "required": ["event_id", "timestamp", "session_id", "agent_protocol", "discovery_surface",
            "task_type", "conversion_state", "privacy_redactions"],
        "properties": {
            "event_id": string("Unique id of the event."),
            "timestamp": {"type": "string", "format": "date-time"},
            "session_id": string("The agent session the event belongs to."),
            "setup_session_id": string("The setup session, when one was created."),
            "agent_id": string("A hash or pseudonymous id; raw identity is not required."),
            "agent_name": string("The agent's name."),
            "agent_provider": string("Who operates the agent."),
            "agent_protocol": {"type": "string", "enum": ["a2a", "mcp", "openapi", "direct_api", "human_web", "unknown"]},
            "client_user_agent": string("The client's User-Agent."),
            "source_ip_region": string("Coarse location only."),
            "referrer": string("Where the agent came from."),
            "host": string("The host that received the agent-facing event."),
            "discovery_surface": {"type": "string", "enum": ["a2a_agent_card", "mcp_registry", "openapi_spec", "llms_txt",
                "agents_json", "web_search", "direct_api", "human_web", "partner_referral", "unknown"]},
            "entry_url": string("The first URL the agent used."),
            "landing_capability": string("The capability the agent first used."),
            "task_type": string("What the agent was doing."),
            "business_domain": string("The business domain concerned."),
            "package_quoted": string("The package or plan quoted."),
            "scope_requested": strings("Scopes the agent asked for."),
            "scope_approved": strings("Scopes the human approved."),
            "payment_state": string("Free text."),
            "payment_provider": string("The payment provider involved."),
            "conversion_state": {"type": "string", "enum": ["discovered", "capability_read", "scan_requested", "scan_completed",
                "quote_requested", "quote_returned", "payment_started", "payment_completed", "setup_session_created",
                "scope_approved", "install_started", "install_completed", "verification_completed", "map_published",
                "retained_or_returned", "failed"]},
            "artifact_ids": strings("Verification artifacts involved."),
            "failure_class": string("One value of the failure catalog, when it failed."),
            "privacy_redactions": strings("Each removal made before storage (kind:JSON pointer).")
        }
    })
}

/// The JSON pointer of the first string or key that holds a NUL, if any.
fn nul_in(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(s) => s.contains('\0').then(|| path.to_owned()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_in(v, &format!("{path}/{i}"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
            if k.contains('\0') {
                Some(here.replace('\0', "\\u0000"))
            } else {
                nul_in(v, &here)
            }
        }),
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryRefusal {
    /// The event breaks the schema; `field` is a JSON pointer.
    #[error("`{field}`: {detail}")]
    Invalid { field: String, detail: String },
    /// The write queue is full.
    #[error("too many events are waiting to be written; retry shortly")]
    Busy,
}

/// What the caller gets back.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub event_id: String,
    pub record_id: String,
    pub privacy_redactions: Vec<String>,
}

/// The face a funnel step came through, which fixes its protocol and discovery surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// The REST API.
    Rest,
    Mcp,
    A2a,
    /// The site's pages, for people.
    Web,
    /// The payment provider's webhook (the agent is not there; the account is).
    Provider,
    /// A discovery file, with the surface it stands for (`llms_txt`, `openapi_spec`, ...).
    File(&'static str),
}

impl Face {
    /// `(agent_protocol, discovery_surface)`.
    fn attribution(self) -> (&'static str, &'static str) {
        match self {
            Face::Rest => ("openapi", "direct_api"),
            Face::Mcp => ("mcp", "mcp_registry"),
            Face::A2a => ("a2a", "a2a_agent_card"),
            Face::Web => ("human_web", "human_web"),
            Face::Provider => ("direct_api", "direct_api"),
            Face::File(surface) => ("direct_api", surface),
        }
    }
}

/// One step of an agent through the service, recorded as an agent traffic event.
#[derive(Debug, Clone)]
pub struct FunnelStep<'a> {
    pub face: Face,
    /// A conversion state of the spec (`discovered`, `capability_read`, ...).
    pub state: &'static str,
    pub task_type: &'static str,
    /// The account id, or the client address for anonymous steps: only its salted hash is
    /// stored, as the session id.
    pub who: &'a str,
    /// The account whose step it is, when known: its own funnel counts it.
    pub account: Option<&'a AccountId>,
    pub capability: Option<&'a str>,
    pub failure_class: Option<&'a str>,
    pub artifact_ids: Vec<String>,
}

impl<'a> FunnelStep<'a> {
    pub fn new(face: Face, state: &'static str, task_type: &'static str, who: &'a str) -> Self {
        Self {
            face,
            state,
            task_type,
            who,
            account: None,
            capability: None,
            failure_class: None,
            artifact_ids: Vec::new(),
        }
    }

    /// A step of a known account (its id is also `who`).
    pub fn of_account(
        face: Face,
        state: &'static str,
        task_type: &'static str,
        account: &'a AccountId,
    ) -> Self {
        Self {
            account: Some(account),
            ..Self::new(face, state, task_type, account.as_str())
        }
    }

    pub fn capability(mut self, capability: &'a str) -> Self {
        self.capability = Some(capability);
        self
    }

    pub fn failure(mut self, failure_class: &'a str) -> Self {
        self.failure_class = Some(failure_class);
        self
    }

    pub fn artifact(mut self, artifact_id: Option<&str>) -> Self {
        self.artifact_ids.extend(artifact_id.map(str::to_owned));
        self
    }
}

/// Where a service records the funnel steps it takes (none in unit tests that do not care).
#[derive(Clone, Default)]
pub struct Funnel(Option<Arc<TelemetryService>>);

impl Funnel {
    pub fn new(telemetry: Arc<TelemetryService>) -> Self {
        Self(Some(telemetry))
    }

    pub fn record(&self, step: FunnelStep<'_>) {
        if let Some(t) = &self.0 {
            t.record(step);
        }
    }

    pub fn record_execution(&self, face: Face, account: &AccountId, completed: bool, body: &Value) {
        if let Some(t) = &self.0 {
            t.record_execution(face, account, completed, body);
        }
    }
}

/// What the writer takes from its queue: an event, or a request to write everything before it
/// and say so.
enum Queued {
    Event(Box<StoredEvent>),
    Flush(tokio::sync::oneshot::Sender<()>),
}

pub struct TelemetryService {
    /// Salts session hashes: a client's address or account id is never stored.
    session_salt: String,
    store: Arc<dyn TelemetryStore>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    validator: jsonschema::Validator,
    queue: mpsc::Sender<Queued>,
    pending: Mutex<Option<mpsc::Receiver<Queued>>>,
}

impl TelemetryService {
    pub fn new(
        store: Arc<dyn TelemetryStore>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        site_url: &str,
    ) -> Self {
        let (queue, pending) = mpsc::channel(QUEUE);
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&event_schema(site_url))
            .expect("the event schema compiles");
        Self {
            session_salt: entropy.base62(32),
            store,
            clock,
            entropy,
            validator,
            queue,
            pending: Mutex::new(Some(pending)),
        }
    }

    /// Validates, redacts and queues one event for the batch writer, as `account`'s when the
    /// sender is known.
    pub fn accept(
        &self,
        event: Value,
        account: Option<&AccountId>,
    ) -> Result<Accepted, TelemetryRefusal> {
        if !event.is_object() {
            return Err(TelemetryRefusal::Invalid {
                field: "/".into(),
                detail: "an event is a JSON object".into(),
            });
        }
        if event.to_string().len() > MAX_EVENT_BYTES {
            return Err(TelemetryRefusal::Invalid {
                field: "/".into(),
                detail: format!("an event is at most {MAX_EVENT_BYTES} bytes"),
            });
        }
        // No store keeps a NUL in text (Postgres refuses it): refused here, naming the field,
        // rather than failing the batch it would have been written with.
        if let Some(field) = nul_in(&event, "") {
            return Err(TelemetryRefusal::Invalid {
                field: if field.is_empty() { "/".into() } else { field },
                detail: "text may not hold a NUL character (U+0000)".into(),
            });
        }
        if let Some(e) = self.validator.iter_errors(&event).next() {
            let field = e.instance_path().to_string();
            let field = if field.is_empty() { "/".into() } else { field };
            return Err(TelemetryRefusal::Invalid {
                field,
                detail: e.to_string(),
            });
        }
        let mut event = event;
        let mut found = BTreeSet::new();
        redact(&mut event, "", &mut found);
        let text = |k: &str| event[k].as_str().unwrap_or_default().to_owned();
        let (event_id, session_id, agent_protocol, discovery_surface, conversion_state, task_type) = (
            text("event_id"),
            text("session_id"),
            text("agent_protocol"),
            text("discovery_surface"),
            text("conversion_state"),
            text("task_type"),
        );
        let mut redactions: Vec<String> = event["privacy_redactions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        for f in found {
            if !redactions.contains(&f) {
                redactions.push(f);
            }
        }
        if let Some(map) = event.as_object_mut() {
            map.insert("privacy_redactions".into(), json!(redactions));
        }
        let stored = StoredEvent {
            id: format!("evt_{}", self.entropy.ulid()),
            received_at: self.clock.now(),
            event_id,
            session_id,
            agent_protocol,
            discovery_surface,
            conversion_state,
            task_type,
            account_id: account.cloned(),
            event,
        };
        let accepted = Accepted {
            event_id: stored.event_id.clone(),
            record_id: stored.id.clone(),
            privacy_redactions: redactions,
        };
        self.queue
            .try_send(Queued::Event(Box::new(stored)))
            .map_err(|_| TelemetryRefusal::Busy)?;
        Ok(accepted)
    }

    /// Records the service's own view of an agent's step, as a validated agent traffic event
    /// (so it is counted in the funnel beside the events agents send). Never fails the caller:
    /// a refused or dropped event is only logged.
    pub fn record(&self, step: FunnelStep<'_>) {
        use sha2::Digest;
        let (protocol, surface) = step.face.attribution();
        let digest = sha2::Sha256::digest(format!("{}:{}", self.session_salt, step.who));
        let session: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        let mut event = json!({
            "event_id": format!("svc_{}", self.entropy.ulid()),
            "timestamp": self.clock.now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "session_id": format!("ses_{session}"),
            "agent_protocol": protocol,
            "discovery_surface": surface,
            "task_type": step.task_type,
            "conversion_state": step.state,
            "privacy_redactions": [],
            "source": "service",
        });
        if let Some(c) = step.capability {
            event["landing_capability"] = json!(c);
        }
        if let Some(f) = step.failure_class {
            event["failure_class"] = json!(f);
        }
        if !step.artifact_ids.is_empty() {
            event["artifact_ids"] = json!(step.artifact_ids);
        }
        if let Err(e) = self.accept(event, step.account) {
            tracing::debug!(error = %e, state = step.state, "funnel event not recorded");
        }
    }

    /// The outcome of an execution: `verification_completed` with its artifact, or `failed`
    /// with its failure class. Replays are not counted again.
    pub fn record_execution(&self, face: Face, account: &AccountId, completed: bool, body: &Value) {
        let artifact = body
            .pointer("/artifact/artifact_id")
            .and_then(Value::as_str);
        let step = if completed {
            FunnelStep::of_account(face, "verification_completed", "execute", account)
        } else {
            FunnelStep::of_account(face, "failed", "execute", account)
                .failure(body["failure_class"].as_str().unwrap_or("action_failed"))
        };
        self.record(step.capability("execute").artifact(artifact));
    }

    /// Writes queued events in batches (up to 1,000 or 25 ms) until the queue closes. Run once,
    /// by `startup`; a second call returns at once.
    pub async fn run_writer(&self) {
        let Some(mut pending) = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let mut batch: Vec<StoredEvent> = Vec::with_capacity(BATCH);
        let mut acks = Vec::new();
        while let Some(first) = pending.recv().await {
            let mut next = Some(first);
            let deadline = tokio::time::Instant::now() + BATCH_WINDOW;
            while let Some(item) = next.take() {
                match item {
                    Queued::Event(e) => batch.push(*e),
                    // Written with what came before it, then answered.
                    Queued::Flush(ack) => {
                        acks.push(ack);
                        break;
                    }
                }
                if batch.len() >= BATCH {
                    break;
                }
                if let Ok(Some(item)) = tokio::time::timeout_at(deadline, pending.recv()).await {
                    next = Some(item);
                }
            }
            if !batch.is_empty() {
                self.write(&batch).await;
                batch.clear();
            }
            for ack in acks.drain(..) {
                let _ = ack.send(());
            }
        }
    }

    /// Writes one batch; when the batch fails, each event is tried alone, so one event the
    /// store refuses never takes the others with it.
    async fn write(&self, batch: &[StoredEvent]) {
        let Err(e) = self.store.insert_events(batch).await else {
            return;
        };
        if batch.len() > 1 {
            tracing::warn!(error = %e, events = batch.len(), "agent event batch refused; writing one by one");
        }
        let mut lost = 0usize;
        for event in batch {
            if let Err(e) = self.store.insert_events(std::slice::from_ref(event)).await {
                lost += 1;
                tracing::error!(error = %e, record_id = %event.id, "agent event could not be written");
            }
        }
        if lost > 0 {
            tracing::error!(lost, "agent events lost");
        }
    }

    /// Events (and flush requests) waiting in the queue for the writer.
    pub fn queue_depth(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// Waits until everything queued so far is written (for tests and benchmarks that read
    /// back what they sent, and for a clean shutdown). Returns at once when no writer runs.
    pub async fn flushed(&self) {
        if self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return; // No writer was started (a one-shot command).
        }
        let (ack, written) = tokio::sync::oneshot::channel();
        if self.queue.send(Queued::Flush(ack)).await.is_ok() {
            let _ = written.await;
        }
    }

    /// The newest stored events, newest first.
    pub async fn recent(&self, limit: u32) -> anyhow::Result<Vec<StoredEvent>> {
        Ok(self.store.recent_events(limit).await?)
    }

    /// The funnel of the last `since_hours`: one account's events, or every event (`None`,
    /// for the operator's internal token only).
    pub async fn funnel(
        &self,
        since_hours: i64,
        account: Option<&AccountId>,
    ) -> anyhow::Result<Vec<FunnelCount>> {
        let since = self.clock.now() - chrono::Duration::hours(since_hours);
        Ok(self.store.funnel(since, account).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that refuses any batch holding an event whose id starts with `poison`, the
    /// way Postgres refuses a whole multi-row insert for one row it cannot hold.
    #[derive(Default)]
    struct Picky(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl TelemetryStore for Picky {
        async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), svc_ports::StoreError> {
            if events.iter().any(|e| e.event_id.starts_with("poison")) {
                return Err(svc_ports::StoreError(anyhow::anyhow!(
                    "invalid byte sequence"
                )));
            }
            let mut stored = self.0.lock().unwrap();
            stored.extend(events.iter().map(|e| e.event_id.clone()));
            Ok(())
        }
        async fn funnel<'a>(
            &self,
            _: chrono::DateTime<chrono::Utc>,
            _: Option<&'a AccountId>,
        ) -> Result<Vec<FunnelCount>, svc_ports::StoreError> {
            Ok(Vec::new())
        }
        async fn recent_events(&self, _: u32) -> Result<Vec<StoredEvent>, svc_ports::StoreError> {
            Ok(Vec::new())
        }
    }

    struct Now;
    impl Clock for Now {
        fn now(&self) -> chrono::DateTime<chrono::Utc> {
            chrono::Utc::now()
        }
    }
    struct Counter(std::sync::atomic::AtomicU64);
    impl Entropy for Counter {
        fn ulid(&self) -> ulid::Ulid {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            ulid::Ulid::from_parts(n, u128::from(n))
        }
        fn pick(&self, alphabet: &[u8], len: usize) -> String {
            std::iter::repeat_n(char::from(alphabet[0]), len).collect()
        }
    }

    fn stored(id: &str) -> StoredEvent {
        StoredEvent {
            id: format!("evt_{id}"),
            received_at: chrono::Utc::now(),
            event_id: id.into(),
            session_id: "s".into(),
            agent_protocol: "mcp".into(),
            discovery_surface: "llms_txt".into(),
            conversion_state: "discovered".into(),
            task_type: "read_page".into(),
            account_id: None,
            event: json!({}),
        }
    }

    /// Issue 15: one event the store refused took the whole batch with it.
    #[tokio::test]
    async fn a_batch_the_store_refuses_is_written_event_by_event() {
        let store = Arc::new(Picky::default());
        let service = TelemetryService::new(
            store.clone(),
            Arc::new(Now),
            Arc::new(Counter(Default::default())),
            "http://svc.test",
        );
        let batch: Vec<StoredEvent> = ["a", "b", "poison", "c"].map(stored).to_vec();
        service.write(&batch).await;
        assert_eq!(*store.0.lock().unwrap(), vec!["a", "b", "c"]);
    }
}
