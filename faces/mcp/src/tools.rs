//! The one tool registry: `tools/list`, `/.well-known/mcp/tools.json` and dispatch all read it.

use std::sync::Arc;

use poem_openapi::types::ToJSON;
use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations},
};
use serde_json::{Value, json};

use poem_openapi::types::ParseFromJSON;

use kit::context::AppContext;
use kit::{
    errors::read_problem,
    limits::RateLimits,
    problem::ApiProblem,
    wire::read::{ReadBody, ReadResult, require_read_scope},
};
use svc_services::{
    AuthError, IdentityFailure, Principal, SignupKey,
    telemetry::{Face, FunnelStep},
};

pub const INSTRUCTIONS: &str = "Read public pages, discover a site's mapped actions and execute one with a signed \
verification artifact. Every live tool needs `Authorization: Bearer svc_...`; call svc_auth_status to check a key. \
Without a key, sign up with svc_start_claim_link_signup and show the human only the link it returns.";

/// One tool: what it is called, what it takes and gives, and whether it needs a key.
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub needs_api_key: bool,
    pub read_only: bool,
    pub input_schema: Value,
    pub output_schema: Value,
}

impl ToolSpec {
    pub fn to_tool(&self) -> Tool {
        let object =
            |v: &Value| -> Arc<JsonObject> { Arc::new(v.as_object().cloned().unwrap_or_default()) };
        Tool::new(self.name, self.description, object(&self.input_schema))
            .with_title(self.title)
            .with_raw_output_schema(object(&self.output_schema))
            .with_annotations(
                ToolAnnotations::with_title(self.title)
                    .read_only(self.read_only)
                    .destructive(false)
                    .idempotent(self.read_only),
            )
    }
}

pub fn registry() -> &'static [ToolSpec] {
    static REGISTRY: std::sync::OnceLock<Vec<ToolSpec>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut specs = vec![read_page_spec()];
        specs.extend(action_specs());
        specs.extend(signup_specs());
        specs.push(checkout_spec());
        specs.extend(connection_specs());
        specs.push(ToolSpec {
            name: "svc_auth_status",
            title: "Check authentication",
            description: "Reports whether the API key sent in the Authorization header (Bearer svc_...) is valid, and \
                if so its account, plan, credit balance, key prefix and scopes. Needs no key: without one it says \
                so, and suggests signing up with svc_start_claim_link_signup. Never shows the key itself.",
            needs_api_key: false,
            read_only: true,
            input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            output_schema: json!({
                "type": "object",
                "required": ["authenticated"],
                "properties": {
                    "authenticated": {"type": "boolean", "description": "Whether a valid API key was presented."},
                    "account_id": {"type": "string"},
                    "plan": {"type": "string", "enum": ["sandbox", "free", "starter", "enterprise"]},
                    "environment": {"type": "string", "enum": ["live", "test"]},
                    "balance": {
                        "type": "object",
                        "required": ["spendable", "held"],
                        "properties": {"spendable": {"type": "integer"}, "held": {"type": "integer"}}
                    },
                    "key_prefix": {"type": "string", "description": "Listed prefix of the key, never the secret."},
                    "scopes": {"type": "array", "items": {"type": "string"}},
                    "failure_class": {"type": "string", "description": "Why the key was not accepted."},
                    "hint": {"type": "string", "description": "What to do next."}
                }
            }),
        });
        specs
    })
}

fn checkout_spec() -> ToolSpec {
    ToolSpec {
        name: "svc_create_checkout_session",
        title: "Start buying credits",
        description: "Creates a one-time link (valid 10 minutes) that signs the account's human in on the site and opens             hosted checkout for the chosen plan. Show the human only `handoff_url` and let them pay; never ask for card             details. Credits arrive only after the payment provider confirms the payment to the service (not when the             human says they paid): check with svc_auth_status or GET /api/usage afterwards. `starter` is the only plan             sold by checkout; `enterprise` is sales-led and answers with a contact link. Needs an API key.",
        needs_api_key: true,
        read_only: false,
        input_schema: json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {"plan": {"type": "string", "enum": ["starter", "enterprise"], "default": "starter",
                "description": "The plan to buy; only starter is sold by checkout."}}
        }),
        output_schema: json!({
            "type": "object",
            "required": ["handoff_url", "expires_at", "plan", "amount", "currency", "credits", "status"],
            "properties": {
                "handoff_url": {"type": "string", "description": "The one link to show the human."},
                "expires_at": {"type": "string", "format": "date-time"},
                "plan": {"type": "string"},
                "amount": {"type": "integer", "description": "Price in minor units."},
                "currency": {"type": "string"},
                "credits": {"type": "integer"},
                "status": {"type": "string", "enum": ["awaiting_human"]},
                "next_step": {"type": "string"}
            }
        }),
    }
}

