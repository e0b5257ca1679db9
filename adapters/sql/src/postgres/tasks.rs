//! `TaskStore`: execution tasks and the credits they hold, charge or refund.
//!
//! The execution path is two items of a group (`group.rs`): `begin_task` (without an
//! authority spend) and `settle_task` are each one statement of data-modifying CTEs inside
//! `svc_run_items` (migration 0019; the settlement as 0023 has it, followed, only for an
//! account with freeze claims, by the statements that serve and cap them), inside one call,
//! so each happens whole or not at all and many executions
//! share one call, one lock of the account row and one commit. The row is locked `FOR NO KEY
//! UPDATE`: balance changes exclude each other, while other inserts' foreign key checks on the
//! account (`FOR KEY SHARE`) neither wait nor make a group wait. A task under a payment
//! authority begins in a transaction of its own, because the spend rules are Rust
//! (`svc_ports::authority::check_spend`) run with the authority row locked, and a refusal
//! drops that transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::{PgConnection, postgres::PgRow};
use svc_ports::{
    AccountId, ArtifactId, BeginOutcome, LedgerEntry, NewTask, SettleOutcome, Settlement, TaskId,
    TaskRecord, TaskStatus, VerifyOutcome,
    ledger::EntryKind,
    store::{StoreError, TaskError, TaskStore},
};

use super::{
    PostgresStore, authority::spend_authority, backend, col, is_foreign_key_violation,
    is_unique_violation, item_time, ms,
};
use crate::{outcomes, rows};

