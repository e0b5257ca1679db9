//! Webhooks to the customer's systems: endpoints, the delivery log and the event feed.

use chrono::{DateTime, Utc};
use poem_openapi::Object;
use svc_ports::{DeliveryRecord, HookEvent, HookEventType, WebhookEndpoint};

/// Register an endpoint.
#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct CreateWebhookEndpointBody {
    /// Where deliveries are POSTed: an `http` or `https` URL the service may call (a private,
    /// loopback or metadata address is refused with 422 `url_refused`, here and at every
    /// delivery). Redirects are not followed.
    #[oai(validator(min_length = 1, max_length = 2048))]
    pub url: String,
    /// The event types to send (`task.completed`, `task.failed`, `credits.added`,
    /// `credits.low`, `authority.exhausted`, `connection.expired`); absent or empty: all.
    #[oai(validator(max_items = 6))]
    pub events: Option<Vec<String>>,
    /// A note for people (at most 200 characters).
    #[oai(validator(max_length = 200))]
    pub description: Option<String>,
}

/// A registered endpoint (its secret is shown only when it is created).
#[derive(Debug, Clone, Object)]
pub struct WebhookEndpointView {
    /// `we_...`
    pub id: String,
    pub url: String,
    pub description: String,
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
}

impl WebhookEndpointView {
    pub fn of(e: &WebhookEndpoint) -> Self {
        Self {
            id: e.id.to_string(),
            url: e.url.clone(),
            description: e.description.clone(),
            events: e.events.iter().map(|t| t.as_str().to_owned()).collect(),
            created_at: e.created_at,
        }
    }
}

/// A new endpoint and its signing secret.
#[derive(Debug, Object)]
pub struct CreatedWebhookEndpoint {
    pub endpoint: WebhookEndpointView,
    /// `whsec_...`: verify deliveries with it (Standard Webhooks). Shown only now; it is kept
    /// sealed and never answered again.
    pub secret: String,
}

#[derive(Debug, Object)]
pub struct WebhookEndpointList {
    /// Newest first.
    pub endpoints: Vec<WebhookEndpointView>,
    /// Every event type an endpoint may subscribe to.
    pub event_types: Vec<String>,
}

pub fn event_types() -> Vec<String> {
    HookEventType::ALL
        .iter()
        .map(|t| t.as_str().to_owned())
        .collect()
}

/// One delivery of an event to an endpoint.
#[derive(Debug, Clone, Object)]
pub struct WebhookDeliveryView {
    /// `whd_...`
    pub id: String,
    /// The event's id, sent as `webhook-id` (the same on every attempt and replay).
    pub event_id: String,
    pub event_type: String,
    pub endpoint_id: String,
    pub endpoint_url: String,
    /// `pending`, `succeeded`, `failed` (given up after 72 h) or `canceled` (endpoint deleted).
    pub status: String,
    pub attempts: u32,
    #[oai(skip_serializing_if_is_none)]
    pub next_attempt_at: Option<DateTime<Utc>>,
    #[oai(skip_serializing_if_is_none)]
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// The endpoint's HTTP status at the last attempt.
    #[oai(skip_serializing_if_is_none)]
    pub last_status_code: Option<u16>,
    #[oai(skip_serializing_if_is_none)]
    pub last_error: Option<String>,
    /// The delivery this one replays.
    #[oai(skip_serializing_if_is_none)]
    pub replay_of: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl WebhookDeliveryView {
    pub fn of(d: &DeliveryRecord) -> Self {
        Self {
            id: d.id.to_string(),
            event_id: d.event_id.to_string(),
            event_type: d.event_type.as_str().to_owned(),
            endpoint_id: d.endpoint_id.to_string(),
            endpoint_url: d.endpoint_url.clone(),
            status: d.status.as_str().to_owned(),
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at,
            last_attempt_at: d.last_attempt_at,
            last_status_code: d.last_status_code,
            last_error: d.last_error.clone(),
            replay_of: d.replay_of.as_ref().map(ToString::to_string),
            created_at: d.created_at,
        }
    }
}

#[derive(Debug, Object)]
pub struct WebhookDeliveryList {
    /// Newest first.
    pub deliveries: Vec<WebhookDeliveryView>,
}

/// One event of the account, as its deliveries carry it.
#[derive(Debug, Object)]
pub struct WebhookEventView {
    /// `evt_...`: the `webhook-id` of its deliveries.
    pub id: String,
    #[oai(rename = "type")]
    pub event_type: String,
    pub created_at: DateTime<Utc>,
    /// The exact JSON text every delivery sends as its body (`id`, `type`, `timestamp`,
    /// `data`).
    pub body: String,
}

impl WebhookEventView {
    pub fn of(e: &HookEvent) -> Self {
        Self {
            id: e.id.to_string(),
            event_type: e.event_type.as_str().to_owned(),
            created_at: e.created_at,
            body: e.payload.clone(),
        }
    }
}

#[derive(Debug, Object)]
pub struct WebhookEventList {
    /// Oldest first.
    pub events: Vec<WebhookEventView>,
    /// Pass as `after` for the next page (the last event's id, or the `after` given).
    #[oai(skip_serializing_if_is_none)]
    pub next_after: Option<String>,
}