async fn checkout_tool(
    ctx: &AppContext,
    principal: &Principal,
    args: &JsonObject,
) -> CallToolResult {
    let plan = args
        .get("plan")
        .and_then(Value::as_str)
        .unwrap_or("starter");
    let billing = &ctx.services.billing;
    let offer = billing
        .checkout_sku(plan)
        .map(|(_, amount, currency, credits)| (amount, currency.clone(), credits));
    let (amount, currency, credits) = match offer {
        Ok(o) => o,
        Err(e) => return tool_error(&ApiProblem::from(e)),
    };
    match billing.create_handoff(&principal.account.id, plan).await {
        Ok((url, expires_at)) => {
            ctx.services.telemetry.record(
                FunnelStep::of_account(
                    Face::Mcp,
                    "payment_started",
                    "checkout",
                    &principal.account.id,
                )
                .capability("svc_create_checkout_session"),
            );
            CallToolResult::structured(json!({
                "handoff_url": url,
                "expires_at": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "plan": plan,
                "amount": amount,
                "currency": currency.as_str(),
                "credits": credits,
                "status": "awaiting_human",
                "next_step": "Show the human handoff_url. Credits are added only once the payment provider confirms the payment; check the balance with svc_auth_status.",
            }))
        }
        Err(e) => tool_error(&ApiProblem::from(e)),
    }
}

fn connection_specs() -> Vec<ToolSpec> {
    let provider = json!({"type": "string", "minLength": 3, "maxLength": 63,
        "description": "Exactly the auth_provider an action declares in discover or list_actions; never guessed."});
    let status = kit::schema::json_schema_of::<kit::wire::connections::ConnectionStatus>();
    vec![
        ToolSpec {
            name: "svc_connection_status",
            title: "Connection status",
            description: "Reports whether the account is connected to a target site's provider (the auth_provider an \
                action declares). Never returns a token. Needs an API key.",
            needs_api_key: true,
            read_only: true,
            input_schema: json!({"type": "object", "required": ["provider"], "additionalProperties": false,
                "properties": {"provider": provider}}),
            output_schema: status.clone(),
        },
        ToolSpec {
            name: "svc_start_connection",
            title: "Start a connection",
            description: "Starts connecting the human's account on a target site, for actions that declare this \
                auth_provider. Returns connect_url: show only that to the human (it lives 10 minutes); they sign in \
                and approve at the site. Then call svc_poll_connection until connected=true or a final state \
                (expired, refused, wrong_account: stop). Pass expected_account when you know which upstream account \
                the human means. Needs an API key.",
            needs_api_key: true,
            read_only: false,
            input_schema: json!({"type": "object", "required": ["provider"], "additionalProperties": false,
                "properties": {"provider": provider,
                    "expected_account": {"type": "string", "maxLength": 254,
                        "description": "The upstream account the human should connect; another ends as wrong_account."}}}),
            output_schema: kit::schema::json_schema_of::<kit::wire::connections::ConnectionStarted>(
            ),
        },
        ToolSpec {
            name: "svc_poll_connection",
            title: "Poll a connection",
            description: "Returns the connection's state, waiting up to wait_ms (default 5000, at most 10000) while it is \
                pending. connected=true: run the actions. final=true (expired, refused, wrong_account): stop and \
                tell the human. Needs an API key.",
            needs_api_key: true,
            read_only: true,
            input_schema: json!({"type": "object", "required": ["provider"], "additionalProperties": false,
                "properties": {"provider": provider,
                    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 10000}}}),
            output_schema: status,
        },
    ]
}

