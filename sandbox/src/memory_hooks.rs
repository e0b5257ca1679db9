//! In-memory webhook endpoints, events and deliveries, under the store's one lock (so a claim
//! is atomic, as the SQL stores' are).

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, Attempt, AttemptResult, ClaimCaps, ClaimedDelivery, ConnectionRecord,
    ConnectionState, DeliveryIds, DeliveryRecord, DeliveryStatus, EndpointHealth, EnqueueOutcome,
    EntryKind, Exhaustion, HookError, HookEvent, HookStore, LedgerEntry, LowCharge, Receipt,
    StoreError, TaskId, TaskRecord, TaskStatus, WebhookDeliveryId, WebhookEndpoint,
    WebhookEndpointId, WebhookEventId,
};

use crate::{MemoryStore, memory::State};

struct StoredDelivery {
    record: DeliveryRecord,
    lease: Option<(String, DateTime<Utc>)>,
}

#[derive(Default)]
pub(crate) struct HookState {
    /// Endpoints with when they were deleted.
    pub(crate) endpoints: Vec<(WebhookEndpoint, Option<DateTime<Utc>>)>,
    events: Vec<HookEvent>,
    deliveries: Vec<StoredDelivery>,
    by_id: HashMap<WebhookDeliveryId, usize>,
    /// Endpoints whose last attempt failed, with when their failing began.
    failing: HashMap<WebhookEndpointId, DateTime<Utc>>,
    /// Each recovery sweep's mark.
    marks: HashMap<String, DateTime<Utc>>,
}

impl HookState {
    fn endpoint(
        &self,
        id: &WebhookEndpointId,
    ) -> Option<&(WebhookEndpoint, Option<DateTime<Utc>>)> {
        self.endpoints.iter().find(|(e, _)| &e.id == id)
    }

    /// Whether the account has an event with this `source` (one per account and source).
    fn recorded(&self, account: &AccountId, source: &str) -> bool {
        self.events
            .iter()
            .any(|e| &e.account_id == account && e.source == source)
    }

    fn push(&mut self, record: DeliveryRecord) {
        self.by_id.insert(record.id.clone(), self.deliveries.len());
        self.deliveries.push(StoredDelivery {
            record,
            lease: None,
        });
    }
}

#[async_trait]
impl HookStore for MemoryStore {
    async fn insert_endpoint(&self, endpoint: &WebhookEndpoint) -> Result<(), HookError> {
        let mut s = self.lock();
        if !s.accounts.contains_key(&endpoint.account_id) {
            return Err(HookError::UnknownAccount);
        }
        if s.hooks.endpoint(&endpoint.id).is_some() {
            return Err(HookError::Duplicate);
        }
        s.hooks.endpoints.push((endpoint.clone(), None));
        Ok(())
    }

