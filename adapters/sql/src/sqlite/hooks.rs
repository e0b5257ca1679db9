//! `HookStore`: webhook endpoints, events and the delivery outbox. Every write goes to the one
//! writer connection inside `BEGIN IMMEDIATE`, so a claim (mark, then read back by its lease)
//! is never interleaved with another: no delivery is handed out twice.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, SqliteConnection};
use svc_ports::{
    AccountId, Attempt, AttemptResult, ClaimCaps, ClaimedDelivery, ConnectionRecord, DeliveryIds,
    DeliveryRecord, DeliveryStatus, EnqueueOutcome, Exhaustion, HookError, HookEvent,
    HookEventType, HookStore, LowCharge, Receipt, StoreError, TaskId, TaskRecord,
    WebhookDeliveryId, WebhookEndpoint, WebhookEndpointId, WebhookEventId,
};

use super::{SqliteStore, backend, is_foreign_key_violation, is_unique_violation, millis};
use crate::hook_rows;

impl SqliteStore {
    async fn delivery_by_id(
        &self,
        id: &WebhookDeliveryId,
    ) -> Result<Option<DeliveryRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT d.id, d.account_id, d.event_id, e.type AS event_type, d.endpoint_id, w.url AS endpoint_url, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.replay_of, d.created_at FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE d.id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| backend(e, "reading a webhook delivery"))?;
        row.as_ref().map(hook_rows::delivery).transpose()
    }
}