async fn connection_tool(
    ctx: &AppContext,
    principal: &Principal,
    name: &str,
    args: &JsonObject,
) -> Result<CallToolResult, McpError> {
    let provider = required(string_arg(args, "provider")?, "provider")?;
    let connections = &ctx.services.connections;
    let account = &principal.account.id;
    let as_json = |v: svc_services::connections::ConnectionView| {
        kit::wire::connections::ConnectionStatus::from(v)
            .to_json()
            .unwrap_or_default()
    };
    Ok(match name {
        "svc_start_connection" => {
            let expected = string_arg(args, "expected_account")?;
            match connections
                .start(account, &provider, expected.as_deref())
                .await
            {
                Ok(started) => CallToolResult::structured(
                    kit::wire::connections::started_body(started)
                        .to_json()
                        .unwrap_or_default(),
                ),
                Err(e) => tool_error(&ApiProblem::from(e)),
            }
        }
        "svc_poll_connection" => {
            let wait = match args.get("wait_ms") {
                None | Some(Value::Null) => 5000,
                Some(v) => v.as_u64().filter(|w| *w <= 10_000).ok_or_else(|| {
                    McpError::invalid_params("`wait_ms` is an integer from 0 to 10000", None)
                })?,
            };
            match connections
                .poll(account, &provider, std::time::Duration::from_millis(wait))
                .await
            {
                Ok(view) => CallToolResult::structured(as_json(view)),
                Err(e) => tool_error(&ApiProblem::from(e)),
            }
        }
        _ => match connections.status(account, &provider).await {
            Ok(view) => CallToolResult::structured(as_json(view)),
            Err(e) => tool_error(&ApiProblem::from(e)),
        },
    })
}

fn action_specs() -> Vec<ToolSpec> {
    let domain_input = json!({
        "type": "object",
        "required": ["domain"],
        "additionalProperties": false,
        "properties": {"domain": {"type": "string", "minLength": 1, "maxLength": 253,
            "description": "The site's host name, e.g. shop.example.com."}}
    });
    let discover_output = kit::schema::json_schema_of::<kit::wire::actions::DiscoverResult>();
    vec![
        ToolSpec {
            name: "discover",
            title: "Discover a site's actions",
            description: "Returns the published Agent Map of a domain: each action's exact name, its parameter keys and                 types, its auth_provider (the connection it needs, or null), whether it is consequential (then the key                 needs execute:consequential and the human's approval), the scopes it needs and its credit cost. Use the                 names and keys exactly as given when you call execute. Needs an API key with the discover scope.",
            needs_api_key: true,
            read_only: true,
            input_schema: domain_input.clone(),
            output_schema: discover_output.clone(),
        },
        ToolSpec {
            name: "list_actions",
            title: "List a site's actions",
            description: "Lists the actions of a domain's published map, each declaring its auth_provider id: when it is                 not null, pass exactly that id as `provider` to svc_start_connection before executing. Same answer as                 discover. Needs an API key with the discover scope.",
            needs_api_key: true,
            read_only: true,
            input_schema: domain_input,
            output_schema: discover_output,
        },
        ToolSpec {
            name: "execute",
            title: "Execute one action",
            description: "Runs one mapped action: {domain, action, params} with names and keys exactly as discover gave                 them. The outcome is verified by the site's map, never assumed from an accepted request. Completed:                 about one credit (the action's cost) is charged and you get the typed `result` with a signed `artifact`.                 Failed: nothing is charged, and the error carries failure_class, retryable, hint and the artifact of                 the failure. Pass idempotency_key to make a retry safe: the same key never charges twice. Consequential                 actions (orders, bookings) need the human's explicit approval and a key with execute:consequential.                 Actions that pay money (discover shows their `payment`) also need authority_id, a payment authority the                 human created on the site; without one the answer is payment_authority_required.",
            needs_api_key: true,
            read_only: false,
            input_schema: json!({
                "type": "object",
                "required": ["domain", "action", "params"],
                "additionalProperties": false,
                "properties": {
                    "domain": {"type": "string", "minLength": 1, "maxLength": 253},
                    "action": {"type": "string", "minLength": 1, "maxLength": 64},
                    "params": {"type": "object"},
                    "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 255,
                        "description": "Same key, same billing task: a retry returns the first answer."},
                    "authority_id": {"type": "string", "minLength": 1, "maxLength": 64,
                        "description": "For actions that pay (discover shows their payment): the pa_... id of a payment authority the human created on the site. Ignored by other actions."}
                }
            }),
            output_schema: kit::schema::json_schema_of::<kit::wire::actions::ExecutionResult>(),
        },
        ToolSpec {
            name: "svc_verify_task",
            title: "Verify a payment's outcome",
            description: "For a payment task whose artifact is payment_completed (its authority asked for                 verification_required): checks the business outcome with the payment action's confirm read on the site and,                 when the site confirms it, returns a second signed artifact with status verified (the original stays).                 Nothing is charged. Calling it again returns the stored verification. failure_class verification_pending                 (retryable: try again later) when the site does not confirm it yet; not_verifiable for any other task.                 Needs an API key.",
            needs_api_key: true,
            read_only: false,
            input_schema: json!({
                "type": "object",
                "required": ["task_id"],
                "additionalProperties": false,
                "properties": {
                    "task_id": {"type": "string", "minLength": 1, "maxLength": 64,
                        "description": "The task_... id execute returned for the payment."}
                }
            }),
            output_schema: kit::schema::json_schema_of::<kit::wire::actions::TaskVerification>(),
        },
    ]
}

