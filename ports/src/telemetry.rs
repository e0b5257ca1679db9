//! Agent traffic events as stored: already validated and redacted.

use chrono::{DateTime, Utc};

use crate::AccountId;

/// One event ready for storage. `event` is the redacted JSON the agent sent.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The service's own id for the record (`evt_` + ULID).
    pub id: String,
    pub received_at: DateTime<Utc>,
    pub event_id: String,
    pub session_id: String,
    pub agent_protocol: String,
    pub discovery_surface: String,
    pub conversion_state: String,
    pub task_type: String,
    /// The account the event belongs to: the key it was sent with, or the account whose step
    /// the service recorded. `None` for anonymous events (only the service-wide funnel counts
    /// them).
    pub account_id: Option<AccountId>,
    pub event: serde_json::Value,
}

/// One cell of the conversion funnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunnelCount {
    pub discovery_surface: String,
    pub conversion_state: String,
    pub events: u64,
}
