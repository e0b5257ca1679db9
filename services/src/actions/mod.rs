//! Agent Maps (import, publish, retire, discover) and execution: one mapped action run through
//! the guarded transport, verified by the map's rules, charged only when it completed and
//! refunded when it failed, with a signed verification artifact either way.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use svc_ports::{
    ActionRequest, ActionResponse, ActionSpec, AgentMap, ArtifactId, ArtifactSource,
    ArtifactStatus, AuthorityId, AuthorityRefusal, AuthoritySpend, BeginOutcome, Domain,
    FailureClass, FetchError, LedgerEntryId, MapDocument, NewTask, SettleOutcome, Settlement,
    TaskId, TaskRecord, TaskStatus, VerificationArtifact, VerifyOutcome,
    actions::{BodyTemplate, OutputSource},
    store::MapStoreError,
    tasks::MAX_IDEMPOTENCY_KEY_LEN,
};

use super::{Ports, auth::Principal};

/// Tasks still in flight this long after they began are taken to be orphaned by a dead
/// process: longer than any action may run (the transport gives up at 15 s).
pub const RECOVER_AFTER_SECONDS: i64 = 60;

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
    #[error("this action costs {cost} credits and {spendable} are spendable")]
    InsufficientCredits { cost: i64, spendable: i64 },
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

/// Why a verification stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum VerifyRefusal {
    #[error("no task of this account has that id")]
    NotFound,
    #[error("{0}")]
    NotVerifiable(String),
    /// The confirm action ran and its rules did not hold (or the site did not answer).
    #[error("{detail}")]
    Pending { detail: String, evidence: Value },
    /// Refused before the confirm action ran (scopes, connection).
    #[error(transparent)]
    Refused(#[from] ExecuteRefusal),
}

impl From<anyhow::Error> for VerifyRefusal {
    fn from(e: anyhow::Error) -> Self {
        Self::Refused(ExecuteRefusal::Internal(e))
    }
}

/// A task's verification: the stored `verified` artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskVerified {
    pub task_id: TaskId,
    pub artifact: Value,
    /// Whether it was stored before this call.
    pub replayed: bool,
}