fn key_output_properties() -> Value {
    json!({
        "api_key": {"type": "string", "description": "The API key, shown once: store it securely, never show it in chat."},
        "key_prefix": {"type": "string"},
        "scope": {"type": "string", "description": "Scopes of the key, space-separated."},
        "account_id": {"type": "string"},
        "welcome_message": {"type": "string", "description": "Send this to the human in the original conversation."},
        "mcp_setup_command": {"type": "string", "description": "Adds this MCP server with the key to an MCP client."}
    })
}

fn signup_specs() -> Vec<ToolSpec> {
    let mut poll_properties = key_output_properties();
    if let Some(p) = poll_properties.as_object_mut() {
        p.insert("status".into(), json!({"type": "string", "enum": ["pending", "slow_down", "denied", "expired", "complete"],
            "description": "pending / slow_down: poll again after `interval` seconds; denied / expired: stop; complete: the key is here."}));
        p.insert(
            "interval".into(),
            json!({"type": "integer", "description": "Seconds to wait before the next poll."}),
        );
        p.insert("hint".into(), json!({"type": "string"}));
    }
    let mut verify_output = json!({"type": "object", "required": ["api_key", "key_prefix", "scope", "account_id", "welcome_message", "mcp_setup_command"]});
    verify_output["properties"] = key_output_properties();
    vec![
        ToolSpec {
            name: "svc_start_claim_link_signup",
            title: "Start one-link signup",
            description: "Starts the preferred signup: returns `verification_uri_complete` and `deviceCode`. First tell the human                 that the service's terms (/terms) and privacy policy (/privacy) apply. Then show the human ONLY                 `verification_uri_complete`, as a link to open: they sign in with a code emailed to them and approve. Never                 show `deviceCode`: keep it, and call svc_poll_claim_link_signup with it every `interval` seconds until it                 returns the key. Needs no API key.",
            needs_api_key: false,
            read_only: false,
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "agent_name": {"type": "string", "maxLength": 80, "description": "Your name, shown to the human on the approval page."},
                    "client_id": {"type": "string", "maxLength": 128, "description": "Your client identifier (defaults to agent_name)."},
                    "scope": {"type": "string", "description": "Space-separated scopes; omit for read discover execute."}
                }
            }),
            output_schema: json!({
                "type": "object",
                "required": ["verification_uri_complete", "deviceCode", "expires_in", "interval"],
                "properties": {
                    "verification_uri_complete": {"type": "string", "description": "The only thing to show the human."},
                    "deviceCode": {"type": "string", "description": "Secret: keep it for svc_poll_claim_link_signup; never show it."},
                    "user_code": {"type": "string", "description": "The code on the human's approval page, XXXX-XXXX."},
                    "expires_in": {"type": "integer", "description": "Seconds the link stays valid."},
                    "interval": {"type": "integer", "description": "Seconds to wait between polls."}
                }
            }),
        },
        ToolSpec {
            name: "svc_poll_claim_link_signup",
            title: "Poll one-link signup",
            description: "Checks whether the human approved the link from svc_start_claim_link_signup. Input `deviceCode`.                 `status` pending or slow_down: wait `interval` seconds and poll again, showing nothing new. denied or                 expired: stop polling and tell the human. complete: store `api_key` securely (never show it in chat),                 send `welcome_message` to the human in this conversation, and use `mcp_setup_command` to configure this                 server with the key. The key is returned once. Needs no API key.",
            needs_api_key: false,
            read_only: false,
            input_schema: json!({
                "type": "object",
                "required": ["deviceCode"],
                "additionalProperties": false,
                "properties": {"deviceCode": {"type": "string", "minLength": 1, "maxLength": 256}}
            }),
            output_schema: json!({"type": "object", "required": ["status"], "properties": poll_properties}),
        },
        ToolSpec {
            name: "svc_start_api_key_signup",
            title: "Start email-code signup",
            description: "Fallback signup when the human cannot open a link: emails a 6-digit code to the human's address and                 returns `deviceId`. Ask the human for their email first and tell them the terms (/terms) and privacy                 policy (/privacy) apply. Then ask them for the code from the email and call svc_complete_api_key_signup                 with `deviceId` and the code. The code lives 10 minutes and dies after 5 wrong tries. No account is                 created from an email address alone. Needs no API key.",
            needs_api_key: false,
            read_only: false,
            input_schema: json!({
                "type": "object",
                "required": ["email"],
                "additionalProperties": false,
                "properties": {
                    "email": {"type": "string", "minLength": 3, "maxLength": 254, "description": "The human's email address."},
                    "agent_name": {"type": "string", "maxLength": 80, "description": "Your name, quoted in the email."},
                    "scope": {"type": "string", "description": "Space-separated scopes; omit for read discover execute."}
                }
            }),
            output_schema: json!({
                "type": "object",
                "required": ["deviceId", "expires_in", "max_attempts", "message"],
                "properties": {
                    "deviceId": {"type": "string", "description": "Keep it for svc_complete_api_key_signup."},
                    "expires_in": {"type": "integer"},
                    "max_attempts": {"type": "integer"},
                    "message": {"type": "string", "description": "What to tell the human."}
                }
            }),
        },
        ToolSpec {
            name: "svc_complete_api_key_signup",
            title: "Complete email-code signup",
            description: "Finishes the email-code signup: input `deviceId` from svc_start_api_key_signup and the 6-digit `code`                 the human read from the email. Returns the API key once: store it securely and never show it in chat;                 send `welcome_message` to the human; use `mcp_setup_command` to configure this server. A wrong code says                 how many tries are left. Needs no API key.",
            needs_api_key: false,
            read_only: false,
            input_schema: json!({
                "type": "object",
                "required": ["deviceId", "code"],
                "additionalProperties": false,
                "properties": {
                    "deviceId": {"type": "string", "minLength": 1, "maxLength": 64},
                    "code": {"type": "string", "minLength": 1, "maxLength": 16, "description": "The 6-digit code from the email."}
                }
            }),
            output_schema: verify_output,
        },
    ]
}

