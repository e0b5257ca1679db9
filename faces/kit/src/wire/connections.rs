//! Target-site connections over REST: status, start (the link to show the human) and poll.
//! The MCP tools `svc_connection_status`, `svc_start_connection` and `svc_poll_connection`
//! answer with the same bodies.

use poem_openapi::Object;
use svc_services::connections::{ConnectionView, POLL_AFTER_MS};

/// Where a connection stands. Never carries a token.
#[derive(Debug, Clone, Object)]
pub struct ConnectionStatus {
    /// The provider id, exactly as the action's `auth_provider`.
    pub provider: String,
    /// `none` (never started), `pending`, `connected`, `expired`, `refused` or `wrong_account`.
    pub state: String,
    /// True only when connected: actions that declare this provider can run.
    pub connected: bool,
    /// Expired, refused or wrong account: stop polling; only the human can start again.
    #[oai(rename = "final")]
    pub is_final: bool,
    #[oai(skip_serializing_if_is_none)]
    pub connection_id: Option<String>,
    /// The upstream account the agent said it expected.
    #[oai(skip_serializing_if_is_none)]
    pub expected_account: Option<String>,
    /// The upstream account the provider reported.
    #[oai(skip_serializing_if_is_none)]
    pub upstream_account: Option<String>,
    /// While pending: when the connect link stops working.
    #[oai(skip_serializing_if_is_none)]
    pub link_expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// While pending: wait this long before polling again.
    #[oai(skip_serializing_if_is_none)]
    pub poll_after_ms: Option<u64>,
    /// What to do now, in a sentence.
    pub next_step: String,
}

impl From<ConnectionView> for ConnectionStatus {
    fn from(v: ConnectionView) -> Self {
        let state = v.state.map_or("none", |s| s.as_str()).to_owned();
        let next_step = match state.as_str() {
            "none" => "Start a connection with svc_start_connection (POST /api/connections/{provider}/start) and show the human its connect_url.",
            "pending" => "Wait for the human to finish at connect_url; poll again after poll_after_ms.",
            "connected" => "Connected: run the actions that declare this auth_provider.",
            "expired" => "Stop: the link or the connection expired. Start a new connection only if the human asks.",
            "refused" => "Stop: the human refused access. Do not start again unless they ask.",
            _ => "Stop: the human connected a different account than expected. Ask them which account to use.",
        }
        .to_owned();
        Self {
            connected: v.connected(),
            is_final: v.is_final(),
            poll_after_ms: (state == "pending").then_some(POLL_AFTER_MS),
            provider: v.provider,
            state,
            connection_id: v.connection_id.map(|c| c.to_string()),
            expected_account: v.expected_account,
            upstream_account: v.upstream_account,
            link_expires_at: v.link_expires_at,
            next_step,
        }
    }
}

/// A started connection: show `connect_url` to the human, then poll.
#[derive(Debug, Object)]
pub struct ConnectionStarted {
    pub provider: String,
    pub connection_id: String,
    /// `pending`.
    pub state: String,
    /// The page where the human signs in here and approves at the provider. Show only this.
    pub connect_url: String,
    /// When `connect_url` stops working.
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub poll_after_ms: u64,
}

#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct StartConnectionBody {
    /// The upstream account the human should connect (e.g. their email there); another
    /// account ends the connection as `wrong_account`.
    #[oai(validator(max_length = 254))]
    pub expected_account: Option<String>,
}

pub fn started_body(started: svc_services::connections::StartedConnection) -> ConnectionStarted {
    ConnectionStarted {
        provider: started.view.provider,
        connection_id: started
            .view
            .connection_id
            .map(|c| c.to_string())
            .unwrap_or_default(),
        state: "pending".into(),
        connect_url: started.connect_url,
        expires_at: started.expires_at,
        poll_after_ms: POLL_AFTER_MS,
    }
}
