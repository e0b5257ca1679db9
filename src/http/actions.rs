//! `GET`/`POST /api/discover`, `POST /api/execute` and `GET /api/tasks/{task_id}`. The wire
//! types here are also the JSON of the MCP tools `discover`, `list_actions` and `execute`.

use poem_openapi::{
    ApiResponse, Enum, Object, OpenApi,
    param::{Header, Path, Query},
    payload::Json,
    types::{ParseFromJSON, ToJSON},
};
use serde_json::Value;
use svc_ports::{ActionSpec, AgentMap, FailureClass, TaskRecord};

use super::{
    Tags,
    auth::ApiKeyAuth,
    problem::{ApiProblem, NextActionKind},
    types::{NullableString, StrictString},
};
use crate::{
    context::AppContext,
    services::{ExecuteRefusal, ExecuteRequest, Executed, Principal, TaskVerified, VerifyRefusal},
};

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

#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct DiscoverBody {
    /// The site's host name, e.g. `shop.example.com`.
    #[oai(validator(min_length = 1, max_length = 253))]
    pub domain: StrictString,
}

#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct ExecuteBody {
    /// The site's host name, as discover returned it.
    #[oai(validator(min_length = 1, max_length = 253))]
    pub domain: StrictString,
    /// Exact action name from discover.
    #[oai(validator(min_length = 1, max_length = 64))]
    pub action: StrictString,
    /// Parameters keyed exactly as discover lists them.
    pub params: Value,
    /// For actions that pay (discover shows their `payment`): the `pa_...` id of a payment
    /// authority the human created on the site. Other actions ignore it.
    #[oai(validator(min_length = 1, max_length = 64))]
    pub authority_id: Option<StrictString>,
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

const REPLAYED: &str = "true";

#[derive(ApiResponse)]
pub enum DiscoverResponse {
    /// The domain's published actions.
    #[oai(status = 200)]
    Ok(Json<DiscoverResult>),
}

#[allow(clippy::large_enum_variant)]
#[derive(ApiResponse)]
pub enum ExecuteResponse {
    /// Completed and verified: charged, with its typed result and artifact.
    #[oai(status = 200)]
    Completed(
        Json<ExecutionResult>,
        /// `true` when this answer is the stored one for a repeated `Idempotency-Key`.
        #[oai(header = "Idempotent-Replayed")]
        Option<String>,
    ),
    /// The site did not confirm the action, answered garbage or was unreachable: refunded.
    #[oai(status = 502, content_type = "application/problem+json")]
    Failed(
        Json<ExecutionFailure>,
        #[oai(header = "Idempotent-Replayed")] Option<String>,
    ),
    /// The site timed out: refunded.
    #[oai(status = 504, content_type = "application/problem+json")]
    TimedOut(
        Json<ExecutionFailure>,
        #[oai(header = "Idempotent-Replayed")] Option<String>,
    ),
}

#[derive(ApiResponse)]
pub enum TaskResponse {
    #[oai(status = 200)]
    Ok(Json<TaskView>),
}

#[derive(ApiResponse)]
pub enum VerifyTaskResponse {
    /// Verified now, or before (the stored verification, unchanged).
    #[oai(status = 200)]
    Verified(Json<TaskVerification>),
}

