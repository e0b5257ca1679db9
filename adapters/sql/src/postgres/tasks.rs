//! `TaskStore`: execution tasks and the credits they hold, charge or refund.
//!
//! The execution path is two statements, each one round trip: `begin_task` (without an
//! authority spend) and `settle_task` are each a single statement of data-modifying CTEs, run
//! as items of a group's transaction (`group.rs`), so each happens whole or not at all and many
//! executions share one lock of the account row and one commit. The row is locked `FOR NO KEY
//! UPDATE`: balance changes exclude each other, while other inserts' foreign key checks on the
//! account (`FOR KEY SHARE`) neither wait nor make a group wait. A task under a payment
//! authority begins in a transaction of its own, because the spend rules are Rust
//! (`svc_ports::authority::check_spend`) run with the authority row locked, and a refusal
//! drops that transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use svc_ports::{
    AccountId, ArtifactId, BeginOutcome, LedgerEntry, NewTask, SettleOutcome, Settlement, TaskId,
    TaskRecord, TaskStatus, VerifyOutcome,
    ledger::EntryKind,
    store::{StoreError, TaskError, TaskStore},
};

use super::{
    PostgresStore, authority::spend_authority, backend, col, is_foreign_key_violation,
    is_unique_violation, ms, undecodable,
};
use crate::{outcomes, rows};

