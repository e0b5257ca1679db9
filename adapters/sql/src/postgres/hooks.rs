//! `HookStore`: webhook endpoints, events and the delivery outbox. A claim is one statement
//! that locks due rows with `FOR UPDATE SKIP LOCKED`, so instances claiming at once on one
//! database each get other deliveries; an attempt is recorded only under its claim's lease.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::postgres::PgRow;
use svc_ports::{
    AccountId, Attempt, AttemptResult, ClaimCaps, ClaimedDelivery, ConnectionRecord, DeliveryIds,
    DeliveryRecord, DeliveryStatus, EnqueueOutcome, Exhaustion, HookError, HookEvent,
    HookEventType, HookStore, LowCharge, Receipt, StoreError, TaskId, TaskRecord,
    WebhookDeliveryId, WebhookEndpoint, WebhookEndpointId, WebhookEventId,
};

use super::{
    PostgresStore, backend, col, is_foreign_key_violation, is_unique_violation, item_time, ms,
};
use crate::hook_rows;

impl PostgresStore {
    async fn delivery_by_id(
        &self,
        id: &WebhookDeliveryId,
    ) -> Result<Option<DeliveryRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT d.id, d.account_id, d.event_id, e.type AS event_type, d.endpoint_id, w.url AS endpoint_url, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.replay_of, d.created_at FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE d.id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading a webhook delivery"))?;
        row.as_ref().map(hook_rows::delivery).transpose()
    }
}

