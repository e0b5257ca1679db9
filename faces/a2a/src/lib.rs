//! The A2A face: an agent card and JSON-RPC at `/a2a` for the email-code signup.
//!
//! Protocol 1.0 (`SendMessage`, `GetTask`, `CancelTask`; ProtoJSON: camelCase fields, enum
//! names like `TASK_STATE_COMPLETED`) with the 0.3 names (`message/send`, `tasks/get`,
//! `tasks/cancel`) answered in 0.3's shape, and the spec's `tasks/create` with `task_type`
//! `start_api_key_signup` / `complete_api_key_signup`. The task type and its inputs travel as a
//! data part (`{"data": {"task_type": ..., "email": ...}}`) or, for `tasks/create`, as params.
//!
//! Tasks finish within the request; they are kept in the store for an hour for `GetTask` (any
//! instance answers for a task another ran), with the API key removed (a key is shown once).
//! `SendStreamingMessage` / `message/stream` stream the same steps as server-sent task updates,
//! and `SubscribeToTask` / `tasks/resubscribe` follow or replay them (see [`stream`]). Mounted
//! at `/a2a` and `/a2a/`.

mod stream;

use poem::{
    EndpointExt, Response, handler,
    http::{StatusCode, header},
    web::Data,
};
use poem_openapi::types::ToJSON;
use serde_json::{Value, json};
use svc_ports::{ChallengePurpose, ClientAddress};

use kit::context::AppContext;
use kit::problem::ApiProblem;
use stream::Running;
use svc_services::SignupKey;

/// Which wire names the caller used; answers use the same.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    V10,
    V03,
}

#[derive(Clone, Copy)]
enum TaskState {
    Submitted,
    Working,
    Completed,
    Failed,
    Rejected,
}

impl TaskState {
    fn name(self, flavor: Flavor) -> &'static str {
        match (self, flavor) {
            (Self::Submitted, Flavor::V10) => "TASK_STATE_SUBMITTED",
            (Self::Working, Flavor::V10) => "TASK_STATE_WORKING",
            (Self::Submitted, Flavor::V03) => "submitted",
            (Self::Working, Flavor::V03) => "working",
            (Self::Completed, Flavor::V10) => "TASK_STATE_COMPLETED",
            (Self::Failed, Flavor::V10) => "TASK_STATE_FAILED",
            (Self::Rejected, Flavor::V10) => "TASK_STATE_REJECTED",
            (Self::Completed, Flavor::V03) => "completed",
            (Self::Failed, Flavor::V03) => "failed",
            (Self::Rejected, Flavor::V03) => "rejected",
        }
    }
}

struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