fn read_page_spec() -> ToolSpec {
    ToolSpec {
        name: "read_page",
        title: "Read a web page",
        description: "Reads a public web page and returns its main content as Markdown and plain text, with             its links (absolute, same-site or not), forms (action, method, fields with labels) and metadata             (description, canonical, language, OpenGraph, JSON-LD, author, published time). Fetched through a             guarded client: public http(s) URLs only, robots.txt honoured. A captcha, sign-in wall, robots             refusal or 4xx/5xx answer comes back as outcome `blocked` with a reason, never as page text.             A copy up to `max_age` seconds old (default 600) may answer. Needs an API key with the read scope.",
        needs_api_key: true,
        read_only: true,
        input_schema: json!({
            "type": "object",
            "required": ["url"],
            "additionalProperties": false,
            "properties": {
                "url": {"type": "string", "minLength": 1, "maxLength": 2048,
                    "description": "Absolute http or https URL of a public page."},
                "format": {"type": "string", "enum": ["markdown", "text", "html"],
                    "description": "Main content format; html adds the cleaned HTML. Default markdown."},
                "main_content_only": {"type": "boolean",
                    "description": "Keep only the main content (default true); false keeps the whole body."},
                "include_selectors": {"type": "array", "maxItems": 20,
                    "items": {"type": "string", "maxLength": 256},
                    "description": "CSS selectors whose matches are the content."},
                "exclude_selectors": {"type": "array", "maxItems": 20,
                    "items": {"type": "string", "maxLength": 256},
                    "description": "CSS selectors whose matches are removed first."},
                "max_age": {"type": "integer", "minimum": 0, "maximum": 604800,
                    "description": "Oldest cached copy acceptable, in seconds (default 600); 0 always fetches."}
            }
        }),
        output_schema: ReadResult::json_schema(),
    }
}

