//! What a settlement tells the account's webhooks: `task.completed` or `task.failed`, and
//! `credits.low` when this task's hold took spendable credits below the mark, and
//! `authority.exhausted` when its payment spent what the authority had left. Each is recorded
//! once per task (its `source`), so a retried settlement or a second instance adds nothing.

use serde_json::json;
use svc_ports::{AuthorityStatus, HookEventType, TaskRecord};

use super::{ActionService, Observed, PaymentContext};

/// Spendable credits below this are low.
pub const LOW_CREDITS: i64 = 10;

impl ActionService {
    pub(super) async fn settled_hooks(
        &self,
        task: &TaskRecord,
        observed: &Observed,
        payment: Option<&PaymentContext>,
    ) {
        let Some(hooks) = &self.hooks else { return };
        let account = &task.account_id;
        let (event_type, status) = if observed.completed {
            (HookEventType::TaskCompleted, "completed")
        } else {
            (HookEventType::TaskFailed, "failed")
        };
        let data = json!({
            "task_id": task.id.as_str(),
            "status": status,
            "domain": task.domain,
            "action": task.action,
            "credits_charged": if observed.completed { task.cost } else { 0 },
            "credits_refunded": if observed.completed { 0 } else { task.cost },
            "failure_class": observed.failure.as_ref().map(|(c, _)| c.as_str()),
            "artifact_id": task.artifact_id.as_ref().map(|a| a.as_str()),
            "created_at": task.created_at,
            "settled_at": task.settled_at,
        });
        hooks
            .emit(account, event_type, format!("task:{}", task.id), data)
            .await;
        if observed.completed
            && let Ok(balance) = self.ports.ledger.balance(account).await
            && balance.spendable < LOW_CREDITS
            && balance.spendable + task.cost >= LOW_CREDITS
        {
            hooks
                .emit(
                    account,
                    HookEventType::CreditsLow,
                    format!("task:{}:credits.low", task.id),
                    json!({
                        "spendable": balance.spendable,
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