impl PostgresStore {
    /// A begin under a payment authority: one transaction, in the order unknown account,
    /// authority, balance (`Ok(None)`: a begin with the same key committed first). The account
    /// row is locked first, as `begin_plain` locks it, so begins of one account take their locks in one order
    /// (account, idempotency key, authority) and never deadlock. Either refusal drops the
    /// transaction, taking the task row and the spend back.
    async fn begin_with_authority(
        &self,
        task: &NewTask,
    ) -> Result<Option<BeginOutcome>, TaskError> {
        let err = |e| TaskError::from(backend(e, "beginning task"));
        let mut tx = self.pool.begin().await.map_err(err)?;
        let spendable: Option<i64> =
            sqlx::query_scalar("SELECT spendable FROM accounts WHERE id = $1 FOR NO KEY UPDATE")
                .bind(task.account_id.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
        let Some(spendable) = spendable else {
            return Err(TaskError::UnknownAccount);
        };
        if let Some(key) = &task.idempotency_key {
            let row = sqlx::query(
                "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, \
                 fingerprint, status, response_status, response_body, artifact_id, artifact, \
                 created_at, settled_at, verified_artifact, verified_at \
                 FROM tasks WHERE account_id = $1 AND idempotency_key = $2",
            )
            .bind(task.account_id.as_str())
            .bind(key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
            if let Some(r) = row {
                let existing = rows::task(&r)?;
                return Ok(Some(BeginOutcome::existing(existing, &task.fingerprint)));
            }
        }
        // The task before its spend, which references it.
        let inserted = sqlx::query(
            "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key, \
             fingerprint, status, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'in_flight', $9)",
        )
        .bind(task.id.as_str())
        .bind(task.account_id.as_str())
        .bind(task.key_id.as_str())
        .bind(&task.domain)
        .bind(&task.action)
        .bind(task.cost)
        .bind(task.idempotency_key.as_deref())
        .bind(&task.fingerprint)
        .bind(ms(task.created_at))
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(e) if is_unique_violation(&e) && task.idempotency_key.is_some() => return Ok(None),
            Err(e) => return Err(err(e)),
        }
        if let Err(refusal) = spend_authority(&mut tx, task).await.map_err(err)? {
            return Ok(Some(BeginOutcome::AuthorityRefused(refusal)));
        }
        let Some(held_spendable) = hold_on(&mut tx, task).await.map_err(err)? else {
            // The account is locked: `spendable` is still what it was.
            return Ok(Some(BeginOutcome::InsufficientCredits { spendable }));
        };
        tx.commit().await.map_err(err)?;
        Ok(Some(BeginOutcome::Started {
            task: TaskRecord::started(task),
            spendable: held_spendable,
        }))
    }
}

/// A begin without an authority, as an item of `svc_run_items` (migration 0019, which holds
/// the statement; see `group.rs`).
pub(super) fn begin_item(task: &NewTask) -> Value {
    let (reference, memo) = LedgerEntry::task_reference(&task.id, EntryKind::Hold);
    json!({
        "kind": "begin",
        "id": task.id.as_str(),
        "account_id": task.account_id.as_str(),
        "key_id": task.key_id.as_str(),
        "domain": task.domain,
        "action": task.action,
        "cost": task.cost,
        "idempotency_key": task.idempotency_key,
        "fingerprint": task.fingerprint,
        "created_at": item_time(task.created_at),
        "hold_entry": task.hold_entry.as_str(),
        "reference": reference,
        "memo": memo,
    })
}

/// A begin's answer from its result row. `None`: the account does not exist.
pub(super) fn begun(row: &PgRow, task: &NewTask) -> Result<Option<BeginOutcome>, StoreError> {
    if col::<Option<String>>(row, "id")?.is_some() {
        let existing = rows::task(row)?;
        return Ok(Some(BeginOutcome::existing(existing, &task.fingerprint)));
    }
    if let Some(spendable) = col::<Option<i64>>(row, "held_spendable")? {
        return Ok(Some(BeginOutcome::Started {
            task: TaskRecord::started(task),
            spendable,
        }));
    }
    Ok(col::<Option<i64>>(row, "account_spendable")?
        .map(|spendable| BeginOutcome::InsufficientCredits { spendable }))
}

/// A settlement, as an item of `svc_run_items` (see `begin_item`). Its result row, when there
/// is one, is the settled task; none: the task was not in flight (nothing written).
pub(super) fn settle_item(s: &Settlement) -> Value {
    let (kind, status) = if s.completed {
        (EntryKind::Capture, TaskStatus::Completed)
    } else {
        (EntryKind::Refund, TaskStatus::Failed)
    };
    let (reference, memo) = LedgerEntry::task_reference(&s.task_id, kind);
    let (clawback_reference, clawback_memo) =
        LedgerEntry::task_reference(&s.task_id, EntryKind::Clawback);
    let (freeze_reference, freeze_memo) =
        LedgerEntry::task_reference(&s.task_id, EntryKind::Freeze);
    let mut item = json!({
        "kind": "settle",
        "task_id": s.task_id.as_str(),
        "status": status.as_str(),
        "response_status": s.response_status,
        "response_body": s.response_body,
        "artifact_id": s.artifact_id.as_str(),
        "artifact": s.artifact,
        "at": item_time(s.at),
        "completed": s.completed,
        "entry": s.entry.as_str(),
        "entry_kind": kind.as_str(),
        "reference": reference,
        "memo": memo,
        "clawback_entry": s.clawback_entry.as_str(),
        "clawback_reference": clawback_reference,
        "clawback_memo": clawback_memo,
        "freeze_entry": s.freeze_entry.as_str(),
        "freeze_reference": freeze_reference,
        "freeze_memo": freeze_memo,
        // A payment that surely did not happen gives its authority spend back.
        "release_spend": s.release_spend && !s.completed,
    });
    if let Some((event, ids)) = &s.event {
        item["event"] = super::hooks::event_item(event, *ids);
    }
    item
}

/// Holds the task's cost and writes the hold entry, in one statement inside the caller's
/// transaction. `None`: spendable is below the cost (nothing changed).
async fn hold_on(conn: &mut PgConnection, task: &NewTask) -> Result<Option<i64>, sqlx::Error> {
    let (reference, memo) = LedgerEntry::task_reference(&task.id, EntryKind::Hold);
    sqlx::query_scalar(
        r#"
        WITH hold AS (
            UPDATE accounts SET spendable = spendable - $3, held = held + $3
            WHERE id = $2 AND spendable >= $3
            RETURNING spendable
        ),
        entry AS (
            INSERT INTO ledger_entries
                (id, account_id, kind, delta, balance_after, reference, memo, created_at)
            SELECT $1, $2, 'hold', -$3, spendable, $4, $5, $6 FROM hold WHERE $3 > 0
        )
        SELECT spendable FROM hold
        "#,
    )
    .bind(task.hold_entry.as_str())
    .bind(task.account_id.as_str())
    .bind(task.cost)
    .bind(reference)
    .bind(memo)
    .bind(ms(task.created_at))
    .fetch_optional(conn)
    .await
}

#[async_trait]
impl TaskStore for PostgresStore {
    async fn begin_task(&self, task: &NewTask) -> Result<BeginOutcome, TaskError> {
        let begun = match task.authority_spend {
            // Joins the group writer; one under an authority takes a transaction of its own.
            None => match self.group.begin(task).await {
                Ok(Some(outcome)) => Some(outcome),
                Ok(None) => return Err(TaskError::UnknownAccount),
                Err(e) if is_unique_violation(&e) && task.idempotency_key.is_some() => None,
                Err(e) if is_foreign_key_violation(&e) => return Err(TaskError::UnknownAccount),
                Err(e) => return Err(backend(e, "beginning task").into()),
            },
            Some(_) => self.begin_with_authority(task).await?,
        };
        match (begun, task.idempotency_key.as_deref()) {
            // The begin looked its key up in the snapshot its statement took before it waited
            // for the account's lock: a racer with the same key (another instance) may have
            // committed meanwhile and held the credits this one then found missing. The
            // racer's task is the answer, as it would have been a moment later.
            (Some(BeginOutcome::InsufficientCredits { spendable }), Some(key)) => {
                return match self.task_by_key(&task.account_id, key).await? {
                    Some(existing) => Ok(BeginOutcome::existing(existing, &task.fingerprint)),
                    None => Ok(BeginOutcome::InsufficientCredits { spendable }),
                };
            }
            (Some(outcome), _) => return Ok(outcome),
            (None, _) => {}
        }
        // Lost the race for the idempotency key: the winner's task is the answer.
        let key = task.idempotency_key.as_deref().unwrap_or_default();
        match self.task_by_key(&task.account_id, key).await? {
            Some(existing) => Ok(BeginOutcome::existing(existing, &task.fingerprint)),
            None => Err(StoreError(anyhow::anyhow!("idempotency key race left no task")).into()),
        }
    }

