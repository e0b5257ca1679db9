//! What a settlement tells the account's webhooks: `task.completed` or `task.failed`, and
//! `credits.low` when this task's hold took spendable credits below the mark, and
//! `authority.exhausted` when its payment spent what the authority had left. Each is recorded
//! once per task (its `source`), so a retried settlement or a second instance adds nothing.

use chrono::Duration;
use serde_json::{Value, json};
use svc_ports::{AuthorityStatus, HookEventType, TaskRecord, TaskStatus};

use super::{ActionService, Observed, PaymentContext};

/// Spendable credits below this are low.
pub const LOW_CREDITS: i64 = 10;

use crate::hooks::SWEEP_WINDOW_MINUTES;

/// `task.completed` or `task.failed` with what the customer's systems need, from the settled
/// task alone (so the sweep writes the same as the settlement).
fn task_event(task: &TaskRecord) -> (HookEventType, Value) {
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
    /// Records the task event of settlements whose process died before it could (the event is
    /// once per task, so a live process that records it too adds nothing). Answers how many.
    pub async fn recover_task_events(&self) -> Result<usize, svc_ports::StoreError> {
        let Some(hooks) = &self.hooks else {
            return Ok(0);
        };
        let since = self.now() - Duration::minutes(SWEEP_WINDOW_MINUTES);
        let missing = self.ports.hooks.tasks_missing_events(since, 100).await?;
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
        Ok(missing.len())
    }

    pub(super) async fn settled_hooks(
        &self,
        task: &TaskRecord,
        observed: &Observed,
        payment: Option<&PaymentContext>,
        spendable: Option<i64>,
    ) {
        let Some(hooks) = &self.hooks else { return };
        let account = &task.account_id;
        let (event_type, data) = task_event(task);
        hooks
            .emit(account, event_type, format!("task:{}", task.id), data)
            .await;
        // The hold is what lowered spendable credits (the capture leaves them), and begins
        // are serialised per account: exactly one task's hold crosses the mark.
        if observed.completed
            && let Some(spendable) = spendable
            && spendable < LOW_CREDITS
            && spendable + task.cost >= LOW_CREDITS
        {
            hooks
                .emit(
                    account,
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
        if let Some(p) = payment
            && observed.completed
            && let Ok(Some((authority, usage))) = self
                .ports
                .authorities
                .authority(&p.spend.authority_id, self.now())
                .await
            && usage.status == AuthorityStatus::Exhausted
        {
            hooks
                .emit(
                    account,
                    HookEventType::AuthorityExhausted,
                    format!("task:{}:authority.exhausted", task.id),
                    json!({
                        "authority_id": p.spend.authority_id.as_str(),
                        "task_id": task.id.as_str(),
                        "remaining": {"value": usage.remaining, "currency": authority.currency.to_string()},
                        "next_action": {"kind": "approve", "url": self.account_url},
                    }),
                )
                .await;
        }
    }
}