/// A tool failure: `isError: true` with the problem object as text and no structured content.
pub fn tool_error(problem: &ApiProblem) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(problem.body().to_json_string())])
}

pub async fn call(
    ctx: &AppContext,
    name: &str,
    args: JsonObject,
    parts: Option<&http::request::Parts>,
) -> Result<CallToolResult, McpError> {
    let authorization = parts
        .and_then(|p| p.headers.get(http::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok());
    let spec = registry().iter().find(|t| t.name == name).ok_or_else(|| {
        McpError::invalid_params(format!("unknown tool `{name}`; see tools/list"), None)
    })?;
    match spec.name {
        "svc_auth_status" => {
            if !args.is_empty() {
                return Err(McpError::invalid_params(
                    "svc_auth_status takes no arguments",
                    None,
                ));
            }
            Ok(auth_status(ctx, authorization).await)
        }
        "read_page" => {
            let principal = match authenticate(ctx, authorization, parts).await {
                Ok(p) => p,
                Err(problem) => return Ok(tool_error(&problem)),
            };
            let body = ReadBody::parse_from_json(Some(Value::Object(args)))
                .map_err(|e| McpError::invalid_params(e.into_message(), None))?;
            if let Err(problem) = require_read_scope(&principal) {
                return Ok(tool_error(&problem));
            }
            Ok(match ctx.services.read.read(&body.into_request()).await {
                Ok(outcome) => {
                    CallToolResult::structured(ReadResult::from(outcome).to_json_value())
                }
                Err(e) => tool_error(&read_problem(e)),
            })
        }
        "svc_create_checkout_session" => {
            only_args(&args, &["plan"])?;
            let principal = match authenticate(ctx, authorization, parts).await {
                Ok(p) => p,
                Err(problem) => return Ok(tool_error(&problem)),
            };
            Ok(checkout_tool(ctx, &principal, &args).await)
        }
        "svc_connection_status" | "svc_start_connection" | "svc_poll_connection" => {
            only_args(&args, &["provider", "expected_account", "wait_ms"])?;
            let principal = match authenticate(ctx, authorization, parts).await {
                Ok(p) => p,
                Err(problem) => return Ok(tool_error(&problem)),
            };
            connection_tool(ctx, &principal, spec.name, &args).await
        }
        "discover" | "list_actions" | "execute" => {
            let principal = match authenticate(ctx, authorization, parts).await {
                Ok(p) => p,
                Err(problem) => return Ok(tool_error(&problem)),
            };
            Ok(action_tool(ctx, &principal, spec.name, &args).await)
        }
        "svc_verify_task" => {
            only_args(&args, &["task_id"])?;
            let task_id = required(string_arg(&args, "task_id")?, "task_id")?;
            let principal = match authenticate(ctx, authorization, parts).await {
                Ok(p) => p,
                Err(problem) => return Ok(tool_error(&problem)),
            };
            let verified = ctx
                .services
                .actions
                .verify_task(&principal, &task_id)
                .await
                .map_err(ApiProblem::from)
                .and_then(|v| kit::wire::actions::verification_view(&v));
            Ok(match verified {
                Ok(v) => CallToolResult::structured(v.to_json().unwrap_or_default()),
                Err(problem) => tool_error(&problem),
            })
        }
        "svc_start_claim_link_signup"
        | "svc_poll_claim_link_signup"
        | "svc_start_api_key_signup"
        | "svc_complete_api_key_signup" => signup_tool(ctx, spec.name, &args).await,
        other => Err(McpError::internal_error(
            format!("tool `{other}` has no handler"),
            None,
        )),
    }
}

fn string_arg(args: &JsonObject, name: &str) -> Result<Option<String>, McpError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(McpError::invalid_params(
            format!("`{name}` must be a string"),
            None,
        )),
    }
}

/// Rejects arguments a tool does not declare (its schema says `additionalProperties: false`).
fn only_args(args: &JsonObject, allowed: &[&str]) -> Result<(), McpError> {
    match args.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(McpError::invalid_params(
            format!("unknown argument `{k}`; expected {}", allowed.join(", ")),
            None,
        )),
        None => Ok(()),
    }
}