    async fn settle_task(&self, settlement: &Settlement) -> Result<SettleOutcome, TaskError> {
        match self.group.settle(settlement).await {
            Ok(Some((task, event))) => Ok(SettleOutcome::Settled(task, event)),
            // Not in flight; or lost a race with another settlement (a unique entry
            // reference): whatever is stored stands.
            Ok(None) => self.already_settled(&settlement.task_id).await,
            Err(e) if is_unique_violation(&e) => self.already_settled(&settlement.task_id).await,
            Err(e) => Err(backend(e, "settling task").into()),
        }
    }

    async fn record_verification(
        &self,
        task_id: &TaskId,
        artifact_id: &ArtifactId,
        artifact: &str,
        at: DateTime<Utc>,
    ) -> Result<VerifyOutcome, TaskError> {
        // Whether a task is verifiable never changes once it settled, so it is read first;
        // the store is the compare-and-set on `verified_artifact IS NULL`.
        let task = self.task(task_id, None).await?.ok_or(TaskError::NotFound)?;
        if task.verified_artifact.is_some() {
            return Ok(VerifyOutcome::AlreadyVerified(task));
        }
        if !task.verifiable() {
            return Ok(VerifyOutcome::NotVerifiable(task));
        }
        let row = sqlx::query(
            "UPDATE tasks SET verified_artifact_id = $1, verified_artifact = $2, verified_at = $3 \
             WHERE id = $4 AND status = 'completed' AND verified_artifact IS NULL \
             RETURNING id, account_id, key_id, domain, action, cost, idempotency_key, \
             fingerprint, status, response_status, response_body, artifact_id, artifact, \
             created_at, settled_at, verified_artifact, verified_at",
        )
        .bind(artifact_id.as_str())
        .bind(artifact)
        .bind(ms(at))
        .bind(task_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "recording verification"))?;
        match row {
            Some(r) => Ok(VerifyOutcome::Verified(rows::task(&r)?)),
            // Another verification landed in between: it stands.
            None => outcomes::unverified(self.task(task_id, None).await?),
        }
    }

    async fn task_by_key(
        &self,
        account: &AccountId,
        key: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             status, response_status, response_body, artifact_id, artifact, created_at, \
             settled_at, verified_artifact, verified_at \
             FROM tasks WHERE account_id = $1 AND idempotency_key = $2",
        )
        .bind(account.as_str())
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading task by key"))?
        .map(|r| rows::task(&r))
        .transpose()
    }

    async fn task(
        &self,
        id: &TaskId,
        account: Option<AccountId>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             status, response_status, response_body, artifact_id, artifact, created_at, \
             settled_at, verified_artifact, verified_at \
             FROM tasks WHERE id = $1 AND ($2::TEXT IS NULL OR account_id = $2)",
        )
        .bind(id.as_str())
        .bind(account.as_ref().map(AccountId::as_str))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading task"))?
        .map(|r| rows::task(&r))
        .transpose()
    }

    async fn list_tasks(
        &self,
        account: &AccountId,
        query: &svc_ports::TaskQuery,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.select_tasks(account, query).await
    }

    async fn unsettled_tasks(&self, before: DateTime<Utc>) -> Result<Vec<TaskRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             status, response_status, response_body, artifact_id, artifact, created_at, \
             settled_at, verified_artifact, verified_at \
             FROM tasks WHERE status = 'in_flight' AND created_at < $1 ORDER BY created_at",
        )
        .bind(ms(before))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing unsettled tasks"))?
        .iter()
        .map(rows::task)
        .collect()
    }
}

impl PostgresStore {
    async fn already_settled(&self, id: &TaskId) -> Result<SettleOutcome, TaskError> {
        outcomes::settled_before(self.task(id, None).await?)
    }
}
