//! Webhooks to the customer's own systems: the endpoints an account registers, the events the
//! service records for it, and the durable outbox of deliveries a worker sends (signed per
//! Standard Webhooks with [`crate::webhooks::WebhookSecret`], the same code that checks the
//! payment provider's deliveries).
//!
//! An event is stored once per account and `source` (what it is about), with one delivery per
//! endpoint subscribed to its type, in one transaction. A delivery is sent only by the
//! instance holding its lease; its attempt is recorded under that lease, so instances sharing
//! a store never send one attempt twice at once, and a delivery whose instance died is claimed
//! again once its lease ends (at least once, one `webhook-id` per event).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use ulid::Ulid;

use crate::{
    AccountId, Currency, Receipt, SealedSecret, TaskRecord,
    ids::{AuthorityId, TaskId, WebhookDeliveryId, WebhookEndpointId, WebhookEventId},
    store::StoreError,
};

/// What an endpoint may subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEventType {
    /// A task settled completed (charged).
    TaskCompleted,
    /// A task settled failed (refunded).
    TaskFailed,
    /// A verified payment added credits.
    CreditsAdded,
    /// A charge took spendable credits below the low-balance mark.
    CreditsLow,
    /// A payment authority has nothing left to spend.
    AuthorityExhausted,
    /// A target-site connection expired (it could not be refreshed).
    ConnectionExpired,
}

impl HookEventType {
    pub const ALL: [HookEventType; 6] = [
        HookEventType::TaskCompleted,
        HookEventType::TaskFailed,
        HookEventType::CreditsAdded,
        HookEventType::CreditsLow,
        HookEventType::AuthorityExhausted,
        HookEventType::ConnectionExpired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEventType::TaskCompleted => "task.completed",
            HookEventType::TaskFailed => "task.failed",
            HookEventType::CreditsAdded => "credits.added",
            HookEventType::CreditsLow => "credits.low",
            HookEventType::AuthorityExhausted => "authority.exhausted",
            HookEventType::ConnectionExpired => "connection.expired",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == raw)
    }

    /// A stored list (`task.completed task.failed`), as [`Self::join`] writes it.
    pub fn parse_list(raw: &str) -> Option<Vec<Self>> {
        raw.split(' ')
            .filter(|s| !s.is_empty())
            .map(Self::parse)
            .collect()
    }

    /// The stored form of a list: names separated by one space.
    pub fn join(types: &[HookEventType]) -> String {
        types
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A registered endpoint. Its secret is sealed ([`crate::SecretSealer`]); the `whsec_` form is
/// shown once, when it is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    pub id: WebhookEndpointId,
    pub account_id: AccountId,
    pub url: String,
    pub description: String,
    /// Never empty; no type twice.
    pub events: Vec<HookEventType>,
    pub secret: SealedSecret,
    pub created_at: DateTime<Utc>,
}

/// One event of an account, as sent: `payload` is the exact body of every delivery of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub id: WebhookEventId,
    pub account_id: AccountId,
    pub event_type: HookEventType,
    /// What the event is about, unique per account (`task:{id}`, `payment:{id}:...`): the same
    /// fact recorded twice (two instances, a retried settlement) is one event.
    pub source: String,
    /// JSON text.
    pub payload: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Waiting for its next attempt (or being attempted, under a lease).
    Pending,
    /// The endpoint answered 2xx.
    Succeeded,
    /// Given up: no 2xx within the retry window.
    Failed,
    /// Its endpoint was deleted before it succeeded.
    Canceled,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
            DeliveryStatus::Canceled => "canceled",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [
            DeliveryStatus::Pending,
            DeliveryStatus::Succeeded,
            DeliveryStatus::Failed,
            DeliveryStatus::Canceled,
        ]
        .into_iter()
        .find(|s| s.as_str() == raw)
    }
}

/// One delivery as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    pub id: WebhookDeliveryId,
    pub account_id: AccountId,
    pub event_id: WebhookEventId,
    pub event_type: HookEventType,
    pub endpoint_id: WebhookEndpointId,
    pub endpoint_url: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    /// When it is due again (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// The endpoint's HTTP status at the last attempt, when it answered.
    pub last_status_code: Option<u16>,
    /// Why the last attempt failed (refused URL, timeout, status), when it did.
    pub last_error: Option<String>,
    /// The delivery this one replays, if it is a replay.
    pub replay_of: Option<WebhookDeliveryId>,
    pub created_at: DateTime<Utc>,
}

/// A delivery claimed for one attempt, with what sending it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    pub delivery: DeliveryRecord,
    /// The claim's token: the attempt is recorded only under it.
    pub lease: String,
    pub payload: String,
    pub secret: SealedSecret,
    /// When the event happened: the retry window runs from here.
    pub event_created_at: DateTime<Utc>,
}