fn required(value: Option<String>, name: &str) -> Result<String, McpError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or_else(|| McpError::invalid_params(format!("`{name}` is required"), None))
}

/// The four signup tools: they need no key.
async fn signup_tool(
    ctx: &AppContext,
    name: &str,
    args: &JsonObject,
) -> Result<CallToolResult, McpError> {
    let identity = &ctx.services.identity;
    match name {
        "svc_start_claim_link_signup" => {
            only_args(args, &["agent_name", "client_id", "scope"])?;
            let agent_name = string_arg(args, "agent_name")?;
            let client_id = string_arg(args, "client_id")?
                .or_else(|| agent_name.clone())
                .unwrap_or_else(|| "mcp-agent".into());
            let scope = string_arg(args, "scope")?;
            Ok(
                match identity
                    .start_device(&client_id, agent_name.as_deref(), scope.as_deref())
                    .await
                {
                    Ok(d) => {
                        ctx.services.telemetry.record(
                            FunnelStep::new(
                                Face::Mcp,
                                "setup_session_created",
                                "signup",
                                &client_id,
                            )
                            .capability(name),
                        );
                        CallToolResult::structured(json!({
                            "verification_uri_complete": d.verification_uri_complete,
                            "deviceCode": d.device_code,
                            "user_code": d.user_code.display(),
                            "expires_in": d.expires_in,
                            "interval": d.interval,
                        }))
                    }
                    Err(e) => tool_error(&ApiProblem::from(e)),
                },
            )
        }
        "svc_poll_claim_link_signup" => {
            only_args(args, &["deviceCode"])?;
            let code = required(string_arg(args, "deviceCode")?, "deviceCode")?;
            Ok(match identity.poll_device(&code).await {
                Ok(key) => {
                    let mut out = signup_key_json(key);
                    out["status"] = json!("complete");
                    CallToolResult::structured(out)
                }
                Err(e) => {
                    let interval = identity.settings().poll_interval.as_secs();
                    let (status, interval) = match &e {
                        IdentityFailure::AuthorizationPending => ("pending", Some(interval)),
                        IdentityFailure::SlowDown { interval } => {
                            ("slow_down", Some(u64::from(*interval)))
                        }
                        IdentityFailure::AccessDenied => ("denied", None),
                        IdentityFailure::ExpiredToken => ("expired", None),
                        _ => return Ok(tool_error(&ApiProblem::from(e))),
                    };
                    let problem = ApiProblem::from(e);
                    let mut out = json!({"status": status, "hint": problem.class.hint()});
                    if let Some(i) = interval {
                        out["interval"] = json!(i);
                    }
                    CallToolResult::structured(out)
                }
            })
        }
        "svc_start_api_key_signup" => {
            only_args(args, &["email", "agent_name", "scope"])?;
            let email = required(string_arg(args, "email")?, "email")?;
            let agent_name = string_arg(args, "agent_name")?;
            let scope = string_arg(args, "scope")?;
            Ok(
                match identity
                    .start_email(
                        svc_ports::ChallengePurpose::ApiKey,
                        &email,
                        agent_name.as_deref(),
                        scope.as_deref(),
                    )
                    .await
                {
                    Ok(id) => {
                        ctx.services.telemetry.record(
                            FunnelStep::new(
                                Face::Mcp,
                                "setup_session_created",
                                "signup",
                                id.as_str(),
                            )
                            .capability(name),
                        );
                        CallToolResult::structured(json!({
                            "deviceId": id.as_str(),
                            "expires_in": identity.settings().email_code_ttl.as_secs(),
                            "max_attempts": svc_ports::identity::MAX_CODE_ATTEMPTS,
                            "message": "A 6-digit code was sent to the address. Ask the human for it, then call svc_complete_api_key_signup with deviceId and code.",
                        }))
                    }
                    Err(e) => tool_error(&ApiProblem::from(e)),
                },
            )
        }
        _ => {
            only_args(args, &["deviceId", "code"])?;
            let device_id = required(string_arg(args, "deviceId")?, "deviceId")?;
            let code = required(string_arg(args, "code")?, "code")?;
            Ok(
                match identity.verify_api_key_code(&device_id, &code, None).await {
                    Ok(key) => CallToolResult::structured(signup_key_json(key)),
                    Err(e) => tool_error(&ApiProblem::from(e)),
                },
            )
        }
    }
}