#[async_trait]
impl HookStore for SqliteStore {
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
        .bind(millis(endpoint.created_at))
        .execute(self.writer())
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
        let mut tx = self.begin_write().await.map_err(err)?;
        let done = sqlx::query(
            "UPDATE webhook_endpoints SET deleted_at = COALESCE(deleted_at, $1) \
             WHERE id = $2 AND account_id = $3",
        )
        .bind(millis(at))
        .bind(id.as_str())
        .bind(account.as_str())
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        if done.rows_affected() == 0 {
            return Err(HookError::NotFound);
        }
        sqlx::query(
            "UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL, \
             lease = NULL, lease_until = NULL WHERE endpoint_id = $1 AND status = 'pending'",
        )
        .bind(id.as_str())
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        tx.commit().await.map_err(err)?;
        Ok(())
    }

    async fn enqueue_event(
        &self,
        event: &HookEvent,
        ids: DeliveryIds,
    ) -> Result<EnqueueOutcome, HookError> {
        // Every settled task records an event: it joins the begins and settles of the group
        // writer rather than taking the writer connection for a transaction of its own.
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
        let err = |e| backend(e, "claiming webhook deliveries");
        let mut tx = self.begin_write().await.map_err(err)?;
        sqlx::query(
            // Due deliveries take turns after what their endpoint, then their account, has
            // in flight. Only each endpoint's first due deliveries are looked at (`heads`, an
            // index range per endpoint), so a claim costs the same however long one
            // endpoint's backlog grows.
            "WITH leased AS (\
               SELECT endpoint_id, account_id FROM webhook_deliveries \
               WHERE status = 'pending' AND lease_until > $3), \
             endpoint_busy AS (SELECT endpoint_id, count(*) AS n FROM leased GROUP BY endpoint_id), \
             account_busy AS (SELECT account_id, count(*) AS n FROM leased GROUP BY account_id), \
             heads AS (\
               SELECT x.id, x.account_id, x.endpoint_id, x.next_attempt_at \
               FROM webhook_endpoints w JOIN webhook_deliveries x ON x.id IN (\
                 SELECT y.id FROM webhook_deliveries y \
                 WHERE y.endpoint_id = w.id AND y.status = 'pending' AND y.next_attempt_at <= $3 \
                 AND (y.lease_until IS NULL OR y.lease_until <= $3) \
                 ORDER BY y.next_attempt_at, y.id LIMIT $5) \
               WHERE w.deleted_at IS NULL AND ($7 = 'any' \
                 OR ($7 = 'answering' AND w.failing_since IS NULL) \
                 OR ($7 = 'failing' AND w.failing_since IS NOT NULL))), \
             due AS (\
               SELECT id, account_id, endpoint_id, next_attempt_at, row_number() OVER (\
                 PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS turn FROM heads), \
             endpoint_fair AS (\
               SELECT due.id, due.account_id, due.next_attempt_at FROM due \
               LEFT JOIN endpoint_busy b ON b.endpoint_id = due.endpoint_id \
               WHERE due.turn + coalesce(b.n, 0) <= $5), \
             fair AS (\
               SELECT e.id, e.next_attempt_at, row_number() OVER (\
                 PARTITION BY e.account_id ORDER BY e.next_attempt_at, e.id) \
                 + coalesce(b.n, 0) AS turn \
               FROM endpoint_fair e LEFT JOIN account_busy b ON b.account_id = e.account_id) \
             UPDATE webhook_deliveries SET lease = $1, lease_until = $2 WHERE id IN (\
               SELECT id FROM fair WHERE turn <= $6 ORDER BY next_attempt_at, id LIMIT $4)",
        )
        .bind(lease)
        .bind(millis(lease_until))
        .bind(millis(now))
        .bind(i64::from(limit))
        .bind(i64::from(caps.per_endpoint))
        .bind(i64::from(caps.per_account))
        .bind(crate::hook_rows::health(caps.endpoints))
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let rows = sqlx::query(
            "SELECT d.id, d.account_id, d.event_id, e.type AS event_type, d.endpoint_id, w.url AS endpoint_url, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.replay_of, d.created_at, d.lease, e.payload, w.secret, \
             e.created_at AS event_created_at FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id \
             WHERE d.lease = $1 AND d.status = 'pending' ORDER BY d.next_attempt_at, d.id",
        )
        .bind(lease)
        .fetch_all(&mut *tx)
        .await
        .map_err(err)?;
        let claimed = rows
            .iter()
            .map(hook_rows::claimed)
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit().await.map_err(err)?;
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
            AttemptResult::RetryAt(t) => (DeliveryStatus::Pending, Some(millis(t))),
            AttemptResult::GaveUp => (DeliveryStatus::Failed, None),
        };
        let err = |e| HookError::from(backend(e, "recording a webhook attempt"));
        let mut tx = self.begin_write().await.map_err(err)?;
        let done = sqlx::query(
            "UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, \
             attempts = attempts + 1, last_attempt_at = $3, last_status_code = $4, \
             last_error = $5, lease = NULL, lease_until = NULL \
             WHERE id = $6 AND lease = $7 AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(next)
        .bind(millis(attempt.at))
        .bind(attempt.status_code.map(i64::from))
        .bind(attempt.error.as_deref())
        .bind(id.as_str())
        .bind(lease)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        if done.rows_affected() == 1 {
            // The endpoint's health goes with the attempt, in the same transaction.
            sqlx::query(
                "UPDATE webhook_endpoints SET failing_since = CASE WHEN $1 THEN NULL ELSE $2 END \
                 WHERE id = (SELECT endpoint_id FROM webhook_deliveries WHERE id = $3) \
                 AND (failing_since IS NULL) = NOT $1",
            )
            .bind(matches!(attempt.result, AttemptResult::Delivered))
            .bind(millis(attempt.at))
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)?;
        let record = self.delivery_by_id(id).await?.ok_or(HookError::NotFound)?;
        if done.rows_affected() == 0 {
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
        // One writer at a time: the count and the insert see the same replays.
        let mut tx = self.begin_write().await.map_err(err)?;
        let pending: Option<i64> = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM webhook_deliveries p \
               WHERE p.endpoint_id = d.endpoint_id AND p.status = 'pending' \
               AND p.replay_of IS NOT NULL) \
             FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id \
             WHERE d.id = $1 AND d.account_id = $2 AND w.deleted_at IS NULL",
        )
        .bind(id.as_str())
        .bind(account.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        match pending {
            None => return Err(HookError::NotFound),
            Some(n) if n >= i64::from(max_pending) => {
                return Err(HookError::TooManyReplays(max_pending));
            }
            Some(_) => {}
        }
        sqlx::query(
            "INSERT INTO webhook_deliveries \
             (id, account_id, event_id, endpoint_id, status, attempts, next_attempt_at, replay_of, created_at) \
             SELECT $1, account_id, event_id, endpoint_id, 'pending', 0, $2, id, $2 \
             FROM webhook_deliveries WHERE id = $3",
        )
        .bind(new_id.as_str())
        .bind(millis(at))
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
        .bind(millis(since))
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
        .bind(millis(settled_since))
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
                 ORDER BY t.settled_at DESC, t.id DESC) AS latest \
               FROM tasks t \
               JOIN authority_spends s ON s.task_id = t.id AND s.released_at IS NULL \
               JOIN payment_authorities a ON a.id = s.authority_id \
               WHERE t.settled_at >= $1 AND ($2 IS NULL OR t.id = $2) \
               AND t.status IN ('completed', 'failed')) \
             SELECT * FROM candidate c WHERE c.latest = 1 \
             AND (c.revoked_at IS NULL OR c.revoked_at > c.settled_at) \
             AND c.expires_at > c.settled_at \
             AND NOT EXISTS (\
               SELECT 1 FROM authority_spends n JOIN tasks nt ON nt.id = n.task_id \
               WHERE n.authority_id = c.authority_id AND n.window_start = c.window_start \
               AND n.released_at IS NULL AND (nt.settled_at IS NULL \
                 OR nt.settled_at > c.settled_at \
                 OR (nt.settled_at = c.settled_at AND nt.id > c.id))) \
             AND (c.amount_interval = 'single_use' OR c.amount_value <= (\
               SELECT SUM(w.amount) FROM authority_spends w \
               WHERE w.authority_id = c.authority_id AND w.window_start = c.window_start \
               AND w.released_at IS NULL)) \
             AND NOT EXISTS (\
               SELECT 1 FROM webhook_events e WHERE e.account_id = c.account_id \
               AND e.source = 'task:' || c.id || ':authority.exhausted') \
             ORDER BY c.settled_at, c.id LIMIT $3",
        )
        .bind(millis(settled_since))
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
        .bind(millis(since))
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
        .bind(millis(since))
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
             ON CONFLICT (name) DO UPDATE SET swept_at = max(swept_at, excluded.swept_at)",
        )
        .bind(sweep)
        .bind(millis(at))
        .execute(self.writer())
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
             ORDER BY e.seq, e.id LIMIT $3",
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