    async fn endpoints(&self, account: &AccountId) -> Result<Vec<WebhookEndpoint>, StoreError> {
        let s = self.lock();
        let mut list: Vec<WebhookEndpoint> = s
            .hooks
            .endpoints
            .iter()
            .filter(|(e, deleted)| &e.account_id == account && deleted.is_none())
            .map(|(e, _)| e.clone())
            .collect();
        list.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(list)
    }

    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookEndpointId,
        at: DateTime<Utc>,
    ) -> Result<(), HookError> {
        let mut s = self.lock();
        let state = &mut s.hooks;
        let Some((_, deleted)) = state
            .endpoints
            .iter_mut()
            .find(|(e, _)| &e.id == id && &e.account_id == account)
        else {
            return Err(HookError::NotFound);
        };
        deleted.get_or_insert(at);
        for d in state
            .deliveries
            .iter_mut()
            .filter(|d| &d.record.endpoint_id == id && d.record.status == DeliveryStatus::Pending)
        {
            d.record.status = DeliveryStatus::Canceled;
            d.record.next_attempt_at = None;
            d.lease = None;
        }
        Ok(())
    }

    async fn enqueue_event(
        &self,
        event: &HookEvent,
        ids: DeliveryIds,
    ) -> Result<EnqueueOutcome, HookError> {
        enqueue(&mut self.lock(), event, ids)
    }

    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        lease: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
        caps: ClaimCaps,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let mut s = self.lock();
        let state = &mut s.hooks;
        // What each endpoint and account has under a live lease: its turns already taken.
        let mut endpoint_turns: HashMap<WebhookEndpointId, u32> = HashMap::new();
        let mut account_turns: HashMap<AccountId, u32> = HashMap::new();
        for d in &state.deliveries {
            if d.record.status == DeliveryStatus::Pending
                && d.lease.as_ref().is_some_and(|(_, until)| *until > now)
            {
                *endpoint_turns
                    .entry(d.record.endpoint_id.clone())
                    .or_default() += 1;
                *account_turns
                    .entry(d.record.account_id.clone())
                    .or_default() += 1;
            }
        }
        let mut due: Vec<usize> = state
            .deliveries
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                let failing = state.failing.contains_key(&d.record.endpoint_id);
                d.record.status == DeliveryStatus::Pending
                    && d.record.next_attempt_at.is_some_and(|t| t <= now)
                    && d.lease.as_ref().is_none_or(|(_, until)| *until <= now)
                    && match caps.endpoints {
                        EndpointHealth::Any => true,
                        EndpointHealth::Answering => !failing,
                        EndpointHealth::Failing => failing,
                    }
            })
            .map(|(i, _)| i)
            .collect();
        due.sort_by(|a, b| {
            let (a, b) = (&state.deliveries[*a].record, &state.deliveries[*b].record);
            (a.next_attempt_at, &a.id).cmp(&(b.next_attempt_at, &b.id))
        });
        // Oldest first, each takes its endpoint's next turn, then (if it got one) its
        // account's.
        due.retain(|i| {
            let record = &state.deliveries[*i].record;
            let turn = endpoint_turns
                .entry(record.endpoint_id.clone())
                .or_default();
            *turn += 1;
            if *turn > caps.per_endpoint {
                return false;
            }
            let turn = account_turns.entry(record.account_id.clone()).or_default();
            *turn += 1;
            *turn <= caps.per_account
        });
        due.truncate(limit as usize);
        let mut claimed = Vec::new();
        for i in due {
            state.deliveries[i].lease = Some((lease.to_owned(), lease_until));
            let record = state.deliveries[i].record.clone();
            let event = state
                .events
                .iter()
                .find(|e| e.id == record.event_id)
                .expect("a delivery's event is stored");
            let (endpoint, _) = state
                .endpoint(&record.endpoint_id)
                .expect("a delivery's endpoint is stored");
            claimed.push(ClaimedDelivery {
                lease: lease.to_owned(),
                payload: event.payload.clone(),
                secret: endpoint.secret.clone(),
                event_created_at: event.created_at,
                delivery: record,
            });
        }
        Ok(claimed)
    }

    async fn record_attempt(
        &self,
        id: &WebhookDeliveryId,
        lease: &str,
        attempt: &Attempt,
    ) -> Result<DeliveryRecord, HookError> {
        let mut s = self.lock();
        let state = &mut s.hooks;
        let i = *state.by_id.get(id).ok_or(HookError::NotFound)?;
        let d = &mut state.deliveries[i];
        if d.record.status != DeliveryStatus::Pending
            || d.lease.as_ref().is_none_or(|(l, _)| l != lease)
        {
            return Err(HookError::LeaseLost);
        }
        let (status, next) = match attempt.result {
            AttemptResult::Delivered => (DeliveryStatus::Succeeded, None),
            AttemptResult::RetryAt(t) => (DeliveryStatus::Pending, Some(t)),
            AttemptResult::GaveUp => (DeliveryStatus::Failed, None),
        };
        d.record.status = status;
        d.record.next_attempt_at = next;
        d.record.attempts += 1;
        d.record.last_attempt_at = Some(attempt.at);
        d.record.last_status_code = attempt.status_code;
        d.record.last_error = attempt.error.clone();
        d.lease = None;
        let record = d.record.clone();
        if matches!(attempt.result, AttemptResult::Delivered) {
            state.failing.remove(&record.endpoint_id);
        } else {
            state
                .failing
                .entry(record.endpoint_id.clone())
                .or_insert(attempt.at);
        }
        Ok(record)
    }

    async fn deliveries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let s = self.lock();
        let mut list: Vec<DeliveryRecord> = s
            .hooks
            .deliveries
            .iter()
            .filter(|d| &d.record.account_id == account)
            .map(|d| d.record.clone())
            .collect();
        list.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        list.truncate(limit as usize);
        Ok(list)
    }

    async fn delivery(
        &self,
        account: &AccountId,
        id: &WebhookDeliveryId,
    ) -> Result<Option<DeliveryRecord>, StoreError> {
        let s = self.lock();
        Ok(s.hooks
            .by_id
            .get(id)
            .map(|i| s.hooks.deliveries[*i].record.clone())
            .filter(|d| &d.account_id == account))
    }

    async fn replay_delivery(
        &self,
        account: &AccountId,
        id: &WebhookDeliveryId,
        new_id: &WebhookDeliveryId,
        at: DateTime<Utc>,
        max_pending: u32,
    ) -> Result<DeliveryRecord, HookError> {
        let mut s = self.lock();
        let state = &mut s.hooks;
        let i = *state.by_id.get(id).ok_or(HookError::NotFound)?;
        let original = state.deliveries[i].record.clone();
        if &original.account_id != account
            || !matches!(state.endpoint(&original.endpoint_id), Some((_, None)))
        {
            return Err(HookError::NotFound);
        }
        let pending = state
            .deliveries
            .iter()
            .filter(|d| {
                d.record.endpoint_id == original.endpoint_id
                    && d.record.status == DeliveryStatus::Pending
                    && d.record.replay_of.is_some()
            })
            .count();
        if pending >= max_pending as usize {
            return Err(HookError::TooManyReplays(max_pending));
        }
        if state.by_id.contains_key(new_id) {
            return Err(HookError::Duplicate);
        }
        let replay = DeliveryRecord {
            id: new_id.clone(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: Some(at),
            last_attempt_at: None,
            last_status_code: None,
            last_error: None,
            replay_of: Some(original.id.clone()),
            created_at: at,
            ..original
        };
        state.push(replay.clone());
        Ok(replay)
    }

    async fn tasks_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let s = self.lock();
        let mut list: Vec<TaskRecord> = s
            .actions
            .tasks
            .values()
            .filter(|t| {
                t.status != TaskStatus::InFlight
                    && t.settled_at.is_some_and(|at| at >= since)
                    && !s.hooks.recorded(&t.account_id, &format!("task:{}", t.id))
            })
            .cloned()
            .collect();
        list.sort_by(|a, b| (a.settled_at, &a.id).cmp(&(b.settled_at, &b.id)));
        list.truncate(limit as usize);
        Ok(list)
    }

    async fn low_charges_missing_events(
        &self,
        settled_since: DateTime<Utc>,
        low: i64,
        limit: u32,
    ) -> Result<Vec<LowCharge>, StoreError> {
        let s = self.lock();
        let mut list: Vec<LowCharge> = s
            .actions
            .tasks
            .values()
            .filter(|t| {
                t.status == TaskStatus::Completed
                    && t.settled_at.is_some_and(|at| at >= settled_since)
            })
            .filter_map(|t| {
                let entry = |kind| {
                    let (reference, _) = LedgerEntry::task_reference(&t.id, kind);
                    s.entries.iter().find(|e| {
                        e.account_id == t.account_id && e.reference.as_deref() == Some(&reference)
                    })
                };
                let (hold, capture) = (entry(EntryKind::Hold)?, entry(EntryKind::Capture)?);
                let source = format!("task:{}:credits.low", t.id);
                let crossed = hold.balance_after < low
                    && hold.balance_after + t.cost >= low
                    && capture.balance_after < low;
                let recorded = s.hooks.recorded(&t.account_id, &source);
                (crossed && !recorded).then(|| LowCharge {
                    task: t.clone(),
                    spendable: capture.balance_after,
                })
            })
            .collect();
        list.sort_by(|a, b| (a.task.settled_at, &a.task.id).cmp(&(b.task.settled_at, &b.task.id)));
        list.truncate(limit as usize);
        Ok(list)
    }

    async fn connections_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<ConnectionRecord>, StoreError> {
        let s = self.lock();
        let mut list: Vec<ConnectionRecord> = s
            .connections
            .connections
            .iter()
            .filter(|c| {
                let source = format!("connection:{}:expired", c.id);
                c.state == ConnectionState::Expired
                    && c.upstream_account.is_some()
                    && c.updated_at >= since
                    && !s.hooks.recorded(&c.account_id, &source)
            })
            .cloned()
            .collect();
        list.sort_by(|a, b| (a.updated_at, &a.id).cmp(&(b.updated_at, &b.id)));
        list.truncate(limit as usize);
        Ok(list)
    }

    async fn exhaustions_missing_events(
        &self,
        settled_since: DateTime<Utc>,
        task: Option<TaskId>,
        limit: u32,
    ) -> Result<Vec<Exhaustion>, StoreError> {
        let s = self.lock();
        let mut list: Vec<Exhaustion> = s
            .actions
            .tasks
            .values()
            .filter(|t| {
                t.status != TaskStatus::InFlight
                    && t.settled_at.is_some_and(|at| at >= settled_since)
                    && task.as_ref().is_none_or(|id| &t.id == id)
            })
            .filter_map(|t| {
                let settled = |id: &TaskId| s.actions.tasks.get(id).and_then(|t| t.settled_at);
                let (authority_id, currency, window_end) =
                    s.authority.used_up_by(&t.id, settled)?;
                let source = format!("task:{}:authority.exhausted", t.id);
                let recorded = s.hooks.recorded(&t.account_id, &source);
                (!recorded).then(|| Exhaustion {
                    task: t.clone(),
                    authority_id,
                    currency,
                    window_end,
                })
            })
            .collect();
        list.sort_by(|a, b| (a.task.settled_at, &a.task.id).cmp(&(b.task.settled_at, &b.task.id)));
        list.truncate(limit as usize);
        Ok(list)
    }

    async fn credits_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Receipt>, StoreError> {
        let s = self.lock();
        let mut list: Vec<Receipt> = s
            .billing
            .receipts
            .iter()
            .filter(|r| {
                r.created_at >= since
                    && r.spendable_delta > 0
                    && !s.hooks.recorded(&r.account_id, &r.reference)
            })
            .cloned()
            .collect();
        list.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        list.truncate(limit as usize);
        Ok(list)
    }

    async fn sweep_mark(&self, sweep: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.lock().hooks.marks.get(sweep).copied())
    }

    async fn mark_sweep(&self, sweep: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        let mut s = self.lock();
        let mark = s.hooks.marks.entry(sweep.to_owned()).or_insert(at);
        *mark = (*mark).max(at);
        Ok(())
    }

    async fn events_after(
        &self,
        account: &AccountId,
        after: Option<WebhookEventId>,
        limit: u32,
    ) -> Result<Vec<HookEvent>, StoreError> {
        // In the order they were stored, after the cursor's event; an id that is not one of
        // the account's events is compared as an id.
        let s = self.lock();
        let mine = s.hooks.events.iter().filter(|e| &e.account_id == account);
        let list: Vec<HookEvent> = match &after {
            None => mine.take(limit as usize).cloned().collect(),
            Some(a) => match mine.clone().position(|e| &e.id == a) {
                Some(at) => mine.skip(at + 1).take(limit as usize).cloned().collect(),
                None => mine
                    .filter(|e| &e.id > a)
                    .take(limit as usize)
                    .cloned()
                    .collect(),
            },
        };
        Ok(list)
    }
}

