//! In-memory Agent Maps and execution tasks, under the store's one lock so that a task and the
//! credits it moves change together.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, AgentMap, ArtifactId, BeginOutcome, Domain, HookError, LedgerEntry, LedgerEntryId,
    MapDocument, MapStatus, NewTask, SettleOutcome, Settlement, TaskId, TaskRecord, TaskStatus,
    VerifyOutcome,
    ledger::EntryKind,
    store::{MapStore, MapStoreError, StoreError, TaskError, TaskStore},
};

use crate::{MemoryStore, memory::State};

#[derive(Default)]
pub(crate) struct ActionState {
    maps: Vec<AgentMap>,
    pub(crate) tasks: HashMap<TaskId, TaskRecord>,
    by_key: HashMap<(AccountId, String), TaskId>,
    /// What refunded payments claim of each task in flight (`svc_ports::ledger::spread_owed`); absent: 0.
    pub(crate) owed: HashMap<TaskId, i64>,
}

fn ledger_entry(
    s: &mut State,
    id: LedgerEntryId,
    account: &AccountId,
    kind: EntryKind,
    delta: i64,
    task: &TaskId,
    at: DateTime<Utc>,
) {
    let balance_after = s.balances.get(account).map(|b| b.spendable).unwrap_or(0);
    s.entries.push(LedgerEntry::for_task(
        id,
        account.clone(),
        task,
        kind,
        delta,
        balance_after,
        at,
    ));
}

