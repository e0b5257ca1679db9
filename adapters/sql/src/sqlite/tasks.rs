//! `TaskStore`: execution tasks and the credits they hold, charge or refund. The unique
//! constraints on tasks and ledger references make a second charge impossible.
//!
//! Beginning and settling a task run on every execution, so they go through the group writer
//! (`group.rs`): each is one item of a shared transaction, inside its own savepoint, and
//! (without an authority) one multi-statement query, which is one round trip to the writer's
//! thread. Its statements guard one another with `EXISTS` on what the earlier ones wrote,
//! since SQLite has no data-modifying CTEs. A settlement of an account that open disputes
//! claim credits of (nearly never) takes one or two more queries for the claims.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, SqliteConnection, sqlite::SqliteRow};
use svc_ports::{
    AccountId, ApiKeyId, ArtifactId, BeginOutcome, EntryKind, LedgerEntry, NewTask, SettleOutcome,
    Settlement, TaskId, TaskRecord, TaskStatus, VerifyOutcome,
    store::{StoreError, TaskError, TaskStore},
};

use super::{
    SqliteStore, authority::spend_authority, backend, billing::cap_claims, corrupt, from_millis,
    group::undo_item, hooks, is_foreign_key_violation, is_unique_violation, ledger::insert_entry,
    millis, undecodable,
};
use crate::{outcomes, rows};

/// The task a settlement just stored, from the row its UPDATE returned (`account_id, key_id,
/// domain, action, cost, idempotency_key, fingerprint, created_at`) and the settlement itself.
fn settled_task(
    r: &SqliteRow,
    s: &Settlement,
    status: TaskStatus,
) -> Result<TaskRecord, StoreError> {
    let err = |e| backend(e, "reading task");
    Ok(TaskRecord {
        id: s.task_id.clone(),
        account_id: AccountId::parse(r.try_get("account_id").map_err(err)?)
            .map_err(corrupt("account id"))?,
        key_id: ApiKeyId::parse(r.try_get("key_id").map_err(err)?).map_err(corrupt("key id"))?,
        domain: r.try_get("domain").map_err(err)?,
        action: r.try_get("action").map_err(err)?,
        cost: r.try_get("cost").map_err(err)?,
        idempotency_key: r.try_get("idempotency_key").map_err(err)?,
        fingerprint: r.try_get("fingerprint").map_err(err)?,
        status,
        response_status: Some(s.response_status),
        response_body: Some(s.response_body.clone()),
        artifact_id: Some(s.artifact_id.clone()),
        artifact: Some(s.artifact.clone()),
        created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
        // As stored: whole milliseconds.
        settled_at: Some(from_millis(millis(s.at))?),
        // An in-flight task was never verified.
        verified_artifact: None,
        verified_at: None,
    })
}

/// A begin without an authority, as one item of a group (see `group.rs`): one multi-statement
/// query inside the item's savepoint. The task is inserted only when the key is new and the
/// balance covers the cost; the hold and its entry only when the task was inserted; the last
/// SELECT says what happened (the task began, or the earlier task under the key, or the
/// balance, or no account: `None`).
pub(super) async fn begin_plain(
    conn: &mut SqliteConnection,
    task: &NewTask,
) -> Result<Option<BeginOutcome>, sqlx::Error> {
    let (reference, memo) = LedgerEntry::task_reference(&task.id, EntryKind::Hold);
    let rows = sqlx::query(
        r#"
        SAVEPOINT item;

        INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key,
            fingerprint, status, created_at)
        SELECT $1, $2, $3, $4, $5, $6, $7, $8, 'in_flight', $9
        FROM accounts WHERE id = $2 AND spendable >= $6
        ON CONFLICT (account_id, idempotency_key) DO NOTHING;

        UPDATE accounts SET spendable = spendable - $6, held = held + $6
        WHERE id = $2 AND $6 > 0 AND EXISTS (SELECT 1 FROM tasks WHERE id = $1);

        INSERT INTO ledger_entries
            (id, account_id, kind, delta, balance_after, reference, memo, created_at)
        SELECT $10, $2, 'hold', -$6, spendable, $11, $12, $9
        FROM accounts WHERE id = $2 AND $6 > 0 AND EXISTS (SELECT 1 FROM tasks WHERE id = $1);

        SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1) AS started,
            (SELECT spendable FROM accounts WHERE id = $2) AS spendable,
            t.id, t.account_id, t.key_id, t.domain, t.action, t.cost, t.idempotency_key,
            t.fingerprint, t.status, t.response_status, t.response_body, t.artifact_id,
            t.artifact, t.created_at, t.settled_at, t.verified_artifact, t.verified_at
        FROM (SELECT 1) AS one
        LEFT JOIN tasks AS t ON t.account_id = $2 AND t.idempotency_key = $7 AND t.id <> $1;

        RELEASE item
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
    .bind(millis(task.created_at))
    .bind(task.hold_entry.as_str())
    .bind(reference)
    .bind(memo)
    // Every row of every statement: a `fetch_one` would stop the query at its first row.
    .fetch_all(&mut *conn)
    .await?;
    let row = rows.first().ok_or(sqlx::Error::RowNotFound)?;
    if row.try_get::<bool, _>("started")? {
        return Ok(Some(BeginOutcome::Started {
            task: TaskRecord::started(task),
            // The account exists: its task was inserted.
            spendable: row.try_get("spendable")?,
        }));
    }
    // Nothing was written.
    if row.try_get::<Option<&str>, _>("id")?.is_some() {
        let existing = rows::task(row).map_err(undecodable)?;
        return Ok(Some(BeginOutcome::existing(existing, &task.fingerprint)));
    }
    Ok(row
        .try_get::<Option<i64>, _>("spendable")?
        .map(|spendable| BeginOutcome::InsufficientCredits { spendable }))
}