fn rpc_result(id: &Value, result: Value) -> Response {
    json_response(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn rpc_error(id: &Value, e: RpcError) -> Response {
    let mut error = json!({"code": e.code, "message": e.message});
    if let Some(d) = e.data {
        error["data"] = d;
    }
    json_response(json!({"jsonrpc": "2.0", "id": id, "error": error}))
}

/// JSON-RPC answers are HTTP 200, errors included: A2A clients read the code from the body.
fn json_response(v: Value) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .content_type("application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(v.to_string())
}

fn new_id(ctx: &AppContext) -> String {
    ctx.services.identity.random_token(24)
}

fn text_part(flavor: Flavor, text: &str) -> Value {
    match flavor {
        Flavor::V10 => json!({"text": text}),
        Flavor::V03 => json!({"kind": "text", "text": text}),
    }
}

fn data_part(flavor: Flavor, data: Value) -> Value {
    match flavor {
        Flavor::V10 => json!({"data": data, "mediaType": "application/json"}),
        Flavor::V03 => json!({"kind": "data", "data": data}),
    }
}

fn agent_message(
    flavor: Flavor,
    id: String,
    parts: Vec<Value>,
    task: Option<(&str, &str)>,
) -> Value {
    let mut m = match flavor {
        Flavor::V10 => json!({"messageId": id, "role": "ROLE_AGENT", "parts": parts}),
        Flavor::V03 => json!({"kind": "message", "messageId": id, "role": "agent", "parts": parts}),
    };
    if let Some((task_id, context_id)) = task {
        m["taskId"] = json!(task_id);
        m["contextId"] = json!(context_id);
    }
    m
}

/// What one signup step produced.
struct Outcome {
    state: TaskState,
    summary: String,
    data: Value,
    /// The data without secrets, as `GetTask` shows it later.
    stored_data: Value,
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

async fn run_signup_step(ctx: &AppContext, input: &Value, ip: Option<ClientAddress>) -> Outcome {
    let identity = &ctx.services.identity;
    match str_field(input, &["task_type", "taskType"]) {
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
                    "unknown task_type {}; use start_api_key_signup or complete_api_key_signup",
                    other
                        .map(|o| format!("`{o}`"))
                        .unwrap_or_else(|| "(none)".into())
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

fn task_json(
    flavor: Flavor,
    task_id: &str,
    context_id: &str,
    state: TaskState,
    status_message: Value,
    data: Value,
    history: Option<Value>,
) -> Value {
    let timestamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut task = json!({
        "id": task_id,
        "contextId": context_id,
        "status": {"state": state.name(flavor), "message": status_message, "timestamp": timestamp},
        "artifacts": [{"artifactId": format!("{task_id}-result"), "name": "result", "parts": [data_part(flavor, data)]}],
    });
    if let Some(h) = history {
        task["history"] = json!([h]);
    }
    if flavor == Flavor::V03 {
        task["kind"] = json!("task");
    }
    task
}

/// A task not yet finished: its state and the message that started it, no artifacts yet.
fn pending_task(
    flavor: Flavor,
    task_id: &str,
    context_id: &str,
    state: TaskState,
    history: Option<&Value>,
) -> Value {
    let timestamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut task = json!({
        "id": task_id,
        "contextId": context_id,
        "status": {"state": state.name(flavor), "timestamp": timestamp},
    });
    if let Some(h) = history {
        task["history"] = json!([h]);
    }
    if flavor == Flavor::V03 {
        task["kind"] = json!("task");
    }
    task
}

/// Runs one signup step as a task; answers the full task and logs the redacted one.
async fn run_task(
    ctx: &AppContext,
    flavor: Flavor,
    input: &Value,
    context_id: Option<String>,
    history: Option<Value>,
    ip: Option<ClientAddress>,
) -> Value {
    let task_id = new_id(ctx);
    let context_id = context_id.unwrap_or_else(|| new_id(ctx));
    finish_task(ctx, flavor, &task_id, &context_id, input, history, ip)
        .await
        .0
}

/// Runs the step of a task and keeps it; answers (the full task, the kept redacted one).
async fn finish_task(
    ctx: &AppContext,
    flavor: Flavor,
    task_id: &str,
    context_id: &str,
    input: &Value,
    history: Option<Value>,
    ip: Option<ClientAddress>,
) -> (Value, Value) {
    let task_id = task_id.to_owned();
    let context_id = context_id.to_owned();
    let outcome = run_signup_step(ctx, input, ip).await;
    let message = agent_message(
        flavor,
        new_id(ctx),
        vec![text_part(flavor, &outcome.summary)],
        Some((&task_id, &context_id)),
    );
    let stored = task_json(
        flavor,
        &task_id,
        &context_id,
        outcome.state,
        message.clone(),
        outcome.stored_data,
        history.clone(),
    );
    // The step ran (a key may have been issued, shown only in this answer): a task that cannot
    // be kept is still answered, and reads as not found later.
    if let Err(e) = ctx.services.a2a.keep(&task_id, &stored).await {
        tracing::warn!(error = %e, "an A2A task could not be kept for GetTask");
    }
    let full = task_json(
        flavor,
        &task_id,
        &context_id,
        outcome.state,
        message,
        outcome.data,
        history,
    );
    (full, stored)
}

/// The first data part of a message that names a task type.
fn signup_input(message: &Value) -> Option<Value> {
    message
        .get("parts")?
        .as_array()?
        .iter()
        .filter_map(|p| p.get("data"))
        .find(|d| d.get("task_type").is_some() || d.get("taskType").is_some())
        .cloned()
}

const HELP: &str = "I handle svc signup. Send a message with a data part {\"task_type\": \"start_api_key_signup\", \"email\": \"...\"}: \
a 6-digit code is emailed to the human. Then send {\"task_type\": \"complete_api_key_signup\", \"deviceId\": \"...\", \"code\": \"...\"} \
to receive the API key. The preferred one-link signup is on MCP (svc_start_claim_link_signup) and RFC 8628 (POST /agent/identity).";

/// `ip`: the caller's address as the limits count it (wrong codes are counted per address on
/// every face).
async fn dispatch(
    ctx: &AppContext,
    running: &Running,
    method: &str,
    params: &Value,
    ip: Option<ClientAddress>,
) -> Result<Value, RpcError> {
    let flavor = match method {
        "SendMessage" | "GetTask" | "CancelTask" | "tasks/create" => Flavor::V10,
        "message/send" | "tasks/get" | "tasks/cancel" => Flavor::V03,
        _ => {
            return Err(RpcError::new(
                -32601,
                format!("method `{method}` not found"),
            ));
        }
    };
    match method {
        "SendMessage" | "message/send" => {
            let (message, context_id) = sent_message(params)?;
            match signup_input(message) {
                Some(input) => {
                    let task =
                        run_task(ctx, flavor, &input, context_id, Some(message.clone()), ip).await;
                    Ok(match flavor {
                        Flavor::V10 => json!({"task": task}),
                        Flavor::V03 => task,
                    })
                }
                None => {
                    let reply =
                        agent_message(flavor, new_id(ctx), vec![text_part(flavor, HELP)], None);
                    Ok(match flavor {
                        Flavor::V10 => json!({"message": reply}),
                        Flavor::V03 => reply,
                    })
                }
            }
        }
        "tasks/create" => {
            // The spec's form: params carry task_type and its inputs (or wrap them in `input`).
            let input = params
                .get("input")
                .filter(|i| i.is_object())
                .unwrap_or(params);
            Ok(run_task(ctx, flavor, input, None, None, ip).await)
        }
        "GetTask" | "tasks/get" => {
            let id = params
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::new(-32602, "params.id is required"))?;
            // Still streaming here: its latest (redacted) state.
            if let Some(rx) = running.get(id) {
                return Ok(rx.borrow().clone());
            }
            kept_task(ctx, id).await?.ok_or_else(|| task_not_found(id))
        }
        _ => {
            let id = params.get("id").and_then(Value::as_str).unwrap_or_default();
            if running.get(id).is_some() {
                // A signup step runs to its end (a code may already be on its way): never halfway.
                Err(RpcError::new(
                    -32002,
                    "the task is running a step that cannot be canceled",
                ))
            } else if kept_task(ctx, id).await?.is_some() {
                Err(RpcError::new(
                    -32002,
                    "the task already finished; it cannot be canceled",
                ))
            } else {
                Err(task_not_found(id))
            }
        }
    }
}

/// The message of a send and the context it continues, if any.
fn sent_message(params: &Value) -> Result<(&Value, Option<String>), RpcError> {
    let message = params
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| RpcError::new(-32602, "params.message is required"))?;
    let context_id = message
        .get("contextId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok((message, context_id))
}

type Events = futures_util::stream::BoxStream<'static, Value>;

/// `SendStreamingMessage` / `message/stream` and `SubscribeToTask` / `tasks/resubscribe`: the
/// events to stream, or an error answered as plain JSON-RPC before any stream starts.
async fn open_stream(
    ctx: &AppContext,
    running: &Running,
    method: &str,
    params: &Value,
    ip: Option<ClientAddress>,
) -> Result<Events, RpcError> {
    use futures_util::StreamExt;
    let flavor = match method {
        "SendStreamingMessage" | "SubscribeToTask" => Flavor::V10,
        _ => Flavor::V03,
    };
    if matches!(method, "SubscribeToTask" | "tasks/resubscribe") {
        let id = params
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::new(-32602, "params.id is required"))?;
        if let Some(rx) = running.get(id) {
            return Ok(stream::follow(flavor, rx).boxed());
        }
        // Finished (here or on another instance): the kept final state, replayed.
        let task = kept_task(ctx, id)
            .await?
            .ok_or_else(|| task_not_found(id))?;
        let (_tx, rx) = tokio::sync::watch::channel(task);
        return Ok(stream::follow(flavor, rx).boxed());
    }
    let (message, context_id) = sent_message(params)?;
    let Some(input) = signup_input(message) else {
        let reply = agent_message(flavor, new_id(ctx), vec![text_part(flavor, HELP)], None);
        let event = match flavor {
            Flavor::V10 => json!({"message": reply}),
            Flavor::V03 => reply,
        };
        return Ok(futures_util::stream::iter([event]).boxed());
    };
    let task_id = new_id(ctx);
    let context_id = context_id.unwrap_or_else(|| new_id(ctx));
    let history = Some(message.clone());
    let submitted = pending_task(
        flavor,
        &task_id,
        &context_id,
        TaskState::Submitted,
        history.as_ref(),
    );
    let (snapshot, rx) = tokio::sync::watch::channel(submitted.clone());
    running.insert(&task_id, rx);
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let _ = tx.send(stream::task_event(flavor, submitted));
    // The step runs to its end even when the caller goes away: its result is kept for
    // GetTask and SubscribeToTask.
    let (ctx, running) = (ctx.clone(), running.clone());
    tokio::spawn(async move {
        let working = pending_task(
            flavor,
            &task_id,
            &context_id,
            TaskState::Working,
            history.as_ref(),
        );
        let _ = tx.send(stream::status_event(flavor, &working));
        snapshot.send_replace(working);
        let (full, stored) =
            finish_task(&ctx, flavor, &task_id, &context_id, &input, history, ip).await;
        // Kept before it leaves the running set, so a subscriber always finds it somewhere.
        snapshot.send_replace(stored);
        running.remove(&task_id);
        for e in stream::final_events(flavor, &full) {
            let _ = tx.send(e);
        }
    });
    Ok(stream::receiver_stream(events).boxed())
}

/// A kept task; a store that cannot be read is a JSON-RPC internal error the caller may retry.
async fn kept_task(ctx: &AppContext, id: &str) -> Result<Option<Value>, RpcError> {
    ctx.services.a2a.task(id).await.map_err(|e| {
        tracing::warn!(error = %e, "reading an A2A task failed");
        RpcError::new(-32603, "the task store is unavailable; try again shortly")
    })
}

fn task_not_found(id: &str) -> RpcError {
    RpcError {
        code: -32001,
        message: "Task not found".into(),
        data: Some(json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": id},
        }])),
    }
}

