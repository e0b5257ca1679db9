//! The steps a task runs, by its `task_type`: the email-code signup (no key needed), and, with
//! the caller's API key (`Authorization: Bearer svc_...`, checked as on every face), reading a
//! page, discovering a domain's actions and executing one. Each answers an [`Outcome`]: the
//! task's final state, a sentence for its status message and the data of its artifact.

use poem_openapi::types::{ParseFromJSON, ToJSON};
use serde_json::{Value, json};
use svc_ports::{AccountId, ChallengePurpose, ClientAddress, FailureClass};
use svc_services::{ExecuteRequest, Principal, SignupKey, telemetry::Face};

use kit::context::AppContext;
use kit::errors::read_problem;
use kit::limits::RateLimits;
use kit::problem::ApiProblem;
use kit::wire::{actions::discover_json, read::ReadBody, read::ReadResult};

use crate::TaskState;

/// Every task type, as the card's skills name them.
pub(crate) const TASK_TYPES: [&str; 5] = [
    "start_api_key_signup",
    "complete_api_key_signup",
    "read_page",
    "discover_actions",
    "execute_action",
];

/// Who sent the request: the address the limits count and the credential it carried.
#[derive(Clone)]
pub(crate) struct Caller {
    pub ip: Option<ClientAddress>,
    pub authorization: Option<String>,
    pub limits: Option<RateLimits>,
}

impl Caller {
    /// The caller's key, checked like a REST request's: store, then the per-key limit.
    pub async fn principal(&self, ctx: &AppContext) -> Result<Principal, ApiProblem> {
        let principal = ctx
            .services
            .auth
            .authenticate_header(self.authorization.as_deref())
            .await
            .map_err(ApiProblem::from)?;
        if let Some(limits) = &self.limits {
            limits.check_key(&principal.key.id)?;
        }
        Ok(principal)
    }

    /// The account of the caller's key, if it carries a valid one.
    pub async fn account(&self, ctx: &AppContext) -> Option<AccountId> {
        self.authorization.as_ref()?;
        self.principal(ctx).await.ok().map(|p| p.account.id)
    }
}

/// What one step produced.
pub(crate) struct Outcome {
    pub state: TaskState,
    pub summary: String,
    pub data: Value,
    /// The data without secrets, as `GetTask` shows it later.
    pub stored_data: Value,
}

fn problem_outcome(problem: &ApiProblem, rejected: bool) -> Outcome {
    let body = problem.body().to_json().unwrap_or(Value::Null);
    Outcome {
        state: if rejected {
            TaskState::Rejected
        } else {
            TaskState::Failed
        },
        summary: problem.detail.clone(),
        data: body.clone(),
        stored_data: body,
    }
}

fn str_field<'a>(input: &'a Value, names: &[&str]) -> Option<&'a str> {
    names
        .iter()
        .find_map(|n| input.get(*n).and_then(Value::as_str))
}