impl From<VerifyRefusal> for ApiProblem {
    fn from(e: VerifyRefusal) -> Self {
        let detail = e.to_string();
        match e {
            VerifyRefusal::NotFound => ApiProblem::new(
                FailureClass::NotFound,
                "No task of this account has that id.",
            ),
            VerifyRefusal::NotVerifiable(_) => ApiProblem::new(FailureClass::NotVerifiable, detail),
            VerifyRefusal::Pending { .. } => {
                ApiProblem::new(FailureClass::VerificationPending, detail)
                    .retry_after(std::time::Duration::from_secs(30))
            }
            VerifyRefusal::Refused(e) => e.into(),
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

impl From<ExecuteRefusal> for ApiProblem {
    fn from(e: ExecuteRefusal) -> Self {
        let detail = e.to_string();
        match e {
            ExecuteRefusal::UnknownDomain(_) => {
                ApiProblem::new(FailureClass::UnknownDomain, detail)
            }
            ExecuteRefusal::UnknownAction { .. } => {
                ApiProblem::new(FailureClass::UnknownAction, detail)
            }
            ExecuteRefusal::InvalidParams(_) | ExecuteRefusal::BadIdempotencyKey(_) => {
                ApiProblem::new(FailureClass::InvalidRequest, detail)
            }
            ExecuteRefusal::MissingScopes { consequential, .. } => {
                let p = ApiProblem::new(FailureClass::InsufficientScope, detail);
                if consequential {
                    p.next_action(NextActionKind::Approve, None)
                } else {
                    p
                }
            }
            ExecuteRefusal::ConnectionRequired { .. } => {
                ApiProblem::new(FailureClass::ConnectionRequired, detail)
                    .next_action(NextActionKind::Connect, None)
            }
            ExecuteRefusal::ConnectionExpired { .. } => {
                ApiProblem::new(FailureClass::ConnectionExpired, detail)
                    .next_action(NextActionKind::Connect, None)
            }
            ExecuteRefusal::ConnectionProviderUnavailable { .. } => {
                ApiProblem::new(FailureClass::ConnectionProviderUnavailable, detail)
                    .retry_after(std::time::Duration::from_secs(30))
            }
            ExecuteRefusal::PaymentAuthorityRequired { account_url, .. } => {
                ApiProblem::new(FailureClass::PaymentAuthorityRequired, detail)
                    .next_action(NextActionKind::Approve, Some(account_url))
            }
            ExecuteRefusal::PaymentAuthorityRefused { reason, .. } => {
                let class = if reason == svc_ports::AuthorityRefusal::InvalidAmount {
                    FailureClass::InvalidRequest
                } else {
                    FailureClass::PaymentAuthorityRefused
                };
                ApiProblem::new(class, detail)
            }
            ExecuteRefusal::InsufficientCredits { .. } => {
                ApiProblem::new(FailureClass::InsufficientCredits, detail)
                    .next_action(NextActionKind::TopUp, None)
            }
            ExecuteRefusal::InFlight { .. } => {
                ApiProblem::new(FailureClass::IdempotencyInFlight, detail)
                    .retry_after(std::time::Duration::from_secs(1))
            }
            ExecuteRefusal::KeyConflict { .. } => {
                ApiProblem::new(FailureClass::IdempotencyConflict, detail)
            }
            ExecuteRefusal::Internal(e) => ApiProblem::internal(format!("{e:#}")),
        }
    }
}

/// The settled answer as the typed REST response (the same JSON either way).
pub fn execute_response(executed: Executed) -> Result<ExecuteResponse, ApiProblem> {
    let replayed = executed.replayed.then(|| REPLAYED.to_owned());
    if executed.completed {
        let body = ExecutionResult::parse_from_json(Some(executed.body))
            .map_err(|e| ApiProblem::internal(e.into_message()))?;
        return Ok(ExecuteResponse::Completed(Json(body), replayed));
    }
    let body = ExecutionFailure::parse_from_json(Some(executed.body))
        .map_err(|e| ApiProblem::internal(e.into_message()))?;
    Ok(if executed.status == 504 {
        ExecuteResponse::TimedOut(Json(body), replayed)
    } else {
        ExecuteResponse::Failed(Json(body), replayed)
    })
}

pub struct ActionsApi {
    pub ctx: AppContext,
}

impl ActionsApi {
    async fn discover(
        &self,
        principal: &Principal,
        domain: &str,
    ) -> Result<DiscoverResponse, ApiProblem> {
        require_scope(principal, "discover")?;
        let map = self.ctx.services.actions.published(domain).await?;
        self.ctx.services.telemetry.record(
            crate::services::telemetry::FunnelStep::of_account(
                crate::services::telemetry::Face::Rest,
                "capability_read",
                "discover",
                &principal.account.id,
            )
            .capability("discover"),
        );
        Ok(DiscoverResponse::Ok(Json(DiscoverResult::from(
            map.as_ref(),
        ))))
    }
}

#[OpenApi(tag = "Tags::Actions")]
impl ActionsApi {
    /// Discover a domain's actions
    ///
    /// The published Agent Map of a domain: exact action names, parameter keys and types,
    /// auth provider, whether each is consequential, the scopes and the credits it needs.
    #[oai(path = "/api/discover", method = "get")]
    async fn discover_get(
        &self,
        auth: ApiKeyAuth,
        /// The site's host name, e.g. `shop.example.com`.
        #[oai(validator(min_length = 1, max_length = 253))]
        domain: Query<String>,
    ) -> Result<DiscoverResponse, ApiProblem> {
        self.discover(&auth.0, &domain.0).await
    }

    /// Discover a domain's actions (JSON body)
    #[oai(path = "/api/discover", method = "post")]
    async fn discover_post(
        &self,
        auth: ApiKeyAuth,
        body: Json<DiscoverBody>,
    ) -> Result<DiscoverResponse, ApiProblem> {
        self.discover(&auth.0, body.domain.as_str()).await
    }

    /// Execute one mapped action
    ///
    /// Runs the action through the guarded client and verifies the outcome by the map's rules.
    /// Completed: about one credit (the action's cost) is charged and the typed result comes
    /// with a signed artifact. Failed: refunded, with a problem and an artifact of the failure.
    /// The same `Idempotency-Key` (at most 255 characters, kept 24 h) never charges twice: a
    /// repeat returns the stored answer with `Idempotent-Replayed: true`, 409 while the first
    /// runs, 422 for a different request under the same key.
    #[oai(path = "/api/execute", method = "post")]
    async fn execute(
        &self,
        auth: ApiKeyAuth,
        body: Json<ExecuteBody>,
        /// Makes retries safe: the same key is the same billing task.
        #[oai(name = "Idempotency-Key")]
        idempotency_key: Header<Option<String>>,
    ) -> Result<ExecuteResponse, ApiProblem> {
        let request = ExecuteRequest {
            domain: body.domain.as_str().to_owned(),
            action: body.action.as_str().to_owned(),
            authority_id: body.authority_id.as_ref().map(|a| a.as_str().to_owned()),
            params: body.0.params,
            idempotency_key: idempotency_key.0,
        };
        let executed = self.ctx.services.actions.execute(&auth.0, request).await?;
        if !executed.replayed {
            self.ctx.services.telemetry.record_execution(
                crate::services::telemetry::Face::Rest,
                &auth.0.account.id,
                executed.completed,
                &executed.body,
            );
        }
        execute_response(executed)
    }

    /// A task and its artifact
    #[oai(path = "/api/tasks/:task_id", method = "get")]
    async fn task(
        &self,
        auth: ApiKeyAuth,
        /// `task_...` as execute returned it.
        task_id: Path<String>,
    ) -> Result<TaskResponse, ApiProblem> {
        match self.ctx.services.actions.task(&auth.0, &task_id.0).await {
            Ok(Some(t)) => Ok(TaskResponse::Ok(Json(TaskView::from_record(&t)))),
            Ok(None) => Err(ApiProblem::new(
                FailureClass::NotFound,
                "No task of this account has that id.",
            )),
            Err(e) => Err(ApiProblem::internal(format!("{e:#}"))),
        }
    }

    /// Verify a payment's business outcome
    ///
    /// For a task of this account settled with a `payment_completed` artifact (a payment under
    /// an authority with `verification_required`): runs the payment action's confirm read
    /// through the guarded client and the map's rules, and when they hold stores and returns a
    /// second signed artifact with status `verified` (the original stays as it is). Not a new
    /// billing task: nothing is charged. Repeating it returns the stored verification. 409
    /// `verification_pending` (retryable, nothing stored) when the site does not confirm the
    /// outcome yet; 409 `not_verifiable` for any other task; 404 for another account's task.
    #[oai(path = "/api/tasks/:task_id/verify", method = "post")]
    async fn verify_task(
        &self,
        auth: ApiKeyAuth,
        /// `task_...` as execute returned it.
        task_id: Path<String>,
    ) -> Result<VerifyTaskResponse, ApiProblem> {
        let verified = self
            .ctx
            .services
            .actions
            .verify_task(&auth.0, &task_id.0)
            .await?;
        Ok(VerifyTaskResponse::Verified(Json(verification_view(
            &verified,
        )?)))
    }
}

/// JSON of the discover answer (MCP tools return the same).
pub fn discover_json(map: &AgentMap) -> Value {
    DiscoverResult::from(map).to_json().unwrap_or_default()
}