/// What comes of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    Delivered,
    RetryAt(DateTime<Utc>),
    GaveUp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub at: DateTime<Utc>,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub result: AttemptResult,
}

/// The ids of one event's deliveries, all derived from one ULID so that a store can name them
/// inside the event's own statement, without reading the endpoints first: the n-th delivery's
/// id is the seed with the top 15 bits of its randomness (the ULID's characters 11 to 13) set
/// to n. A monotonic generator's seeds differ in their low bits, and random ones in 65 bits, so
/// two events never share a delivery id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryIds(Ulid);

impl DeliveryIds {
    /// Most deliveries one event can have: n takes 15 bits.
    pub const MAX: usize = 1 << 15;
    /// The ULID alphabet (Crockford's base 32), for stores that spell n in SQL.
    pub const DIGITS: &'static str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    const SHIFT: u32 = 65;

    pub fn new(seed: Ulid) -> Self {
        Self(seed)
    }

    /// The n-th delivery's id; none past [`Self::MAX`].
    pub fn nth(&self, n: usize) -> Option<WebhookDeliveryId> {
        let mask = ((Self::MAX as u128) - 1) << Self::SHIFT;
        (n < Self::MAX).then(|| {
            let bits = (self.0.0 & !mask) | ((n as u128) << Self::SHIFT);
            WebhookDeliveryId::from_ulid(Ulid(bits))
        })
    }

    /// The id's text before and after the three characters that spell n (most significant
    /// first), for a store that builds the ids in SQL: `head || digits(n) || tail`.
    pub fn around(&self) -> (String, String) {
        let id = self.nth(0).expect("0 is in range");
        let at = WebhookDeliveryId::PREFIX.len() + 10;
        (
            id.as_str()[..at].to_owned(),
            id.as_str()[at + 3..].to_owned(),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// Stored, with this many deliveries.
    Enqueued { deliveries: u32 },
    /// The account already has an event with this `source`: nothing stored.
    Duplicate,
}

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("account not found")]
    UnknownAccount,
    #[error("an endpoint or event with this id already exists")]
    Duplicate,
    /// No such endpoint or delivery, or another account's, or its endpoint was deleted.
    #[error("not found")]
    NotFound,
    /// The endpoint has as many replays waiting to be sent as it may.
    #[error("the endpoint has {0} replays waiting to be sent")]
    TooManyReplays(u32),
    /// The lease ended and another claim holds the delivery, or it is no longer pending.
    #[error("the delivery's lease was lost")]
    LeaseLost,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A completed task whose charge took the account below the low-credits mark, and the
/// spendable balance its capture left (see [`HookStore::low_charges_missing_events`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LowCharge {
    pub task: TaskRecord,
    pub spendable: i64,
}

/// The settlement that tells that an authority has nothing left in a window (see
/// [`HookStore::exhaustions_missing_events`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Exhaustion {
    pub task: TaskRecord,
    pub authority_id: AuthorityId,
    pub currency: Currency,
    /// When the window ends and the authority's allowance comes back; `None` when it never
    /// does ([`crate::authority::window_end`]).
    pub window_end: Option<DateTime<Utc>>,
}

/// The most deliveries in flight at once (under a live lease) for one endpoint and for one
/// account, and which endpoints' deliveries a claim takes; see [`HookStore::claim_due`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimCaps {
    pub per_endpoint: u32,
    pub per_account: u32,
    pub endpoints: EndpointHealth,
}

/// Endpoints by how their last recorded attempt went (see [`HookStore::record_attempt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointHealth {
    Any,
    /// No attempt yet, or the last one delivered.
    Answering,
    /// The last attempt failed (an error status, no answer, a timeout).
    Failing,
}