/// Runs the step a task's input names.
pub(crate) async fn run_step(ctx: &AppContext, input: &Value, caller: &Caller) -> Outcome {
    let identity = &ctx.services.identity;
    let ip = caller.ip;
    match str_field(input, &["task_type", "taskType"]) {
        Some("read_page") => read_page(ctx, input, caller).await,
        Some("discover_actions") => discover_actions(ctx, input, caller).await,
        Some("execute_action") => execute_action(ctx, input, caller).await,
        Some("start_api_key_signup") => {
            let Some(email) = str_field(input, &["email"]) else {
                return problem_outcome(
                    &ApiProblem::new(
                        svc_ports::FailureClass::InvalidRequest,
                        "`email` is required",
                    ),
                    true,
                );
            };
            let agent_name = str_field(input, &["agent_name", "agentName"]);
            let scope = str_field(input, &["scope"]);
            match identity
                .start_email(
                    ChallengePurpose::ApiKey,
                    email,
                    agent_name,
                    scope,
                    svc_services::telemetry::Face::A2a,
                )
                .await
            {
                Ok(id) => {
                    let data = json!({
                        "task_type": "start_api_key_signup",
                        "deviceId": id.as_str(),
                        "expires_in": identity.settings().email_code_ttl.as_secs(),
                        "max_attempts": svc_ports::identity::MAX_CODE_ATTEMPTS,
                        "next": "Ask the human for the 6-digit code from the email, then send task_type complete_api_key_signup with deviceId and code.",
                    });
                    Outcome {
                        state: TaskState::Completed,
                        summary: "A 6-digit code was sent to the address; ask the human for it."
                            .into(),
                        stored_data: data.clone(),
                        data,
                    }
                }
                Err(e) => problem_outcome(&ApiProblem::from(e), false),
            }
        }
        Some("complete_api_key_signup") => {
            let (Some(device_id), Some(code)) = (
                str_field(input, &["deviceId", "device_id"]),
                str_field(input, &["code"]),
            ) else {
                return problem_outcome(
                    &ApiProblem::new(
                        svc_ports::FailureClass::InvalidRequest,
                        "`deviceId` and `code` are required",
                    ),
                    true,
                );
            };
            match identity.verify_api_key_code(device_id, code, ip).await {
                Ok(key) => key_outcome(key),
                Err(e) => problem_outcome(&ApiProblem::from(e), false),
            }
        }
        other => problem_outcome(
            &ApiProblem::new(
                svc_ports::FailureClass::InvalidRequest,
                format!(
                    "unknown task_type {}; use one of {}",
                    other
                        .map(|o| format!("`{o}`"))
                        .unwrap_or_else(|| "(none)".into()),
                    TASK_TYPES.join(", ")
                ),
            ),
            true,
        ),
    }
}

fn key_outcome(key: SignupKey) -> Outcome {
    let stored = json!({
        "task_type": "complete_api_key_signup",
        "key_prefix": key.record.prefix.as_str(),
        "scope": key.record.scopes.to_list_string(),
        "account_id": key.account.id.as_str(),
        "welcome_message": key.welcome_message,
        "api_key_shown_once": true,
    });
    let mut data = stored.clone();
    data["api_key"] = json!(key.secret.expose());
    data["mcp_setup_command"] = json!(key.mcp_setup_command);
    Outcome {
        state: TaskState::Completed,
        summary: "Signed up: store api_key securely and send welcome_message to the human.".into(),
        data,
        stored_data: stored,
    }
}

/// A refusal before anything ran (the caller can fix it and send again) is `rejected`; a step
/// that ran and failed is `failed`.
fn refused(problem: &ApiProblem) -> Outcome {
    problem_outcome(problem, problem.class.http_status() < 500)
}

fn invalid(detail: impl Into<String>) -> Outcome {
    refused(&ApiProblem::new(FailureClass::InvalidRequest, detail))
}

/// The input without its task type: the body the step's REST twin takes.
fn body_of(input: &Value) -> Value {
    let mut body = input.clone();
    if let Some(fields) = body.as_object_mut() {
        fields.remove("task_type");
        fields.remove("taskType");
    }
    body
}

async fn read_page(ctx: &AppContext, input: &Value, caller: &Caller) -> Outcome {
    let principal = match caller.principal(ctx).await {
        Ok(p) => p,
        Err(problem) => return refused(&problem),
    };
    let body = body_of(input);
    if let Some(at) = kit::json_body::not_a_string::<ReadBody>(&body) {
        return invalid(format!("`{at}` must be a string"));
    }
    let body = match ReadBody::parse_from_json(Some(body)) {
        Ok(b) => b,
        Err(e) => return invalid(e.into_message()),
    };
    match ctx
        .services
        .read
        .read_for(&principal, &body.into_request())
        .await
    {
        Ok(outcome) => {
            let result = ReadResult::from(outcome);
            let summary = match &result {
                ReadResult::Page(_) => "Read: the page's content is in the artifact.",
                ReadResult::Blocked(_) => {
                    "Not readable: the artifact says why (outcome blocked, with a reason)."
                }
            };
            let data = result.to_json().unwrap_or(Value::Null);
            Outcome {
                state: TaskState::Completed,
                summary: summary.into(),
                stored_data: data.clone(),
                data,
            }
        }
        Err(e) => refused(&read_problem(e)),
    }
}

