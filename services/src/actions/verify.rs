//! Verifying the business outcome of a payment after it settled: the map's confirm read, run
//! on request, and a second signed artifact when it holds.

use anyhow::Context;
use serde_json::{Value, json};
use svc_ports::{ArtifactId, ArtifactStatus, TaskId, TaskRecord, VerifyOutcome};

use crate::auth::Principal;

use super::{ActionService, ExecuteRefusal};

/// Why a verification stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum VerifyRefusal {
    #[error("no task of this account has that id")]
    NotFound,
    #[error("{0}")]
    NotVerifiable(String),
    /// The confirm action ran and its rules did not hold (or the site did not answer).
    #[error("{detail}")]
    Pending { detail: String, evidence: Value },
    /// Refused before the confirm action ran (scopes, connection).
    #[error(transparent)]
    Refused(#[from] ExecuteRefusal),
}

impl From<anyhow::Error> for VerifyRefusal {
    fn from(e: anyhow::Error) -> Self {
        Self::Refused(ExecuteRefusal::Internal(e))
    }
}

/// A task's verification: the stored `verified` artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskVerified {
    pub task_id: TaskId,
    pub artifact: Value,
    /// Whether it was stored before this call.
    pub replayed: bool,
}

fn verified_of(task: &TaskRecord) -> anyhow::Result<Option<TaskVerified>> {
    task.verified_artifact
        .as_deref()
        .map(|a| {
            Ok(TaskVerified {
                task_id: task.id.clone(),
                artifact: serde_json::from_str(a).context("stored verification is not JSON")?,
                replayed: true,
            })
        })
        .transpose()
}

impl ActionService {
    /// Verifies the business outcome of a payment whose task settled `payment_completed`: runs
    /// the payment action's `confirm` read (named, with its params, in the artifact's evidence)
    /// through the guarded transport and the map's rules, and when they hold stores a second,
    /// signed `verified` artifact with the task. No billing task, nothing charged. Idempotent:
    /// a verified task answers with its stored verification.
    pub async fn verify_task(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<TaskVerified, VerifyRefusal> {
        let task = self
            .task(principal, id)
            .await?
            .ok_or(VerifyRefusal::NotFound)?;
        if let Some(stored) = verified_of(&task)? {
            return Ok(stored);
        }
        if !task.verifiable() {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "task {} is {} with a {} artifact; only a payment settled payment_completed can be verified",
                task.id,
                task.status.as_str(),
                task.artifact_status().map_or("missing", |s| s.as_str())
            )));
        }
        let original: Value = serde_json::from_str(task.artifact.as_deref().unwrap_or("null"))
            .context("stored artifact is not JSON")?;
        let confirm = &original["evidence"]["confirm"];
        let (Some(confirm_action), Some(params)) =
            (confirm["action"].as_str(), confirm["params"].as_object())
        else {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "`{}` declares no confirm action, so the outcome of this payment cannot be checked here",
                task.action
            )));
        };
        let map = match self.published(&task.domain).await {
            Ok(m) => m,
            Err(ExecuteRefusal::UnknownDomain(d)) => {
                return Err(VerifyRefusal::NotVerifiable(format!(
                    "no map is published for `{d}` any more"
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let Some(action) = map.document.action(confirm_action).cloned() else {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "the published map of `{}` has no action `{confirm_action}` any more",
                task.domain
            )));
        };
        // Only a read may confirm: after a republish the name could be something else.
        if action.consequential
            || !matches!(
                action.family,
                svc_ports::ActionFamily::Read | svc_ports::ActionFamily::Search
            )
        {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "`{confirm_action}` is not a read in the published map any more, so it cannot confirm a payment"
            )));
        }
        // Whole numbers its schema types as integers are sent as integers, as an execution's.
        let mut params_value = Value::Object(params.clone());
        svc_ports::actions::write_integers_as_integers(&action.params_schema, &mut params_value);
        let Value::Object(params) = &params_value else {
            unreachable!("an object is rewritten into an object")
        };
        if let Some(e) = self
            .validator(&map, &action, "params")?
            .iter_errors(&params_value)
            .next()
        {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "the params of `{confirm_action}` no longer fit its schema: {e}"
            )));
        }
        if let Some(why) = super::request::path_refusal(&action, params) {
            return Err(VerifyRefusal::NotVerifiable(format!(
                "the params of `{confirm_action}` cannot fill its path: {why}"
            )));
        }
        let missing = action.missing_scopes(&principal.key.scopes);
        if !missing.is_empty() {
            return Err(ExecuteRefusal::MissingScopes {
                consequential: false,
                missing,
            }
            .into());
        }
        let credential = self
            .credential(principal, &action, &map.document.base_url)
            .await?;
        let observed = self.run(&map, &action, params, credential.as_ref()).await;
        let confirm_evidence = json!({
            "action": action.name,
            "params": params,
            "url": observed.url,
            "result": observed.result,
            "observed": observed.evidence,
        });
        if let Some((class, detail)) = &observed.failure {
            tracing::info!(task_id = %task.id, class = class.as_str(), "payment outcome not confirmed");
            return Err(VerifyRefusal::Pending {
                detail: format!(
                    "`{}` did not confirm the payment's outcome ({}: {detail}); confirm evidence: {}",
                    action.name,
                    class.as_str(),
                    confirm_evidence
                ),
                evidence: confirm_evidence,
            });
        }
        let mut evidence = json!({
            "verifies_artifact_id": original["artifact_id"],
            "confirm": confirm_evidence,
        });
        if let Some(payment) = original["evidence"].get("payment") {
            evidence["payment"] = payment.clone();
        }
        let artifact_id = ArtifactId::from_ulid(self.ports.entropy.ulid());
        let at = self.now();
        let artifact = self.sign_artifact(
            &artifact_id,
            &task,
            &action.name,
            &observed.url,
            at,
            ArtifactStatus::Verified,
            evidence,
            None,
        )?;
        let artifact_json = serde_json::to_value(&artifact).context("serialising artifact")?;
        let outcome = self
            .ports
            .tasks
            .record_verification(&task.id, &artifact_id, &artifact_json.to_string(), at)
            .await
            .map_err(|e| anyhow::Error::new(e).context("recording verification"))?;
        match outcome {
            VerifyOutcome::Verified(t) => {
                tracing::info!(task_id = %t.id, "payment outcome verified");
                Ok(TaskVerified {
                    task_id: t.id,
                    artifact: artifact_json,
                    replayed: false,
                })
            }
            // A concurrent verification landed first: it stands.
            VerifyOutcome::AlreadyVerified(t) => {
                verified_of(&t)?.ok_or_else(|| anyhow::anyhow!("verification vanished").into())
            }
            VerifyOutcome::NotVerifiable(t) => Err(VerifyRefusal::NotVerifiable(format!(
                "task {} cannot be verified",
                t.id
            ))),
        }
    }
}