impl PostgresStore {
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

/// A begin without an authority, as one item of a group (see `group.rs`): one statement of
/// the idempotency lookup, the balance check and hold (with the account row locked), the task
/// and the hold entry. `existing` is read first and everything else runs only without it;
/// `hold` only when spendable covers the cost. A racing begin with the same key that committed
/// first makes the task INSERT fail, and the whole statement with it (a unique violation: the
/// caller reads the winner). `None`: the account does not exist.
pub(super) async fn begin_plain(
    conn: &mut PgConnection,
    task: &NewTask,
) -> Result<Option<BeginOutcome>, sqlx::Error> {
    let (reference, memo) = LedgerEntry::task_reference(&task.id, EntryKind::Hold);
    let row = sqlx::query(
        r#"
        WITH existing AS (
            SELECT id, account_id, key_id, domain, action, cost, idempotency_key,
                fingerprint, status, response_status, response_body, artifact_id, artifact,
                created_at, settled_at, verified_artifact, verified_at
            FROM tasks
            WHERE account_id = $2 AND idempotency_key = $7
        ),
        account AS (
            SELECT id, spendable FROM accounts WHERE id = $2 FOR NO KEY UPDATE
        ),
        hold AS (
            UPDATE accounts
            SET spendable = accounts.spendable - $6, held = accounts.held + $6
            FROM account
            WHERE accounts.id = account.id AND accounts.spendable >= $6
                AND NOT EXISTS (SELECT 1 FROM existing)
            RETURNING accounts.spendable
        ),
        task AS (
            INSERT INTO tasks (id, account_id, key_id, domain, action, cost,
                idempotency_key, fingerprint, status, created_at)
            SELECT $1, $2, $3, $4, $5, $6, $7, $8, 'in_flight', $9 FROM hold
        ),
        entry AS (
            INSERT INTO ledger_entries
                (id, account_id, kind, delta, balance_after, reference, memo, created_at)
            SELECT $10, $2, 'hold', -$6, spendable, $11, $12, $9 FROM hold WHERE $6 > 0
        )
        SELECT account.spendable AS account_spendable, hold.spendable AS held_spendable,
            existing.id, existing.account_id, existing.key_id, existing.domain,
            existing.action, existing.cost, existing.idempotency_key, existing.fingerprint,
            existing.status, existing.response_status, existing.response_body,
            existing.artifact_id, existing.artifact, existing.created_at,
            existing.settled_at, existing.verified_artifact, existing.verified_at
        FROM (SELECT) AS one
        LEFT JOIN account ON TRUE
        LEFT JOIN hold ON TRUE
        LEFT JOIN existing ON TRUE
        "#,
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
    .bind(task.hold_entry.as_str())
    .bind(reference)
    .bind(memo)
    .fetch_one(conn)
    .await?;
    if col::<Option<String>>(&row, "id")
        .map_err(undecodable)?
        .is_some()
    {
        let existing = rows::task(&row).map_err(undecodable)?;
        return Ok(Some(BeginOutcome::existing(existing, &task.fingerprint)));
    }
    if let Some(spendable) = col::<Option<i64>>(&row, "held_spendable").map_err(undecodable)? {
        return Ok(Some(BeginOutcome::Started {
            task: TaskRecord::started(task),
            spendable,
        }));
    }
    Ok(col::<Option<i64>>(&row, "account_spendable")
        .map_err(undecodable)?
        .map(|spendable| BeginOutcome::InsufficientCredits { spendable }))
}

/// A settlement, as one item of a group (see `group.rs`). `None`: the task was not in flight
/// (nothing written).
pub(super) async fn settle(
    conn: &mut PgConnection,
    s: &Settlement,
) -> Result<Option<TaskRecord>, sqlx::Error> {
    // One statement. `locked` takes the account's row lock before the task's, the order
    // every begin takes them in (account, then the idempotency key's task row): a settle
    // that locked the task first deadlocked with a begin of the same key waiting on it.
    // `settled` matches only a task in flight (a racing settlement waits
    // for the row and then matches nothing); everything else reads from it, so nothing
    // is written for a task that was not in flight. `moved` captures (completed) or
    // refunds (failed) the hold and returns the spendable balance the entry records;
    // `released` gives a failed task's authority spend back when asked.
    let kind = if s.completed {
        EntryKind::Capture
    } else {
        EntryKind::Refund
    };
    let status = if s.completed {
        TaskStatus::Completed
    } else {
        TaskStatus::Failed
    };
    let (reference, memo) = LedgerEntry::task_reference(&s.task_id, kind);
    let row = sqlx::query(
        r#"
        WITH locked AS (
            SELECT accounts.id FROM accounts
            WHERE accounts.id = (SELECT account_id FROM tasks WHERE id = $7)
            FOR NO KEY UPDATE
        ),
        settled AS (
            UPDATE tasks SET status = $1, response_status = $2, response_body = $3,
                artifact_id = $4, artifact = $5, settled_at = $6
            FROM locked
            WHERE tasks.id = $7 AND tasks.account_id = locked.id AND status = 'in_flight'
            RETURNING tasks.id, tasks.account_id, key_id, domain, action, cost,
                idempotency_key, fingerprint, status, response_status, response_body,
                artifact_id, artifact, created_at, settled_at, verified_artifact, verified_at
        ),
        moved AS (
            UPDATE accounts
            SET held = accounts.held - settled.cost,
                spendable = accounts.spendable + CASE WHEN $8 THEN 0 ELSE settled.cost END
            FROM settled
            WHERE accounts.id = settled.account_id AND settled.cost > 0
            RETURNING accounts.spendable
        ),
        entry AS (
            INSERT INTO ledger_entries
                (id, account_id, kind, delta, balance_after, reference, memo, created_at)
            SELECT $9, settled.account_id, $10, CASE WHEN $8 THEN 0 ELSE settled.cost END,
                moved.spendable, $11, $12, $6
            FROM settled, moved
        ),
        released AS (
            UPDATE authority_spends SET released_at = $6
            FROM settled
            WHERE authority_spends.task_id = settled.id
                AND authority_spends.released_at IS NULL AND $13
        )
        SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint,
            status, response_status, response_body, artifact_id, artifact, created_at,
            settled_at, verified_artifact, verified_at
        FROM settled
        "#,
    )
    .bind(status.as_str())
    .bind(i64::from(s.response_status))
    .bind(&s.response_body)
    .bind(s.artifact_id.as_str())
    .bind(&s.artifact)
    .bind(ms(s.at))
    .bind(s.task_id.as_str())
    .bind(s.completed)
    .bind(s.entry.as_str())
    .bind(kind.as_str())
    .bind(reference)
    .bind(memo)
    // A payment that surely did not happen gives its authority spend back.
    .bind(s.release_spend && !s.completed)
    .fetch_optional(conn)
    .await?;
    row.as_ref()
        .map(rows::task)
        .transpose()
        .map_err(undecodable)
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
        if let Some(outcome) = begun {
            return Ok(outcome);
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
            Ok(Some(task)) => Ok(SettleOutcome::Settled(task)),
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