/// A begin under a payment authority (the spend rules are Rust, run inside the item's
/// savepoint), as one item of a group. `None`: the account does not exist.
pub(super) async fn begin_with_authority(
    conn: &mut SqliteConnection,
    task: &NewTask,
) -> Result<Option<BeginOutcome>, sqlx::Error> {
    sqlx::query("SAVEPOINT item").execute(&mut *conn).await?;
    // The task first: an idempotency key used before inserts nothing (its task is the
    // answer), and an unknown account fails the foreign key.
    let inserted = sqlx::query(
        "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key, \
         fingerprint, status, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'in_flight', $9) \
         ON CONFLICT (account_id, idempotency_key) DO NOTHING",
    )
    .bind(task.id.as_str())
    .bind(task.account_id.as_str())
    .bind(task.key_id.as_str())
    .bind(&task.domain)
    .bind(&task.action)
    .bind(task.cost)
    .bind(task.idempotency_key.as_deref())
    .bind(&task.fingerprint)
    .bind(millis(task.created_at))
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(done) if done.rows_affected() == 0 => {
            let row = sqlx::query(
                "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, \
                 fingerprint, status, response_status, response_body, artifact_id, artifact, \
                 created_at, settled_at, verified_artifact, verified_at \
                 FROM tasks WHERE account_id = $1 AND idempotency_key = $2",
            )
            .bind(task.account_id.as_str())
            .bind(task.idempotency_key.as_deref())
            .fetch_one(&mut *conn)
            .await?;
            let existing = rows::task(&row).map_err(undecodable)?;
            undo_item(conn).await?;
            return Ok(Some(BeginOutcome::existing(existing, &task.fingerprint)));
        }
        Ok(_) => {}
        Err(e) if is_foreign_key_violation(&e) => {
            undo_item(conn).await?;
            return Ok(None);
        }
        Err(e) => return Err(e),
    }
    // The authority before the balance (a refusal says more); either refusal rolls the item
    // back, taking the task row and the spend with it.
    if let Err(refusal) = spend_authority(conn, task).await? {
        undo_item(conn).await?;
        return Ok(Some(BeginOutcome::AuthorityRefused(refusal)));
    }
    let spendable = if task.cost > 0 {
        let balance_after: Option<i64> = sqlx::query_scalar(
            "UPDATE accounts SET spendable = spendable - $1, held = held + $1 \
             WHERE id = $2 AND spendable >= $1 RETURNING spendable",
        )
        .bind(task.cost)
        .bind(task.account_id.as_str())
        .fetch_optional(&mut *conn)
        .await?;
        let Some(balance_after) = balance_after else {
            let spendable: i64 = sqlx::query_scalar("SELECT spendable FROM accounts WHERE id = $1")
                .bind(task.account_id.as_str())
                .fetch_one(&mut *conn)
                .await?;
            undo_item(conn).await?;
            return Ok(Some(BeginOutcome::InsufficientCredits { spendable }));
        };
        let hold = LedgerEntry::for_task(
            task.hold_entry.clone(),
            task.account_id.clone(),
            &task.id,
            EntryKind::Hold,
            -task.cost,
            balance_after,
            task.created_at,
        );
        insert_entry(conn, &hold).await?;
        balance_after
    } else {
        sqlx::query_scalar("SELECT spendable FROM accounts WHERE id = $1")
            .bind(task.account_id.as_str())
            .fetch_one(&mut *conn)
            .await?
    };
    sqlx::query("RELEASE item").execute(&mut *conn).await?;
    Ok(Some(BeginOutcome::Started {
        task: TaskRecord::started(task),
        spendable,
    }))
}