#[async_trait]
impl HookStore for PostgresStore {
    async fn insert_endpoint(&self, endpoint: &WebhookEndpoint) -> Result<(), HookError> {
        sqlx::query(
            "INSERT INTO webhook_endpoints \
             (id, account_id, url, description, events, secret, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(endpoint.id.as_str())
        .bind(endpoint.account_id.as_str())
        .bind(&endpoint.url)
        .bind(&endpoint.description)
        .bind(HookEventType::join(&endpoint.events))
        .bind(endpoint.secret.as_bytes())
        .bind(ms(endpoint.created_at))
        .execute(&self.pool)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                HookError::Duplicate
            } else if is_foreign_key_violation(&e) {
                HookError::UnknownAccount
            } else {
                backend(e, "storing a webhook endpoint").into()
            }
        })?;
        Ok(())
    }

    async fn endpoints(&self, account: &AccountId) -> Result<Vec<WebhookEndpoint>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, account_id, url, description, events, secret, created_at \
             FROM webhook_endpoints WHERE account_id = $1 AND deleted_at IS NULL \
             ORDER BY created_at DESC, id DESC",
        )
        .bind(account.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing webhook endpoints"))?;
        rows.iter().map(hook_rows::endpoint).collect()
    }

    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookEndpointId,
        at: DateTime<Utc>,
    ) -> Result<(), HookError> {
        let err = |e| HookError::from(backend(e, "deleting a webhook endpoint"));
        let mut tx = self.pool.begin().await.map_err(err)?;
        // The deliveries first, then the endpoint: the order an attempt's record takes them
        // (its delivery, then its endpoint's health), so the two never wait for each other.
        // A delivery stored between the two statements is cancelled by the next claim.
        sqlx::query(
            "UPDATE webhook_deliveries d SET status = 'canceled', next_attempt_at = NULL, \
             lease = NULL, lease_until = NULL FROM webhook_endpoints w \
             WHERE w.id = $1 AND w.account_id = $2 AND d.endpoint_id = w.id \
             AND d.status = 'pending'",
        )
        .bind(id.as_str())
        .bind(account.as_str())
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let done = sqlx::query(
            "UPDATE webhook_endpoints SET deleted_at = COALESCE(deleted_at, $1) \
             WHERE id = $2 AND account_id = $3",
        )
        .bind(ms(at))
        .bind(id.as_str())
        .bind(account.as_str())
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        if done.rows_affected() == 0 {
            return Err(HookError::NotFound);
        }
        tx.commit().await.map_err(err)?;
        Ok(())
    }

    async fn enqueue_event(
        &self,
        event: &HookEvent,
        ids: DeliveryIds,
    ) -> Result<EnqueueOutcome, HookError> {
        // Every settled task records an event: it joins the begins and settles of the group
        // writer rather than taking a connection and a commit of its own.
        self.group.enqueue(event, ids).await.map_err(|e| {
            if is_foreign_key_violation(&e) {
                HookError::UnknownAccount
            } else if is_unique_violation(&e) {
                HookError::Duplicate
            } else {
                HookError::from(backend(e, "storing a webhook event"))
            }
        })
    }

    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        lease: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
        caps: ClaimCaps,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let rows = sqlx::query(
            // A delivery stored while its endpoint was being deleted (the event's enqueue and
            // the delete's cancel did not see each other under read committed) is cancelled
            // here, never sent: the endpoint's owner was told it is gone. Only each endpoint's
            // first due deliveries are looked at (`heads`, an index range per endpoint), so a
            // claim costs the same however long one endpoint's backlog grows.
            "WITH gone AS (\
               UPDATE webhook_deliveries d SET status = 'canceled', next_attempt_at = NULL, \
               lease = NULL, lease_until = NULL FROM webhook_endpoints w \
               WHERE w.id = d.endpoint_id AND w.deleted_at IS NOT NULL \
               AND d.status = 'pending' AND d.next_attempt_at <= $3 \
               AND (d.lease_until IS NULL OR d.lease_until <= $3)), \
             leased AS (\
               SELECT endpoint_id, account_id FROM webhook_deliveries \
               WHERE status = 'pending' AND lease_until > $3), \
             endpoint_busy AS (SELECT endpoint_id, count(*) AS n FROM leased GROUP BY endpoint_id), \
             account_busy AS (SELECT account_id, count(*) AS n FROM leased GROUP BY account_id), \
             heads AS (\
               SELECT x.id, x.account_id, x.endpoint_id, x.next_attempt_at \
               FROM webhook_endpoints w CROSS JOIN LATERAL (\
                 SELECT id, account_id, endpoint_id, next_attempt_at FROM webhook_deliveries \
                 WHERE endpoint_id = w.id AND status = 'pending' AND next_attempt_at <= $3 \
                 AND (lease_until IS NULL OR lease_until <= $3) \
                 ORDER BY next_attempt_at, id LIMIT $5) x \
               WHERE w.deleted_at IS NULL AND ($7 = 'any' \
                 OR ($7 = 'answering' AND w.failing_since IS NULL) \
                 OR ($7 = 'failing' AND w.failing_since IS NOT NULL))), \
             turns AS (\
               SELECT id, account_id, endpoint_id, next_attempt_at, row_number() OVER (\
                 PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS turn FROM heads), \
             endpoint_fair AS (\
               SELECT t.id, t.account_id, t.next_attempt_at FROM turns t \
               LEFT JOIN endpoint_busy b ON b.endpoint_id = t.endpoint_id \
               WHERE t.turn + coalesce(b.n, 0) <= $5), \
             fair AS (\
               SELECT e.id FROM (\
                 SELECT id, account_id, row_number() OVER (\
                   PARTITION BY account_id ORDER BY next_attempt_at, id) AS turn \
                 FROM endpoint_fair) e \
               LEFT JOIN account_busy b ON b.account_id = e.account_id \
               WHERE e.turn + coalesce(b.n, 0) <= $6), \
             due AS (\
               SELECT d.id FROM webhook_deliveries d \
               JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.deleted_at IS NULL \
               WHERE d.id IN (SELECT id FROM fair) AND d.status = 'pending' \
               AND d.next_attempt_at <= $3 AND (d.lease_until IS NULL OR d.lease_until <= $3) \
               ORDER BY d.next_attempt_at, d.id LIMIT $4 FOR UPDATE OF d SKIP LOCKED), \
             claimed AS (\
               UPDATE webhook_deliveries c SET lease = $1, lease_until = $2 FROM due \
               WHERE c.id = due.id RETURNING c.*) \
             SELECT d.id, d.account_id, d.event_id, e.type AS event_type, d.endpoint_id, \
             w.url AS endpoint_url, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, \
             d.last_status_code, d.last_error, d.replay_of, d.created_at, d.lease, e.payload, \
             w.secret, e.created_at AS event_created_at FROM claimed d \
             JOIN webhook_events e ON e.id = d.event_id \
             JOIN webhook_endpoints w ON w.id = d.endpoint_id \
             ORDER BY d.next_attempt_at, d.id",
        )
        .bind(lease)
        .bind(ms(lease_until))
        .bind(ms(now))
        .bind(i64::from(limit))
        .bind(i64::from(caps.per_endpoint))
        .bind(i64::from(caps.per_account))
        .bind(crate::hook_rows::health(caps.endpoints))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "claiming webhook deliveries"))?;
        let claimed = rows
            .iter()
            .map(hook_rows::claimed)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(claimed)
    }

    async fn record_attempt(
        &self,
        id: &WebhookDeliveryId,
        lease: &str,
        attempt: &Attempt,
    ) -> Result<DeliveryRecord, HookError> {
        let (status, next) = match attempt.result {
            AttemptResult::Delivered => (DeliveryStatus::Succeeded, None),
            AttemptResult::RetryAt(t) => (DeliveryStatus::Pending, Some(ms(t))),
            AttemptResult::GaveUp => (DeliveryStatus::Failed, None),
        };
        // The endpoint's health goes with the attempt, in the same statement; its row is
        // written (and locked) only when the health changes as this statement sees it, so
        // the busy endpoint's row is not rewritten at every attempt. Two attempts that end
        // together (one delivered, one failed) may leave it failing: its next delivered
        // attempt, in the failing lane, brings it back.
        let done: i64 = sqlx::query_scalar(
            "WITH done AS (\
               UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, \
               attempts = attempts + 1, last_attempt_at = $3, last_status_code = $4, \
               last_error = $5, lease = NULL, lease_until = NULL \
               WHERE id = $6 AND lease = $7 AND status = 'pending' RETURNING endpoint_id), \
             health AS (\
               UPDATE webhook_endpoints w SET failing_since = CASE WHEN $8 THEN NULL ELSE $3 END \
               FROM done WHERE w.id = done.endpoint_id AND (w.failing_since IS NULL) = NOT $8) \
             SELECT count(*) FROM done",
        )
        .bind(status.as_str())
        .bind(next)
        .bind(ms(attempt.at))
        .bind(attempt.status_code.map(i64::from))
        .bind(attempt.error.as_deref())
        .bind(id.as_str())
        .bind(lease)
        .bind(matches!(attempt.result, AttemptResult::Delivered))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| HookError::from(backend(e, "recording a webhook attempt")))?;
        let record = self.delivery_by_id(id).await?.ok_or(HookError::NotFound)?;
        if done == 0 {
            return Err(HookError::LeaseLost);
        }
        Ok(record)
    }

    async fn deliveries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT d.id, d.account_id, d.event_id, e.type AS event_type, d.endpoint_id, w.url AS endpoint_url, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.replay_of, d.created_at FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE d.account_id = $1 \
             ORDER BY d.created_at DESC, d.id DESC LIMIT $2",
        )
        .bind(account.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing webhook deliveries"))?;
        rows.iter().map(hook_rows::delivery).collect()
    }

    async fn delivery(
        &self,
        account: &AccountId,
        id: &WebhookDeliveryId,
    ) -> Result<Option<DeliveryRecord>, StoreError> {
        Ok(self
            .delivery_by_id(id)
            .await?
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
        let err = |e| backend(e, "replaying a webhook delivery");
        let mut tx = self.pool.begin().await.map_err(err)?;
        // The endpoint's row is locked, so racing replays count each other's; not against key
        // share, so events stored meanwhile (their deliveries' foreign key) do not wait.
        let endpoint: Option<String> = sqlx::query_scalar(
            "SELECT w.id FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id \
             WHERE d.id = $1 AND d.account_id = $2 AND w.deleted_at IS NULL FOR NO KEY UPDATE OF w",
        )
        .bind(id.as_str())
        .bind(account.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let Some(endpoint) = endpoint else {
            return Err(HookError::NotFound);
        };
        let pending: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM webhook_deliveries \
             WHERE endpoint_id = $1 AND status = 'pending' AND replay_of IS NOT NULL",
        )
        .bind(&endpoint)
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
        if pending >= i64::from(max_pending) {
            return Err(HookError::TooManyReplays(max_pending));
        }
        sqlx::query(
            "INSERT INTO webhook_deliveries \
             (id, account_id, event_id, endpoint_id, status, attempts, next_attempt_at, replay_of, created_at) \
             SELECT $1::text, account_id, event_id, endpoint_id, 'pending', 0, $2::timestamptz, id, \
             $2::timestamptz FROM webhook_deliveries WHERE id = $3",
        )
        .bind(new_id.as_str())
        .bind(ms(at))
        .bind(id.as_str())
        .execute(&mut *tx)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                HookError::Duplicate
            } else {
                err(e).into()
            }
        })?;
        tx.commit().await.map_err(err)?;
        self.delivery_by_id(new_id)
            .await?
            .ok_or(HookError::NotFound)
    }

    async fn tasks_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             status, response_status, response_body, artifact_id, artifact, created_at, \
             settled_at, verified_artifact, verified_at FROM tasks t \
             WHERE settled_at >= $1 AND status IN ('completed', 'failed') AND NOT EXISTS (\
               SELECT 1 FROM webhook_events e \
               WHERE e.account_id = t.account_id AND e.source = 'task:' || t.id) \
             ORDER BY settled_at, id LIMIT $2",
        )
        .bind(ms(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing tasks without their webhook event"))?;
        rows.iter().map(crate::rows::task).collect()
    }

    async fn low_charges_missing_events(
        &self,
        settled_since: DateTime<Utc>,
        low: i64,
        limit: u32,
    ) -> Result<Vec<LowCharge>, StoreError> {
        let rows = sqlx::query(
            "SELECT t.id, t.account_id, t.key_id, t.domain, t.action, t.cost, \
             t.idempotency_key, t.fingerprint, t.status, t.response_status, t.response_body, \
             t.artifact_id, t.artifact, t.created_at, t.settled_at, t.verified_artifact, \
             t.verified_at, l.balance_after FROM tasks t \
             JOIN ledger_entries h ON h.account_id = t.account_id \
               AND h.reference = 'task:' || t.id || ':hold' \
             JOIN ledger_entries l ON l.account_id = t.account_id \
               AND l.reference = 'task:' || t.id || ':capture' \
             WHERE t.settled_at >= $1 AND t.status = 'completed' \
             AND h.balance_after < $2 AND h.balance_after + t.cost >= $2 \
             AND l.balance_after < $2 AND NOT EXISTS (\
               SELECT 1 FROM webhook_events e \
               WHERE e.account_id = t.account_id AND e.source = 'task:' || t.id || ':credits.low') \
             ORDER BY t.settled_at, t.id LIMIT $3",
        )
        .bind(ms(settled_since))
        .bind(low)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing low charges without their webhook event"))?;
        rows.iter().map(crate::rows::low_charge).collect()
    }

    async fn exhaustions_missing_events(
        &self,
        settled_since: DateTime<Utc>,
        task: Option<TaskId>,
        limit: u32,
    ) -> Result<Vec<Exhaustion>, StoreError> {
        // `svc_ports::authority::used_up_by`, over the stored spends and tasks: of each
        // window, only its candidate settled last can be the one (so each window is read once,
        // however many of its payments settled in the hour), and only when nothing of the
        // window is later or in flight, its spends not given back fill it, and the authority
        // stood.
        let rows = sqlx::query(
            "WITH candidate AS (\
               SELECT t.id, t.account_id, t.key_id, t.domain, t.action, t.cost, \
               t.idempotency_key, t.fingerprint, t.status, t.response_status, t.response_body, \
               t.artifact_id, t.artifact, t.created_at, t.settled_at, t.verified_artifact, \
               t.verified_at, s.authority_id, s.window_start, a.currency, a.amount_interval, \
               a.amount_value, a.revoked_at, a.expires_at, row_number() OVER (\
                 PARTITION BY s.authority_id, s.window_start \
                 ORDER BY t.settled_at DESC, t.id COLLATE \"C\" DESC) AS latest \
               FROM tasks t \
               JOIN authority_spends s ON s.task_id = t.id AND s.released_at IS NULL \
               JOIN payment_authorities a ON a.id = s.authority_id \
               WHERE t.settled_at >= $1 AND ($2::text IS NULL OR t.id = $2) \
               AND t.status IN ('completed', 'failed')) \
             SELECT * FROM candidate c WHERE c.latest = 1 \
             AND (c.revoked_at IS NULL OR c.revoked_at > c.settled_at) \
             AND c.expires_at > c.settled_at \
             AND NOT EXISTS (\
               SELECT 1 FROM authority_spends n JOIN tasks nt ON nt.id = n.task_id \
               WHERE n.authority_id = c.authority_id AND n.window_start = c.window_start \
               AND n.released_at IS NULL AND (nt.settled_at IS NULL \
                 OR nt.settled_at > c.settled_at \
                 OR (nt.settled_at = c.settled_at AND nt.id COLLATE \"C\" > c.id COLLATE \"C\"))) \
             AND (c.amount_interval = 'single_use' OR c.amount_value <= (\
               SELECT SUM(w.amount) FROM authority_spends w \
               WHERE w.authority_id = c.authority_id AND w.window_start = c.window_start \
               AND w.released_at IS NULL)) \
             AND NOT EXISTS (\
               SELECT 1 FROM webhook_events e WHERE e.account_id = c.account_id \
               AND e.source = 'task:' || c.id || ':authority.exhausted') \
             ORDER BY c.settled_at, c.id LIMIT $3",
        )
        .bind(ms(settled_since))
        .bind(task.as_ref().map(TaskId::as_str))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing payments that used up their authority"))?;
        rows.iter().map(crate::rows::exhaustion).collect()
    }

    async fn connections_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<ConnectionRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at FROM connections c \
             WHERE state = 'expired' AND upstream_account IS NOT NULL AND updated_at >= $1 \
             AND NOT EXISTS (\
               SELECT 1 FROM webhook_events e \
               WHERE e.account_id = c.account_id AND e.source = 'connection:' || c.id || ':expired') \
             ORDER BY updated_at, id LIMIT $2",
        )
        .bind(ms(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing expired connections without their webhook event"))?;
        rows.iter().map(crate::rows::connection).collect()
    }

    async fn credits_missing_events(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Receipt>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, account_id, kind, credits, spendable_delta, frozen_delta, shortfall, \
             amount, currency, payment_id, checkout_id, reference, note, created_at \
             FROM receipts r \
             WHERE created_at >= $1 AND spendable_delta > 0 AND NOT EXISTS (\
               SELECT 1 FROM webhook_events e \
               WHERE e.account_id = r.account_id AND e.source = r.reference) \
             ORDER BY created_at, id LIMIT $2",
        )
        .bind(ms(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing receipts without their webhook event"))?;
        rows.iter().map(crate::rows::receipt).collect()
    }

    async fn sweep_mark(&self, sweep: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        use crate::rows::Columns;
        sqlx::query("SELECT swept_at FROM sweep_marks WHERE name = $1")
            .bind(sweep)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend(e, "reading a sweep's mark"))?
            .map(|r| r.time("swept_at"))
            .transpose()
    }

    async fn mark_sweep(&self, sweep: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO sweep_marks (name, swept_at) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE \
             SET swept_at = GREATEST(sweep_marks.swept_at, EXCLUDED.swept_at)",
        )
        .bind(sweep)
        .bind(ms(at))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(|e| backend(e, "marking a sweep"))
    }

    async fn events_after(
        &self,
        account: &AccountId,
        after: Option<WebhookEventId>,
        limit: u32,
    ) -> Result<Vec<HookEvent>, StoreError> {
        // In the order they were stored (`seq`, migration 0026) after the cursor's event;
        // events stored before the numbers come first, in id order. No cursor, or one that
        // is not one of the account's events, is compared as an id.
        let rows = sqlx::query(
            "WITH cursor AS (SELECT seq, id FROM webhook_events WHERE id = $2 AND account_id = $1) \
             SELECT e.id, e.account_id, e.type, e.source, e.payload, e.created_at \
             FROM webhook_events e WHERE e.account_id = $1 AND (\
               (NOT EXISTS (SELECT 1 FROM cursor) AND e.id > $2) \
               OR EXISTS (SELECT 1 FROM cursor c \
                 WHERE c.seq IS NULL AND (e.seq IS NOT NULL OR e.id > c.id)) \
               OR EXISTS (SELECT 1 FROM cursor c WHERE e.seq > c.seq)) \
             ORDER BY e.seq NULLS FIRST, e.id LIMIT $3",
        )
        .bind(account.as_str())
        .bind(after.as_ref().map(|a| a.as_str()).unwrap_or(""))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing webhook events"))?;
        rows.iter().map(hook_rows::event).collect()
    }
}

/// An event and its deliveries, as an item of `svc_run_items` or inside a settle item
/// (`svc_store_event`, migration 0019, holds the statement; see `group.rs`): the n-th
/// subscribed endpoint's delivery is named `ids.nth(n)`, spelled there from `head`, `digits`
/// and `tail`.
pub(super) fn event_item(event: &HookEvent, ids: DeliveryIds) -> Value {
    let (head, tail) = ids.around();
    json!({
        "kind": "event",
        "id": event.id.as_str(),
        "account_id": event.account_id.as_str(),
        "type": event.event_type.as_str(),
        "source": event.source,
        "payload": event.payload,
        "created_at": item_time(event.created_at),
        "head": head,
        "tail": tail,
        "digits": DeliveryIds::DIGITS,
        "max": DeliveryIds::MAX,
    })
}

/// An event's answer from its result row.
pub(super) fn enqueued(row: &PgRow) -> Result<EnqueueOutcome, StoreError> {
    Ok(if col::<i64>(row, "inserted")? == 0 {
        EnqueueOutcome::Duplicate
    } else {
        EnqueueOutcome::Enqueued {
            deliveries: col::<i64>(row, "deliveries")? as u32,
        }
    })
}
