//! `POST /telemetry/agent-event` (no credentials) and `GET /api/telemetry/funnel`.

use poem_openapi::Object;

/// The event was accepted: stored after the listed redactions.
#[derive(Debug, Object)]
pub struct EventAccepted {
    /// The caller's `event_id`.
    pub event_id: String,
    /// The service's id of the stored record.
    pub record_id: String,
    /// Every removal made before storage: the caller's own list, then ours as
    /// `kind:JSON pointer` (raw_prompt, credential, email, card_number, api_key).
    pub privacy_redactions: Vec<String>,
}

#[derive(Debug, Object)]
pub struct FunnelCell {
    pub discovery_surface: String,
    pub conversion_state: String,
    pub events: u64,
}

#[derive(Debug, Object)]
pub struct Funnel {
    /// Hours covered, ending now.
    pub hours: i64,
    pub cells: Vec<FunnelCell>,
}