/// A settlement as one item of a group; `None`: the task was not in flight (unknown, or
/// settled before). One multi-statement query inside the item's savepoint: the task's UPDATE
/// matches only a task in flight and stores this settlement's artifact id, which is new;
/// every later statement acts only on the task holding that artifact id, so nothing moves
/// when the UPDATE matched nothing. A failed task's refund gives its cost back, and a clawback
/// entry takes what refunded payments claimed of it (`tasks.owed`; `ledger::spread_owed`).
/// The UPDATE also says whether open disputes claim credits of the account (`claimed`); only
/// then, nearly never, do the claims take statements of their own (`serve_claims`,
/// `cap_claims`), in the same savepoint.
pub(super) async fn settle(
    conn: &mut SqliteConnection,
    s: &Settlement,
) -> Result<Option<crate::group::Landed>, sqlx::Error> {
    let (status, kind) = if s.completed {
        (TaskStatus::Completed, EntryKind::Capture)
    } else {
        (TaskStatus::Failed, EntryKind::Refund)
    };
    let (reference, memo) = LedgerEntry::task_reference(&s.task_id, kind);
    let (clawback_reference, clawback_memo) =
        LedgerEntry::task_reference(&s.task_id, EntryKind::Clawback);
    let rows = sqlx::query(
        r#"
        SAVEPOINT item;

        UPDATE tasks SET status = $1, response_status = $2, response_body = $3,
            artifact_id = $4, artifact = $5, settled_at = $6
        WHERE id = $7 AND status = 'in_flight'
        RETURNING account_id, key_id, domain, action, cost, idempotency_key, fingerprint,
            created_at,
            EXISTS (SELECT 1 FROM freeze_claims
                    WHERE freeze_claims.account_id = tasks.account_id) AS claimed;

        UPDATE authority_spends SET released_at = $6
        WHERE task_id = $7 AND released_at IS NULL AND $8
            AND EXISTS (SELECT 1 FROM tasks WHERE id = $7 AND artifact_id = $4);

        INSERT INTO ledger_entries
            (id, account_id, kind, delta, balance_after, reference, memo, created_at)
        SELECT $10, t.account_id, $11, CASE WHEN $9 THEN 0 ELSE t.cost END,
            a.spendable + CASE WHEN $9 THEN 0 ELSE t.cost END, $12, $13, $6
        FROM tasks AS t JOIN accounts AS a ON a.id = t.account_id
        WHERE t.id = $7 AND t.artifact_id = $4 AND t.cost > 0;

        INSERT INTO ledger_entries
            (id, account_id, kind, delta, balance_after, reference, memo, created_at)
        SELECT $14, t.account_id, 'clawback', -t.owed, a.spendable + t.cost - t.owed,
            $15, $16, $6
        FROM tasks AS t JOIN accounts AS a ON a.id = t.account_id
        WHERE t.id = $7 AND t.artifact_id = $4 AND NOT $9 AND t.owed > 0;

        UPDATE accounts
        SET held = held - t.cost,
            spendable = spendable + CASE WHEN $9 THEN 0 ELSE t.cost - t.owed END
        FROM (SELECT account_id, cost, owed FROM tasks
              WHERE id = $7 AND artifact_id = $4 AND cost > 0) AS t
        WHERE accounts.id = t.account_id
        "#,
    )
    .bind(status.as_str())
    .bind(i64::from(s.response_status))
    .bind(&s.response_body)
    .bind(s.artifact_id.as_str())
    .bind(&s.artifact)
    .bind(millis(s.at))
    .bind(s.task_id.as_str())
    // A payment that surely did not happen gives its authority spend back.
    .bind(s.release_spend && !s.completed)
    .bind(s.completed)
    .bind(s.entry.as_str())
    .bind(kind.as_str())
    .bind(reference)
    .bind(memo)
    .bind(s.clawback_entry.as_str())
    .bind(clawback_reference)
    .bind(clawback_memo)
    .fetch_all(&mut *conn)
    .await?;
    // The item's savepoint is still open: the claims' statements and a landed settlement's
    // event join it, and the event's statement releases it.
    let task = rows
        .first()
        .map(|row| settled_task(row, s, status).map_err(undecodable))
        .transpose()?;
    if let (Some(task), Some(row)) = (&task, rows.first())
        && row.try_get::<bool, _>("claimed")?
    {
        if !s.completed {
            serve_claims(conn, s, &task.account_id).await?;
        }
        // The credits in flight went down: so may what disputes claim of them.
        cap_claims(conn, &task.account_id).await?;
    }
    let event = match (&task, &s.event) {
        (Some(_), Some((event, ids))) => Some(hooks::event_in_item(conn, event, *ids).await?),
        _ => {
            sqlx::query("RELEASE item").execute(&mut *conn).await?;
            None
        }
    };
    Ok(task.map(|task| (task, event)))
}

