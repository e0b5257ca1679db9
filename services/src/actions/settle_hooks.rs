//! What a settlement tells the account's webhooks: `task.completed` or `task.failed` (stored
//! with the settlement itself, `settle.rs`), and
//! `credits.low` when this task's hold took spendable credits below the mark and they were
//! still below it when it was charged (as its ledger entries record them; the recovery sweep
//! records the event a dead process did not), and
//! `authority.exhausted` when it is the last settlement of a window its authority's spends
//! filled (as the stored spends and tasks record it; the sweep, too, records the event a dead
//! process did not). Each is recorded once per task (its `source`), so a retried settlement or
//! a second instance adds nothing.

use serde_json::{Value, json};
use svc_ports::{EntryKind, Exhaustion, HookEventType, LedgerEntry, TaskRecord, TaskStatus};

use super::{ActionService, Observed, PaymentContext};
use crate::hooks::SWEEP_LIMIT;

/// Spendable credits below this are low.
pub const LOW_CREDITS: i64 = 10;

/// How many of the account's newest ledger entries a settlement looks through for its capture.
const RECENT_ENTRIES: u32 = 16;

/// `task.completed` or `task.failed` with what the customer's systems need, from the settled
/// task alone (so the sweep writes the same as the settlement).
pub(super) fn task_event(task: &TaskRecord) -> (HookEventType, Value) {
    let completed = task.status == TaskStatus::Completed;
    let artifact: Value = task
        .artifact
        .as_deref()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or(Value::Null);
    let event_type = if completed {
        HookEventType::TaskCompleted
    } else {
        HookEventType::TaskFailed
    };
    let data = json!({
        "task_id": task.id.as_str(),
        "status": task.status.as_str(),
        "domain": task.domain,
        "action": task.action,
        "credits_charged": if completed { task.cost } else { 0 },
        "credits_refunded": if completed { 0 } else { task.cost },
        "failure_class": artifact.get("failure_class").cloned().unwrap_or(Value::Null),
        "artifact_id": task.artifact_id.as_ref().map(|a| a.as_str()),
        "created_at": task.created_at,
        "settled_at": task.settled_at,
    });
    (event_type, data)
}

impl ActionService {
    /// Records the task event, `credits.low` for a charge that crossed the mark and
    /// `authority.exhausted` for the last settlement of a full window, of settlements whose
    /// process died before it could (each is once per task, so a live process that records it
    /// too adds nothing). Answers how many.
    pub async fn recover_task_events(&self) -> Result<usize, svc_ports::StoreError> {
        let Some(hooks) = &self.hooks else {
            return Ok(0);
        };
        let run = hooks.sweep("task_events").await?;
        let since = run.since;
        let missing = self
            .ports
            .hooks
            .tasks_missing_events(since, SWEEP_LIMIT)
            .await?;
        for task in &missing {
            let (event_type, data) = task_event(task);
            hooks
                .emit(
                    &task.account_id,
                    event_type,
                    format!("task:{}", task.id),
                    data,
                )
                .await;
        }
        let low = self
            .ports
            .hooks
            .low_charges_missing_events(since, LOW_CREDITS, SWEEP_LIMIT)
            .await?;
        for charge in &low {
            self.credits_low(hooks, &charge.task, charge.spendable)
                .await;
        }
        let exhausted = self
            .ports
            .hooks
            .exhaustions_missing_events(since, None, SWEEP_LIMIT)
            .await?;
        for exhaustion in &exhausted {
            self.authority_exhausted(hooks, exhaustion).await;
        }
        hooks
            .end_sweep(run, &[missing.len(), low.len(), exhausted.len()])
            .await?;
        Ok(missing.len() + low.len() + exhausted.len())
    }

    /// `authority.exhausted` for the last settlement of a window its authority's spends filled
    /// (nothing remains until `window_end`): the same from the live path and the sweep.
    async fn authority_exhausted(&self, hooks: &crate::hooks::HookService, found: &Exhaustion) {
        let task = &found.task;
        let mut remaining = json!({"value": 0, "currency": found.currency.to_string()});
        if let Some(end) = found.window_end {
            remaining["window_end"] = json!(end);
        }
        hooks
            .emit(
                &task.account_id,
                HookEventType::AuthorityExhausted,
                format!("task:{}:authority.exhausted", task.id),
                json!({
                    "authority_id": found.authority_id.as_str(),
                    "task_id": task.id.as_str(),
                    "remaining": remaining,
                    "next_action": {"kind": "approve", "url": self.account_url},
                }),
            )
            .await;
    }

    /// `credits.low` for a charge that took the account below the mark, with the balance its
    /// capture left: the same from the live path and from the sweep.
    async fn credits_low(
        &self,
        hooks: &crate::hooks::HookService,
        task: &TaskRecord,
        spendable: i64,
    ) {
        hooks
            .emit(
                &task.account_id,
                HookEventType::CreditsLow,
                format!("task:{}:credits.low", task.id),
                json!({
                    "spendable": spendable,
                    "threshold": LOW_CREDITS,
                    "task_id": task.id.as_str(),
                    "next_action": {"kind": "top_up", "url": self.account_url},
                }),
            )
            .await;
    }

    pub(super) async fn settled_hooks(
        &self,
        task: &TaskRecord,
        observed: &Observed,
        payment: Option<&PaymentContext>,
        spendable: Option<i64>,
    ) {
        // The task's own event was stored with the settlement (`settle.rs`).
        let Some(hooks) = &self.hooks else { return };
        let account = &task.account_id;
        // The charge that crossed the mark is the one whose hold took the balance under it
        // (an account's holds are taken one at a time), and only while the account is still
        // under it when the task is charged (no top-up came between): as its hold and capture
        // entries record them, which the sweep reads too. Entries already past the account's
        // newest are left to the sweep.
        if observed.completed
            && spendable.is_none_or(|s| s < LOW_CREDITS && s + task.cost >= LOW_CREDITS)
            && let Ok(entries) = self.ports.ledger.entries(account, RECENT_ENTRIES).await
        {
            let find = |kind| {
                let (reference, _) = LedgerEntry::task_reference(&task.id, kind);
                entries
                    .iter()
                    .find(|e| e.reference.as_deref() == Some(reference.as_str()))
            };
            if let (Some(hold), Some(capture)) = (find(EntryKind::Hold), find(EntryKind::Capture))
                && hold.balance_after < LOW_CREDITS
                && hold.balance_after + task.cost >= LOW_CREDITS
                && capture.balance_after < LOW_CREDITS
            {
                self.credits_low(hooks, task, capture.balance_after).await;
            }
        }
        // The last settlement of a window its authority's spends filled, a failed payment
        // that kept its spend included: the same rule over the stored spends and tasks as the
        // sweep's (a retried settlement finds its event stored; two settlements that raced
        // each saw the other in flight and leave the event to the sweep).
        if payment.is_some()
            && let Some(settled_at) = task.settled_at
            && let Ok(found) = self
                .ports
                .hooks
                .exhaustions_missing_events(settled_at, Some(task.id.clone()), 1)
                .await
        {
            for exhaustion in &found {
                self.authority_exhausted(hooks, exhaustion).await;
            }
        }
    }
}