fn verified_of(task: &TaskRecord) -> anyhow::Result<Option<TaskVerified>> {
    task.verified_artifact
        .as_deref()
        .map(|a| {
            Ok(TaskVerified {
                task_id: task.id.clone(),
                artifact: serde_json::from_str(a).context("stored verification is not JSON")?,
                replayed: true,
            })
        })
        .transpose()
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

/// Published maps are read on every execution; they change only when a person publishes or
/// retires one, so each instance keeps what it read for a second.
const MAP_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

type MapCache = Mutex<HashMap<String, (std::time::Instant, Option<Arc<AgentMap>>)>>;

pub struct ActionService {
    ports: Ports,
    connections: super::connections::ConnectionService,
    /// Where a human creates payment authorities (named in `payment_authority_required`).
    account_url: String,
    schemas: SchemaCache,
    published: MapCache,
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// JSON with object keys sorted at every level: the request's fingerprint is taken over this,
/// so key order does not make two equal requests differ.
fn sorted_json(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), sorted_json(&o[*k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(sorted_json).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// A param's value as it goes into a URL, header or form field.
fn param_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn fill(template: &str, params: &Map<String, Value>, encode: bool) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end)
                if after[..end]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && end > 0 =>
            {
                let value = params
                    .get(&after[..end])
                    .map(param_text)
                    .unwrap_or_default();
                if encode {
                    out.extend(url::form_urlencoded::byte_serialize(value.as_bytes()));
                } else {
                    out.push_str(&value);
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn fill_json(template: &Value, params: &Map<String, Value>) -> Value {
    match template {
        Value::String(s) => {
            let whole = s
                .strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .filter(|n| {
                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                });
            match whole {
                Some(name) => params.get(name).cloned().unwrap_or(Value::Null),
                None => Value::String(fill(s, params, false)),
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| fill_json(x, params)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), fill_json(v, params)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The HTTP request an action makes with these params.
pub fn build_request(
    base_url: &str,
    action: &ActionSpec,
    params: &Map<String, Value>,
) -> ActionRequest {
    let url = format!("{base_url}{}", fill(&action.request.path, params, true));
    let headers = action
        .request
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), fill(v, params, false).replace(['\r', '\n'], " ")))
        .collect();
    let body = action.request.body.as_ref().map(|b| match b {
        BodyTemplate::Json { value } => (
            "application/json".to_owned(),
            serde_json::to_vec(&fill_json(value, params)).unwrap_or_default(),
        ),
        BodyTemplate::Form { fields } => {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in fields {
                form.append_pair(k, &fill(v, params, false));
            }
            (
                "application/x-www-form-urlencoded".to_owned(),
                form.finish().into_bytes(),
            )
        }
    });
    ActionRequest {
        method: action.request.method,
        url,
        headers,
        body,
    }
}

impl ActionService {
    pub fn new(ports: Ports, connections: super::connections::ConnectionService) -> Self {
        Self {
            ports,
            connections,
            account_url: "/account".into(),
            schemas: Mutex::new(HashMap::new()),
            published: Mutex::new(HashMap::new()),
        }
    }

    /// Names the site's account page in payment problems.
    pub fn with_site_url(mut self, site_url: &str) -> Self {
        self.account_url = format!("{}/account", site_url.trim_end_matches('/'));
        self
    }

    fn now(&self) -> DateTime<Utc> {
        self.ports.clock.now()
    }

    // ---- maps ----------------------------------------------------------------------------------

    /// Checks a map document fully (its rules and that every schema compiles) and stores it as
    /// the domain's next candidate version.
    pub async fn import_map(
        &self,
        document: &MapDocument,
        origin: &str,
    ) -> anyhow::Result<AgentMap> {
        document.check()?;
        for action in &document.actions {
            compile(&action.params_schema)
                .map_err(|e| anyhow::anyhow!("action `{}`: params_schema: {e}", action.name))?;
            compile(&action.output_schema)
                .map_err(|e| anyhow::anyhow!("action `{}`: output_schema: {e}", action.name))?;
        }
        let map = self
            .ports
            .maps
            .insert_map(document, origin, self.now())
            .await?;
        tracing::info!(domain = %map.document.domain, version = map.version, origin, "agent map stored as candidate");
        Ok(map)
    }

    pub async fn maps(&self, domain: Option<&str>) -> anyhow::Result<Vec<AgentMap>> {
        let domain = domain.map(Domain::parse).transpose()?;
        Ok(self.ports.maps.maps(domain).await?)
    }

    pub async fn publish(&self, domain: &str, version: Option<u32>) -> anyhow::Result<AgentMap> {
        let domain = Domain::parse(domain)?;
        let published = self
            .ports
            .maps
            .publish_map(&domain, version, self.now())
            .await;
        self.forget_published(&domain);
        match published {
            Ok(m) => {
                tracing::info!(domain = %domain, version = m.version, "agent map published");
                Ok(m)
            }
            Err(MapStoreError::NotFound) => anyhow::bail!("no map version to publish for {domain}"),
            Err(MapStoreError::Store(e)) => Err(anyhow::Error::new(e)),
        }
    }

    pub async fn retire(&self, domain: &str) -> anyhow::Result<AgentMap> {
        let domain = Domain::parse(domain)?;
        let retired = self.ports.maps.retire_map(&domain, self.now()).await;
        self.forget_published(&domain);
        match retired {
            Ok(m) => {
                tracing::info!(domain = %domain, version = m.version, "agent map retired");
                Ok(m)
            }
            Err(MapStoreError::NotFound) => anyhow::bail!("nothing is published for {domain}"),
            Err(MapStoreError::Store(e)) => Err(anyhow::Error::new(e)),
        }
    }

    /// The published map of a domain (read through a one-second cache).
    pub async fn published(&self, domain: &str) -> Result<Arc<AgentMap>, ExecuteRefusal> {
        let parsed =
            Domain::parse(domain).map_err(|_| ExecuteRefusal::UnknownDomain(domain.to_owned()))?;
        let cached = {
            let cache = self.published.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .get(parsed.as_str())
                .filter(|(at, _)| at.elapsed() < MAP_CACHE_TTL)
                .map(|(_, m)| m.clone())
        };
        let map = match cached {
            Some(m) => m,
            None => {
                let m = self.ports.maps.published_map(&parsed).await?.map(Arc::new);
                let mut cache = self.published.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() > 10_000 {
                    cache.clear();
                }
                cache.insert(parsed.to_string(), (std::time::Instant::now(), m.clone()));
                m
            }
        };
        map.ok_or_else(|| ExecuteRefusal::UnknownDomain(parsed.to_string()))
    }

    fn forget_published(&self, domain: &Domain) {
        self.published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(domain.as_str());
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

    // ---- execution -----------------------------------------------------------------------------

    /// Runs one action for `principal`. Refusals happen before anything is stored; once the task
    /// has begun, the answer is always a settled task (completed and charged, or failed and
    /// refunded), and the same `Idempotency-Key` replays it.
    pub async fn execute(
        &self,
        principal: &Principal,
        request: ExecuteRequest,
    ) -> Result<Executed, ExecuteRefusal> {
        if let Some(key) = &request.idempotency_key
            && (key.is_empty()
                || key.len() > MAX_IDEMPOTENCY_KEY_LEN
                || key.chars().any(char::is_control))
        {
            return Err(ExecuteRefusal::BadIdempotencyKey(format!(
                "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} printable characters"
            )));
        }
        let map = self.published(&request.domain).await?;
        let action = map
            .document
            .action(&request.action)
            .ok_or_else(|| ExecuteRefusal::UnknownAction {
                domain: map.document.domain.to_string(),
                action: request.action.clone(),
            })?
            .clone();
        let Value::Object(params) = &request.params else {
            return Err(ExecuteRefusal::InvalidParams(
                "params must be a JSON object".into(),
            ));
        };
        let validator = self.validator(&map, &action, "params")?;
        let problems: Vec<String> = validator
            .iter_errors(&request.params)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(ExecuteRefusal::InvalidParams(format!(
                "params do not match the action's schema: {}",
                problems.join("; ")
            )));
        }
        let missing = action.missing_scopes(&principal.key.scopes);
        if !missing.is_empty() {
            return Err(ExecuteRefusal::MissingScopes {
                consequential: missing
                    .iter()
                    .any(|s| s == svc_ports::actions::CONSEQUENTIAL_SCOPE),
                missing,
            });
        }
        // An action that acts on the human's account needs their connection; without a usable
        // one it stops here, before any charge.
        let credential = self
            .credential(principal, &action, &map.document.base_url)
            .await?;

        let payment = self.payment_of(&action, &request).await?;
        let mut canonical = json!({"domain": map.document.domain.as_str(), "action": action.name, "params": request.params});
        if let Some(p) = &payment {
            // Another authority is another request under the same Idempotency-Key.
            canonical["authority_id"] = json!(p.spend.authority_id.as_str());
        }
        let fingerprint = sha256_hex(sorted_json(&canonical).as_bytes());
        let new_task = NewTask {
            id: TaskId::from_ulid(self.ports.entropy.ulid()),
            account_id: principal.account.id.clone(),
            key_id: principal.key.id.clone(),
            domain: map.document.domain.to_string(),
            action: action.name.clone(),
            cost: action.cost,
            idempotency_key: request.idempotency_key.clone(),
            fingerprint,
            hold_entry: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            authority_spend: payment.as_ref().map(|p| p.spend.clone()),
            created_at: self.now(),
        };
        let task = match self.ports.tasks.begin_task(&new_task).await {
            Ok(BeginOutcome::Started(t)) => t,
            Ok(BeginOutcome::Replay(t)) => return replay(&t),
            Ok(BeginOutcome::InFlight(t)) => {
                return Err(ExecuteRefusal::InFlight {
                    task_id: t.id.to_string(),
                });
            }
            Ok(BeginOutcome::Conflict(t)) => {
                return Err(ExecuteRefusal::KeyConflict {
                    task_id: t.id.to_string(),
                });
            }
            Ok(BeginOutcome::InsufficientCredits { spendable }) => {
                return Err(ExecuteRefusal::InsufficientCredits {
                    cost: action.cost,
                    spendable,
                });
            }
            Ok(BeginOutcome::AuthorityRefused(reason)) => {
                let spend = payment.as_ref().map(|p| &p.spend);
                return Err(refused(reason, spend));
            }
            Err(e) => return Err(anyhow::Error::new(e).context("beginning task").into()),
        };
        tracing::info!(task_id = %task.id, domain = %task.domain, action = %task.action, cost = task.cost, "task begun");

        let observed = self.run(&map, &action, params, credential.as_ref()).await;
        self.settle(&task, observed, payment.as_ref()).await
    }

    /// The human's connection credential an action needs, if it needs one.
    async fn credential(
        &self,
        principal: &Principal,
        action: &ActionSpec,
        base_url: &str,
    ) -> Result<Option<super::connections::Credential>, ExecuteRefusal> {
        let Some(provider) = &action.auth_provider else {
            return Ok(None);
        };
        let host = url::Url::parse(base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        self.connections
            .credential_for(&principal.account.id, provider, &host)
            .await
            .map(Some)
            .map_err(|e| {
                use super::connections::CredentialFailure as F;
                match e {
                    F::Required(provider) => ExecuteRefusal::ConnectionRequired { provider },
                    F::Expired(provider) => ExecuteRefusal::ConnectionExpired { provider },
                    F::ProviderUnavailable(provider) => {
                        ExecuteRefusal::ConnectionProviderUnavailable { provider }
                    }
                    F::NotForThisSite { provider, host } => {
                        tracing::warn!(%provider, %host, "a map names a provider whose credentials are not for its site");
                        ExecuteRefusal::ConnectionProviderUnavailable { provider }
                    }
                    F::Internal(e) => ExecuteRefusal::Internal(e),
                }
            })
    }

    /// Verifies the business outcome of a payment whose task settled `payment_completed`: runs
    /// the payment action's `confirm` read (named, with its params, in the artifact's evidence)
    /// through the guarded transport and the map's rules, and when they hold stores a second,
    /// signed `verified` artifact with the task. No billing task, nothing charged. Idempotent:
    /// a verified task answers with its stored verification.
    pub async fn verify_task(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<TaskVerified, VerifyRefusal> {
        let task = self
            .task(principal, id)
            .await?
            .ok_or(VerifyRefusal::NotFound)?;
        if let Some(stored) = verified_of(&task)? {
            return Ok(stored);
        }
        if !task.verifiable() {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "task {} is {} with a {} artifact; only a payment settled payment_completed can be verified",
                task.id,
                task.status.as_str(),
                task.artifact_status().map_or("missing", |s| s.as_str())
            )));
        }
        let original: Value = serde_json::from_str(task.artifact.as_deref().unwrap_or("null"))
            .context("stored artifact is not JSON")?;
        let confirm = &original["evidence"]["confirm"];
        let (Some(confirm_action), Some(params)) =
            (confirm["action"].as_str(), confirm["params"].as_object())
        else {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "`{}` declares no confirm action, so the outcome of this payment cannot be checked here",
                task.action
            )));
        };
        let map = match self.published(&task.domain).await {
            Ok(m) => m,
            Err(ExecuteRefusal::UnknownDomain(d)) => {
                return Err(VerifyRefusal::NotVerifiable(format!(
                    "no map is published for `{d}` any more"
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let Some(action) = map.document.action(confirm_action).cloned() else {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "the published map of `{}` has no action `{confirm_action}` any more",
                task.domain
            )));
        };
        // Only a read may confirm: after a republish the name could be something else.
        if action.consequential
            || !matches!(
                action.family,
                svc_ports::ActionFamily::Read | svc_ports::ActionFamily::Search
            )
        {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "`{confirm_action}` is not a read in the published map any more, so it cannot confirm a payment"
            )));
        }
        let params_value = Value::Object(params.clone());
        if let Some(e) = self
            .validator(&map, &action, "params")?
            .iter_errors(&params_value)
            .next()
        {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "the params of `{confirm_action}` no longer fit its schema: {e}"
            )));
        }
        let missing = action.missing_scopes(&principal.key.scopes);
        if !missing.is_empty() {
            return Err(ExecuteRefusal::MissingScopes {
                consequential: false,
                missing,
            }
            .into());
        }
        let credential = self
            .credential(principal, &action, &map.document.base_url)
            .await?;
        let observed = self.run(&map, &action, params, credential.as_ref()).await;
        let confirm_evidence = json!({
            "action": action.name,
            "params": params,
            "url": observed.url,
            "result": observed.result,
            "observed": observed.evidence,
        });
        if let Some((class, detail)) = &observed.failure {
            tracing::info!(task_id = %task.id, class = class.as_str(), "payment outcome not confirmed");
            return Err(VerifyRefusal::Pending {
                detail: format!(
                    "`{}` did not confirm the payment's outcome ({}: {detail}); confirm evidence: {}",
                    action.name,
                    class.as_str(),
                    confirm_evidence
                ),
                evidence: confirm_evidence,
            });
        }
        let mut evidence = json!({
            "verifies_artifact_id": original["artifact_id"],
            "confirm": confirm_evidence,
        });
        if let Some(payment) = original["evidence"].get("payment") {
            evidence["payment"] = payment.clone();
        }
        let artifact_id = ArtifactId::from_ulid(self.ports.entropy.ulid());
        let at = self.now();
        let artifact = self.sign_artifact(
            &artifact_id,
            &task,
            &action.name,
            &observed.url,
            at,
            ArtifactStatus::Verified,
            evidence,
            None,
        )?;
        let artifact_json = serde_json::to_value(&artifact).context("serialising artifact")?;
        let outcome = self
            .ports
            .tasks
            .record_verification(&task.id, &artifact_id, &artifact_json.to_string(), at)
            .await
            .map_err(|e| anyhow::Error::new(e).context("recording verification"))?;
        match outcome {
            VerifyOutcome::Verified(t) => {
                tracing::info!(task_id = %t.id, "payment outcome verified");
                Ok(TaskVerified {
                    task_id: t.id,
                    artifact: artifact_json,
                    replayed: false,
                })
            }
            // A concurrent verification landed first: it stands.
            VerifyOutcome::AlreadyVerified(t) => {
                verified_of(&t)?.ok_or_else(|| anyhow::anyhow!("verification vanished").into())
            }
            VerifyOutcome::NotVerifiable(t) => Err(VerifyRefusal::NotVerifiable(format!(
                "task {} cannot be verified",
                t.id
            ))),
        }
    }

    /// The spend a payment action asks for, or `None` for other actions (which ignore any
    /// `authority_id`). Refused before anything is stored when no authority is named or the
    /// amount is not an integer param.
    async fn payment_of(
        &self,
        action: &ActionSpec,
        request: &ExecuteRequest,
    ) -> Result<Option<PaymentContext>, ExecuteRefusal> {
        let Some(spec) = &action.payment else {
            return Ok(None);
        };
        let Some(raw) = request
            .authority_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        else {
            return Err(ExecuteRefusal::PaymentAuthorityRequired {
                action: action.name.clone(),
                account_url: self.account_url.clone(),
            });
        };
        let amount = spec.amount_of(&request.params).ok_or_else(|| {
            ExecuteRefusal::InvalidParams(format!(
                "params must carry the amount to pay at {} as an integer",
                spec.amount
            ))
        })?;
        let Ok(authority_id) = AuthorityId::parse(raw) else {
            return Err(refused(AuthorityRefusal::UnknownAuthority, None));
        };
        // The flags never change after creation, so reading them before the task begins is
        // safe; whether the spend is allowed is decided by begin_task, atomically.
        let flags = self
            .ports
            .authorities
            .authority(&authority_id, self.now())
            .await?
            .map(|(a, _)| (a.receipt_required, a.verification_required))
            .unwrap_or((false, false));
        Ok(Some(PaymentContext {
            spend: AuthoritySpend {
                authority_id,
                amount,
                currency: spec.currency.clone(),
                scope: action.family.as_str().to_owned(),
            },
            receipt_required: flags.0,
            verification_required: flags.1,
            reference: spec.reference.clone(),
            confirm: spec.confirm.as_ref().and_then(|c| {
                c.params_from(&request.params)
                    .map(|params| (c.action.clone(), params))
            }),
        }))
    }

    /// Sends the request and checks the answer against the map's rules.
    async fn run(
        &self,
        map: &AgentMap,
        action: &ActionSpec,
        params: &Map<String, Value>,
        credential: Option<&super::connections::Credential>,
    ) -> Observed {
        let mut request = build_request(&map.document.base_url, action, params);
        if let Some(c) = credential {
            // The map's own header of that name gives way: the connection speaks for the human.
            let (name, value) = c.header();
            request
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            request.headers.push((name, value));
        }
        let started = std::time::Instant::now();
        let sent = self.ports.transport.send(&request).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                let class = match &e {
                    FetchError::Timeout { .. } => FailureClass::UpstreamTimeout,
                    FetchError::Refused(_) => FailureClass::UrlRefused,
                    _ => FailureClass::UpstreamUnreachable,
                };
                return Observed {
                    completed: false,
                    // Refused before sending, or no connection made: nothing reached the site.
                    nothing_happened: matches!(
                        e,
                        FetchError::Refused(_) | FetchError::Connect { .. }
                    ),
                    failure: Some((class, e.to_string())),
                    url: request.url,
                    evidence: json!({"request_method": request.method.as_str(), "transport_error": e.to_string(), "elapsed_ms": elapsed_ms}),
                    result: Value::Null,
                };
            }
        };
        self.verify(action, request, response, elapsed_ms, map)
    }

    fn verify(
        &self,
        action: &ActionSpec,
        request: ActionRequest,
        response: ActionResponse,
        elapsed_ms: u64,
        map: &AgentMap,
    ) -> Observed {
        let mut checks = Vec::new();
        let mut failure: Option<(FailureClass, String)> = None;
        let status_ok = action.verify.status.contains(&response.status);
        checks.push(json!({"rule": "status", "expected": action.verify.status, "observed": response.status, "held": status_ok}));
        if !status_ok {
            failure = Some((
                FailureClass::ActionFailed,
                format!(
                    "the site answered HTTP {} (expected {:?})",
                    response.status, action.verify.status
                ),
            ));
        }
        let needs_json = !action.verify.json.is_empty()
            || action
                .outputs
                .iter()
                .any(|o| matches!(o.source, OutputSource::Json { .. }));
        let parsed: Option<Value> = if needs_json {
            serde_json::from_str(&response.body).ok()
        } else {
            None
        };
        if needs_json && parsed.is_none() && failure.is_none() {
            failure = Some((
                FailureClass::UpstreamInvalidResponse,
                "the site's answer is not JSON".into(),
            ));
        }
        for rule in &action.verify.json {
            let found = parsed.as_ref().and_then(|p| p.pointer(&rule.pointer));
            let held = match (&rule.equals, found) {
                (Some(want), Some(got)) => want == got,
                (None, Some(got)) => !got.is_null(),
                (_, None) => false,
            };
            checks.push(json!({"rule": "json", "pointer": rule.pointer, "equals": rule.equals, "held": held}));
            if !held && failure.is_none() {
                failure = Some((
                    FailureClass::ActionFailed,
                    format!(
                        "the answer does not confirm the action ({} does not hold)",
                        rule.pointer
                    ),
                ));
            }
        }
        let css_selectors: Vec<String> = action
            .verify
            .css
            .iter()
            .map(|r| r.selector.clone())
            .collect();
        let output_selectors: Vec<String> = action
            .outputs
            .iter()
            .filter_map(|o| match &o.source {
                OutputSource::Css { selector } => Some(selector.clone()),
                _ => None,
            })
            .collect();
        let all_selectors: Vec<String> = css_selectors
            .iter()
            .chain(&output_selectors)
            .cloned()
            .collect();
        let texts = if all_selectors.is_empty() {
            Vec::new()
        } else {
            self.ports
                .extractor
                .select_texts(&response.body, &all_selectors)
                .unwrap_or_else(|_| vec![None; all_selectors.len()])
        };
        for (rule, text) in action.verify.css.iter().zip(&texts) {
            let held = match (&rule.text_contains, text) {
                (Some(want), Some(t)) => t.contains(want.as_str()),
                (None, Some(_)) => true,
                (_, None) => false,
            };
            checks.push(json!({"rule": "css", "selector": rule.selector, "text_contains": rule.text_contains, "held": held}));
            if !held && failure.is_none() {
                failure = Some((
                    FailureClass::ActionFailed,
                    format!(
                        "the page does not confirm the action ({} does not hold)",
                        rule.selector
                    ),
                ));
            }
        }
        let mut css_outputs = texts.iter().skip(css_selectors.len());
        let mut result = Map::new();
        for output in &action.outputs {
            let value = match &output.source {
                OutputSource::Json { pointer } => parsed
                    .as_ref()
                    .and_then(|p| p.pointer(pointer))
                    .cloned()
                    .unwrap_or(Value::Null),
                OutputSource::Css { .. } => css_outputs
                    .next()
                    .cloned()
                    .flatten()
                    .map(Value::String)
                    .unwrap_or(Value::Null),
                OutputSource::Status => json!(response.status),
            };
            result.insert(output.name.clone(), value);
        }
        let result = Value::Object(result);
        if failure.is_none() {
            match self.validator(map, action, "output") {
                Ok(v) => {
                    if let Some(e) = v.iter_errors(&result).next() {
                        failure = Some((
                            FailureClass::UpstreamInvalidResponse,
                            format!(
                                "the site's answer does not fit the action's output schema: {e}"
                            ),
                        ));
                    }
                }
                Err(e) => failure = Some((FailureClass::Internal, e.to_string())),
            }
        }
        let evidence = json!({
            "request_method": request.method.as_str(),
            "http_status": response.status,
            "content_type": response.content_type,
            "response_sha256": sha256_hex(response.body.as_bytes()),
            "response_truncated": response.truncated,
            "checks": checks,
            "result_sha256": sha256_hex(sorted_json(&result).as_bytes()),
            "elapsed_ms": elapsed_ms,
        });
        Observed {
            completed: failure.is_none(),
            nothing_happened: failure.is_some() && (400..500).contains(&response.status),
            failure,
            url: response.url,
            evidence,
            result,
        }
    }

    /// Signs the artifact and settles the task with it: charge or refund, in one transaction.
    async fn settle(
        &self,
        task: &TaskRecord,
        observed: Observed,
        payment: Option<&PaymentContext>,
    ) -> Result<Executed, ExecuteRefusal> {
        let artifact_id = ArtifactId::from_ulid(self.ports.entropy.ulid());
        let at = self.now();
        let mut evidence = observed.evidence.clone();
        if let Some(p) = payment {
            payment_evidence(&mut evidence, p, &observed, at);
        }
        let (status, failure_class) = if observed.completed {
            // A payment whose outcome the map's rules confirmed is verified, unless the human
            // asked for a separate verification of the business outcome.
            let status = match payment {
                None => ArtifactStatus::Completed,
                Some(p) if p.verification_required => ArtifactStatus::PaymentCompleted,
                Some(_) => ArtifactStatus::Verified,
            };
            (status, None)
        } else {
            (
                ArtifactStatus::Failed,
                observed
                    .failure
                    .as_ref()
                    .map(|(c, _)| c.as_str().to_owned()),
            )
        };
        let artifact = self.sign_artifact(
            &artifact_id,
            task,
            &task.action,
            &observed.url,
            at,
            status,
            evidence,
            failure_class,
        )?;
        let artifact_json = serde_json::to_value(&artifact).context("serialising artifact")?;
        let (http_status, body) = match &observed.failure {
            None => (
                200,
                json!({
                    "task_id": task.id.as_str(),
                    "status": "completed",
                    "domain": task.domain,
                    "action": task.action,
                    "result": observed.result,
                    "credits_charged": task.cost,
                    "artifact": artifact_json,
                }),
            ),
            Some((class, detail)) => (
                class.http_status(),
                failure_body(*class, detail, task, &artifact_json),
            ),
        };
        let settlement = Settlement {
            task_id: task.id.clone(),
            completed: observed.completed,
            release_spend: !observed.completed && observed.nothing_happened,
            response_status: http_status,
            response_body: body.to_string(),
            artifact_id,
            artifact: artifact_json.to_string(),
            entry: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            at,
        };
        match self.ports.tasks.settle_task(&settlement).await {
            Ok(SettleOutcome::Settled(t)) => {
                tracing::info!(task_id = %t.id, status = t.status.as_str(), "task settled");
                Ok(Executed {
                    task_id: t.id,
                    completed: observed.completed,
                    status: http_status,
                    body,
                    replayed: false,
                })
            }
            // Recovery settled it first (this process was too slow): that settlement stands.
            Ok(SettleOutcome::AlreadySettled(t)) => replay(&t).map(|mut e| {
                e.replayed = false;
                e
            }),
            Err(e) => Err(anyhow::Error::new(e).context("settling task").into()),
        }
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

    /// Settles, as failed and refunded, tasks whose process died between begin and settle.
    pub async fn recover(&self, older_than_seconds: i64) -> anyhow::Result<usize> {
        let cutoff = self.now() - chrono::Duration::seconds(older_than_seconds);
        let orphans = self.ports.tasks.unsettled_tasks(cutoff).await?;
        let mut settled = 0;
        for task in orphans {
            let observed = Observed {
                completed: false,
                // The process died mid-action: whatever it sent may have been done.
                nothing_happened: false,
                failure: Some((
                    FailureClass::Interrupted,
                    "the service stopped while this action ran; its outcome is unknown, so it was refunded".into(),
                )),
                url: String::new(),
                evidence: json!({"recovered": true, "began_at": task.created_at}),
                result: Value::Null,
            };
            // A recovered payment task fails: the store gives its spend back.
            match self.settle(&task, observed, None).await {
                Ok(e) if !e.replayed => {
                    tracing::warn!(task_id = %task.id, "orphaned task settled as failed and refunded");
                    settled += 1;
                }
                Ok(_) => {}
                Err(e) => tracing::error!(task_id = %task.id, error = %e, "recovering task failed"),
            }
        }
        Ok(settled)
    }

    pub fn jwks(&self) -> Value {
        self.ports.signer.jwks()
    }

    /// Drafts a candidate map from what the site publishes: an OpenAPI document at one of the
    /// usual places, and the forms of its home page and the same-site pages it links to (at
    /// most 10 pages). Everything is fetched through the guarded client with robots.txt
    /// honoured. The draft is stored as a candidate: nothing learned runs before a person
    /// publishes it.
    pub async fn learn(&self, domain: &str, base_url: &str) -> anyhow::Result<Learned> {
        let domain = Domain::parse(domain)?;
        let base = base_url.trim_end_matches('/');
        let mut notes = Vec::new();
        let fetch = |url: String| {
            let fetcher = self.ports.fetcher.clone();
            async move {
                fetcher
                    .fetch(&svc_ports::FetchRequest {
                        url,
                        respect_robots: true,
                        accept: None,
                    })
                    .await
            }
        };
        let mut openapi = None;
        for path in LEARN_OPENAPI_PATHS {
            let url = format!("{base}{path}");
            match fetch(url.clone()).await {
                Ok(page) if page.status == 200 => match serde_json::from_str::<Value>(&page.body) {
                    Ok(doc) if doc.get("openapi").is_some() || doc.get("swagger").is_some() => {
                        notes.push(format!("OpenAPI document found at {url}"));
                        openapi = Some(doc);
                        break;
                    }
                    _ => notes.push(format!("{url} is not an OpenAPI document")),
                },
                Ok(_) => {}
                Err(e @ FetchError::Refused(_)) => {
                    return Err(anyhow::Error::new(e).context(format!("learning {domain}")));
                }
                Err(e) => notes.push(format!("{url}: {e}")),
            }
        }
        let mut forms = Vec::new();
        let mut queue = vec![format!("{base}/")];
        let mut seen = std::collections::HashSet::new();
        while let Some(url) = queue.pop() {
            if seen.len() >= LEARN_MAX_PAGES || !seen.insert(url.clone()) {
                continue;
            }
            let page = match fetch(url.clone()).await {
                Ok(p) if p.status == 200 => p,
                Ok(p) => {
                    notes.push(format!("{url}: HTTP {}", p.status));
                    continue;
                }
                Err(e) => {
                    notes.push(format!("{url}: {e}"));
                    continue;
                }
            };
            let options = svc_ports::ExtractOptions {
                main_content_only: false,
                ..Default::default()
            };
            let extractor = self.ports.extractor.clone();
            let (body, final_url) = (page.body, page.final_url);
            let extraction =
                tokio::task::spawn_blocking(move || extractor.extract(&body, &final_url, &options))
                    .await
                    .context("extraction task")??;
            forms.extend(extraction.forms);
            if seen.len() == 1 {
                // Same-site links of the home page, nearest first.
                for link in extraction
                    .links
                    .iter()
                    .filter(|l| l.same_site && l.url.starts_with(base))
                    .rev()
                {
                    let url = link.url.split('#').next().unwrap_or_default().to_owned();
                    if !seen.contains(&url) {
                        queue.insert(0, url);
                    }
                }
            }
        }
        notes.push(format!(
            "{} pages read, {} forms found",
            seen.len().min(LEARN_MAX_PAGES),
            forms.len()
        ));
        let draft = super::learn::draft_map(&super::learn::LearnInput {
            domain: &domain,
            base_url: base,
            openapi: openapi.as_ref(),
            forms: &forms,
        })?;
        notes.extend(draft.skipped);
        let map = self.import_map(&draft.document, "learned").await?;
        Ok(Learned { map, notes })
    }
}

