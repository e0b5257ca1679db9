//! `list_domains`, `discover`, `list_actions`, `execute` and `svc_verify_task`: a site's mapped actions, one
//! run of one, and the later verification of a payment's outcome.

use kit::{
    problem::ApiProblem,
    wire::actions::{
        DiscoverResult, ExecutionResult, SupportedDomains, TaskVerification, discover_json,
        verification_view,
    },
};
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::{CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use svc_services::{ExecuteRequest, telemetry::Face};

use super::{principal, reply, structured, tool_error, wire, wire_answer};
use crate::SvcMcp;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainArgs {
    /// The site's host name, e.g. shop.example.com.
    #[schemars(length(min = 1, max = 253))]
    pub domain: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The site's host name, exactly as discover gave it.
    #[schemars(length(min = 1, max = 253))]
    pub domain: String,
    /// The action's name, exactly as discover gave it.
    #[schemars(length(min = 1, max = 64))]
    pub action: String,
    /// The action's parameters, with the keys discover gave.
    pub params: Map<String, Value>,
    /// Same key, same billing task: a retry returns the first answer.
    #[schemars(length(min = 1, max = 255))]
    pub idempotency_key: Option<String>,
    /// For actions that pay (discover shows their payment): the pa_... id of a payment
    /// authority the human created on the site. Ignored by other actions.
    #[schemars(length(min = 1, max = 64))]
    pub authority_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyArgs {
    /// The task_... id execute returned for the payment.
    #[schemars(length(min = 1, max = 64))]
    pub task_id: String,
}

impl SvcMcp {
    async fn discover_tool(
        &self,
        parts: http::request::Parts,
        domain: &str,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        reply(
            self.ctx
                .services
                .actions
                .discover(&principal, domain, Face::Mcp)
                .await,
            |map| structured(discover_json(&map)),
        )
    }
}

#[tool_router(router = actions_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "discover",
        title = "Discover a site's actions",
        description = "Returns the published Agent Map of a domain: each action's exact name, its parameter keys and \
            types, its auth_provider (the connection it needs, or null), whether it is consequential (then the key \
            needs execute:consequential and the human's approval), the scopes it needs and its credit cost. Use the \
            names and keys exactly as given when you call execute. Needs an API key with the discover scope.",
        output_schema = wire::<DiscoverResult>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn discover(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<DomainArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.discover_tool(parts, &args.domain).await
    }

    #[tool(
        name = "list_actions",
        title = "List a site's actions",
        description = "Lists the actions of a domain's published map, each declaring its auth_provider id: when it is \
            not null, pass exactly that id as `provider` to svc_start_connection before executing. Same answer as \
            discover. Needs an API key with the discover scope.",
        output_schema = wire::<DiscoverResult>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_actions(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<DomainArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.discover_tool(parts, &args.domain).await
    }

    #[tool(
        name = "list_domains",
        title = "List the supported domains",
        description = "Lists every domain with a published Agent Map (name, description, map version, number of \
            actions): the domains discover and execute accept. Call it when discover answers unknown_domain. Needs \
            an API key with the discover scope.",
        output_schema = wire::<SupportedDomains>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_domains(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(_): Parameters<super::signup::NoArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        reply(
            self.ctx
                .services
                .actions
                .supported_domains(&principal)
                .await,
            |maps| wire_answer(&SupportedDomains::of(&maps)),
        )
    }

    #[tool(
        name = "execute",
        title = "Execute one action",
        description = "Runs one mapped action: {domain, action, params} with names and keys exactly as discover gave \
            them. The outcome is verified by the site's map, never assumed from an accepted request. Completed: about \
            one credit (the action's cost) is charged and you get the typed `result` with a signed `artifact`. Failed: \
            nothing is charged, and the error carries failure_class, retryable, hint and the artifact of the failure. \
            Pass idempotency_key to make a retry safe: the same key never charges twice. Consequential actions \
            (orders, bookings) need the human's explicit approval and a key with execute:consequential. Actions that \
            pay money (discover shows their `payment`) also need authority_id, a payment authority the human created \
            on the site; without one the answer is payment_authority_required.",
        output_schema = wire::<ExecutionResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn execute(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<ExecuteArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let request = ExecuteRequest {
            domain: args.domain,
            action: args.action,
            params: Value::Object(args.params),
            idempotency_key: args.idempotency_key,
            authority_id: args.authority_id,
        };
        Ok(
            match self
                .ctx
                .services
                .actions
                .execute(&principal, request, Face::Mcp)
                .await
            {
                Ok(executed) if executed.completed => structured(executed.body),
                // A settled failure: the problem with its task and artifact, as text.
                Ok(executed) => {
                    CallToolResult::error(vec![ContentBlock::text(executed.body.to_string())])
                }
                Err(e) => tool_error(&ApiProblem::from(e)),
            },
        )
    }

    #[tool(
        name = "svc_verify_task",
        title = "Verify a payment's outcome",
        description = "For a payment task whose artifact is payment_completed (its authority asked for \
            verification_required): checks the business outcome with the payment action's confirm read on the site \
            and, when the site confirms it, returns a second signed artifact with status verified (the original \
            stays). Nothing is charged. Calling it again returns the stored verification. failure_class \
            verification_pending (retryable: try again later) when the site does not confirm it yet; not_verifiable \
            for any other task. Needs an API key.",
        output_schema = wire::<TaskVerification>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn svc_verify_task(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<VerifyArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let verified = self
            .ctx
            .services
            .actions
            .verify_task(&principal, &args.task_id)
            .await
            .map_err(ApiProblem::from)
            .and_then(|v| verification_view(&v));
        Ok(match verified {
            Ok(v) => wire_answer(&v),
            Err(problem) => tool_error(&problem),
        })
    }
}
