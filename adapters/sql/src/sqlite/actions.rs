//! `MapStore` and `TaskStore`: Agent Maps, versioned per domain with at most one published,
//! and execution tasks with the credits they hold, charge or refund. Beginning and settling a
//! task are each one transaction; the unique constraints on tasks and ledger references make a
//! second charge impossible.
//!
//! Beginning, settling and reading the published map run on every execution: each does only
//! the statements it needs and reads back nothing it just wrote.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, sqlite::SqliteRow};
use svc_ports::{
    AccountId, AgentMap, ApiKeyId, ArtifactId, BeginOutcome, Domain, EntryKind, LedgerEntry,
    MapDocument, MapStatus, NewTask, SettleOutcome, Settlement, TaskId, TaskRecord, TaskStatus,
    VerifyOutcome,
    store::{MapStore, MapStoreError, StoreError, TaskError, TaskStore},
};

use super::{
    SqliteStore,
    authority::{release_spend, spend_authority},
    backend, corrupt, from_millis, is_foreign_key_violation, is_unique_violation,
    ledger::insert_entry,
    millis, undecodable,
};

/// A map from a row holding `domain, version, status, origin, document, created_at,
/// updated_at`.
fn map_from_row(r: &SqliteRow) -> Result<AgentMap, StoreError> {
    let err = |e| backend(e, "reading agent map");
    let version: i64 = r.try_get("version").map_err(err)?;
    Ok(AgentMap {
        document: serde_json::from_str::<MapDocument>(r.try_get("document").map_err(err)?)
            .map_err(corrupt("map document"))?,
        version: u32::try_from(version).map_err(corrupt("map version"))?,
        status: MapStatus::parse(r.try_get("status").map_err(err)?)
            .ok_or_else(|| corrupt("map status")("unknown"))?,
        origin: r.try_get("origin").map_err(err)?,
        created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
        updated_at: from_millis(r.try_get("updated_at").map_err(err)?)?,
    })
}

/// A task from a row holding `id, account_id, key_id, domain, action, cost, idempotency_key,
/// fingerprint, status, response_status, response_body, artifact_id, artifact, created_at,
/// settled_at, verified_artifact, verified_at`.
pub(super) fn task_from_row(r: &SqliteRow) -> Result<TaskRecord, StoreError> {
    let err = |e| backend(e, "reading task");
    let response_status: Option<i64> = r.try_get("response_status").map_err(err)?;
    let artifact_id: Option<&str> = r.try_get("artifact_id").map_err(err)?;
    let settled: Option<i64> = r.try_get("settled_at").map_err(err)?;
    let verified_at: Option<i64> = r.try_get("verified_at").map_err(err)?;
    Ok(TaskRecord {
        id: TaskId::parse(r.try_get("id").map_err(err)?).map_err(corrupt("task id"))?,
        account_id: AccountId::parse(r.try_get("account_id").map_err(err)?)
            .map_err(corrupt("account id"))?,
        key_id: ApiKeyId::parse(r.try_get("key_id").map_err(err)?).map_err(corrupt("key id"))?,
        domain: r.try_get("domain").map_err(err)?,
        action: r.try_get("action").map_err(err)?,
        cost: r.try_get("cost").map_err(err)?,
        idempotency_key: r.try_get("idempotency_key").map_err(err)?,
        fingerprint: r.try_get("fingerprint").map_err(err)?,
        status: TaskStatus::parse(r.try_get("status").map_err(err)?)
            .ok_or_else(|| corrupt("task status")("unknown"))?,
        response_status: response_status
            .map(u16::try_from)
            .transpose()
            .map_err(corrupt("response status"))?,
        response_body: r.try_get("response_body").map_err(err)?,
        artifact_id: artifact_id
            .map(ArtifactId::parse)
            .transpose()
            .map_err(corrupt("artifact id"))?,
        artifact: r.try_get("artifact").map_err(err)?,
        created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
        settled_at: settled.map(from_millis).transpose()?,
        verified_artifact: r.try_get("verified_artifact").map_err(err)?,
        verified_at: verified_at.map(from_millis).transpose()?,
    })
}

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

/// What an existing task under the same idempotency key means for a new request.
fn existing_outcome(existing: TaskRecord, fingerprint: &str) -> BeginOutcome {
    if existing.fingerprint != fingerprint {
        BeginOutcome::Conflict(existing)
    } else if existing.status == TaskStatus::InFlight {
        BeginOutcome::InFlight(existing)
    } else {
        BeginOutcome::Replay(existing)
    }
}