/// What the failed task `s` settled gave back (its cost less its clawback) serves the open
/// disputes' claims on `account`, oldest first (`svc_ports::billing::serve_claims`, in SQL):
/// a `task_freezes` row per payment served, the claims lowered by as much, the credits moved
/// from spendable to frozen and one `freeze` entry, written after the refund and clawback.
async fn serve_claims(
    conn: &mut SqliteConnection,
    s: &Settlement,
    account: &AccountId,
) -> Result<(), sqlx::Error> {
    let (reference, memo) = LedgerEntry::task_reference(&s.task_id, EntryKind::Freeze);
    sqlx::query(
        r#"
        INSERT INTO task_freezes (task_id, account_id, payment_id, credits, created_at)
        SELECT $1, $3, c.payment_id, min(c.credits, t.returned - c.before), $2
        FROM (SELECT cost - owed AS returned FROM tasks WHERE id = $1) AS t,
            (SELECT payment_id, credits,
                 COALESCE(SUM(credits) OVER (ORDER BY since, payment_id
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
             FROM freeze_claims WHERE account_id = $3) AS c
        WHERE c.before < t.returned;

        DELETE FROM freeze_claims
        WHERE account_id = $3
            AND EXISTS (SELECT 1 FROM task_freezes AS f
                        WHERE f.task_id = $1 AND f.payment_id = freeze_claims.payment_id
                            AND f.credits >= freeze_claims.credits);

        UPDATE freeze_claims SET credits = freeze_claims.credits - f.credits
        FROM task_freezes AS f
        WHERE freeze_claims.account_id = $3 AND f.task_id = $1
            AND f.payment_id = freeze_claims.payment_id;

        UPDATE accounts SET spendable = spendable - f.total, frozen = frozen + f.total
        FROM (SELECT COALESCE(SUM(credits), 0) AS total FROM task_freezes
              WHERE task_id = $1) AS f
        WHERE accounts.id = $3 AND f.total > 0;

        INSERT INTO ledger_entries
            (id, account_id, kind, delta, balance_after, reference, memo, created_at)
        SELECT $4, $3, 'freeze', -f.total, a.spendable, $5, $6, $2
        FROM accounts AS a,
            (SELECT COALESCE(SUM(credits), 0) AS total FROM task_freezes
             WHERE task_id = $1) AS f
        WHERE a.id = $3 AND f.total > 0
        "#,
    )
    .bind(s.task_id.as_str())
    .bind(millis(s.at))
    .bind(account.as_str())
    .bind(s.freeze_entry.as_str())
    .bind(reference)
    .bind(memo)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn begin_task(&self, task: &NewTask) -> Result<BeginOutcome, TaskError> {
        match self.group.begin(task).await {
            Ok(Some(outcome)) => Ok(outcome),
            Ok(None) => Err(TaskError::UnknownAccount),
            Err(e) => Err(backend(e, "beginning task").into()),
        }
    }

    async fn settle_task(&self, settlement: &Settlement) -> Result<SettleOutcome, TaskError> {
        match self.group.settle(settlement).await {
            Ok(Some((task, event))) => Ok(SettleOutcome::Settled(task, event)),
            // Not in flight; or a settlement of the same task won with a unique value.
            Ok(None) => self.settled_before(&settlement.task_id).await,
            Err(e) if is_unique_violation(&e) => self.settled_before(&settlement.task_id).await,
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
        let done = sqlx::query(
            "UPDATE tasks SET verified_artifact_id = $1, verified_artifact = $2, verified_at = $3 \
             WHERE id = $4 AND status = 'completed' AND verified_artifact IS NULL",
        )
        .bind(artifact_id.as_str())
        .bind(artifact)
        .bind(millis(at))
        .bind(task_id.as_str())
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "recording verification"))?;
        if done.rows_affected() == 1 {
            // A settled task changes only here: the row is what was read plus the verification.
            return Ok(VerifyOutcome::Verified(TaskRecord {
                verified_artifact: Some(artifact.to_owned()),
                verified_at: Some(from_millis(millis(at))?),
                ..task
            }));
        }
        // Another verification landed in between: it stands.
        outcomes::unverified(self.task(task_id, None).await?)
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
             FROM tasks WHERE id = $1 AND ($2 IS NULL OR account_id = $2)",
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
        .bind(millis(before))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing unsettled tasks"))?
        .iter()
        .map(rows::task)
        .collect()
    }
}

impl SqliteStore {
    /// The answer to a settlement that did not land: the task as it is now.
    async fn settled_before(&self, id: &TaskId) -> Result<SettleOutcome, TaskError> {
        outcomes::settled_before(self.task(id, None).await?)
    }
}
