//! Settling a task (charge when it completed, refund when it failed, with a signed artifact)
//! and recovering tasks a dead process left unsettled.

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use svc_ports::{
    ArtifactId, ArtifactStatus, FailureClass, LedgerEntryId, SettleOutcome, Settlement, TaskRecord,
};

use super::{
    ActionService, ExecuteRefusal, Executed, Observed, PaymentContext, replay,
    settle_hooks::task_event,
};

/// Tasks still in flight this long after they began are taken to be orphaned by a dead
/// process: longer than any action may run (the transport gives up at 15 s).
pub const RECOVER_AFTER_SECONDS: i64 = 60;

impl ActionService {
    /// Signs the artifact and settles the task with it: charge or refund, in one transaction.
    /// `spendable`: the account's spendable credits right after this task's hold, when known.
    /// Answers the execution and whether this settlement landed (not one settled first).
    pub(super) async fn settle(
        &self,
        task: &TaskRecord,
        observed: Observed,
        payment: Option<&PaymentContext>,
        spendable: Option<i64>,
    ) -> Result<(Executed, bool), ExecuteRefusal> {
        let artifact_id = ArtifactId::from_ulid(self.ports.entropy.ulid());
        let at = self.now();
        let mut evidence = observed.evidence.clone();
        if let Some(p) = payment {
            payment_evidence(&mut evidence, p, &observed, at);
        }
        let (status, failure_class) = if observed.completed {
            // A payment whose outcome the map's rules confirmed is verified, unless the human
            // asked for a separate verification of the business outcome.
            let status = match payment {
                None => ArtifactStatus::Completed,
                Some(p) if p.verification_required => ArtifactStatus::PaymentCompleted,
                Some(_) => ArtifactStatus::Verified,
            };
            (status, None)
        } else {
            (
                ArtifactStatus::Failed,
                observed
                    .failure
                    .as_ref()
                    .map(|(c, _)| c.as_str().to_owned()),
            )
        };
        let artifact = self.sign_artifact(
            &artifact_id,
            task,
            &task.action,
            &observed.url,
            at,
            status,
            evidence,
            failure_class,
        )?;
        let artifact_json = serde_json::to_value(&artifact).context("serialising artifact")?;
        let (http_status, body) = match &observed.failure {
            None => (
                200,
                json!({
                    "task_id": task.id.as_str(),
                    "status": "completed",
                    "domain": task.domain,
                    "action": task.action,
                    "result": observed.result,
                    "credits_charged": task.cost,
                    "artifact": artifact_json,
                }),
            ),
            Some((class, detail)) => {
                // A settled failure is the target's doing (502) or its silence (504), whatever
                // the class (a redirect to a refused URL, an answer we could not store): the
                // HTTP status and the problem's `status` agree, on replays too.
                let status = if *class == FailureClass::UpstreamTimeout {
                    504
                } else {
                    502
                };
                (
                    status,
                    failure_body(*class, detail, task, &artifact_json, status),
                )
            }
        };
        let mut settlement = Settlement {
            task_id: task.id.clone(),
            completed: observed.completed,
            release_spend: !observed.completed && observed.nothing_happened,
            response_status: http_status,
            response_body: body.to_string(),
            artifact_id,
            artifact: artifact_json.to_string(),
            entry: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            clawback_entry: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            freeze_entry: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            at,
            event: None,
        };
        // The task's event is stored with the settlement that lands, from the task as that
        // settlement leaves it: never one without the other, and no write of its own.
        if let Some(hooks) = &self.hooks {
            let (event_type, data) = task_event(&task.clone().settled_by(&settlement));
            settlement.event = Some(hooks.event(
                &task.account_id,
                event_type,
                format!("task:{}", task.id),
                data,
            ));
        }
        // The action already ran: a settlement lost to a dropped database connection is tried
        // again (the pool connects anew, waiting out a restart up to its acquire timeout). A
        // settlement lands once, so a retry after an unseen commit gets `AlreadySettled`.
        let mut retries = 0;
        let settled = loop {
            match self.ports.tasks.settle_task(&settlement).await {
                Err(e) if retries < 2 && svc_ports::store::is_unreachable(&e) => {
                    retries += 1;
                    tracing::warn!(task_id = %task.id, error = %e, "settling again: the store was unreachable");
                }
                other => break other,
            }
        };
        match settled {
            Ok(SettleOutcome::Settled(t, event)) => {
                tracing::info!(task_id = %t.id, status = t.status.as_str(), "task settled");
                if let (Some(hooks), Some((sent, _)), Some(outcome)) =
                    (&self.hooks, &settlement.event, &event)
                {
                    hooks.recorded(sent, outcome);
                }
                self.settled_hooks(&t, &observed, payment, spendable).await;
                if observed.completed {
                    crate::metrics::execution("completed", task.cost, 0);
                } else if matches!(observed.failure, Some((FailureClass::Interrupted, _))) {
                    crate::metrics::execution("recovered", 0, task.cost);
                } else {
                    crate::metrics::execution("failed", 0, task.cost);
                }
                Ok((
                    Executed {
                        task_id: t.id,
                        completed: observed.completed,
                        status: http_status,
                        body,
                        replayed: false,
                    },
                    true,
                ))
            }
            // Recovery settled it first (this process was too slow): that settlement stands.
            Ok(SettleOutcome::AlreadySettled(t)) => replay(&t).map(|mut e| {
                e.replayed = false;
                (e, false)
            }),
            Err(e) => Err(anyhow::Error::new(e).context("settling task").into()),
        }
    }