#[async_trait]
impl MapStore for MemoryStore {
    async fn insert_map(
        &self,
        document: &MapDocument,
        origin: &str,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, StoreError> {
        let mut s = self.lock();
        let version = s
            .actions
            .maps
            .iter()
            .filter(|m| m.document.domain == document.domain)
            .map(|m| m.version)
            .max()
            .unwrap_or(0)
            + 1;
        let map = AgentMap {
            document: document.clone(),
            version,
            status: MapStatus::Candidate,
            origin: origin.to_owned(),
            created_at: at,
            updated_at: at,
        };
        s.actions.maps.push(map.clone());
        Ok(map)
    }

    async fn maps(&self, domain: Option<Domain>) -> Result<Vec<AgentMap>, StoreError> {
        let s = self.lock();
        let mut out: Vec<AgentMap> = s
            .actions
            .maps
            .iter()
            .filter(|m| domain.as_ref().is_none_or(|d| &m.document.domain == d))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            (a.document.domain.as_str(), std::cmp::Reverse(a.version))
                .cmp(&(b.document.domain.as_str(), std::cmp::Reverse(b.version)))
        });
        Ok(out)
    }

    async fn published_map(&self, domain: &Domain) -> Result<Option<AgentMap>, StoreError> {
        let s = self.lock();
        Ok(s.actions
            .maps
            .iter()
            .find(|m| &m.document.domain == domain && m.status == MapStatus::Published)
            .cloned())
    }

    async fn publish_map(
        &self,
        domain: &Domain,
        version: Option<u32>,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError> {
        let mut s = self.lock();
        let maps = &mut s.actions.maps;
        let target = match version {
            Some(v) => v,
            None => maps
                .iter()
                .filter(|m| &m.document.domain == domain)
                .map(|m| m.version)
                .max()
                .ok_or(MapStoreError::NotFound)?,
        };
        if !maps
            .iter()
            .any(|m| &m.document.domain == domain && m.version == target)
        {
            return Err(MapStoreError::NotFound);
        }
        for m in maps.iter_mut().filter(|m| &m.document.domain == domain) {
            if m.version == target {
                m.status = MapStatus::Published;
                m.updated_at = at;
            } else if m.status == MapStatus::Published {
                m.status = MapStatus::Retired;
                m.updated_at = at;
            }
        }
        Ok(maps
            .iter()
            .find(|m| &m.document.domain == domain && m.version == target)
            .cloned()
            .ok_or(MapStoreError::NotFound)?)
    }

    async fn retire_map(
        &self,
        domain: &Domain,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError> {
        let mut s = self.lock();
        let m = s
            .actions
            .maps
            .iter_mut()
            .find(|m| &m.document.domain == domain && m.status == MapStatus::Published)
            .ok_or(MapStoreError::NotFound)?;
        m.status = MapStatus::Retired;
        m.updated_at = at;
        Ok(m.clone())
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn begin_task(&self, task: &NewTask) -> Result<BeginOutcome, TaskError> {
        let mut s = self.lock();
        if let Some(key) = &task.idempotency_key
            && let Some(existing) = s
                .actions
                .by_key
                .get(&(task.account_id.clone(), key.clone()))
                .and_then(|id| s.actions.tasks.get(id))
        {
            return Ok(BeginOutcome::existing(existing.clone(), &task.fingerprint));
        }
        if !s.balances.contains_key(&task.account_id) {
            return Err(TaskError::UnknownAccount);
        }
        // Checked before anything changes: a refusal stores nothing.
        let spend = match s.authority.check(task) {
            Ok(spend) => spend,
            Err(refusal) => return Ok(BeginOutcome::AuthorityRefused(refusal)),
        };
        let balance = s
            .balances
            .get_mut(&task.account_id)
            .ok_or(TaskError::UnknownAccount)?;
        if balance.spendable < task.cost {
            return Ok(BeginOutcome::InsufficientCredits {
                spendable: balance.spendable,
            });
        }
        balance.spendable -= task.cost;
        balance.held += task.cost;
        let spendable = balance.spendable;
        if task.cost > 0 {
            ledger_entry(
                &mut s,
                task.hold_entry.clone(),
                &task.account_id,
                EntryKind::Hold,
                -task.cost,
                &task.id,
                task.created_at,
            );
        }
        let record = TaskRecord::started(task);
        if let Some(key) = &task.idempotency_key {
            s.actions
                .by_key
                .insert((task.account_id.clone(), key.clone()), task.id.clone());
        }
        s.actions.tasks.insert(task.id.clone(), record.clone());
        if let Some(spend) = spend {
            s.authority.record(spend);
        }
        Ok(BeginOutcome::Started {
            task: record,
            spendable,
        })
    }

    async fn settle_task(&self, settlement: &Settlement) -> Result<SettleOutcome, TaskError> {
        let mut s = self.lock();
        let task = s
            .actions
            .tasks
            .get(&settlement.task_id)
            .cloned()
            .ok_or(TaskError::NotFound)?;
        if task.status != TaskStatus::InFlight {
            return Ok(SettleOutcome::AlreadySettled(task));
        }
        if !s.balances.contains_key(&task.account_id) {
            return Err(TaskError::UnknownAccount);
        }
        // Its entry id taken: nothing changes, as the SQL stores' unique id refuses it.
        if task.cost > 0 && s.entries.iter().any(|e| e.id == settlement.entry) {
            return Err(TaskError::Store(StoreError(anyhow::anyhow!(
                "ledger entry {} exists",
                settlement.entry
            ))));
        }
        // The event first: it changes nothing when it fails, so neither does the settlement.
        let event = match &settlement.event {
            Some((event, ids)) => Some(crate::memory_hooks::enqueue(&mut s, event, *ids).map_err(
                |e| match e {
                    HookError::UnknownAccount => TaskError::UnknownAccount,
                    other => TaskError::Store(StoreError(anyhow::anyhow!(other))),
                },
            )?),
            None => None,
        };
        let task_owed = s.actions.owed.remove(&task.id).unwrap_or(0);
        // A failed task gives its cost back; a clawback then takes what refunds claim of it,
        // and open disputes' claims freeze what they can of the rest.
        let frozen: i64 = if settlement.completed {
            0
        } else {
            crate::memory_billing::serve_claims(&mut s, &task, task.cost - task_owed, settlement.at)
                .iter()
                .map(|f| f.credits)
                .sum()
        };
        let balance = s
            .balances
            .get_mut(&task.account_id)
            .ok_or(TaskError::UnknownAccount)?;
        balance.held -= task.cost;
        let before = balance.spendable;
        let (kind, delta) = if settlement.completed {
            (EntryKind::Capture, 0)
        } else {
            balance.spendable += task.cost - task_owed - frozen;
            balance.frozen += frozen;
            (EntryKind::Refund, task.cost)
        };
        if settlement.release_spend && !settlement.completed {
            s.authority.release(&task.id, settlement.at);
        }
        if task.cost > 0 {
            // Each entry records the balance it leaves, in the order they are written.
            let entry = |id: &LedgerEntryId, kind, delta, after| {
                LedgerEntry::for_task(
                    id.clone(),
                    task.account_id.clone(),
                    &task.id,
                    kind,
                    delta,
                    after,
                    settlement.at,
                )
            };
            let mut after = before + delta;
            s.entries.push(entry(&settlement.entry, kind, delta, after));
            if !settlement.completed && task_owed > 0 {
                after -= task_owed;
                s.entries.push(entry(
                    &settlement.clawback_entry,
                    EntryKind::Clawback,
                    -task_owed,
                    after,
                ));
            }
            if frozen > 0 {
                after -= frozen;
                s.entries.push(entry(
                    &settlement.freeze_entry,
                    EntryKind::Freeze,
                    -frozen,
                    after,
                ));
            }
        }
        let record = task.settled_by(settlement);
        s.actions.tasks.insert(record.id.clone(), record.clone());
        // The credits in flight went down: so may what disputes claim of them.
        crate::memory_billing::cap_claims(&mut s, &record.account_id);
        Ok(SettleOutcome::Settled(record, event))
    }

    async fn record_verification(
        &self,
        task_id: &TaskId,
        _artifact_id: &ArtifactId,
        artifact: &str,
        at: DateTime<Utc>,
    ) -> Result<VerifyOutcome, TaskError> {
        let mut s = self.lock();
        let task = s
            .actions
            .tasks
            .get_mut(task_id)
            .ok_or(TaskError::NotFound)?;
        if task.verified_artifact.is_some() {
            return Ok(VerifyOutcome::AlreadyVerified(task.clone()));
        }
        if !task.verifiable() {
            return Ok(VerifyOutcome::NotVerifiable(task.clone()));
        }
        task.verified_artifact = Some(artifact.to_owned());
        task.verified_at = Some(at);
        Ok(VerifyOutcome::Verified(task.clone()))
    }

    async fn task_by_key(
        &self,
        account: &AccountId,
        key: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let s = self.lock();
        Ok(s.actions
            .by_key
            .get(&(account.clone(), key.to_owned()))
            .and_then(|id| s.actions.tasks.get(id))
            .cloned())
    }

    async fn task(
        &self,
        id: &TaskId,
        account: Option<AccountId>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let s = self.lock();
        Ok(s.actions
            .tasks
            .get(id)
            .filter(|t| account.as_ref().is_none_or(|a| &t.account_id == a))
            .cloned())
    }

    async fn list_tasks(
        &self,
        account: &AccountId,
        query: &svc_ports::TaskQuery,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(crate::memory_activity::list_tasks(
            &self.lock(),
            account,
            query,
        ))
    }

    async fn unsettled_tasks(&self, before: DateTime<Utc>) -> Result<Vec<TaskRecord>, StoreError> {
        let s = self.lock();
        let mut out: Vec<TaskRecord> = s
            .actions
            .tasks
            .values()
            .filter(|t| t.status == TaskStatus::InFlight && t.created_at < before)
            .cloned()
            .collect();
        out.sort_by_key(|t| t.created_at);
        Ok(out)
    }
}