const LEARN_OPENAPI_PATHS: &[&str] = &[
    "/openapi.json",
    "/.well-known/openapi.json",
    "/api/openapi.json",
    "/swagger.json",
];
const LEARN_MAX_PAGES: usize = 10;

/// A learned candidate map and what the learning saw or skipped.
#[derive(Debug)]
pub struct Learned {
    pub map: AgentMap,
    pub notes: Vec<String>,
}

/// The problem body of a failed, settled execution: the catalog fields plus the task and its
/// artifact.
fn failure_body(class: FailureClass, detail: &str, task: &TaskRecord, artifact: &Value) -> Value {
    json!({
        "type": format!("/problems/{}", class.as_str()),
        "title": class.title(),
        "status": class.http_status(),
        "detail": detail,
        "failure_class": class.as_str(),
        "retryable": class.retryable(),
        "hint": class.hint(),
        "task_id": task.id.as_str(),
        "credits_refunded": task.cost,
        "artifact": artifact,
    })
}

/// What a payment artifact's evidence says about the money: always the spend (and whether it
/// was given back); on completion, when the authority asks for one, a receipt with the site's
/// payment id.
fn payment_evidence(
    evidence: &mut Value,
    p: &PaymentContext,
    observed: &Observed,
    at: DateTime<Utc>,
) {
    let Some(map) = evidence.as_object_mut() else {
        return;
    };
    map.insert(
        "payment".into(),
        json!({
            "authority_id": p.spend.authority_id.as_str(),
            "amount": p.spend.amount,
            "currency": p.spend.currency.as_str(),
            "scope": p.spend.scope,
            "spend": if !observed.completed && observed.nothing_happened {
                "released"
            } else {
                "spent"
            },
        }),
    );
    if observed.completed
        && p.verification_required
        && let Some((action, params)) = &p.confirm
    {
        map.insert(
            "confirm".into(),
            json!({"action": action, "params": params}),
        );
    }
    if observed.completed && p.receipt_required {
        let payment_id = p
            .reference
            .as_deref()
            .and_then(|r| observed.result.get(r))
            .cloned()
            .unwrap_or(Value::Null);
        map.insert(
            "receipt".into(),
            json!({
                "authority_id": p.spend.authority_id.as_str(),
                "amount": p.spend.amount,
                "currency": p.spend.currency.as_str(),
                "payment_id": payment_id,
                "paid_at": at,
            }),
        );
    }
}