/// `enqueue_event` on the locked state; settlements record their event with it too.
pub(crate) fn enqueue(
    s: &mut State,
    event: &HookEvent,
    ids: DeliveryIds,
) -> Result<EnqueueOutcome, HookError> {
    if !s.accounts.contains_key(&event.account_id) {
        return Err(HookError::UnknownAccount);
    }
    let state = &mut s.hooks;
    if state.recorded(&event.account_id, &event.source) {
        return Ok(EnqueueOutcome::Duplicate);
    }
    let mut subscribed: Vec<&WebhookEndpoint> = state
        .endpoints
        .iter()
        .filter(|(e, deleted)| {
            deleted.is_none()
                && e.account_id == event.account_id
                && e.events.contains(&event.event_type)
        })
        .map(|(e, _)| e)
        .collect();
    subscribed.sort_by(|a, b| (a.created_at, a.id.as_str()).cmp(&(b.created_at, b.id.as_str())));
    let deliveries: Vec<(WebhookDeliveryId, WebhookEndpointId, String)> = subscribed
        .into_iter()
        .enumerate()
        .map_while(|(n, e)| Some((ids.nth(n)?, e.id.clone(), e.url.clone())))
        .collect();
    if state.events.iter().any(|e| e.id == event.id)
        || deliveries
            .iter()
            .any(|(d, _, _)| state.by_id.contains_key(d))
    {
        return Err(HookError::Duplicate);
    }
    state.events.push(event.clone());
    let mut count = 0;
    for (id, endpoint, url) in deliveries {
        state.push(DeliveryRecord {
            id,
            account_id: event.account_id.clone(),
            event_id: event.id.clone(),
            event_type: event.event_type,
            endpoint_id: endpoint,
            endpoint_url: url,
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: Some(event.created_at),
            last_attempt_at: None,
            last_status_code: None,
            last_error: None,
            replay_of: None,
            created_at: event.created_at,
        });
        count += 1;
    }
    Ok(EnqueueOutcome::Enqueued { deliveries: count })
}
