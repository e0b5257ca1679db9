//! The A2A face: an agent card and JSON-RPC at `/a2a`: the email-code signup, and, with an API
//! key, reading a page, discovering a domain's actions and executing one (see [`steps`]).
//!
//! Protocol 1.0 (`SendMessage`, `GetTask`, `CancelTask`; ProtoJSON: camelCase fields, enum
//! names like `TASK_STATE_COMPLETED`) with the 0.3 names (`message/send`, `tasks/get`,
//! `tasks/cancel`) answered in 0.3's shape, and the spec's `tasks/create` with `task_type`
//! `start_api_key_signup` / `complete_api_key_signup`. The task type and its inputs travel as a
//! data part (`{"data": {"task_type": ..., "email": ...}}`) or, for `tasks/create`, as params.
//!
//! A task runs detached from its request (a caller that hangs up does not stop it) and is
//! answered when it finishes; tasks are kept in the store for an hour for `GetTask` (any
//! instance answers for a task another ran), with the API key removed (a key is shown once).
//! A task run with a key belongs to that key's account: to any other caller it does not exist.
//! `SendStreamingMessage` / `message/stream` stream the same steps as server-sent task updates,
//! and `SubscribeToTask` / `tasks/resubscribe` follow or replay them (see [`stream`]). Mounted
//! at `/a2a` and `/a2a/`.

mod steps;
mod stream;

use poem::{
    EndpointExt, Response, handler,
    http::{StatusCode, header},
    web::Data,
};
use serde_json::{Value, json};

use kit::context::AppContext;
use steps::{Caller, Outcome};
use stream::Running;

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

/// The account a task belongs to: the caller's, for the steps that act with a key (their tasks
/// are shown only to that account); none for the signup steps, which have no key yet.
async fn owner_of(ctx: &AppContext, input: &Value, caller: &Caller) -> Option<String> {
    let task_type = input
        .get("task_type")
        .or_else(|| input.get("taskType"))
        .and_then(Value::as_str)?;
    if task_type.ends_with("_api_key_signup") {
        return None;
    }
    caller.account(ctx).await.map(|a| a.as_str().to_owned())
}

/// A task stamped with the account it belongs to.
fn owned(mut task: Value, owner: Option<&str>) -> Value {
    if let Some(owner) = owner {
        task["metadata"] = json!({ "account_id": owner });
    }
    task
}

/// Whether `caller` may see `task`: anyone holding the id for a signup task, only its
/// account's keys for the others (to anyone else it does not exist).
async fn visible(ctx: &AppContext, caller: &Caller, task: &Value) -> bool {
    match task.pointer("/metadata/account_id").and_then(Value::as_str) {
        None => true,
        Some(owner) => caller
            .account(ctx)
            .await
            .is_some_and(|a| a.as_str() == owner),
    }
}

/// Runs one step as a task; answers the full task and keeps the redacted one. Apart from the
/// request ([`kit::detach`]): the step runs to its end; GetTask answers what happened.
async fn run_task(
    ctx: &AppContext,
    flavor: Flavor,
    input: &Value,
    context_id: Option<String>,
    history: Option<Value>,
    caller: &Caller,
) -> Value {
    let (owned_ctx, input, caller) = (ctx.clone(), input.clone(), caller.clone());
    let run = async move {
        let ctx = owned_ctx;
        let task_id = new_id(&ctx);
        let context_id = context_id.unwrap_or_else(|| new_id(&ctx));
        let owner = owner_of(&ctx, &input, &caller).await;
        let ids = (task_id.as_str(), context_id.as_str());
        finish_task(
            &ctx,
            flavor,
            ids,
            &input,
            history,
            &caller,
            owner.as_deref(),
        )
        .await
        .0
    };
    match kit::detach::detached(ctx, run).await {
        Ok(task) => task,
        // As if it had run here: a panic is the request's.
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => json!({"error": format!("the task's run was stopped: {e}")}),
        },
    }
}

/// Runs the step of a task and keeps it; answers (the full task, the kept redacted one).
async fn finish_task(
    ctx: &AppContext,
    flavor: Flavor,
    (task_id, context_id): (&str, &str),
    input: &Value,
    history: Option<Value>,
    caller: &Caller,
    owner: Option<&str>,
) -> (Value, Value) {
    let task_id = task_id.to_owned();
    let context_id = context_id.to_owned();
    let outcome: Outcome = steps::run_step(ctx, input, caller).await;
    let message = agent_message(
        flavor,
        new_id(ctx),
        vec![text_part(flavor, &outcome.summary)],
        Some((&task_id, &context_id)),
    );
    let stored = owned(
        task_json(
            flavor,
            &task_id,
            &context_id,
            outcome.state,
            message.clone(),
            outcome.stored_data,
            history.clone(),
        ),
        owner,
    );
    // The step ran (a key may have been issued, shown only in this answer): a task that cannot
    // be kept is still answered, and reads as not found later.
    if let Err(e) = ctx.services.a2a.keep(&task_id, &stored).await {
        tracing::warn!(error = %e, "an A2A task could not be kept for GetTask");
    }
    let full = owned(
        task_json(
            flavor,
            &task_id,
            &context_id,
            outcome.state,
            message,
            outcome.data,
            history,
        ),
        owner,
    );
    (full, stored)
}