    /// Settles, as failed and refunded, tasks whose process died between begin and settle.
    pub async fn recover(&self, older_than_seconds: i64) -> anyhow::Result<usize> {
        let cutoff = self.now() - chrono::Duration::seconds(older_than_seconds);
        let orphans = self.ports.tasks.unsettled_tasks(cutoff).await?;
        let mut settled = 0;
        for task in orphans {
            // A payment under an authority may have gone through before the process died: its
            // spend stays counted, and the artifact says so, as a live settlement's does.
            let spend = match self.ports.authorities.task_spend(&task.id).await {
                Ok(spend) => spend,
                Err(e) => {
                    tracing::error!(task_id = %task.id, error = %e, "recovering task failed: its authority spend could not be read");
                    continue;
                }
            };
            let mut evidence = json!({"recovered": true, "began_at": task.created_at});
            if let Some(spend) = spend {
                evidence["payment"] = spend_evidence(
                    &spend.authority_id,
                    spend.amount,
                    &spend.currency,
                    &spend.scope,
                    false,
                );
            }
            let observed = Observed {
                completed: false,
                // The process died mid-action: whatever it sent may have been done.
                nothing_happened: false,
                failure: Some((
                    FailureClass::Interrupted,
                    "the service stopped while this action ran; its outcome is unknown, so it was refunded".into(),
                )),
                url: String::new(),
                evidence,
                result: Value::Null,
            };
            // Credits are refunded; an authority's spend is kept (`nothing_happened` is false).
            // Another instance recovering the same orphan may settle it first: only the
            // settlement that landed is counted and told.
            match self.settle(&task, observed, None, None).await {
                Ok((_, true)) => {
                    tracing::warn!(task_id = %task.id, "orphaned task settled as failed and refunded");
                    settled += 1;
                }
                Ok((_, false)) => {}
                Err(e) => tracing::error!(task_id = %task.id, error = %e, "recovering task failed"),
            }
        }
        Ok(settled)
    }
}

/// The problem body of a failed, settled execution: the catalog fields plus the task and its
/// artifact.
fn failure_body(
    class: FailureClass,
    detail: &str,
    task: &TaskRecord,
    artifact: &Value,
    status: u16,
) -> Value {
    json!({
        "type": format!("/problems/{}", class.as_str()),
        "title": class.title(),
        "status": status,
        "detail": detail,
        "failure_class": class.as_str(),
        "retryable": class.retryable(),
        "hint": class.hint(),
        "task_id": task.id.as_str(),
        "credits_refunded": task.cost,
        "artifact": artifact,
    })
}

/// The `payment` block of an artifact's evidence: the authority's spend, and whether it was
/// given back.
fn spend_evidence(
    authority: &svc_ports::AuthorityId,
    amount: i64,
    currency: &svc_ports::billing::Currency,
    scope: &str,
    released: bool,
) -> Value {
    json!({
        "authority_id": authority.as_str(),
        "amount": amount,
        "currency": currency.as_str(),
        "scope": scope,
        "spend": if released { "released" } else { "spent" },
    })
}

/// What a payment artifact's evidence says about the money: always the spend (and whether it
/// was given back); on completion, when the authority asks for one, a receipt with the site's
/// payment id.
fn payment_evidence(
    evidence: &mut Value,
    p: &PaymentContext,
    observed: &Observed,
    at: DateTime<Utc>,
) {
    let Some(map) = evidence.as_object_mut() else {
        return;
    };
    map.insert(
        "payment".into(),
        spend_evidence(
            &p.spend.authority_id,
            p.spend.amount,
            &p.spend.currency,
            &p.spend.scope,
            !observed.completed && observed.nothing_happened,
        ),
    );
    if observed.completed
        && p.verification_required
        && let Some((action, params)) = &p.confirm
    {
        map.insert(
            "confirm".into(),
            json!({"action": action, "params": params}),
        );
    }
    if observed.completed && p.receipt_required {
        let payment_id = p
            .reference
            .as_deref()
            .and_then(|r| observed.result.get(r))
            .cloned()
            .unwrap_or(Value::Null);
        map.insert(
            "receipt".into(),
            json!({
                "authority_id": p.spend.authority_id.as_str(),
                "amount": p.spend.amount,
                "currency": p.spend.currency.as_str(),
                "payment_id": payment_id,
                "paid_at": at,
            }),
        );
    }
}