#[handler]
async fn jsonrpc(
    req: &poem::Request,
    body: poem::Body,
    ctx: Data<&AppContext>,
    running: Data<&Running>,
) -> Response {
    let ip = kit::edge::client_ip_of(req, &ctx.proxies);
    let bytes = match body.into_bytes().await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                &Value::Null,
                RpcError::new(-32700, "the body could not be read"),
            );
        }
    };
    let Ok(request) = serde_json::from_slice::<Value>(&bytes) else {
        return rpc_error(&Value::Null, RpcError::new(-32700, "the body is not JSON"));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || !request.is_object() {
        return rpc_error(
            &id,
            RpcError::new(
                -32600,
                "not a JSON-RPC 2.0 request (batches are not supported)",
            ),
        );
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return rpc_error(&id, RpcError::new(-32600, "method is required"));
    };
    let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    if matches!(
        method,
        "SendStreamingMessage" | "message/stream" | "SubscribeToTask" | "tasks/resubscribe"
    ) {
        return match open_stream(&ctx, &running, method, &params, ip).await {
            Ok(events) => stream::sse_response(id, events),
            Err(e) => rpc_error(&id, e),
        };
    }
    match dispatch(&ctx, &running, method, &params, ip).await {
        Ok(result) => rpc_result(&id, result),
        Err(e) => rpc_error(&id, e),
    }
}

