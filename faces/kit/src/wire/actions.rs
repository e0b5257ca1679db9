//! `GET`/`POST /api/discover`, `POST /api/execute` and `GET /api/tasks/{task_id}`. The wire
//! types here are also the JSON of the MCP tools `discover`, `list_actions` and `execute`.

use crate::{problem::*, wire::types::*};
use poem_openapi::{
    Enum, Object,
    types::{ParseFromJSON, ToJSON},
};
use serde_json::Value;
use svc_ports::{ActionSpec, AgentMap, FailureClass, TaskRecord};
use svc_services::{Principal, TaskVerified};

/// One parameter of an action, as `params` must carry it.
#[derive(Debug, Clone, Object)]
pub struct ParamKey {
    /// The exact key in `params`.
    pub name: String,
    /// JSON type (`string`, `integer`, `number`, `boolean`, `array`, `object`).
    #[oai(rename = "type")]
    pub param_type: String,
    pub required: bool,
    #[oai(skip_serializing_if_is_none)]
    pub description: Option<String>,
}

/// One action of a published map.
#[derive(Debug, Clone, Object)]
pub struct ActionInfo {
    /// Exact name to pass as `action`.
    pub name: String,
    pub description: String,
    /// Its family in `/.well-known/action-catalog.json`.
    pub family: String,
    pub params: Vec<ParamKey>,
    /// The full JSON Schema `params` is validated against.
    pub params_schema: Value,
    /// The connection provider the action needs (exactly this id for `svc_start_connection`),
    /// or null when it needs none.
    pub auth_provider: NullableString,
    /// Whether it changes something that matters; then the key needs `execute:consequential`.
    pub consequential: bool,
    /// Every scope the key must carry to run it.
    pub scopes: Vec<String>,
    /// Credits charged when it completes (refunded when it fails).
    pub cost: i64,
    /// JSON Schema of `result` when it completes.
    pub output_schema: Value,
    /// Present on actions that pay money: they need a payment authority (`authority_id`).
    #[oai(skip_serializing_if_is_none)]
    pub payment: Option<PaymentInfo>,
}

/// What a payment action pays, and where the amount comes from.
#[derive(Debug, Clone, Object)]
pub struct PaymentInfo {
    /// JSON pointer into `params` to the amount (an integer in minor units).
    pub amount: String,
    /// Lowercase ISO 4217 code; the authority must be in this currency.
    pub currency: String,
}

impl From<&ActionSpec> for ActionInfo {
    fn from(a: &ActionSpec) -> Self {
        let required: Vec<&str> = a
            .params_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let params = a
            .params_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, schema)| ParamKey {
                        name: name.clone(),
                        param_type: schema
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("any")
                            .to_owned(),
                        required: required.contains(&name.as_str()),
                        description: schema
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            name: a.name.clone(),
            description: a.description.clone(),
            family: a.family.as_str().to_owned(),
            params,
            params_schema: a.params_schema.clone(),
            auth_provider: NullableString(a.auth_provider.clone()),
            consequential: a.consequential,
            scopes: a.required_scopes(),
            cost: a.cost,
            output_schema: a.output_schema.clone(),
            payment: a.payment.as_ref().map(|p| PaymentInfo {
                amount: p.amount.clone(),
                currency: p.currency.to_string(),
            }),
        }
    }
}

/// The published actions of a domain.
#[derive(Debug, Clone, Object)]
pub struct DiscoverResult {
    pub domain: String,
    /// Version of the published Agent Map.
    pub map_version: u32,
    pub description: String,
    pub actions: Vec<ActionInfo>,
}

impl From<&AgentMap> for DiscoverResult {
    fn from(m: &AgentMap) -> Self {
        Self {
            domain: m.document.domain.to_string(),
            map_version: m.version,
            description: m.document.description.clone(),
            actions: m.document.actions.iter().map(ActionInfo::from).collect(),
        }
    }
}

/// One domain with a published Agent Map.
#[derive(Debug, Clone, Object)]
pub struct SupportedDomain {
    /// The site's host name, as `discover` takes it.
    pub domain: String,
    pub description: String,
    /// Version of the published Agent Map.
    pub map_version: u32,
    /// How many actions it publishes.
    pub actions: u32,
}

/// The domains `discover` and `execute` accept.
#[derive(Debug, Clone, Object)]
pub struct SupportedDomains {
    pub domains: Vec<SupportedDomain>,
}

