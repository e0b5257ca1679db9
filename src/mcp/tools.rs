//! The one tool registry: `tools/list`, `/.well-known/mcp/tools.json` and dispatch all read it.

use std::sync::Arc;

use poem_openapi::types::ToJSON;
use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations},
};
use serde_json::{Value, json};

use crate::{context::AppContext, http::problem::ApiProblem, services::AuthError};

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
        vec![ToolSpec {
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

/// A tool failure: `isError: true` with the problem object as text and no structured content.
pub fn tool_error(problem: &ApiProblem) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(problem.body().to_json_string())])
}

pub async fn call(
    ctx: &AppContext,
    name: &str,
    args: JsonObject,
    authorization: Option<&str>,
) -> Result<CallToolResult, McpError> {
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
        other => Err(McpError::internal_error(
            format!("tool `{other}` has no handler"),
            None,
        )),
    }
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