/// The agent card (A2A 1.0, with the 0.3 fields for older clients).
pub fn agent_card(ctx: &AppContext) -> Value {
    let url = format!("{}/a2a", ctx.origins.base_url);
    json!({
        "name": "svc",
        "description": "Agent action and commerce service: read public pages, discover and execute mapped site actions with signed verification artifacts, and sign up for an API key. Over A2A: the email-code signup.",
        "version": env!("CARGO_PKG_VERSION"),
        "provider": {"organization": "svc", "url": ctx.origins.site_url},
        "documentationUrl": format!("{}/openapi.json", ctx.origins.base_url),
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ],
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": [
            {
                "id": "start_api_key_signup",
                "name": "Start email-code signup",
                "description": "Emails a 6-digit code to the human and returns deviceId. Send a data part {\"task_type\": \"start_api_key_signup\", \"email\": \"...\", \"agent_name\": \"...\"}.",
                "tags": ["signup", "api-key"],
                "examples": ["{\"task_type\": \"start_api_key_signup\", \"email\": \"human@example.com\"}"],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"]
            },
            {
                "id": "complete_api_key_signup",
                "name": "Complete email-code signup",
                "description": "Verifies the code and returns the API key (once) with a welcome message and the MCP setup command. Send {\"task_type\": \"complete_api_key_signup\", \"deviceId\": \"...\", \"code\": \"123456\"}.",
                "tags": ["signup", "api-key"],
                "examples": ["{\"task_type\": \"complete_api_key_signup\", \"deviceId\": \"dev_...\", \"code\": \"123456\"}"],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"]
            }
        ]
    })
}

/// `POST /a2a` and `POST /a2a/` (portable A2A suites add the slash), sharing the tasks that
/// stream on this instance.
pub fn mount(routes: poem::Route) -> poem::Route {
    let running = Running::default();
    let endpoint = |running: Running| poem::post(jsonrpc).data(running).map_to_response();
    routes
        .at("/a2a", endpoint(running.clone()))
        .at("/a2a/", endpoint(running))
}
