//! Webhooks to the customer's own systems: endpoints an account registers (each with its own
//! `whsec_` secret, shown once and kept sealed), the events the service records for it (once
//! per fact), and their deliveries from the durable outbox (`deliver.rs`), signed per Standard
//! Webhooks with the same code that checks the payment provider's deliveries.

mod deliver;

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use svc_ports::{
    AccountId, ActionTransport, Clock, DeliveryIds, DeliveryRecord, EnqueueOutcome, Entropy,
    FetchError, HookError, HookEvent, HookEventType, HookStore, SecretSealer, UrlRefusal,
    WebhookDeliveryId, WebhookEndpoint, WebhookEndpointId, WebhookEventId, webhooks::WebhookSecret,
};
use tokio::sync::Notify;

pub use deliver::{
    BATCH, CAPS, FAILING_CAPS, FAILING_SENDERS, GIVE_UP_AFTER_HOURS, LEASE_SECONDS, SENDERS,
    retry_delay,
};

/// Most endpoints one account may register (Stripe's figure), and in the sandbox, where test
/// runs and fuzzers register them by the hundred.
pub const MAX_ENDPOINTS: usize = 16;
pub const MAX_SANDBOX_ENDPOINTS: usize = 10_000;
const _: () = assert!(
    MAX_SANDBOX_ENDPOINTS < DeliveryIds::MAX,
    "an event reaches every endpoint"
);
/// Longest endpoint URL and description.
pub const MAX_URL_LEN: usize = 2048;
pub const MAX_DESCRIPTION_LEN: usize = 200;
/// Most replays of one endpoint waiting to be sent: replays are free, and the outbox is not
/// a queue anyone may fill.
pub const MAX_PENDING_REPLAYS: u32 = 100;
/// Longest page of the delivery log and of the event feed.
pub const MAX_PAGE: u32 = 100;
/// How far back the sweeps look for facts recorded without their event (a settlement, a
/// credited payment): longer than any gap between two of their runs, with room for a restart.
/// They look back as far from the start of their last run that went through everything too
/// ([`HookService::sweep`]), so an outage longer than this loses nothing.
pub const SWEEP_WINDOW_MINUTES: i64 = 60;
/// However long the outage, a sweep looks back at most this far (a week: deliveries are
/// retried for 72 hours; an event older than that is for the feed only).
pub const MAX_SWEEP_LOOKBACK_HOURS: i64 = 7 * 24;

/// Facts a sweep's query answers at most per run; a run whose queries all answered fewer went
/// through everything.
pub const SWEEP_LIMIT: u32 = 100;
/// A sweep runs every few seconds; its mark is written again only once it is this old (the
/// next run then looks back that much further, which costs nothing).
const MARK_EVERY_MINUTES: i64 = 5;

/// A run of a recovery sweep: its name, from when it looks, when it began and the mark it
/// found ([`HookService::sweep`], [`HookService::end_sweep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepRun {
    name: &'static str,
    pub since: DateTime<Utc>,
    began: DateTime<Utc>,
    mark: Option<DateTime<Utc>>,
}

#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    #[error("{0}")]
    Invalid(String),
    /// The URL may not be called: private, loopback or metadata address, not http(s), ...
    #[error("{0}")]
    UrlRefused(UrlRefusal),
    /// Unknown, deleted, or another account's.
    #[error("no webhook endpoint or delivery of this account has that id")]
    NotFound,
    #[error(
        "this endpoint already has {0} replays waiting to be sent; replay more once they are sent"
    )]
    TooManyReplays(u32),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<svc_ports::StoreError> for HookFailure {
    fn from(e: svc_ports::StoreError) -> Self {
        Self::Internal(anyhow::Error::new(e))
    }
}

impl From<HookError> for HookFailure {
    fn from(e: HookError) -> Self {
        match e {
            HookError::NotFound => Self::NotFound,
            HookError::TooManyReplays(n) => Self::TooManyReplays(n),
            other => Self::Internal(anyhow::Error::new(other)),
        }
    }
}

/// A new endpoint and its secret, which is never shown again.
pub struct CreatedEndpoint {
    pub endpoint: WebhookEndpoint,
    pub secret: String,
}

/// What a caller asks to register.
pub struct NewEndpoint<'a> {
    pub url: &'a str,
    pub description: Option<&'a str>,
    /// Event type names; empty means every type.
    pub events: &'a [String],
}

