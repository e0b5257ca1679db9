//! Execution tasks: the billing record of one action run, begun (credits held) and settled
//! (charged or refunded) each in one store transaction.

use chrono::{DateTime, Utc};

use crate::{
    authority::{AuthorityRefusal, AuthoritySpend},
    hooks::{DeliveryIds, EnqueueOutcome, HookEvent},
    ids::{AccountId, ApiKeyId, ArtifactId, LedgerEntryId, TaskId},
};

/// `Idempotency-Key` values are at most this long.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// Credits are held; the action is running (or its process died: recovery settles it).
    InFlight,
    Completed,
    Failed,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InFlight => "in_flight",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::InFlight, Self::Completed, Self::Failed]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// What `begin_task` stores.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub id: TaskId,
    pub account_id: AccountId,
    pub key_id: ApiKeyId,
    pub domain: String,
    pub action: String,
    /// Credits held now and charged on completion (0 holds nothing).
    pub cost: i64,
    pub idempotency_key: Option<String>,
    /// SHA-256 of the canonical request: the same key with another request is a conflict.
    pub fingerprint: String,
    /// The ledger entry that records the hold.
    pub hold_entry: LedgerEntryId,
    /// Money the task spends under a delegated payment authority, checked and recorded with
    /// the task (given back if it fails).
    pub authority_spend: Option<AuthoritySpend>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: TaskId,
    pub account_id: AccountId,
    pub key_id: ApiKeyId,
    pub domain: String,
    pub action: String,
    pub cost: i64,
    pub idempotency_key: Option<String>,
    pub fingerprint: String,
    pub status: TaskStatus,
    /// The answer given when it settled, replayed for the same idempotency key.
    pub response_status: Option<u16>,
    pub response_body: Option<String>,
    pub artifact_id: Option<ArtifactId>,
    /// The signed artifact, as JSON text.
    pub artifact: Option<String>,
    pub created_at: DateTime<Utc>,
    pub settled_at: Option<DateTime<Utc>>,
    /// The second, signed artifact that verified the business outcome of a payment settled
    /// as `payment_completed` (JSON text), stored by `record_verification`.
    pub verified_artifact: Option<String>,
    pub verified_at: Option<DateTime<Utc>>,
}

impl TaskRecord {
    /// The record of a task that just began: in flight, nothing settled or verified yet.
    pub fn started(task: &NewTask) -> Self {
        TaskRecord {
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
        }
    }

    /// The `status` of the settled artifact, when there is one and it names one.
    pub fn artifact_status(&self) -> Option<crate::artifact::ArtifactStatus> {
        let artifact: serde_json::Value = serde_json::from_str(self.artifact.as_deref()?).ok()?;
        serde_json::from_value(artifact.get("status")?.clone()).ok()
    }

    /// Whether `record_verification` may store a verification for it: settled completed with
    /// a `payment_completed` artifact.
    pub fn verifiable(&self) -> bool {
        self.status == TaskStatus::Completed
            && self.artifact_status() == Some(crate::artifact::ArtifactStatus::PaymentCompleted)
    }

    /// The record as `s` leaves it when it lands on this task in flight.
    pub fn settled_by(mut self, s: &Settlement) -> Self {
        self.status = if s.completed {
            TaskStatus::Completed
        } else {
            TaskStatus::Failed
        };
        self.response_status = Some(s.response_status);
        self.response_body = Some(s.response_body.clone());
        self.artifact_id = Some(s.artifact_id.clone());
        self.artifact = Some(s.artifact.clone());
        self.settled_at = Some(s.at);
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum BeginOutcome {
    /// Stored, credits held: run the action. `spendable`: the account's spendable credits
    /// right after the hold (far above the low-credits mark, no balance need be read after
    /// the charge).
    Started { task: TaskRecord, spendable: i64 },
    /// The same key and request settled before: answer with its stored response.
    Replay(TaskRecord),
    /// The same key is running now.
    InFlight(TaskRecord),
    /// The same key was used for a different request.
    Conflict(TaskRecord),
    /// Not enough spendable credits; nothing was stored.
    InsufficientCredits { spendable: i64 },
    /// The payment authority does not allow the spend; nothing was stored.
    AuthorityRefused(AuthorityRefusal),
}

impl BeginOutcome {
    /// What a task already stored under the same idempotency key means for a new request
    /// with `fingerprint`: another request (a conflict), still running, or settled (a replay).
    pub fn existing(existing: TaskRecord, fingerprint: &str) -> Self {
        if existing.fingerprint != fingerprint {
            BeginOutcome::Conflict(existing)
        } else if existing.status == TaskStatus::InFlight {
            BeginOutcome::InFlight(existing)
        } else {
            BeginOutcome::Replay(existing)
        }
    }
}

/// What `settle_task` stores with the money movement.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    pub task_id: TaskId,
    /// Completed: the hold is captured (charged). Otherwise it is released (refunded).
    pub completed: bool,
    /// Gives the task's payment-authority spend back. Only for a payment that surely did not
    /// happen (the site never got the request, or refused it outright): a timeout, a 5xx or an
    /// unreadable answer may hide a payment that went through, so its spend stays counted.
    /// MUST be false when `completed`.
    pub release_spend: bool,
    pub response_status: u16,
    pub response_body: String,
    pub artifact_id: ArtifactId,
    pub artifact: String,
    /// The ledger entry of the charge or the refund.
    pub entry: LedgerEntryId,
    /// The ledger entry that takes back, after a failed task's refund, what refunded payments
    /// claimed of its cost (`ledger::spread_owed`); written only when they claimed some.
    pub clawback_entry: LedgerEntryId,
    /// The ledger entry that freezes, after a failed task's refund (and clawback), what the
    /// account's open disputes claim of what it gave back (`billing::serve_claims`); written
    /// only when they claim some.
    pub freeze_entry: LedgerEntryId,
    pub at: DateTime<Utc>,
    /// The webhook event that tells of this settlement (`task.completed` or `task.failed`),
    /// stored with it in the same transaction as `enqueue_event` would store it, and only
    /// when this settlement is the one that lands: a task's settlement and its event are
    /// never one without the other.
    pub event: Option<(HookEvent, DeliveryIds)>,
}

/// What `record_verification` did.
#[derive(Debug, Clone, PartialEq)]
pub enum VerifyOutcome {
    /// The verification artifact is stored with the task (returned as it is now).
    Verified(TaskRecord),
    /// The task was verified before; nothing changed. It carries the stored verification.
    AlreadyVerified(TaskRecord),
    /// The task is not settled as `payment_completed` (in flight, failed, or another
    /// artifact status); nothing changed.
    NotVerifiable(TaskRecord),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SettleOutcome {
    /// This settlement landed. With the event it named: what storing that came to.
    Settled(TaskRecord, Option<EnqueueOutcome>),
    /// It was settled before (another settlement won); nothing changed.
    AlreadySettled(TaskRecord),
}