impl SupportedDomains {
    pub fn of(maps: &[AgentMap]) -> Self {
        Self {
            domains: maps
                .iter()
                .map(|m| SupportedDomain {
                    domain: m.document.domain.to_string(),
                    description: m.document.description.clone(),
                    map_version: m.version,
                    actions: u32::try_from(m.document.actions.len()).unwrap_or(u32::MAX),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct DiscoverBody {
    /// The site's host name, e.g. `shop.example.com`.
    #[oai(validator(min_length = 1, max_length = 253))]
    pub domain: String,
}

#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct ExecuteBody {
    /// The site's host name, as discover returned it.
    #[oai(validator(min_length = 1, max_length = 253))]
    pub domain: String,
    /// Exact action name from discover.
    #[oai(validator(min_length = 1, max_length = 64))]
    pub action: String,
    /// Parameters keyed exactly as discover lists them.
    pub params: Value,
    /// For actions that pay (discover shows their `payment`): the `pa_...` id of a payment
    /// authority the human created on the site. Other actions ignore it.
    #[oai(validator(min_length = 1, max_length = 64))]
    pub authority_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ArtifactStatusDoc {
    Completed,
    Failed,
    PaymentStarted,
    PaymentCompleted,
    Verified,
}

#[derive(Debug, Clone, Object)]
pub struct ArtifactSourceDoc {
    pub domain: String,
    pub action: String,
    /// The URL the action's request went to.
    pub url: String,
}

#[derive(Debug, Clone, Object)]
pub struct ArtifactSignatureDoc {
    /// Always `EdDSA` (Ed25519).
    pub alg: String,
    /// The key's id in `/.well-known/jwks.json`.
    pub kid: String,
    /// base64url, no padding.
    pub value: String,
}

/// A signed record of what happened. The signature is Ed25519 over this object without
/// `signature`, as RFC 8785 canonical JSON; verify it with `/.well-known/jwks.json`.
#[derive(Debug, Clone, Object)]
pub struct VerificationArtifactDoc {
    pub artifact_id: String,
    pub task_id: String,
    pub source: ArtifactSourceDoc,
    /// RFC 3339, UTC, exactly as signed.
    #[oai(validator(max_length = 64))]
    pub timestamp: String,
    /// `completed` (verified business action), `failed`, `payment_started`,
    /// `payment_completed` or `verified`.
    pub status: ArtifactStatusDoc,
    /// What was observed: HTTP status, each verification rule and whether it held, hashes of
    /// the response and of the result.
    pub evidence: Value,
    /// Null when the action completed.
    pub failure_class: NullableString,
    pub signature: ArtifactSignatureDoc,
}

/// A completed action: its typed result and the artifact that proves it.
#[derive(Debug, Clone, Object)]
pub struct ExecutionResult {
    pub task_id: String,
    /// Always `completed` here; failures answer with a problem.
    pub status: String,
    pub domain: String,
    pub action: String,
    /// The typed result, matching the action's `output_schema`.
    pub result: Value,
    pub credits_charged: i64,
    pub artifact: VerificationArtifactDoc,
}

/// A settled, failed action: the problem fields, the task, the refund and the artifact.
#[derive(Debug, Clone, Object)]
pub struct ExecutionFailure {
    #[oai(rename = "type")]
    pub problem_type: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub failure_class: String,
    pub retryable: bool,
    pub hint: String,
    pub task_id: String,
    pub credits_refunded: i64,
    pub artifact: VerificationArtifactDoc,
}

/// A task: what ran, how it ended, and its artifact.
#[derive(Debug, Clone, Object)]
pub struct TaskView {
    pub task_id: String,
    /// `in_flight`, `completed` or `failed`.
    pub status: String,
    pub domain: String,
    pub action: String,
    pub cost: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
    #[oai(skip_serializing_if_is_none)]
    pub settled_at: Option<chrono::DateTime<chrono::Utc>>,
    #[oai(skip_serializing_if_is_none)]
    pub artifact: Option<VerificationArtifactDoc>,
    /// The `verified` artifact stored by `POST /api/tasks/{task_id}/verify` for a payment that
    /// settled `payment_completed`; `artifact` stays as it was.
    #[oai(skip_serializing_if_is_none)]
    pub verification: Option<VerificationArtifactDoc>,
}

/// A payment task whose business outcome was verified.
#[derive(Debug, Clone, Object)]
pub struct TaskVerification {
    pub task_id: String,
    /// Always `verified`.
    pub status: String,
    /// The signed `verified` artifact: `source.action` names the confirm action, `evidence`
    /// its URL, HTTP status, rule checks and outputs.
    pub artifact: VerificationArtifactDoc,
}

fn artifact_doc(json: Option<&str>) -> Option<VerificationArtifactDoc> {
    json.and_then(|a| serde_json::from_str::<Value>(a).ok())
        .and_then(|v| VerificationArtifactDoc::parse_from_json(Some(v)).ok())
}

impl TaskView {
    pub fn from_record(t: &TaskRecord) -> Self {
        Self {
            task_id: t.id.to_string(),
            status: t.status.as_str().to_owned(),
            domain: t.domain.clone(),
            action: t.action.clone(),
            cost: t.cost,
            created_at: t.created_at,
            settled_at: t.settled_at,
            artifact: artifact_doc(t.artifact.as_deref()),
            verification: artifact_doc(t.verified_artifact.as_deref()),
        }
    }
}

/// The verification as the typed REST response (the MCP tool returns the same JSON).
pub fn verification_view(v: &TaskVerified) -> Result<TaskVerification, ApiProblem> {
    Ok(TaskVerification {
        task_id: v.task_id.to_string(),
        status: "verified".into(),
        artifact: VerificationArtifactDoc::parse_from_json(Some(v.artifact.clone()))
            .map_err(|e| ApiProblem::internal(e.into_message()))?,
    })
}

pub fn require_scope(principal: &Principal, scope: &str) -> Result<(), ApiProblem> {
    if principal.key.scopes.contains(scope) {
        Ok(())
    } else {
        Err(ApiProblem::new(
            FailureClass::InsufficientScope,
            format!("This needs a key with the `{scope}` scope."),
        ))
    }
}

/// JSON of the discover answer (MCP tools return the same).
pub fn discover_json(map: &AgentMap) -> Value {
    DiscoverResult::from(map).to_json().unwrap_or_default()
}