/// The first data part of a message that names a task type.
fn task_input(message: &Value) -> Option<Value> {
    message
        .get("parts")?
        .as_array()?
        .iter()
        .filter_map(|p| p.get("data"))
        .find(|d| d.get("task_type").is_some() || d.get("taskType").is_some())
        .cloned()
}

const HELP: &str = "Send a message with a data part naming a task_type. Signup (no key): \
{\"task_type\": \"start_api_key_signup\", \"email\": \"...\"} emails a 6-digit code to the human; then \
{\"task_type\": \"complete_api_key_signup\", \"deviceId\": \"...\", \"code\": \"...\"} returns the API key \
(the one-link signup is on MCP svc_start_claim_link_signup and RFC 8628 POST /agent/identity). With the key \
(Authorization: Bearer svc_...): {\"task_type\": \"read_page\", \"url\": \"https://...\"}, \
{\"task_type\": \"discover_actions\", \"domain\": \"...\"} and {\"task_type\": \"execute_action\", \
\"domain\": \"...\", \"action\": \"...\", \"params\": {...}, \"idempotency_key\": \"...\"}; \
SendStreamingMessage streams each task's progress.";

/// `caller.ip`: the caller's address as the limits count it (wrong codes are counted per address
/// on every face).
async fn dispatch(
    ctx: &AppContext,
    running: &Running,
    method: &str,
    params: &Value,
    caller: &Caller,
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
            match task_input(message) {
                Some(input) => {
                    let task = run_task(
                        ctx,
                        flavor,
                        &input,
                        context_id,
                        Some(message.clone()),
                        caller,
                    )
                    .await;
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
            Ok(run_task(ctx, flavor, input, None, None, caller).await)
        }
        "GetTask" | "tasks/get" => {
            let id = params
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::new(-32602, "params.id is required"))?;
            // Still streaming here: its latest (redacted) state.
            let task = match running.get(id) {
                Some(rx) => Some(rx.borrow().clone()),
                None => kept_task(ctx, id).await?,
            };
            match task {
                Some(task) if visible(ctx, caller, &task).await => Ok(task),
                _ => Err(task_not_found(id)),
            }
        }
        _ => {
            let id = params.get("id").and_then(Value::as_str).unwrap_or_default();
            let task = match running.get(id) {
                Some(rx) => Some(rx.borrow().clone()),
                None => kept_task(ctx, id).await?,
            };
            let visible = match &task {
                Some(task) => visible(ctx, caller, task).await,
                None => false,
            };
            if !visible {
                Err(task_not_found(id))
            } else if running.get(id).is_some() {
                // A signup step runs to its end (a code may already be on its way): never halfway.
                Err(RpcError::new(
                    -32002,
                    "the task is running a step that cannot be canceled",
                ))
            } else {
                Err(RpcError::new(
                    -32002,
                    "the task already finished; it cannot be canceled",
                ))
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
    caller: Caller,
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
            let snapshot = rx.borrow().clone();
            if !visible(ctx, &caller, &snapshot).await {
                return Err(task_not_found(id));
            }
            return Ok(stream::follow(flavor, rx).boxed());
        }
        // Finished (here or on another instance): the kept final state, replayed.
        let task = match kept_task(ctx, id).await? {
            Some(task) if visible(ctx, &caller, &task).await => task,
            _ => return Err(task_not_found(id)),
        };
        let (_tx, rx) = tokio::sync::watch::channel(task);
        return Ok(stream::follow(flavor, rx).boxed());
    }
    let (message, context_id) = sent_message(params)?;
    let Some(input) = task_input(message) else {
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
    let owner = owner_of(ctx, &input, &caller).await;
    let submitted = owned(
        pending_task(
            flavor,
            &task_id,
            &context_id,
            TaskState::Submitted,
            history.as_ref(),
        ),
        owner.as_deref(),
    );
    let (snapshot, rx) = tokio::sync::watch::channel(submitted.clone());
    running.insert(&task_id, rx);
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let _ = tx.send(stream::task_event(flavor, submitted));
    // The step runs to its end even when the caller goes away: its result is kept for
    // GetTask and SubscribeToTask.
    let (ctx, running) = (ctx.clone(), running.clone());
    let executing = ctx.services.actions.running();
    tokio::spawn(async move {
        let _executing = executing;
        let working = owned(
            pending_task(
                flavor,
                &task_id,
                &context_id,
                TaskState::Working,
                history.as_ref(),
            ),
            owner.as_deref(),
        );
        let _ = tx.send(stream::status_event(flavor, &working));
        snapshot.send_replace(working);
        let ids = (task_id.as_str(), context_id.as_str());
        let (full, stored) = finish_task(
            &ctx,
            flavor,
            ids,
            &input,
            history,
            &caller,
            owner.as_deref(),
        )
        .await;
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
    let caller = Caller {
        ip: kit::edge::client_ip_of(req, &ctx.proxies),
        authorization: req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        limits: req.data::<kit::edge::Edge>().map(|e| e.limits.clone()),
    };
    // JSON only: a browser sends another site's page's form or `text/plain` fetch without
    // asking first, and `/a2a` answers no CORS preflight, so no page can make its visitors'
    // browsers start sign-ups here.
    if !kit::headers::is_json(req.content_type()) {
        let mut refused = rpc_error(
            &Value::Null,
            RpcError::new(
                -32600,
                "invalid request: send the body as Content-Type: application/json",
            ),
        );
        refused.set_status(StatusCode::UNSUPPORTED_MEDIA_TYPE);
        return refused;
    }
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
    // A key given twice is read differently by different readers: refused, not guessed at.
    if let Some(why) = kit::json_body::Unique::refused(&bytes) {
        return rpc_error(
            &id,
            RpcError::new(-32600, format!("invalid request: {why}")),
        );
    }
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
        return match open_stream(&ctx, &running, method, &params, caller).await {
            Ok(events) => stream::sse_response(id, events),
            Err(e) => rpc_error(&id, e),
        };
    }
    match dispatch(&ctx, &running, method, &params, &caller).await {
        Ok(result) => rpc_result(&id, result),
        Err(e) => rpc_error(&id, e),
    }
}

/// The agent card (A2A 1.0, with the 0.3 fields for older clients).
pub fn agent_card(ctx: &AppContext) -> Value {
    let url = format!("{}/a2a", ctx.origins.base_url);
    json!({
        "name": "svc",
        "description": "Agent action and commerce service: read public pages, discover and execute mapped site actions with signed verification artifacts, and sign up for an API key. Over A2A: the email-code signup, and with an API key (Authorization: Bearer svc_...) reading a page, discovering a domain's actions and executing one, each as a task that streams its progress.",
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
            },
            {
                "id": "read_page",
                "name": "Read a web page",
                "description": "Needs an API key with the read scope (Authorization: Bearer svc_...). Reads a public page through the guarded client and returns its main content as Markdown and text with links, forms and metadata (the same JSON as POST /api/read); a captcha, sign-in wall or robots refusal comes back as outcome blocked with a reason. Send {\"task_type\": \"read_page\", \"url\": \"https://...\"} with the optional fields of POST /api/read.",
                "tags": ["read", "web"],
                "examples": ["{\"task_type\": \"read_page\", \"url\": \"https://example.com/\"}"],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"]
            },
            {
                "id": "discover_actions",
                "name": "Discover a site's actions",
                "description": "Needs an API key with the discover scope. Returns the published Agent Map of a domain: each action's name, parameter keys and types, the connection it needs, whether it is consequential and its credit cost. Send {\"task_type\": \"discover_actions\", \"domain\": \"...\"}.",
                "tags": ["actions", "discover"],
                "examples": ["{\"task_type\": \"discover_actions\", \"domain\": \"shop.example\"}"],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"]
            },
            {
                "id": "execute_action",
                "name": "Execute one action",
                "description": "Needs an API key with the execute scope (execute:consequential and the human's approval for orders and bookings). Runs one mapped action with names and keys exactly as discover_actions gave them; the outcome is verified, never assumed. Completed: the action's cost (about one credit) is charged and the artifact holds the typed result and a signed verification artifact. Failed: nothing is charged; the artifact holds the problem with failure_class, hint and the failure's artifact. Send {\"task_type\": \"execute_action\", \"domain\": \"...\", \"action\": \"...\", \"params\": {...}, \"idempotency_key\": \"...\"} (and authority_id for actions that pay); the same idempotency_key never charges twice. Stream it with SendStreamingMessage to follow submitted, working, then completed or failed.",
                "tags": ["actions", "execute"],
                "examples": ["{\"task_type\": \"execute_action\", \"domain\": \"shop.example\", \"action\": \"search_products\", \"params\": {\"query\": \"tea\"}, \"idempotency_key\": \"run-1\"}"],
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
