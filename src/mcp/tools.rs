//! The one tool registry: `tools/list`, `/.well-known/mcp/tools.json` and dispatch all read it.

use std::sync::Arc;

use poem_openapi::types::ToJSON;
use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations},
};
use serde_json::{Value, json};

use poem_openapi::types::ParseFromJSON;

use crate::{
    context::AppContext,
    http::{
        limits::RateLimits,
        problem::ApiProblem,
        read::{ReadBody, ReadResult, read_problem, require_read_scope},
    },
    services::{AuthError, Principal},
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
        vec![read_page_spec(), ToolSpec {
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
        }]
    })
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
        other => Err(McpError::internal_error(
            format!("tool `{other}` has no handler"),
            None,
        )),
    }
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