async fn action_tool(
    ctx: &AppContext,
    principal: &Principal,
    name: &str,
    args: &JsonObject,
) -> CallToolResult {
    use kit::wire::actions::{discover_json, require_scope};
    let text = |n: &str| args.get(n).and_then(Value::as_str).map(str::to_owned);
    match name {
        "discover" | "list_actions" => {
            if let Err(p) = require_scope(principal, "discover") {
                return tool_error(&p);
            }
            let Some(domain) = text("domain") else {
                return tool_error(&ApiProblem::new(
                    svc_ports::FailureClass::InvalidRequest,
                    "`domain` is required",
                ));
            };
            match ctx.services.actions.published(&domain).await {
                Ok(map) => {
                    ctx.services.telemetry.record(
                        FunnelStep::of_account(
                            Face::Mcp,
                            "capability_read",
                            "discover",
                            &principal.account.id,
                        )
                        .capability(name),
                    );
                    CallToolResult::structured(discover_json(&map))
                }
                Err(e) => tool_error(&ApiProblem::from(e)),
            }
        }
        _ => {
            let (Some(domain), Some(action)) = (text("domain"), text("action")) else {
                return tool_error(&ApiProblem::new(
                    svc_ports::FailureClass::InvalidRequest,
                    "`domain` and `action` are required",
                ));
            };
            let request = svc_services::ExecuteRequest {
                domain,
                action,
                params: args.get("params").cloned().unwrap_or(Value::Null),
                idempotency_key: text("idempotency_key"),
                authority_id: text("authority_id"),
            };
            let executed = ctx.services.actions.execute(principal, request).await;
            if let Ok(e) = &executed
                && !e.replayed
            {
                ctx.services.telemetry.record_execution(
                    Face::Mcp,
                    &principal.account.id,
                    e.completed,
                    &e.body,
                );
            }
            match executed {
                Ok(executed) if executed.completed => CallToolResult::structured(executed.body),
                // A settled failure: the problem with its task and artifact, as text.
                Ok(executed) => {
                    CallToolResult::error(vec![ContentBlock::text(executed.body.to_string())])
                }
                Err(e) => tool_error(&ApiProblem::from(e)),
            }
        }
    }
}

fn signup_key_json(key: SignupKey) -> Value {
    json!({
        "api_key": key.secret.expose(),
        "key_prefix": key.record.prefix.as_str(),
        "scope": key.record.scopes.to_list_string(),
        "account_id": key.account.id.as_str(),
        "welcome_message": key.welcome_message,
        "mcp_setup_command": key.mcp_setup_command,
    })
}

/// The API key of a tool call, checked like a REST request's: store, then per-key limit.
async fn authenticate(
    ctx: &AppContext,
    authorization: Option<&str>,
    parts: Option<&http::request::Parts>,
) -> Result<Principal, ApiProblem> {
    let principal = ctx
        .services
        .auth
        .authenticate_header(authorization)
        .await
        .map_err(ApiProblem::from)?;
    if let Some(limits) = parts.and_then(|p| p.extensions.get::<RateLimits>()) {
        limits.check_key(&principal.key.id)?;
    }
    Ok(principal)
}

async fn auth_status(ctx: &AppContext, authorization: Option<&str>) -> CallToolResult {
    match ctx.services.auth.authenticate_header(authorization).await {
        Ok(p) => match ctx.services.usage.usage(&p).await {
            Ok(usage) => CallToolResult::structured(json!({
                "authenticated": true,
                "account_id": p.account.id.as_str(),
                "plan": p.account.plan.as_str(),
                "environment": p.account.environment.as_str(),
                "balance": {"spendable": usage.balance.spendable, "held": usage.balance.held},
                "key_prefix": p.key.prefix.as_str(),
                "scopes": p.key.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            })),
            Err(e) => tool_error(&ApiProblem::internal(e)),
        },
        Err(AuthError::Store(e)) => tool_error(&ApiProblem::internal(e)),
        Err(e) => {
            let problem = ApiProblem::from(e);
            CallToolResult::structured(json!({
                "authenticated": false,
                "failure_class": problem.class.as_str(),
                "hint": problem.class.hint(),
            }))
        }
    }
}