/// Endpoints, events and the delivery outbox of the customer's webhooks.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait HookStore: Send + Sync {
    /// MUST return [`HookError::UnknownAccount`] for an unknown account and
    /// [`HookError::Duplicate`] for a taken id; then nothing is stored.
    async fn insert_endpoint(&self, endpoint: &WebhookEndpoint) -> Result<(), HookError>;

    /// The account's endpoints that were not deleted, newest first.
    async fn endpoints(&self, account: &AccountId) -> Result<Vec<WebhookEndpoint>, StoreError>;

    /// Deletes the account's endpoint and cancels its pending deliveries, in one transaction.
    /// Idempotent: deleting it again changes nothing and succeeds (the first `deleted_at`
    /// stays). MUST return [`HookError::NotFound`] for an unknown id and for another account's
    /// endpoint, changing nothing.
    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookEndpointId,
        at: DateTime<Utc>,
    ) -> Result<(), HookError>;

    /// Stores the event and, in the same transaction, one pending delivery (due at
    /// `event.created_at`) to each of the account's endpoints that is not deleted and
    /// subscribes to the event's type: the n-th of them (from 0), oldest first (by creation,
    /// then id), gets the id `ids.nth(n)`; endpoints past [`DeliveryIds::MAX`] get none. When
    /// the account already has an event with the same `source`, MUST store nothing and return
    /// [`EnqueueOutcome::Duplicate`], also when two race. MUST return
    /// [`HookError::UnknownAccount`] for an unknown account.
    async fn enqueue_event(
        &self,
        event: &HookEvent,
        ids: DeliveryIds,
    ) -> Result<EnqueueOutcome, HookError>;

    /// Claims at most `limit` pending deliveries due at `now` whose lease is free (never
    /// taken, or ended at or before `now`), oldest due first, giving each the lease `lease`
    /// until `lease_until`. Concurrent claims MUST never hand out one delivery twice.
    ///
    /// Fairness: an endpoint, and an account, get at most `caps` deliveries under a live
    /// lease (one that ends after `now`), counting those they had before this claim, so one
    /// slow or flooded endpoint or tenant never takes every sender. A delivery over its
    /// endpoint's cap takes none of its account's. Claims racing on other instances may each
    /// see the other's leases late; the caps then hold per claim. Only deliveries to
    /// endpoints of `caps.endpoints` are claimed (the leases of the others still count).
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        lease: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
        caps: ClaimCaps,
    ) -> Result<Vec<ClaimedDelivery>, StoreError>;

    /// Records an attempt of a delivery claimed under `lease` and frees the lease: attempts
    /// +1, the last status and error, and `pending` with its next time, `succeeded` or
    /// `failed` as `attempt.result` says. The endpoint is then [`EndpointHealth::Answering`]
    /// if it was delivered, else [`EndpointHealth::Failing`]. MUST return
    /// [`HookError::LeaseLost`] (changing nothing) when the delivery is not pending under this
    /// lease, and [`HookError::NotFound`] for an unknown id.
    async fn record_attempt(
        &self,
        id: &WebhookDeliveryId,
        lease: &str,
        attempt: &Attempt,
    ) -> Result<DeliveryRecord, HookError>;

    /// The account's deliveries, newest first, at most `limit`.
    async fn deliveries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError>;

    /// One delivery of the account's.
    async fn delivery(
        &self,
        account: &AccountId,
        id: &WebhookDeliveryId,
    ) -> Result<Option<DeliveryRecord>, StoreError>;

    /// Stores a new pending delivery `new_id` of the same event to the same endpoint, due at
    /// `at`, replaying `id`. MUST return [`HookError::NotFound`] for an unknown delivery,
    /// another account's, or one whose endpoint was deleted, and
    /// [`HookError::TooManyReplays`] when the endpoint already has `max_pending` replays
    /// pending, also when replays race; then nothing is stored.
    async fn replay_delivery(
        &self,
        account: &AccountId,
        id: &WebhookDeliveryId,
        new_id: &WebhookDeliveryId,
        at: DateTime<Utc>,
        max_pending: u32,
    ) -> Result<DeliveryRecord, HookError>;

    /// Tasks settled (completed or failed) at or after `since` whose account has no event with
    /// source `task:{id}`, oldest settlement first, at most `limit`: those whose process died
    /// between settling and recording the event.
    async fn tasks_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// Tasks settled completed at or after `settled_since` whose charge took the account's
    /// spendable credits below `low` and found them still below it when it was charged: their
    /// `hold` ledger entry (reference `task:{id}:hold`) left a balance under `low` that the
    /// task's cost kept at or above it (holds are taken one at a time per account, so one task
    /// crosses the mark each time), and their `capture` entry left one under `low` too (no
    /// top-up came between). Only those whose account has no event with the source
    /// `task:{id}:credits.low`, oldest settled first, at most `limit`, each with the balance
    /// its capture left: the `credits.low` of a process that died between settling the task
    /// and recording the event.
    async fn low_charges_missing_events(
        &self,
        settled_since: DateTime<Utc>,
        low: i64,
        limit: u32,
    ) -> Result<Vec<LowCharge>, StoreError>;

    /// Tasks settled at or after `settled_since` (only `task`, when given) whose settlement is
    /// the one that tells that their authority has nothing left in the window of their spend,
    /// as [`crate::authority::used_up_by`] decides from the stored spends and tasks: the
    /// task's spend was not given back (a payment of unknown outcome keeps it though its task
    /// failed), the window's spends not given back add up to the limit (any spend uses up a
    /// `single_use` authority), every one of their tasks has settled and this one settled
    /// last (by `settled_at`, then task id), and the authority was neither revoked nor
    /// expired then. Only those whose account has no event with the source
    /// `task:{id}:authority.exhausted`, oldest settled first, at most `limit`. A settlement
    /// asks about its own task; the recovery sweep finds the `authority.exhausted` of a
    /// process that died between settling the task and recording the event, and of a
    /// settlement that raced another of the window (each saw the other in flight).
    async fn exhaustions_missing_events(
        &self,
        settled_since: DateTime<Utc>,
        task: Option<TaskId>,
        limit: u32,
    ) -> Result<Vec<Exhaustion>, StoreError>;

    /// Connections that were connected (the provider named their upstream account) and
    /// expired at or after `since` (their `updated_at`), whose account has no event with the
    /// source `connection:{id}:expired`, oldest first, at most `limit`: the
    /// `connection.expired` of a process that died between ending the connection and
    /// recording the event.
    async fn connections_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<crate::ConnectionRecord>, StoreError>;

    /// Receipts of verified payment events created at or after `since` that added spendable
    /// credits and whose account has no event with their `reference` as source, oldest first,
    /// at most `limit`: the `credits.added` of a process that died between crediting the
    /// account and recording the event.
    async fn credits_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Receipt>, StoreError>;

    /// When the recovery sweep `sweep` last went through everything it looks at (see
    /// [`HookStore::mark_sweep`]); `None` before its first such run.
    async fn sweep_mark(&self, sweep: &str) -> Result<Option<DateTime<Utc>>, StoreError>;

    /// Records that a run of `sweep` begun at `at` went through everything it looks at. A mark
    /// only moves forward: an earlier `at` (a slower run of another instance) changes nothing.
    async fn mark_sweep(&self, sweep: &str, at: DateTime<Utc>) -> Result<(), StoreError>;

    /// The account's events stored after the event `after` (all when `None`), in the order
    /// their transactions committed, at most `limit`: a reader paging with the last event it
    /// got as `after` MUST never step over an event, also one whose id is older than the
    /// cursor's or whose transaction is still running while it reads (such an event comes in
    /// a later page). An `after` that is not one of the account's events is compared as an id.
    /// Events in one transaction come in the order they were stored.
    async fn events_after(
        &self,
        account: &AccountId,
        after: Option<WebhookEventId>,
        limit: u32,
    ) -> Result<Vec<HookEvent>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_round_trip_and_lists_are_spaced() {
        for t in HookEventType::ALL {
            assert_eq!(HookEventType::parse(t.as_str()), Some(t));
        }
        let all = HookEventType::join(&HookEventType::ALL);
        assert_eq!(
            HookEventType::parse_list(&all).unwrap(),
            HookEventType::ALL.to_vec()
        );
        assert_eq!(HookEventType::parse_list("task.done"), None);
        assert_eq!(HookEventType::parse("Task.Completed"), None);
    }

    /// `n` spelled as the SQL stores spell it: three base-32 digits, most significant first.
    fn spelled(n: usize) -> String {
        let digit = |shift: usize| DeliveryIds::DIGITS.as_bytes()[(n >> shift) & 31] as char;
        [digit(10), digit(5), digit(0)].into_iter().collect()
    }

    proptest::proptest! {
        #[test]
        fn delivery_ids_are_head_then_n_then_tail(seed: u128, n in 0..DeliveryIds::MAX) {
            let ids = DeliveryIds::new(Ulid(seed));
            let (head, tail) = ids.around();
            let id = ids.nth(n).unwrap();
            proptest::prop_assert_eq!(id.as_str(), format!("{head}{}{tail}", spelled(n)));
            // The timestamp and the low 65 bits are the seed's.
            let back = Ulid::from_string(&id.as_str()[WebhookDeliveryId::PREFIX.len()..]).unwrap();
            proptest::prop_assert_eq!(back.timestamp_ms(), Ulid(seed).timestamp_ms());
            proptest::prop_assert_eq!(back.0 & ((1 << 65) - 1), seed & ((1 << 65) - 1));
        }

        #[test]
        fn seeds_a_generator_makes_share_no_delivery_id(start: u128, n in 0..DeliveryIds::MAX, m in 0..DeliveryIds::MAX) {
            // Two seeds one millisecond's monotonic generator made, and any two ordinals.
            let start = start & !(u128::from(u16::MAX)); // room for the next seed
            let (a, b) = (DeliveryIds::new(Ulid(start)), DeliveryIds::new(Ulid(start + 1)));
            proptest::prop_assert_ne!(a.nth(n), b.nth(m));
            proptest::prop_assert_eq!(a.nth(n) == a.nth(m), n == m);
        }
    }

    #[test]
    fn delivery_ids_stop_at_the_most_an_event_has() {
        let ids = DeliveryIds::new(Ulid::new());
        assert!(ids.nth(DeliveryIds::MAX - 1).is_some());
        assert_eq!(ids.nth(DeliveryIds::MAX), None);
    }
}
