//! Agent Maps (import, publish, retire, discover) and execution: one mapped action run through
//! the guarded transport, verified by the map's rules, charged only when it completed and
//! refunded when it failed, with a signed verification artifact either way.

mod execute;
mod learning;
mod maps;
mod request;
mod settle;
mod settle_hooks;
mod verify;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use svc_ports::{
    ActionSpec, AgentMap, ArtifactId, ArtifactSource, ArtifactStatus, AuthorityRefusal,
    AuthoritySpend, FailureClass, TaskId, TaskRecord, TaskStatus, VerificationArtifact,
};

use super::{Ports, auth::Principal};

pub use learning::Learned;
pub use request::build_request;
pub use settle::RECOVER_AFTER_SECONDS;
pub use verify::{TaskVerified, VerifyRefusal};

/// Why an execution was refused before anything ran. Nothing is stored or charged.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteRefusal {
    #[error("no published map for `{0}`; call discover to see which domains are supported")]
    UnknownDomain(String),
    #[error("`{domain}` has no action `{action}`; use an exact name from discover")]
    UnknownAction { domain: String, action: String },
    #[error("{0}")]
    InvalidParams(String),
    #[error("the key lacks the scopes {missing:?} this action needs")]
    MissingScopes {
        missing: Vec<String>,
        consequential: bool,
    },
    #[error(
        "this action needs a connected `{provider}` account; start a connection and show the human its link"
    )]
    ConnectionRequired { provider: String },
    #[error("the connection to `{provider}` expired and could not be refreshed")]
    ConnectionExpired { provider: String },
    #[error("the authorization server of `{provider}` is unavailable")]
    ConnectionProviderUnavailable { provider: String },
    #[error(
        "`{action}` pays money: it runs only under a payment authority the human created on the site; pass its authority_id"
    )]
    PaymentAuthorityRequired { action: String, account_url: String },
    /// The authority does not allow the spend; `detail` names the reason and what remains.
    #[error("{detail}")]
    PaymentAuthorityRefused {
        reason: AuthorityRefusal,
        detail: String,
    },
    #[error(
        "this action costs {cost} credits and {spendable} are spendable; the account's owner buys credits at {top_up_url}"
    )]
    InsufficientCredits {
        cost: i64,
        spendable: i64,
        top_up_url: String,
    },
    #[error("a request with this Idempotency-Key is still running")]
    InFlight { task_id: String },
    #[error("this Idempotency-Key was used for a different request")]
    KeyConflict { task_id: String },
    #[error("{0}")]
    BadIdempotencyKey(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<svc_ports::StoreError> for ExecuteRefusal {
    fn from(e: svc_ports::StoreError) -> Self {
        Self::Internal(anyhow::Error::new(e))
    }
}

/// The answer of a settled execution (or its replay): an HTTP status and the JSON body, stored
/// with the task so a replay is byte-for-byte the same.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    pub task_id: TaskId,
    pub completed: bool,
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

/// One execution request.
#[derive(Debug, Clone)]
pub struct ExecuteRequest {
    pub domain: String,
    pub action: String,
    pub params: Value,
    pub idempotency_key: Option<String>,
    /// The payment authority a payment action spends under; other actions ignore it.
    pub authority_id: Option<String>,
}

/// The payment a task makes, carried from begin to settle.
struct PaymentContext {
    spend: AuthoritySpend,
    receipt_required: bool,
    verification_required: bool,
    /// The output field with the site's payment id.
    reference: Option<String>,
    /// The confirm action and its params (taken from the payment's), named in the evidence of
    /// a `payment_completed` artifact so a later verification can run it.
    confirm: Option<(String, Map<String, Value>)>,
}

/// How the action turned out, before it is settled.
struct Observed {
    completed: bool,
    /// The site surely did nothing: it never got the request, or refused it with a 4xx.
    nothing_happened: bool,
    failure: Option<(FailureClass, String)>,
    url: String,
    evidence: Value,
    result: Value,
}

/// Compiled JSON Schemas of published actions, by (domain, version, action, which).
type SchemaCache = Mutex<HashMap<(String, u32, String, &'static str), Arc<jsonschema::Validator>>>;

/// Published maps by domain, with when they were read (the `Clock` port's time).
type MapCache = Mutex<HashMap<String, (DateTime<Utc>, Option<Arc<AgentMap>>)>>;

pub struct ActionService {
    ports: Ports,
    connections: super::connections::ConnectionService,
    /// Where a human creates payment authorities (named in `payment_authority_required`).
    account_url: String,
    schemas: SchemaCache,
    published: MapCache,
    funnel: crate::telemetry::Funnel,
    /// Where settlements are recorded as webhook events (`hooks.rs`).
    hooks: Option<Arc<crate::hooks::HookService>>,
    /// Executions running now, so a stopping process lets them settle (they run detached
    /// from their requests, and one cut off at exit would be refunded as interrupted).
    running: Arc<Running>,
}

/// A count of executions running, and a signal when it falls.
#[derive(Default)]
pub(crate) struct Running {
    count: std::sync::atomic::AtomicUsize,
    fell: tokio::sync::Notify,
}

/// One execution's place in [`Running`], given back when dropped.
pub struct RunningGuard(Arc<Running>);

impl Running {
    pub(crate) fn enter(self: &Arc<Self>) -> RunningGuard {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        RunningGuard(self.clone())
    }

    async fn none_left(&self) {
        loop {
            let fell = self.fell.notified();
            if self.count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            fell.await;
        }
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.fell.notify_waiters();
    }
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| e.to_string())
}

impl ActionService {
    pub fn new(ports: Ports, connections: super::connections::ConnectionService) -> Self {
        Self {
            ports,
            connections,
            account_url: "/account".into(),
            schemas: Mutex::new(HashMap::new()),
            published: Mutex::new(HashMap::new()),
            funnel: Default::default(),
            hooks: None,
            running: Arc::default(),
        }
    }

    /// Resolves once no execution is running (a stopping process waits for it, bounded).
    pub async fn executions_finished(&self) {
        self.running.none_left().await
    }

    /// A place among the running executions, for a face to take before it detaches a request
    /// that may execute: its steps before [`Self::execute`] (the key, the owner) then count
    /// too, so a stopping process does not find none running and exit under them.
    pub fn running(&self) -> RunningGuard {
        self.running.enter()
    }

    /// Records `task.completed`, `task.failed`, `credits.low` and `authority.exhausted` for
    /// the account's webhooks when a task settles.
    pub fn with_hooks(mut self, hooks: Arc<crate::hooks::HookService>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Records the funnel steps of discovery and executions.
    pub fn with_telemetry(mut self, telemetry: Arc<crate::telemetry::TelemetryService>) -> Self {
        self.funnel = crate::telemetry::Funnel::new(telemetry);
        self
    }

    /// Names the site's account page in payment problems.
    pub fn with_site_url(mut self, site_url: &str) -> Self {
        self.account_url = format!("{}/account", site_url.trim_end_matches('/'));
        self
    }

    fn now(&self) -> DateTime<Utc> {
        self.ports.clock.now()
    }

    fn validator(
        &self,
        map: &AgentMap,
        action: &ActionSpec,
        which: &'static str,
    ) -> anyhow::Result<Arc<jsonschema::Validator>> {
        let key = (
            map.document.domain.to_string(),
            map.version,
            action.name.clone(),
            which,
        );
        let mut cache = self.schemas.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = cache.get(&key) {
            return Ok(v.clone());
        }
        let schema = if which == "params" {
            &action.params_schema
        } else {
            &action.output_schema
        };
        let compiled = Arc::new(
            compile(schema).map_err(|e| anyhow::anyhow!("stored schema does not compile: {e}"))?,
        );
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(key, compiled.clone());
        Ok(compiled)
    }

    #[allow(clippy::too_many_arguments)]
    fn sign_artifact(
        &self,
        artifact_id: &ArtifactId,
        task: &TaskRecord,
        action: &str,
        url: &str,
        at: DateTime<Utc>,
        status: ArtifactStatus,
        evidence: Value,
        failure_class: Option<String>,
    ) -> anyhow::Result<VerificationArtifact> {
        let unsigned = json!({
            "artifact_id": artifact_id.as_str(),
            "task_id": task.id.as_str(),
            "source": ArtifactSource { domain: task.domain.clone(), action: action.to_owned(), url: url.to_owned() },
            "timestamp": at,
            "status": status,
            "evidence": evidence,
            "failure_class": failure_class,
        });
        let signature = self.ports.signer.sign(&unsigned);
        let mut signed = unsigned;
        signed["signature"] = serde_json::to_value(&signature)?;
        serde_json::from_value(signed).context("building artifact")
    }

    /// A task of this account, with its artifact.
    pub async fn task(
        &self,
        principal: &Principal,
        id: &str,
    ) -> anyhow::Result<Option<TaskRecord>> {
        let Ok(id) = TaskId::parse(id) else {
            return Ok(None);
        };
        Ok(self
            .ports
            .tasks
            .task(&id, Some(principal.account.id.clone()))
            .await?)
    }

    pub fn jwks(&self) -> Value {
        self.ports.signer.jwks()
    }
}

fn replay(task: &TaskRecord) -> Result<Executed, ExecuteRefusal> {
    let body: Value = task
        .response_body
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .context("stored response is not JSON")?
        .unwrap_or(Value::Null);
    Ok(Executed {
        task_id: task.id.clone(),
        completed: task.status == TaskStatus::Completed,
        status: task.response_status.unwrap_or(500),
        body,
        replayed: true,
    })
}
