//! `MapStore` and `TaskStore` for both dialects. Begin and settle are each one transaction;
//! the unique constraints on tasks and ledger references make a second charge impossible even
//! across instances.

/// Implements `MapStore` and `TaskStore`; expands beside `impl_sql_stores!`.
macro_rules! impl_sql_actions {
    ($store:ty, $db:ty) => {
        use svc_ports::{
            AgentMap, BeginOutcome, Domain, MapDocument, MapStatus, NewTask, SettleOutcome,
            Settlement, TaskId, TaskRecord, TaskStatus, ArtifactId, VerifyOutcome,
            store::{MapStore, MapStoreError, TaskError, TaskStore},
        };

        const MAP_COLUMNS: &str = "domain, version, status, origin, document, created_at, updated_at";
        const TASK_COLUMNS: &str = "id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
            status, response_status, response_body, artifact_id, artifact, created_at, settled_at, \
            verified_artifact, verified_at";

        fn map_from_row(r: &DbRow) -> Result<AgentMap, StoreError> {
            let err = |e| backend(e, "reading agent map");
            let document: String = r.try_get("document").map_err(err)?;
            let version: i64 = r.try_get("version").map_err(err)?;
            Ok(AgentMap {
                document: serde_json::from_str::<MapDocument>(&document).map_err(corrupt("map document"))?,
                version: u32::try_from(version).map_err(corrupt("map version"))?,
                status: MapStatus::parse(&r.try_get::<String, _>("status").map_err(err)?)
                    .ok_or_else(|| corrupt("map status")("unknown"))?,
                origin: r.try_get("origin").map_err(err)?,
                created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
                updated_at: from_millis(r.try_get("updated_at").map_err(err)?)?,
            })
        }

        fn task_from_row(r: &DbRow) -> Result<TaskRecord, StoreError> {
            let err = |e| backend(e, "reading task");
            let s = |c: &str| r.try_get::<String, _>(c).map_err(err);
            let response_status: Option<i64> = r.try_get("response_status").map_err(err)?;
            let settled: Option<i64> = r.try_get("settled_at").map_err(err)?;
            let artifact_id: Option<String> = r.try_get("artifact_id").map_err(err)?;
            let verified_at: Option<i64> = r.try_get("verified_at").map_err(err)?;
            Ok(TaskRecord {
                id: TaskId::parse(&s("id")?).map_err(corrupt("task id"))?,
                account_id: AccountId::parse(&s("account_id")?).map_err(corrupt("account id"))?,
                key_id: ApiKeyId::parse(&s("key_id")?).map_err(corrupt("key id"))?,
                domain: s("domain")?,
                action: s("action")?,
                cost: r.try_get("cost").map_err(err)?,
                idempotency_key: r.try_get("idempotency_key").map_err(err)?,
                fingerprint: s("fingerprint")?,
                status: TaskStatus::parse(&s("status")?).ok_or_else(|| corrupt("task status")("unknown"))?,
                response_status: response_status
                    .map(u16::try_from)
                    .transpose()
                    .map_err(corrupt("response status"))?,
                response_body: r.try_get("response_body").map_err(err)?,
                artifact_id: artifact_id
                    .map(|a| ArtifactId::parse(&a))
                    .transpose()
                    .map_err(corrupt("artifact id"))?,
                artifact: r.try_get("artifact").map_err(err)?,
                created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
                settled_at: settled.map(from_millis).transpose()?,
                verified_artifact: r.try_get("verified_artifact").map_err(err)?,
                verified_at: verified_at.map(from_millis).transpose()?,
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

        impl $store {
            async fn task_by_key(
                &self,
                account: &AccountId,
                key: &str,
            ) -> Result<Option<TaskRecord>, StoreError> {
                let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE account_id = $1 AND idempotency_key = $2");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(account.as_str())
                    .bind(key)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading task by key"))?
                    .map(|r| task_from_row(&r))
                    .transpose()
            }

            /// `Ok(None)`: lost the race for the idempotency key (the caller reads the winner).
            async fn try_begin(&self, task: &NewTask) -> Result<Option<BeginOutcome>, sqlx::Error> {
                let mut tx = self.begin_write().await?;
                if let Some(key) = &task.idempotency_key {
                    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE account_id = $1 AND idempotency_key = $2");
                    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(task.account_id.as_str())
                        .bind(key)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if let Some(r) = row {
                        let existing = task_from_row(&r).map_err(|e| sqlx::Error::Decode(e.0.into()))?;
                        return Ok(Some(existing_outcome(existing, &task.fingerprint)));
                    }
                }
                // The task first: a concurrent insert with the same key waits here on the unique
                // index, then fails, and reads the winner.
                let inserted = sqlx::query(
                    "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
                     status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'in_flight', $9)",
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
                    Ok(_) => {}
                    Err(e) if is_unique_violation(&e) && task.idempotency_key.is_some() => return Ok(None),
                    Err(e) if is_foreign_key_violation(&e) => return Err(sqlx::Error::RowNotFound),
                    Err(e) => return Err(e),
                }
                // The authority before the balance (a refusal says more); either refusal drops the
                // transaction, taking the task row and the spend back.
                if let Err(refusal) = spend_authority_on(&mut tx, task).await? {
                    return Ok(Some(BeginOutcome::AuthorityRefused(refusal)));
                }
                let spendable: Option<i64> = sqlx::query_scalar(
                    "UPDATE accounts SET spendable = spendable - $1, held = held + $1 \
                     WHERE id = $2 AND spendable >= $1 RETURNING spendable",
                )
                .bind(task.cost)
                .bind(task.account_id.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(balance_after) = spendable else {
                    let current: Option<i64> = sqlx::query_scalar("SELECT spendable FROM accounts WHERE id = $1")
                        .bind(task.account_id.as_str())
                        .fetch_optional(&mut *tx)
                        .await?;
                    // Dropping the transaction takes the task row back.
                    return match current {
                        Some(spendable) => Ok(Some(BeginOutcome::InsufficientCredits { spendable })),
                        None => Err(sqlx::Error::RowNotFound),
                    };
                };
                let record = TaskRecord {
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
                };
                if task.cost > 0 {
                    let hold = LedgerEntry::for_task(task.hold_entry.clone(), task.account_id.clone(), &task.id, EntryKind::Hold, -task.cost, balance_after, task.created_at);
                    insert_entry_on(&mut tx, &hold).await?;
                }
                tx.commit().await?;
                Ok(Some(BeginOutcome::Started(record)))
            }

            /// `Ok(None)`: the task was not in flight (unknown or settled before).
            async fn try_settle(&self, s: &Settlement) -> Result<Option<TaskRecord>, sqlx::Error> {
                let mut tx = self.begin_write().await?;
                let sql = format!(
                    "UPDATE tasks SET status = $1, response_status = $2, response_body = $3, artifact_id = $4, \
                     artifact = $5, settled_at = $6 WHERE id = $7 AND status = 'in_flight' RETURNING {TASK_COLUMNS}"
                );
                let status = if s.completed { TaskStatus::Completed } else { TaskStatus::Failed };
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
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
                let task = task_from_row(&row).map_err(|e| sqlx::Error::Decode(e.0.into()))?;
                if s.release_spend && !s.completed {
                    // A payment that surely did not happen gives its authority spend back.
                    release_spend_on(&mut tx, &task.id, s.at).await?;
                }
                if task.cost > 0 {
                    let (kind, refund) = if s.completed {
                        (EntryKind::Capture, 0)
                    } else {
                        (EntryKind::Refund, task.cost)
                    };
                    let balance_after: i64 = sqlx::query_scalar(
                        "UPDATE accounts SET held = held - $1, spendable = spendable + $2 WHERE id = $3 RETURNING spendable",
                    )
                    .bind(task.cost)
                    .bind(refund)
                    .bind(task.account_id.as_str())
                    .fetch_one(&mut *tx)
                    .await?;
                    let entry = LedgerEntry::for_task(s.entry.clone(), task.account_id.clone(), &task.id, kind, refund, balance_after, s.at);
                    insert_entry_on(&mut tx, &entry).await?;
                }
                tx.commit().await?;
                Ok(Some(task))
            }
        }

        #[async_trait]
        impl MapStore for $store {
            async fn insert_map(
                &self,
                document: &MapDocument,
                origin: &str,
                at: DateTime<Utc>,
            ) -> Result<AgentMap, StoreError> {
                let err = |e| backend(e, "storing agent map");
                let json = serde_json::to_string(document).map_err(corrupt("map document"))?;
                let mut tx = self.begin_write().await.map_err(err)?;
                let latest: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM agent_maps WHERE domain = $1")
                    .bind(document.domain.as_str())
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(err)?;
                let version = latest.unwrap_or(0) + 1;
                sqlx::query(
                    "INSERT INTO agent_maps (domain, version, status, origin, document, created_at, updated_at) \
                     VALUES ($1, $2, 'candidate', $3, $4, $5, $5)",
                )
                .bind(document.domain.as_str())
                .bind(version)
                .bind(origin)
                .bind(&json)
                .bind(millis(at))
                .execute(&mut *tx)
                .await
                .map_err(err)?;
                tx.commit().await.map_err(err)?;
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
                let sql = format!(
                    "SELECT {MAP_COLUMNS} FROM agent_maps WHERE ($1 IS NULL OR domain = $1) ORDER BY domain, version DESC"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(domain.as_ref().map(|d| d.as_str().to_owned()))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| backend(e, "listing agent maps"))?
                    .iter()
                    .map(map_from_row)
                    .collect()
            }

            async fn published_map(&self, domain: &Domain) -> Result<Option<AgentMap>, StoreError> {
                let sql = format!("SELECT {MAP_COLUMNS} FROM agent_maps WHERE domain = $1 AND status = 'published'");
                sqlx::query(sqlx::AssertSqlSafe(sql))
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
                let mut tx = self.begin_write().await.map_err(err)?;
                let target: Option<i64> = match version {
                    Some(v) => sqlx::query_scalar("SELECT version FROM agent_maps WHERE domain = $1 AND version = $2")
                        .bind(domain.as_str())
                        .bind(i64::from(v))
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(err)?,
                    None => sqlx::query_scalar("SELECT MAX(version) FROM agent_maps WHERE domain = $1")
                        .bind(domain.as_str())
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(err)?,
                };
                let Some(target) = target else { return Err(MapStoreError::NotFound) };
                sqlx::query(
                    "UPDATE agent_maps SET status = 'retired', updated_at = $1 \
                     WHERE domain = $2 AND status = 'published' AND version <> $3",
                )
                .bind(millis(at))
                .bind(domain.as_str())
                .bind(target)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
                let sql = format!(
                    "UPDATE agent_maps SET status = 'published', updated_at = $1 WHERE domain = $2 AND version = $3 \
                     RETURNING {MAP_COLUMNS}"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(millis(at))
                    .bind(domain.as_str())
                    .bind(target)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(err)?;
                let map = map_from_row(&row)?;
                tx.commit().await.map_err(err)?;
                Ok(map)
            }

            async fn retire_map(&self, domain: &Domain, at: DateTime<Utc>) -> Result<AgentMap, MapStoreError> {
                let sql = format!(
                    "UPDATE agent_maps SET status = 'retired', updated_at = $1 WHERE domain = $2 AND status = 'published' \
                     RETURNING {MAP_COLUMNS}"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
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
        impl TaskStore for $store {
            async fn begin_task(&self, task: &NewTask) -> Result<BeginOutcome, TaskError> {
                match self.try_begin(task).await {
                    Ok(Some(outcome)) => Ok(outcome),
                    Ok(None) => {
                        let key = task.idempotency_key.as_deref().unwrap_or_default();
                        match self.task_by_key(&task.account_id, key).await? {
                            Some(existing) => Ok(existing_outcome(existing, &task.fingerprint)),
                            None => Err(StoreError(anyhow::anyhow!("idempotency key race left no task")).into()),
                        }
                    }
                    Err(sqlx::Error::RowNotFound) => Err(TaskError::UnknownAccount),
                    Err(e) => Err(backend(e, "beginning task").into()),
                }
            }

            async fn settle_task(&self, settlement: &Settlement) -> Result<SettleOutcome, TaskError> {
                match self.try_settle(settlement).await {
                    Ok(Some(task)) => Ok(SettleOutcome::Settled(task)),
                    Ok(None) => match self.task(&settlement.task_id, None).await? {
                        Some(task) => Ok(SettleOutcome::AlreadySettled(task)),
                        None => Err(TaskError::NotFound),
                    },
                    // Lost a race with another settlement of the same task.
                    Err(e) if is_unique_violation(&e) => match self.task(&settlement.task_id, None).await? {
                        Some(task) => Ok(SettleOutcome::AlreadySettled(task)),
                        None => Err(TaskError::NotFound),
                    },
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
                // Whether a task is verifiable never changes once it settled, so it is read
                // first; the store is the compare-and-set on `verified_artifact IS NULL`.
                let task = self.task(task_id, None).await?.ok_or(TaskError::NotFound)?;
                if task.verified_artifact.is_some() {
                    return Ok(VerifyOutcome::AlreadyVerified(task));
                }
                if !task.verifiable() {
                    return Ok(VerifyOutcome::NotVerifiable(task));
                }
                let sql = format!(
                    "UPDATE tasks SET verified_artifact_id = $1, verified_artifact = $2, verified_at = $3 \
                     WHERE id = $4 AND status = 'completed' AND verified_artifact IS NULL RETURNING {TASK_COLUMNS}"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(artifact_id.as_str())
                    .bind(artifact)
                    .bind(millis(at))
                    .bind(task_id.as_str())
                    .fetch_optional(self.writer())
                    .await
                    .map_err(|e| backend(e, "recording verification"))?;
                match row {
                    Some(r) => Ok(VerifyOutcome::Verified(task_from_row(&r)?)),
                    // Another verification landed in between: it stands.
                    None => match self.task(task_id, None).await? {
                        Some(t) if t.verified_artifact.is_some() => Ok(VerifyOutcome::AlreadyVerified(t)),
                        Some(t) => Ok(VerifyOutcome::NotVerifiable(t)),
                        None => Err(TaskError::NotFound),
                    },
                }
            }

            async fn task(
                &self,
                id: &TaskId,
                account: Option<AccountId>,
            ) -> Result<Option<TaskRecord>, StoreError> {
                let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1 AND ($2 IS NULL OR account_id = $2)");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id.as_str())
                    .bind(account.as_ref().map(|a| a.as_str().to_owned()))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading task"))?
                    .map(|r| task_from_row(&r))
                    .transpose()
            }

            async fn unsettled_tasks(&self, before: DateTime<Utc>) -> Result<Vec<TaskRecord>, StoreError> {
                let sql = format!(
                    "SELECT {TASK_COLUMNS} FROM tasks WHERE status = 'in_flight' AND created_at < $1 ORDER BY created_at"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(millis(before))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| backend(e, "listing unsettled tasks"))?
                    .iter()
                    .map(task_from_row)
                    .collect()
            }
        }
    };
}

pub(crate) use impl_sql_actions;
