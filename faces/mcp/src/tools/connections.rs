//! `svc_connection_status`, `svc_start_connection` and `svc_poll_connection`: the human's
//! account on a target site, for actions that declare an `auth_provider`.

use kit::wire::connections::{ConnectionStarted, ConnectionStatus, started_body};
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{principal, reply, wire, wire_answer};
use crate::SvcMcp;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderArgs {
    /// Exactly the auth_provider an action declares in discover or list_actions; never guessed.
    #[schemars(length(min = 3, max = 63))]
    pub provider: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// Exactly the auth_provider an action declares in discover or list_actions; never guessed.
    #[schemars(length(min = 3, max = 63))]
    pub provider: String,
    /// The upstream account the human should connect; another ends as wrong_account.
    #[schemars(length(max = 254))]
    pub expected_account: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PollArgs {
    /// Exactly the auth_provider an action declares in discover or list_actions; never guessed.
    #[schemars(length(min = 3, max = 63))]
    pub provider: String,
    /// How long to wait for a change while pending, in milliseconds (default 5000).
    #[schemars(range(max = 10000))]
    pub wait_ms: Option<u16>,
}

#[tool_router(router = connections_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "svc_connection_status",
        title = "Connection status",
        description = "Reports whether the account is connected to a target site's provider (the auth_provider an \
            action declares). Never returns a token. Needs an API key.",
        output_schema = wire::<ConnectionStatus>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_connection_status(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<ProviderArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        reply(
            self.ctx
                .services
                .connections
                .status(&principal.account.id, &args.provider)
                .await,
            |view| wire_answer(&ConnectionStatus::from(view)),
        )
    }

    #[tool(
        name = "svc_start_connection",
        title = "Start a connection",
        description = "Starts connecting the human's account on a target site, for actions that declare this \
            auth_provider. Returns connect_url: show only that to the human (it lives 10 minutes); they sign in and \
            approve at the site. Then call svc_poll_connection until connected=true or a final state (expired, \
            refused, wrong_account: stop). Pass expected_account when you know which upstream account the human \
            means. Needs an API key.",
        output_schema = wire::<ConnectionStarted>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_start_connection(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<StartArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        reply(
            self.ctx
                .services
                .connections
                .start(
                    &principal.account.id,
                    &args.provider,
                    args.expected_account.as_deref(),
                )
                .await,
            |started| wire_answer(&started_body(started)),
        )
    }

    #[tool(
        name = "svc_poll_connection",
        title = "Poll a connection",
        description = "Returns the connection's state, waiting up to wait_ms (default 5000, at most 10000) while it is \
            pending. connected=true: run the actions. final=true (expired, refused, wrong_account): stop and tell the \
            human. Needs an API key.",
        output_schema = wire::<ConnectionStatus>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_poll_connection(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<PollArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let wait = std::time::Duration::from_millis(u64::from(args.wait_ms.unwrap_or(5000)));
        reply(
            self.ctx
                .services
                .connections
                .poll(&principal.account.id, &args.provider, wait)
                .await,
            |view| wire_answer(&ConnectionStatus::from(view)),
        )
    }
}
