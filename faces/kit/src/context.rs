//! What every face holds: the services and the resolved settings.

use std::sync::Arc;

use svc_ports::{Environment, Outbox, TrustedProxies};

use svc_services::Services;

/// The public origins the service answers for.
#[derive(Debug, Clone)]
pub struct Origins {
    /// The runtime API (`{base_url}`).
    pub base_url: String,
    /// Discovery files, scan and billing pages (`{site_url}`).
    pub site_url: String,
    /// The MCP endpoint (`{mcp_url}`).
    pub mcp_url: String,
}

#[derive(Clone)]
pub struct AppContext {
    pub services: Arc<Services>,
    /// The sandbox's outbox, served at `/sandbox/outbox`; `None` in live.
    pub outbox: Option<Arc<dyn Outbox>>,
    pub origins: Arc<Origins>,
    /// Live for `svc serve`, test for `svc sandbox`: keys of the other kind are refused.
    pub environment: Environment,
    /// Whose forwarding headers name the client (`SVC_TRUSTED_PROXIES`).
    pub proxies: Arc<TrustedProxies>,
    /// The Web Bot Auth key directory (`/.well-known/http-message-signatures-directory`);
    /// `None` when outbound requests are not signed.
    pub bot_directory: Option<Arc<dyn svc_ports::bot_auth::BotDirectory>>,
    pub limits: Limits,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub rate_limit_per_key: u32,
    pub rate_limit_per_ip: u32,
    pub scan_rate_limit_per_ip: u32,
    pub recover_after_seconds: i64,
    pub shutdown_grace_seconds: u64,
}
