//! `svc_auth_status` and the four signup tools, which need no key: the one-link device flow
//! and the email-code fallback.

use kit::problem::ApiProblem;
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use svc_services::{AuthError, IdentityFailure, SignupKey, telemetry::Face};

use super::{answer, authorization, output, reply, tool_error};
use crate::SvcMcp;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Balance {
    pub spendable: i64,
    pub held: i64,
}

/// Whether the presented key is valid, and if so what it is for.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct AuthStatus {
    /// Whether a valid API key was presented.
    pub authenticated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// `sandbox`, `free`, `starter` or `enterprise`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// `live` or `test`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance: Option<Balance>,
    /// Listed prefix of the key, never the secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Why the key was not accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<String>,
    /// What to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimLinkArgs {
    /// Your name, shown to the human on the approval page.
    #[schemars(length(max = 80))]
    pub agent_name: Option<String>,
    /// Your client identifier (defaults to agent_name).
    #[schemars(length(max = 128))]
    pub client_id: Option<String>,
    /// Space-separated scopes; omit for read discover execute.
    #[schemars(length(max = 256))]
    pub scope: Option<String>,
}

/// The link to show the human, and the secret to poll with.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClaimLinkStarted {
    /// The only thing to show the human.
    pub verification_uri_complete: String,
    /// Secret: keep it for svc_poll_claim_link_signup; never show it.
    #[serde(rename = "deviceCode")]
    pub device_code: String,
    /// The code on the human's approval page, XXXX-XXXX.
    pub user_code: String,
    /// Seconds the link stays valid.
    pub expires_in: u64,
    /// Seconds to wait between polls.
    pub interval: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PollArgs {
    /// The deviceCode svc_start_claim_link_signup returned.
    #[serde(rename = "deviceCode")]
    #[schemars(length(min = 1, max = 256))]
    pub device_code: String,
}

/// An API key, issued once.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct IssuedKey {
    /// The API key, shown once: store it securely, never show it in chat.
    pub api_key: String,
    pub key_prefix: String,
    /// Scopes of the key, space-separated.
    pub scope: String,
    pub account_id: String,
    /// Send this to the human in the original conversation.
    pub welcome_message: String,
    /// Adds this MCP server with the key to an MCP client.
    pub mcp_setup_command: String,
}

/// Where the one-link signup stands; the key once it is complete.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClaimLinkPoll {
    /// pending / slow_down: poll again after `interval` seconds; denied / expired: stop;
    /// complete: the key is here.
    pub status: PollStatus,
    /// Seconds to wait before the next poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub key: Option<IssuedKey>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PollStatus {
    Pending,
    SlowDown,
    Denied,
    Expired,
    Complete,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailArgs {
    /// The human's email address.
    #[schemars(length(min = 3, max = 254))]
    pub email: String,
    /// Your name, quoted in the email.
    #[schemars(length(max = 80))]
    pub agent_name: Option<String>,
    /// Space-separated scopes; omit for read discover execute.
    #[schemars(length(max = 256))]
    pub scope: Option<String>,
}

/// The emailed code is on its way.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EmailCodeSent {
    /// Keep it for svc_complete_api_key_signup.
    #[serde(rename = "deviceId")]
    pub device_id: String,
    /// Seconds the code stays valid.
    pub expires_in: u64,
    /// Wrong codes allowed before the code dies.
    pub max_attempts: u32,
    /// What to tell the human.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeArgs {
    /// The deviceId svc_start_api_key_signup returned.
    #[serde(rename = "deviceId")]
    #[schemars(length(min = 1, max = 64))]
    pub device_id: String,
    /// The 6-digit code from the email.
    #[schemars(length(min = 1, max = 16))]
    pub code: String,
}

fn issued(key: SignupKey) -> IssuedKey {
    IssuedKey {
        api_key: key.secret.expose().to_owned(),
        key_prefix: key.record.prefix.as_str().to_owned(),
        scope: key.record.scopes.to_list_string(),
        account_id: key.account.id.as_str().to_owned(),
        welcome_message: key.welcome_message,
        mcp_setup_command: key.mcp_setup_command,
    }
}