/// The refusal of a spend, with a detail naming the reason (and what remains when over it).
fn refused(reason: AuthorityRefusal, spend: Option<&AuthoritySpend>) -> ExecuteRefusal {
    let detail = match (&reason, spend) {
        (AuthorityRefusal::OverLimit { remaining }, Some(s)) => format!(
            "payment authority refused (over_limit): {} {} asked, {remaining} {} remaining in the current window",
            s.amount, s.currency, s.currency
        ),
        _ => format!("payment authority refused ({}): {reason}", reason.code()),
    };
    ExecuteRefusal::PaymentAuthorityRefused { reason, detail }
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

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::actions::HttpMethod;

    fn action(request: Value) -> ActionSpec {
        serde_json::from_value(json!({
            "name": "place_order",
            "description": "Order.",
            "family": "order",
            "params_schema": {"type": "object"},
            "consequential": true,
            "request": request,
            "verify": {"status": [201]},
            "output_schema": {"type": "object"}
        }))
        .unwrap()
    }

    #[test]
    fn requests_fill_paths_encoded_and_json_bodies_typed() {
        let a = action(json!({
            "method": "POST",
            "path": "/orders/{sku}?note={note}",
            "headers": {"X-Ref": "ref-{sku}"},
            "body": {"type": "json", "value": {"sku": "{sku}", "quantity": "{qty}", "label": "qty {qty}"}}
        }));
        let params = json!({"sku": "a b/c", "qty": 3, "note": "x&y"});
        let r = build_request("https://shop.example.com", &a, params.as_object().unwrap());
        assert_eq!(r.method, HttpMethod::Post);
        assert_eq!(r.url, "https://shop.example.com/orders/a+b%2Fc?note=x%26y");
        assert_eq!(
            r.headers,
            vec![("X-Ref".to_owned(), "ref-a b/c".to_owned())]
        );
        let (ct, body) = r.body.unwrap();
        assert_eq!(ct, "application/json");
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"sku": "a b/c", "quantity": 3, "label": "qty 3"})
        );
    }

    #[test]
    fn form_bodies_are_urlencoded_and_headers_cannot_break_lines() {
        let a = action(json!({
            "method": "POST",
            "path": "/contact",
            "headers": {"X-Name": "{name}"},
            "body": {"type": "form", "fields": {"message": "{text}"}}
        }));
        let params = json!({"text": "hi & bye", "name": "a\r\nInjected: 1"});
        let r = build_request("https://x.example", &a, params.as_object().unwrap());
        assert_eq!(r.headers[0].1, "a  Injected: 1");
        let (ct, body) = r.body.unwrap();
        assert_eq!(ct, "application/x-www-form-urlencoded");
        assert_eq!(String::from_utf8(body).unwrap(), "message=hi+%26+bye");
    }

    #[test]
    fn fingerprints_ignore_key_order() {
        assert_eq!(
            sorted_json(&json!({"b": 1, "a": {"d": [1, {"y": 2, "x": 1}], "c": null}})),
            sorted_json(&json!({"a": {"c": null, "d": [1, {"x": 1, "y": 2}]}, "b": 1}))
        );
        assert_ne!(
            sorted_json(&json!({"a": 1})),
            sorted_json(&json!({"a": "1"}))
        );
    }
}