async fn discover_actions(ctx: &AppContext, input: &Value, caller: &Caller) -> Outcome {
    let principal = match caller.principal(ctx).await {
        Ok(p) => p,
        Err(problem) => return refused(&problem),
    };
    let Some(domain) = input.get("domain").and_then(Value::as_str) else {
        return invalid("`domain` is required and must be a string");
    };
    match ctx
        .services
        .actions
        .discover(&principal, domain, Face::A2a)
        .await
    {
        Ok(map) => {
            let data = discover_json(&map);
            Outcome {
                state: TaskState::Completed,
                summary: format!(
                    "The actions of {domain} are in the artifact; call execute_action with a name and params exactly as given."
                ),
                stored_data: data.clone(),
                data,
            }
        }
        Err(e) => refused(&ApiProblem::from(e)),
    }
}

/// The optional string field named `snake` (or its A2A 1.0 spelling `camel`): absent (or null)
/// is `None`; any other type, or both spellings at once, is an error.
fn optional_str(input: &Value, snake: &str, camel: &str) -> Result<Option<String>, Outcome> {
    let read = |name: &str| match input.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("`{name}` must be a string"))),
    };
    match (read(snake)?, read(camel)?) {
        (Some(_), Some(_)) => Err(invalid(format!(
            "`{snake}` and `{camel}` are one field: give it once"
        ))),
        (one, other) => Ok(one.or(other)),
    }
}

/// What an `execute_action` task may carry. Anything else is refused, as MCP's `execute`
/// refuses it: a field read as nothing (`idempotencyKey` once was) loses what it meant, and a
/// retry was charged again.
const EXECUTE_FIELDS: &[&str] = &[
    "task_type",
    "taskType",
    "domain",
    "action",
    "params",
    "idempotency_key",
    "idempotencyKey",
    "authority_id",
    "authorityId",
];

async fn execute_action(ctx: &AppContext, input: &Value, caller: &Caller) -> Outcome {
    let principal = match caller.principal(ctx).await {
        Ok(p) => p,
        Err(problem) => return refused(&problem),
    };
    let request = (|| {
        if let Some(unknown) = input
            .as_object()
            .and_then(|o| o.keys().find(|k| !EXECUTE_FIELDS.contains(&k.as_str())))
        {
            return Err(invalid(format!(
                "unknown field `{unknown}`; execute_action takes domain, action, params, idempotency_key and authority_id"
            )));
        }
        let (Some(domain), Some(action)) = (
            input.get("domain").and_then(Value::as_str),
            input.get("action").and_then(Value::as_str),
        ) else {
            return Err(invalid("`domain` and `action` are required strings"));
        };
        let params = match input.get("params") {
            None | Some(Value::Null) => json!({}),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => return Err(invalid("`params` must be an object")),
        };
        Ok(ExecuteRequest {
            domain: domain.to_owned(),
            action: action.to_owned(),
            params,
            idempotency_key: optional_str(input, "idempotency_key", "idempotencyKey")?,
            authority_id: optional_str(input, "authority_id", "authorityId")?,
        })
    })();
    let request = match request {
        Ok(r) => r,
        Err(outcome) => return outcome,
    };
    match ctx
        .services
        .actions
        .execute(&principal, request, Face::A2a)
        .await
    {
        Ok(executed) => {
            let (state, summary) = if executed.completed {
                (
                    TaskState::Completed,
                    "Completed and verified: the typed result and its signed artifact are in the artifact part.".to_owned(),
                )
            } else {
                let detail = executed.body["detail"]
                    .as_str()
                    .unwrap_or("The action failed.");
                (TaskState::Failed, format!("{detail} Nothing was charged."))
            };
            Outcome {
                state,
                summary,
                stored_data: executed.body.clone(),
                data: executed.body,
            }
        }
        Err(e) => refused(&ApiProblem::from(e)),
    }
}