#[tool_router(router = signup_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "svc_auth_status",
        title = "Check authentication",
        description = "Reports whether the API key sent in the Authorization header (Bearer svc_...) is valid, and if \
            so its account, plan, credit balance, key prefix and scopes. Needs no key: without one it says so, and \
            suggests signing up with svc_start_claim_link_signup. Never shows the key itself.",
        output_schema = output::<AuthStatus>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_auth_status(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<CallToolResult, McpError> {
        let services = &self.ctx.services;
        Ok(
            match services
                .auth
                .authenticate_header(authorization(&parts))
                .await
            {
                Ok(p) => match services.usage.usage(&p).await {
                    Ok(usage) => answer(&AuthStatus {
                        authenticated: true,
                        account_id: Some(p.account.id.as_str().to_owned()),
                        plan: Some(p.account.plan.as_str().to_owned()),
                        environment: Some(p.account.environment.as_str().to_owned()),
                        balance: Some(Balance {
                            spendable: usage.balance.spendable,
                            held: usage.balance.held,
                        }),
                        key_prefix: Some(p.key.prefix.as_str().to_owned()),
                        scopes: Some(p.key.scopes.iter().map(|s| s.as_str().to_owned()).collect()),
                        ..AuthStatus::default()
                    }),
                    Err(e) => tool_error(&ApiProblem::failure(&e)),
                },
                Err(AuthError::Store(e)) => tool_error(&ApiProblem::failure(&e)),
                Err(e) => {
                    let problem = ApiProblem::from(e);
                    answer(&AuthStatus {
                        failure_class: Some(problem.class.as_str().to_owned()),
                        hint: Some(problem.class.hint().to_owned()),
                        ..AuthStatus::default()
                    })
                }
            },
        )
    }

    #[tool(
        name = "svc_start_claim_link_signup",
        title = "Start one-link signup",
        description = "Starts the preferred signup: returns `verification_uri_complete` and `deviceCode`. First tell \
            the human that the service's terms (/terms) and privacy policy (/privacy) apply. Then show the human \
            ONLY `verification_uri_complete`, as a link to open: they sign in with a code emailed to them and \
            approve. Never show `deviceCode`: keep it, and call svc_poll_claim_link_signup with it every `interval` \
            seconds until it returns the key. Needs no API key.",
        output_schema = output::<ClaimLinkStarted>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_start_claim_link_signup(
        &self,
        Parameters(args): Parameters<ClaimLinkArgs>,
    ) -> Result<CallToolResult, McpError> {
        let client_id = args
            .client_id
            .clone()
            .or_else(|| args.agent_name.clone())
            .unwrap_or_else(|| "mcp-agent".into());
        reply(
            self.ctx
                .services
                .identity
                .start_device(
                    &client_id,
                    args.agent_name.as_deref(),
                    args.scope.as_deref(),
                    Face::Mcp,
                )
                .await,
            |d| {
                answer(&ClaimLinkStarted {
                    verification_uri_complete: d.verification_uri_complete,
                    device_code: d.device_code,
                    user_code: d.user_code.display(),
                    expires_in: d.expires_in,
                    interval: u64::from(d.interval),
                })
            },
        )
    }

    #[tool(
        name = "svc_poll_claim_link_signup",
        title = "Poll one-link signup",
        description = "Checks whether the human approved the link from svc_start_claim_link_signup. Input \
            `deviceCode`. `status` pending or slow_down: wait `interval` seconds and poll again, showing nothing new. \
            denied or expired: stop polling and tell the human. complete: store `api_key` securely (never show it in \
            chat), send `welcome_message` to the human in this conversation, and use `mcp_setup_command` to \
            configure this server with the key. The key is returned once. Needs no API key.",
        output_schema = output::<ClaimLinkPoll>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_poll_claim_link_signup(
        &self,
        Parameters(args): Parameters<PollArgs>,
    ) -> Result<CallToolResult, McpError> {
        let identity = &self.ctx.services.identity;
        Ok(match identity.poll_device(&args.device_code, None).await {
            Ok(key) => answer(&ClaimLinkPoll {
                status: PollStatus::Complete,
                interval: None,
                hint: None,
                key: Some(issued(key)),
            }),
            Err(e) => {
                let interval = identity.settings().poll_interval.as_secs();
                let (status, interval) = match &e {
                    IdentityFailure::AuthorizationPending => (PollStatus::Pending, Some(interval)),
                    IdentityFailure::SlowDown { interval } => {
                        (PollStatus::SlowDown, Some(u64::from(*interval)))
                    }
                    IdentityFailure::AccessDenied => (PollStatus::Denied, None),
                    IdentityFailure::ExpiredToken => (PollStatus::Expired, None),
                    _ => return Ok(tool_error(&ApiProblem::from(e))),
                };
                let problem = ApiProblem::from(e);
                answer(&ClaimLinkPoll {
                    status,
                    interval,
                    hint: Some(problem.class.hint().to_owned()),
                    key: None,
                })
            }
        })
    }

    #[tool(
        name = "svc_start_api_key_signup",
        title = "Start email-code signup",
        description = "Fallback signup when the human cannot open a link: emails a 6-digit code to the human's \
            address and returns `deviceId`. Ask the human for their email first and tell them the terms (/terms) and \
            privacy policy (/privacy) apply. Then ask them for the code from the email and call \
            svc_complete_api_key_signup with `deviceId` and the code. The code lives 10 minutes and dies after 5 \
            wrong tries. No account is created from an email address alone. Needs no API key.",
        output_schema = output::<EmailCodeSent>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn svc_start_api_key_signup(
        &self,
        Parameters(args): Parameters<EmailArgs>,
    ) -> Result<CallToolResult, McpError> {
        let identity = &self.ctx.services.identity;
        reply(
            identity
                .start_email(
                    svc_ports::ChallengePurpose::ApiKey,
                    &args.email,
                    args.agent_name.as_deref(),
                    args.scope.as_deref(),
                    Face::Mcp,
                )
                .await,
            |id| {
                answer(&EmailCodeSent {
                    device_id: id.as_str().to_owned(),
                    expires_in: identity.settings().email_code_ttl.as_secs(),
                    max_attempts: svc_ports::identity::MAX_CODE_ATTEMPTS,
                    message:
                        "A 6-digit code was sent to the address. Ask the human for it, then call \
                        svc_complete_api_key_signup with deviceId and code."
                            .into(),
                })
            },
        )
    }

    #[tool(
        name = "svc_complete_api_key_signup",
        title = "Complete email-code signup",
        description = "Finishes the email-code signup: input `deviceId` from svc_start_api_key_signup and the 6-digit \
            `code` the human read from the email. Returns the API key once: store it securely and never show it in \
            chat; send `welcome_message` to the human; use `mcp_setup_command` to configure this server. A wrong code \
            says how many tries are left. Needs no API key.",
        output_schema = output::<IssuedKey>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_complete_api_key_signup(
        &self,
        Parameters(args): Parameters<CodeArgs>,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, McpError> {
        // Wrong codes count against the caller's address, as on every face.
        let ip = parts.extensions.get::<svc_ports::ClientAddress>().copied();
        reply(
            self.ctx
                .services
                .identity
                .verify_api_key_code(&args.device_id, &args.code, ip)
                .await,
            |key| answer(&issued(key)),
        )
    }
}