pub struct HookService {
    store: Arc<dyn HookStore>,
    sealer: Arc<dyn SecretSealer>,
    transport: Arc<dyn ActionTransport>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    /// Wakes the delivery worker when an event or a replay is stored.
    wake: Arc<Notify>,
    max_endpoints: usize,
}

impl HookService {
    pub fn new(
        store: Arc<dyn HookStore>,
        sealer: Arc<dyn SecretSealer>,
        transport: Arc<dyn ActionTransport>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
    ) -> Self {
        Self {
            store,
            sealer,
            transport,
            clock,
            entropy,
            wake: Arc::new(Notify::new()),
            max_endpoints: MAX_ENDPOINTS,
        }
    }

    /// Sets how many endpoints an account may have.
    pub fn with_max_endpoints(mut self, max: usize) -> Self {
        self.max_endpoints = max;
        self
    }

    /// Notified when something is due at once (the worker waits on it between rounds).
    pub fn wake_signal(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Registers an endpoint: the URL must be one the guarded client would call (checked now,
    /// and again at every delivery); the events a non-empty set of known types.
    pub async fn create_endpoint(
        &self,
        account: &AccountId,
        new: NewEndpoint<'_>,
    ) -> Result<CreatedEndpoint, HookFailure> {
        let url = new.url;
        // A URL parser drops a trailing NUL or tab, so the check below would pass on a URL
        // that is not the one stored (and a NUL cannot be stored in Postgres at all).
        if url.is_empty()
            || url.len() > MAX_URL_LEN
            || url.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(HookFailure::Invalid(format!(
                "`url` must be an http or https URL of at most {MAX_URL_LEN} characters, without spaces or control characters."
            )));
        }
        let description = new.description.unwrap_or("").trim();
        if description.chars().count() > MAX_DESCRIPTION_LEN
            || description.chars().any(char::is_control)
        {
            return Err(HookFailure::Invalid(format!(
                "`description` must be printable text of at most {MAX_DESCRIPTION_LEN} characters."
            )));
        }
        let events = parse_events(new.events)?;
        match self.transport.check(url).await {
            Ok(()) => {}
            Err(FetchError::Refused(r)) => return Err(HookFailure::UrlRefused(r)),
            Err(other) => return Err(HookFailure::Invalid(other.to_string())),
        }
        if self.store.endpoints(account).await?.len() >= self.max_endpoints {
            return Err(HookFailure::Invalid(format!(
                "An account may have at most {} webhook endpoints; delete one first.",
                self.max_endpoints
            )));
        }
        let key = self.entropy.base62(32);
        let secret = WebhookSecret::from_key(key.as_bytes())
            .map_err(|e| HookFailure::Internal(anyhow::anyhow!("webhook secret: {e}")))?;
        let endpoint_id = WebhookEndpointId::from_ulid(self.entropy.ulid());
        let endpoint = WebhookEndpoint {
            secret: self
                .sealer
                .seal(secret.expose().as_bytes(), &secret_context(&endpoint_id)),
            id: endpoint_id,
            account_id: account.clone(),
            url: url.to_owned(),
            description: description.to_owned(),
            events,
            created_at: self.now(),
        };
        self.store
            .insert_endpoint(&endpoint)
            .await
            .map_err(|e| match e {
                HookError::UnknownAccount => HookFailure::NotFound,
                other => other.into(),
            })?;
        tracing::info!(endpoint_id = %endpoint.id, account_id = %account, "webhook endpoint registered");
        Ok(CreatedEndpoint {
            endpoint,
            secret: secret.expose(),
        })
    }

    pub async fn endpoints(
        &self,
        account: &AccountId,
    ) -> Result<Vec<WebhookEndpoint>, HookFailure> {
        Ok(self.store.endpoints(account).await?)
    }

    /// Deletes the account's endpoint; its pending deliveries are canceled. Deleting it again
    /// succeeds.
    pub async fn delete_endpoint(&self, account: &AccountId, id: &str) -> Result<(), HookFailure> {
        let id = WebhookEndpointId::parse(id.trim()).map_err(|_| HookFailure::NotFound)?;
        self.store.delete_endpoint(account, &id, self.now()).await?;
        tracing::info!(endpoint_id = %id, account_id = %account, "webhook endpoint deleted");
        Ok(())
    }

    /// The account's delivery log, newest first.
    pub async fn deliveries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, HookFailure> {
        Ok(self
            .store
            .deliveries(account, limit.clamp(1, MAX_PAGE))
            .await?)
    }

    /// Sends the delivery's event to its endpoint again, as a new delivery with the same
    /// `webhook-id` (receivers that deduplicate see it once).
    pub async fn replay(
        &self,
        account: &AccountId,
        id: &str,
    ) -> Result<DeliveryRecord, HookFailure> {
        let id = WebhookDeliveryId::parse(id.trim()).map_err(|_| HookFailure::NotFound)?;
        let new_id = WebhookDeliveryId::from_ulid(self.entropy.ulid());
        let replay = self
            .store
            .replay_delivery(account, &id, &new_id, self.now(), MAX_PENDING_REPLAYS)
            .await?;
        tracing::info!(delivery_id = %new_id, replay_of = %id, "webhook delivery replayed");
        self.wake.notify_one();
        Ok(replay)
    }

    /// The account's events after `after` (an `evt_` id; all when `None`), oldest first, for
    /// `svc listen`.
    pub async fn events_after(
        &self,
        account: &AccountId,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<HookEvent>, HookFailure> {
        let after = match after.map(str::trim).filter(|a| !a.is_empty()) {
            Some(a) => Some(WebhookEventId::parse(a).map_err(|_| {
                HookFailure::Invalid("`after` must be an event id (`evt_...`).".into())
            })?),
            None => None,
        };
        Ok(self
            .store
            .events_after(account, after, limit.clamp(1, MAX_PAGE))
            .await?)
    }

    /// Receipts that added credits without their `credits.added` event (see
    /// [`HookStore::credits_missing_events`]).
    pub async fn credits_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<svc_ports::Receipt>, svc_ports::StoreError> {
        self.store.credits_missing_events(since, limit).await
    }

    /// A run of the recovery sweep `name`: it looks back [`SWEEP_WINDOW_MINUTES`] from now and
    /// from the start of its last run that went through everything, whichever is earlier (at
    /// most [`MAX_SWEEP_LOOKBACK_HOURS`]).
    pub async fn sweep(&self, name: &'static str) -> Result<SweepRun, svc_ports::StoreError> {
        let began = self.clock.now();
        let mark = self.store.sweep_mark(name).await?;
        Ok(SweepRun {
            name,
            since: sweep_since(mark, began),
            began,
            mark,
        })
    }

    /// Ends `run`, whose queries answered `found` facts each: when every one answered fewer
    /// than [`SWEEP_LIMIT`] the run went through everything, and its start becomes the mark
    /// (unless the mark is younger than a few minutes).
    pub async fn end_sweep(
        &self,
        run: SweepRun,
        found: &[usize],
    ) -> Result<(), svc_ports::StoreError> {
        let through = found.iter().all(|&n| n < SWEEP_LIMIT as usize);
        if through && mark_due(run.mark, run.began) {
            self.store.mark_sweep(run.name, run.began).await?;
        }
        Ok(())
    }

    /// Connections that expired without their event ([`HookStore::connections_missing_events`]).
    pub async fn connections_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<svc_ports::ConnectionRecord>, svc_ports::StoreError> {
        self.store.connections_missing_events(since, limit).await
    }

    /// Records an event for the account, once per `source` (what it is about), with a
    /// delivery to each endpoint subscribed to its type. Never fails its caller: the fact it
    /// reports already happened, so a store failure is logged, not passed on.
    pub async fn emit(
        &self,
        account: &AccountId,
        event_type: HookEventType,
        source: String,
        data: Value,
    ) {
        if let Err(e) = self.try_emit(account, event_type, source, data).await {
            tracing::error!(error = %e, account_id = %account, event_type = event_type.as_str(), "webhook event not recorded");
        }
    }

    async fn try_emit(
        &self,
        account: &AccountId,
        event_type: HookEventType,
        source: String,
        data: Value,
    ) -> Result<(), HookFailure> {
        let (event, ids) = self.event(account, event_type, source, data);
        match self.store.enqueue_event(&event, ids).await {
            Ok(outcome) => self.recorded(&event, &outcome),
            Err(HookError::UnknownAccount) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// The event `emit` records, for a store call that records it with other writes (a
    /// settlement's), then given to [`Self::recorded`]. The store picks the subscribed
    /// endpoints in the event's own statement (no read first) and names their deliveries from
    /// one seed.
    pub fn event(
        &self,
        account: &AccountId,
        event_type: HookEventType,
        source: String,
        data: Value,
    ) -> (HookEvent, DeliveryIds) {
        let ids = DeliveryIds::new(self.entropy.ulid());
        let at = self.now();
        let id = WebhookEventId::from_ulid(self.entropy.ulid());
        let payload = json!({
            "id": id.as_str(),
            "type": event_type.as_str(),
            "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
            "data": data,
        });
        let event = HookEvent {
            id,
            account_id: account.clone(),
            event_type,
            source,
            payload: payload.to_string(),
            created_at: at,
        };
        (event, ids)
    }

    /// After the store recorded `event`: its deliveries are due now.
    pub fn recorded(&self, event: &HookEvent, outcome: &EnqueueOutcome) {
        match outcome {
            EnqueueOutcome::Enqueued { deliveries } => {
                tracing::info!(event_id = %event.id, event_type = event.event_type.as_str(), deliveries, "webhook event recorded");
                if *deliveries > 0 {
                    self.wake.notify_one();
                }
            }
            EnqueueOutcome::Duplicate => {
                tracing::debug!(source = %event.source, "webhook event recorded before");
            }
        }
    }
}

/// Event type names into types: known names only, each once; none means every type.
pub fn parse_events(names: &[String]) -> Result<Vec<HookEventType>, HookFailure> {
    if names.is_empty() {
        return Ok(HookEventType::ALL.to_vec());
    }
    let mut events = Vec::new();
    for name in names {
        let t = HookEventType::parse(name.as_str()).ok_or_else(|| {
            HookFailure::Invalid(format!(
                "Unknown event type `{}`; the types are {}.",
                name,
                HookEventType::ALL.map(|t| t.as_str()).join(", ")
            ))
        })?;
        if events.contains(&t) {
            return Err(HookFailure::Invalid(format!(
                "Event type `{}` is named twice.",
                t.as_str()
            )));
        }
        events.push(t);
    }
    events.sort();
    Ok(events)
}

/// From when a sweep begun at `began` looks, given its `mark` (see [`HookService::sweep`]).
fn sweep_since(mark: Option<DateTime<Utc>>, began: DateTime<Utc>) -> DateTime<Utc> {
    let window = chrono::Duration::minutes(SWEEP_WINDOW_MINUTES);
    let floor = began - chrono::Duration::hours(MAX_SWEEP_LOOKBACK_HOURS);
    let since = match mark {
        Some(mark) => (mark - window).min(began - window),
        None => began - window,
    };
    since.max(floor)
}

/// Whether a run begun at `began` writes its start as the mark, given the mark it found.
fn mark_due(mark: Option<DateTime<Utc>>, began: DateTime<Utc>) -> bool {
    mark.is_none_or(|m| began - m >= chrono::Duration::minutes(MARK_EVERY_MINUTES))
}

/// What an endpoint's sealed signing secret is bound to.
pub(crate) fn secret_context(id: &WebhookEndpointId) -> String {
    svc_ports::SealedField::WebhookSecret.context(id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_looks_back_an_hour_from_now_and_from_its_mark_at_most_a_week() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let hour = chrono::Duration::hours(1);
        assert_eq!(sweep_since(None, now), now - hour);
        assert_eq!(sweep_since(Some(now - hour * 5), now), now - hour * 6);
        // An hour before a recent mark; a mark ahead (a clock that stepped back) never
        // shortens the hour.
        assert_eq!(sweep_since(Some(now - hour / 2), now), now - hour * 3 / 2);
        assert_eq!(sweep_since(Some(now + hour), now), now - hour);
        let week = chrono::Duration::hours(MAX_SWEEP_LOOKBACK_HOURS);
        assert_eq!(sweep_since(Some(now - week * 4), now), now - week);
        // The mark is written when there is none, or once it is a few minutes old.
        assert!(mark_due(None, now));
        assert!(!mark_due(Some(now - chrono::Duration::minutes(4)), now));
        assert!(mark_due(Some(now - chrono::Duration::minutes(5)), now));
    }

    #[test]
    fn events_are_known_types_each_once_and_none_means_all() {
        assert_eq!(parse_events(&[]).unwrap(), HookEventType::ALL.to_vec());
        let two = ["task.failed".to_owned(), "task.completed".into()];
        assert_eq!(
            parse_events(&two).unwrap(),
            vec![HookEventType::TaskCompleted, HookEventType::TaskFailed]
        );
        let twice = ["task.failed".to_owned(), "task.failed".into()];
        assert!(parse_events(&twice).is_err());
        let err = parse_events(&["task.done".to_owned()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("task.done") && err.contains("credits.low"),
            "{err}"
        );
    }
}