impl SqliteStore {
    /// `Err(RowNotFound)`: the account does not exist.
    async fn try_begin(&self, task: &NewTask) -> Result<BeginOutcome, sqlx::Error> {
        let mut tx = self.begin_write().await?;
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
        .execute(&mut *tx)
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
                .fetch_one(&mut *tx)
                .await?;
                let existing = task_from_row(&row).map_err(undecodable)?;
                return Ok(existing_outcome(existing, &task.fingerprint));
            }
            Ok(_) => {}
            Err(e) if is_foreign_key_violation(&e) => return Err(sqlx::Error::RowNotFound),
            Err(e) => return Err(e),
        }
        // The authority before the balance (a refusal says more); either refusal drops the
        // transaction, taking the task row and the spend back.
        if let Err(refusal) = spend_authority(&mut tx, task).await? {
            return Ok(BeginOutcome::AuthorityRefused(refusal));
        }
        if task.cost > 0 {
            let balance_after: Option<i64> = sqlx::query_scalar(
                "UPDATE accounts SET spendable = spendable - $1, held = held + $1 \
                 WHERE id = $2 AND spendable >= $1 RETURNING spendable",
            )
            .bind(task.cost)
            .bind(task.account_id.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            let Some(balance_after) = balance_after else {
                let spendable: i64 =
                    sqlx::query_scalar("SELECT spendable FROM accounts WHERE id = $1")
                        .bind(task.account_id.as_str())
                        .fetch_one(&mut *tx)
                        .await?;
                return Ok(BeginOutcome::InsufficientCredits { spendable });
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
            insert_entry(&mut tx, &hold).await?;
        }
        tx.commit().await?;
        Ok(BeginOutcome::Started(TaskRecord {
            id: task.id.clone(),
            account_id: task.account_id.clone(),
            key_id: task.key_id.clone(),
            domain: task.domain.clone(),
            action: task.action.clone(),
            cost: task.cost,
            idempotency_key: task.idempotency_key.clone(),
            fingerprint: task.fingerprint.clone(),
            status: TaskStatus::InFlight,
            response_status: None,
            response_body: None,
            artifact_id: None,
            artifact: None,
            created_at: task.created_at,
            settled_at: None,
            verified_artifact: None,
            verified_at: None,
        }))
    }

    /// `Ok(None)`: the task was not in flight (unknown, or settled before).
    async fn try_settle(&self, s: &Settlement) -> Result<Option<TaskRecord>, sqlx::Error> {
        let status = if s.completed {
            TaskStatus::Completed
        } else {
            TaskStatus::Failed
        };
        let mut tx = self.begin_write().await?;
        // Only the columns the settlement does not say come back (an in-flight task has no
        // verification yet).
        let row = sqlx::query(
            "UPDATE tasks SET status = $1, response_status = $2, response_body = $3, \
             artifact_id = $4, artifact = $5, settled_at = $6 \
             WHERE id = $7 AND status = 'in_flight' \
             RETURNING account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             created_at",
        )
        .bind(status.as_str())
        .bind(i64::from(s.response_status))
        .bind(&s.response_body)
        .bind(s.artifact_id.as_str())
        .bind(&s.artifact)
        .bind(millis(s.at))
        .bind(s.task_id.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let task = settled_task(&row, s, status).map_err(undecodable)?;
        if s.release_spend && !s.completed {
            // A payment that surely did not happen gives its authority spend back.
            release_spend(&mut tx, &task.id, s.at).await?;
        }
        if task.cost > 0 {
            let (kind, refund) = if s.completed {
                (EntryKind::Capture, 0)
            } else {
                (EntryKind::Refund, task.cost)
            };
            let balance_after: i64 = sqlx::query_scalar(
                "UPDATE accounts SET held = held - $1, spendable = spendable + $2 \
                 WHERE id = $3 RETURNING spendable",
            )
            .bind(task.cost)
            .bind(refund)
            .bind(task.account_id.as_str())
            .fetch_one(&mut *tx)
            .await?;
            let entry = LedgerEntry::for_task(
                s.entry.clone(),
                task.account_id.clone(),
                &task.id,
                kind,
                refund,
                balance_after,
                s.at,
            );
            insert_entry(&mut tx, &entry).await?;
        }
        tx.commit().await?;
        Ok(Some(task))
    }
}

#[async_trait]
impl MapStore for SqliteStore {
    async fn insert_map(
        &self,
        document: &MapDocument,
        origin: &str,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, StoreError> {
        let json = serde_json::to_string(document).map_err(corrupt("map document"))?;
        // One statement picks the next version and stores it: no transaction needed.
        let version: i64 = sqlx::query_scalar(
            "INSERT INTO agent_maps (domain, version, status, origin, document, created_at, \
             updated_at) \
             SELECT $1, COALESCE(MAX(version), 0) + 1, 'candidate', $2, $3, $4, $4 \
             FROM agent_maps WHERE domain = $1 \
             RETURNING version",
        )
        .bind(document.domain.as_str())
        .bind(origin)
        .bind(&json)
        .bind(millis(at))
        .fetch_one(self.writer())
        .await
        .map_err(|e| backend(e, "storing agent map"))?;
        Ok(AgentMap {
            document: document.clone(),
            version: u32::try_from(version).map_err(corrupt("map version"))?,
            status: MapStatus::Candidate,
            origin: origin.to_owned(),
            created_at: at,
            updated_at: at,
        })
    }

    async fn maps(&self, domain: Option<Domain>) -> Result<Vec<AgentMap>, StoreError> {
        sqlx::query(
            "SELECT domain, version, status, origin, document, created_at, updated_at \
             FROM agent_maps WHERE ($1 IS NULL OR domain = $1) ORDER BY domain, version DESC",
        )
        .bind(domain.as_ref().map(Domain::as_str))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing agent maps"))?
        .iter()
        .map(map_from_row)
        .collect()
    }

    async fn published_map(&self, domain: &Domain) -> Result<Option<AgentMap>, StoreError> {
        // The partial unique index on published maps answers this.
        sqlx::query(
            "SELECT domain, version, status, origin, document, created_at, updated_at \
             FROM agent_maps WHERE domain = $1 AND status = 'published'",
        )
        .bind(domain.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading published map"))?
        .map(|r| map_from_row(&r))
        .transpose()
    }

    async fn publish_map(
        &self,
        domain: &Domain,
        version: Option<u32>,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError> {
        let err = |e| MapStoreError::Store(backend(e, "publishing agent map"));
        // The target is the version asked for, or the newest. Retire first (one published
        // version at a time), then publish; no target rolls the retirement back.
        let version = version.map(i64::from);
        let mut tx = self.begin_write().await.map_err(err)?;
        sqlx::query(
            "UPDATE agent_maps SET status = 'retired', updated_at = $1 \
             WHERE domain = $2 AND status = 'published' \
             AND version <> COALESCE($3, (SELECT MAX(version) FROM agent_maps WHERE domain = $2))",
        )
        .bind(millis(at))
        .bind(domain.as_str())
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let row = sqlx::query(
            "UPDATE agent_maps SET status = 'published', updated_at = $1 \
             WHERE domain = $2 \
             AND version = COALESCE($3, (SELECT MAX(version) FROM agent_maps WHERE domain = $2)) \
             RETURNING domain, version, status, origin, document, created_at, updated_at",
        )
        .bind(millis(at))
        .bind(domain.as_str())
        .bind(version)
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let Some(row) = row else {
            return Err(MapStoreError::NotFound);
        };
        let map = map_from_row(&row)?;
        tx.commit().await.map_err(err)?;
        Ok(map)
    }

    async fn retire_map(
        &self,
        domain: &Domain,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError> {
        sqlx::query(
            "UPDATE agent_maps SET status = 'retired', updated_at = $1 \
             WHERE domain = $2 AND status = 'published' \
             RETURNING domain, version, status, origin, document, created_at, updated_at",
        )
        .bind(millis(at))
        .bind(domain.as_str())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| MapStoreError::Store(backend(e, "retiring agent map")))?
        .map(|r| map_from_row(&r).map_err(MapStoreError::Store))
        .transpose()?
        .ok_or(MapStoreError::NotFound)
    }
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn begin_task(&self, task: &NewTask) -> Result<BeginOutcome, TaskError> {
        match self.try_begin(task).await {
            Ok(outcome) => Ok(outcome),
            Err(sqlx::Error::RowNotFound) => Err(TaskError::UnknownAccount),
            Err(e) => Err(backend(e, "beginning task").into()),
        }
    }

    async fn settle_task(&self, settlement: &Settlement) -> Result<SettleOutcome, TaskError> {
        match self.try_settle(settlement).await {
            Ok(Some(task)) => Ok(SettleOutcome::Settled(task)),
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
        match self.task(task_id, None).await? {
            Some(t) if t.verified_artifact.is_some() => Ok(VerifyOutcome::AlreadyVerified(t)),
            Some(t) => Ok(VerifyOutcome::NotVerifiable(t)),
            None => Err(TaskError::NotFound),
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
             FROM tasks WHERE id = $1 AND ($2 IS NULL OR account_id = $2)",
        )
        .bind(id.as_str())
        .bind(account.as_ref().map(AccountId::as_str))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading task"))?
        .map(|r| task_from_row(&r))
        .transpose()
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
        .map(task_from_row)
        .collect()
    }
}

impl SqliteStore {
    /// The answer to a settlement that did not land: the task as it is now.
    async fn settled_before(&self, id: &TaskId) -> Result<SettleOutcome, TaskError> {
        match self.task(id, None).await? {
            Some(task) => Ok(SettleOutcome::AlreadySettled(task)),
            None => Err(TaskError::NotFound),
        }
    }
}
