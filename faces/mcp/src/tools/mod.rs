//! The MCP tools, one module per family. Each tool is declared once, with rmcp's `#[tool]`:
//! its name, title, description, annotations and output schema in the attribute, its input
//! schema from the typed arguments (`Parameters<T>`, serde + schemars). `tools/list`,
//! `/.well-known/mcp/tools.json` and dispatch all come from the router those declarations build.

mod actions;
mod activity;
mod billing;
mod connections;
mod keys;
mod read;
mod signup;

use std::sync::{Arc, LazyLock};

use kit::{context::AppContext, limits::RateLimits, problem::ApiProblem};
use poem_openapi::types::ToJSON;
use rmcp::{
    handler::server::{router::tool::ToolRouter, tool::schema_for_output},
    model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject},
};
use serde::Serialize;
use serde_json::Value;
use svc_services::Principal;

use crate::SvcMcp;

pub const INSTRUCTIONS: &str = "Read public pages, discover a site's mapped actions and execute one with a signed \
verification artifact. Every live tool needs `Authorization: Bearer svc_...`; call svc_auth_status to check a key. \
Without a key, sign up with svc_start_claim_link_signup and show the human only the link it returns.";

/// The tools that work without an API key.
pub const WITHOUT_KEY: &[&str] = &[
    "svc_auth_status",
    "svc_start_claim_link_signup",
    "svc_poll_claim_link_signup",
    "svc_start_api_key_signup",
    "svc_complete_api_key_signup",
];

/// Every tool, in the order `tools/list` gives them.
pub fn router() -> &'static ToolRouter<SvcMcp> {
    static ROUTER: LazyLock<ToolRouter<SvcMcp>> = LazyLock::new(|| {
        let mut router = SvcMcp::read_router()
            + SvcMcp::actions_router()
            + SvcMcp::signup_router()
            + SvcMcp::billing_router()
            + SvcMcp::connections_router()
            + SvcMcp::activity_router()
            + SvcMcp::keys_router();
        // Every schema in its portable form, once, before anything reads it.
        for route in router.map.values_mut() {
            crate::schema::portable(Arc::make_mut(&mut route.attr.input_schema));
            if let Some(output) = route.attr.output_schema.as_mut() {
                crate::schema::portable(Arc::make_mut(output));
            }
        }
        router
    });
    &ROUTER
}

/// rmcp answers arguments that do not deserialize with a tool error in plain text; this makes
/// it the problem every other failure is (`invalid_request`, the detail, the hint).
pub fn argument_problem(response: CallToolResponse) -> CallToolResponse {
    const PREFIX: &str = "failed to deserialize parameters: ";
    let CallToolResponse::Complete(result) = &response else {
        return response;
    };
    let text = match (
        result.is_error,
        result.content.first().and_then(|c| c.as_text()),
    ) {
        (Some(true), Some(t)) if t.text.starts_with(PREFIX) => &t.text[PREFIX.len()..],
        _ => return response,
    };
    let problem = ApiProblem::new(
        svc_ports::FailureClass::InvalidRequest,
        format!("the arguments do not match the tool's input schema: {text}"),
    );
    tool_error(&problem).into()
}

/// A service's answer as a tool result: `ok` turns a success into the answer, and an error is
/// the problem the one table (`kit::errors`) gives it.
fn reply<T, E>(
    result: Result<T, E>,
    ok: impl FnOnce(T) -> CallToolResult,
) -> Result<CallToolResult, rmcp::ErrorData>
where
    ApiProblem: From<E>,
{
    Ok(match result {
        Ok(v) => ok(v),
        Err(e) => tool_error(&ApiProblem::from(e)),
    })
}

/// A tool failure: `isError: true` with the problem object as text and no structured content.
pub fn tool_error(problem: &ApiProblem) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(problem.body().to_json_string())])
}

/// A tool's answer: structured content (checked by clients against the output schema), and
/// the same JSON as text for older clients.
fn structured(value: Value) -> CallToolResult {
    CallToolResult::structured(value)
}

/// Structured content from an MCP-only answer type (its schema is `output::<T>()`).
fn answer<T: Serialize>(value: &T) -> CallToolResult {
    structured(serde_json::to_value(value).unwrap_or_default())
}

/// Structured content from a wire type of the REST API (its schema is `wire::<T>()`).
fn wire_answer<T: ToJSON>(value: &T) -> CallToolResult {
    structured(value.to_json().unwrap_or_default())
}

/// The output schema of an MCP-only answer type.
fn output<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_output::<T>()
}

/// The output schema of a REST wire type: the same JSON as the REST answer.
fn wire<T: poem_openapi::types::Type>() -> Arc<JsonObject> {
    Arc::new(
        kit::schema::json_schema_of::<T>()
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

/// The API key of a tool call, checked like a REST request's: store, then per-key limit.
pub(crate) async fn authenticate(
    ctx: &AppContext,
    parts: &http::request::Parts,
) -> Result<Principal, ApiProblem> {
    let principal = ctx
        .services
        .auth
        .authenticate_header(authorization(parts))
        .await
        .map_err(ApiProblem::from)?;
    if let Some(limits) = parts.extensions.get::<RateLimits>() {
        limits.check_key(&principal.key.id)?;
    }
    Ok(principal)
}

fn authorization(parts: &http::request::Parts) -> Option<&str> {
    parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

/// Authenticates, or returns the tool error that says why not.
macro_rules! principal {
    ($ctx:expr, $parts:expr) => {
        match $crate::tools::authenticate($ctx, &$parts).await {
            Ok(p) => p,
            Err(problem) => return Ok($crate::tools::tool_error(&problem)),
        }
    };
}
pub(crate) use principal;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19: home-made formats, type arrays and schemas without a validation keyword made
    /// MCP Inspector `--strict` warn 39 times over 11 tools.
    #[test]
    fn every_served_schema_is_portable_json_schema() {
        for tool in router().list_all() {
            let input = Value::Object(tool.input_schema.as_ref().clone());
            assert_eq!(
                crate::schema::lint(&input),
                Vec::<String>::new(),
                "{} input",
                tool.name
            );
            assert_eq!(
                input["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            if let Some(output) = &tool.output_schema {
                let output = Value::Object(output.as_ref().clone());
                assert_eq!(
                    crate::schema::lint(&output),
                    Vec::<String>::new(),
                    "{} output",
                    tool.name
                );
                jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .build(&output)
                    .unwrap_or_else(|e| panic!("{}: {e}", tool.name));
            }
        }
    }

    /// Issue 16: eight descriptions carried runs of 17 spaces from a line-continuation slip.
    #[test]
    fn every_served_description_is_clean_prose() {
        let tools = router().list_all();
        assert_eq!(tools.len(), 22);
        for tool in tools {
            let description = tool.description.as_deref().unwrap_or_default();
            assert!(!description.is_empty(), "{} has no description", tool.name);
            assert!(
                !description.contains("  ") && !description.contains('\n'),
                "{}: stray whitespace in {description:?}",
                tool.name
            );
            assert!(description.ends_with('.'), "{}: {description:?}", tool.name);
            assert!(
                tool.output_schema.is_some(),
                "{} has no output schema",
                tool.name
            );
            assert!(
                tool.title.as_deref().is_some_and(|t| !t.is_empty()),
                "{}",
                tool.name
            );
            assert!(tool.annotations.is_some(), "{}", tool.name);
        }
    }
}