/// An event and its deliveries as one item of a group (see `group.rs`), in a savepoint of its
/// own.
pub(super) async fn enqueue(
    conn: &mut SqliteConnection,
    event: &HookEvent,
    ids: DeliveryIds,
) -> Result<EnqueueOutcome, sqlx::Error> {
    sqlx::query("SAVEPOINT item").execute(&mut *conn).await?;
    event_in_item(conn, event, ids).await
}

/// An event and its deliveries, inside the item's open savepoint (an event's own, or the
/// settlement's that records it), which the query releases. The deliveries go to the account's endpoints that are not deleted and
/// subscribe to the event's type, the n-th (from 0, oldest first) taking the id `ids.nth(n)`,
/// spelled here as `head || n in three base-32 digits || tail`. They are inserted only when the
/// event INSERT inserted a row: `changes()` still counts that INSERT while the next one runs (a
/// SELECT leaves it). Not the event's id: the same event stored before has it too.
pub(super) async fn event_in_item(
    conn: &mut SqliteConnection,
    event: &HookEvent,
    ids: DeliveryIds,
) -> Result<EnqueueOutcome, sqlx::Error> {
    let (head, tail) = ids.around();
    let rows = sqlx::query(
        r#"
        INSERT INTO webhook_events (id, account_id, type, source, payload, created_at, seq)
        VALUES ($1, $2, $3, $4, $5, $6,
            (SELECT coalesce(max(seq), 0) + 1 FROM webhook_events))
        ON CONFLICT (account_id, source) DO NOTHING;

        SELECT changes() AS inserted;

        INSERT INTO webhook_deliveries
            (id, account_id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at)
        SELECT $7 || substr($9, n / 1024 + 1, 1) || substr($9, n / 32 % 32 + 1, 1)
                || substr($9, n % 32 + 1, 1) || $8,
            $2, $1, w.id, 'pending', 0, $6, $6
        FROM (
            SELECT id, row_number() OVER (ORDER BY created_at, id) - 1 AS n
            FROM webhook_endpoints
            WHERE account_id = $2 AND deleted_at IS NULL
                AND instr(' ' || events || ' ', ' ' || $3 || ' ') > 0
        ) AS w
        WHERE n < $10 AND changes() = 1;

        SELECT changes() AS deliveries;

        RELEASE item
        "#,
    )
    .bind(event.id.as_str())
    .bind(event.account_id.as_str())
    .bind(event.event_type.as_str())
    .bind(&event.source)
    .bind(&event.payload)
    .bind(millis(event.created_at))
    .bind(head)
    .bind(tail)
    .bind(DeliveryIds::DIGITS)
    .bind(DeliveryIds::MAX as i64)
    // Every row of every statement: a `fetch_one` would stop the query at its first row.
    .fetch_all(&mut *conn)
    .await?;
    let [inserted, deliveries] = &rows[..] else {
        return Err(sqlx::Error::RowNotFound);
    };
    Ok(if inserted.try_get::<i64, _>("inserted")? == 1 {
        EnqueueOutcome::Enqueued {
            deliveries: deliveries.try_get::<u32, _>("deliveries")?,
        }
    } else {
        EnqueueOutcome::Duplicate
    })
}
