//! Rows of the webhook tables into the ports' types, for both stores (see `rows.rs`). The
//! statements select these column names: a delivery joined with its event's `event_type` and
//! its endpoint's `endpoint_url`; a claimed one also with `payload`, `secret` and
//! `event_created_at`.

use svc_ports::{
    AccountId, ClaimedDelivery, DeliveryRecord, DeliveryStatus, EndpointHealth, HookEvent,
    HookEventType, SealedSecret, WebhookDeliveryId, WebhookEndpoint, WebhookEndpointId,
    WebhookEventId, store::StoreError,
};

use crate::rows::{Columns, corrupt_column, known};

/// How the claim statements name [`EndpointHealth`].
pub(crate) fn health(endpoints: EndpointHealth) -> &'static str {
    match endpoints {
        EndpointHealth::Any => "any",
        EndpointHealth::Answering => "answering",
        EndpointHealth::Failing => "failing",
    }
}

pub(crate) fn endpoint(r: &impl Columns) -> Result<WebhookEndpoint, StoreError> {
    Ok(WebhookEndpoint {
        id: r.parsed("id", WebhookEndpointId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        url: r.text("url")?,
        description: r.text("description")?,
        events: r.parsed("events", |s| known(HookEventType::parse_list(s)))?,
        secret: SealedSecret::new(r.bytes("secret")?),
        created_at: r.time("created_at")?,
    })
}

pub(crate) fn event(r: &impl Columns) -> Result<HookEvent, StoreError> {
    Ok(HookEvent {
        id: r.parsed("id", WebhookEventId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        event_type: r.parsed("type", |s| known(HookEventType::parse(s)))?,
        source: r.text("source")?,
        payload: r.text("payload")?,
        created_at: r.time("created_at")?,
    })
}

pub(crate) fn delivery(r: &impl Columns) -> Result<DeliveryRecord, StoreError> {
    let attempts = r.int("attempts")?;
    Ok(DeliveryRecord {
        id: r.parsed("id", WebhookDeliveryId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        event_id: r.parsed("event_id", WebhookEventId::parse)?,
        event_type: r.parsed("event_type", |s| known(HookEventType::parse(s)))?,
        endpoint_id: r.parsed("endpoint_id", WebhookEndpointId::parse)?,
        endpoint_url: r.text("endpoint_url")?,
        status: r.parsed("status", |s| known(DeliveryStatus::parse(s)))?,
        attempts: u32::try_from(attempts).map_err(|e| corrupt_column("attempts", e))?,
        next_attempt_at: r.time_opt("next_attempt_at")?,
        last_attempt_at: r.time_opt("last_attempt_at")?,
        last_status_code: r
            .int_opt("last_status_code")?
            .map(u16::try_from)
            .transpose()
            .map_err(|e| corrupt_column("last_status_code", e))?,
        last_error: r.text_opt("last_error")?,
        replay_of: r.parsed_opt("replay_of", WebhookDeliveryId::parse)?,
        created_at: r.time("created_at")?,
    })
}

pub(crate) fn claimed(r: &impl Columns) -> Result<ClaimedDelivery, StoreError> {
    Ok(ClaimedDelivery {
        delivery: delivery(r)?,
        lease: r.text("lease")?,
        payload: r.text("payload")?,
        secret: SealedSecret::new(r.bytes("secret")?),
        event_created_at: r.time("event_created_at")?,
    })
}
