//! `GET /api/tasks` and `GET /api/usage/history`: the account's tasks a page at a time and
//! its credits per day. The same types are the JSON (and the output schemas) of the MCP tools
//! `svc_list_tasks` and `svc_usage_history`.

use chrono::{DateTime, NaiveDate, Utc};
use poem_openapi::{Enum, Object};
use svc_ports::{ArtifactStatus, TaskStatus};
use svc_services::activity::{ActivityTask, KeyUsage, TaskPage, UsageDay, UsageHistory};

use crate::wire::{actions::ArtifactStatusDoc, types::NullableString};

/// Where a task stands: `in_flight` (credits held, running), `completed` (charged) or
/// `failed` (refunded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum TaskStatusName {
    InFlight,
    Completed,
    Failed,
}

impl From<TaskStatusName> for TaskStatus {
    fn from(s: TaskStatusName) -> Self {
        match s {
            TaskStatusName::InFlight => TaskStatus::InFlight,
            TaskStatusName::Completed => TaskStatus::Completed,
            TaskStatusName::Failed => TaskStatus::Failed,
        }
    }
}

impl From<TaskStatus> for TaskStatusName {
    fn from(s: TaskStatus) -> Self {
        match s {
            TaskStatus::InFlight => TaskStatusName::InFlight,
            TaskStatus::Completed => TaskStatusName::Completed,
            TaskStatus::Failed => TaskStatusName::Failed,
        }
    }
}

fn artifact_status(s: ArtifactStatus) -> ArtifactStatusDoc {
    match s {
        ArtifactStatus::Completed => ArtifactStatusDoc::Completed,
        ArtifactStatus::Failed => ArtifactStatusDoc::Failed,
        ArtifactStatus::PaymentStarted => ArtifactStatusDoc::PaymentStarted,
        ArtifactStatus::PaymentCompleted => ArtifactStatusDoc::PaymentCompleted,
        ArtifactStatus::Verified => ArtifactStatusDoc::Verified,
    }
}

/// One task of the list: what ran, by which key, how it ended and what it cost. The full
/// task with its signed artifact is at `task_url` (`GET /api/tasks/{task_id}`).
#[derive(Debug, Clone, Object)]
pub struct TaskSummary {
    pub task_id: String,
    pub status: TaskStatusName,
    pub domain: String,
    pub action: String,
    /// Listed prefix of the API key that ran it; null if that key no longer exists.
    pub key_prefix: NullableString,
    /// Credits the action costs (held while it runs).
    pub cost: i64,
    /// Credits charged: the cost once completed, else 0.
    pub credits_charged: i64,
    /// Credits given back: the cost once failed, else 0.
    pub credits_refunded: i64,
    pub created_at: DateTime<Utc>,
    /// When it settled; absent while in flight.
    #[oai(skip_serializing_if_is_none)]
    pub settled_at: Option<DateTime<Utc>>,
    /// Id of its signed artifact; null while in flight.
    pub artifact_id: NullableString,
    /// `status` of its artifact; absent while in flight.
    #[oai(skip_serializing_if_is_none)]
    pub artifact_status: Option<ArtifactStatusDoc>,
    /// Whether a payment's outcome was verified later (`POST /api/tasks/{task_id}/verify`).
    pub verified: bool,
    /// The task with its artifact.
    pub task_url: String,
}

impl TaskSummary {
    pub fn of(t: &ActivityTask, base_url: &str) -> Self {
        let task = &t.task;
        Self {
            task_id: task.id.to_string(),
            status: task.status.into(),
            domain: task.domain.clone(),
            action: task.action.clone(),
            key_prefix: NullableString(t.key_prefix.as_ref().map(|p| p.to_string())),
            cost: task.cost,
            credits_charged: t.credits_charged(),
            credits_refunded: t.credits_refunded(),
            created_at: task.created_at,
            settled_at: task.settled_at,
            artifact_id: NullableString(task.artifact_id.as_ref().map(|a| a.to_string())),
            artifact_status: task.artifact_status().map(artifact_status),
            verified: task.verified_artifact.is_some(),
            task_url: format!("{}/api/tasks/{}", base_url.trim_end_matches('/'), task.id),
        }
    }
}

/// A page of the account's tasks, newest first.
#[derive(Debug, Clone, Object)]
pub struct TaskList {
    pub tasks: Vec<TaskSummary>,
    /// Pass it as `cursor` to get the next page; null on the last page.
    pub next_cursor: NullableString,
}

impl TaskList {
    pub fn of(page: &TaskPage, base_url: &str) -> Self {
        Self {
            tasks: page
                .tasks
                .iter()
                .map(|t| TaskSummary::of(t, base_url))
                .collect(),
            next_cursor: NullableString(page.next_cursor.clone()),
        }
    }
}

/// One key's charges and refunds on a day.
#[derive(Debug, Clone, Object)]
#[oai(rename = "KeyUsage")]
pub struct KeyUsageDoc {
    /// Listed prefix of the key; null if it no longer exists.
    pub key_prefix: NullableString,
    pub charged: i64,
    pub refunded: i64,
    /// Tasks of this key completed (charged) and failed (refunded) that day.
    pub completed: u64,
    pub failed: u64,
}

/// Credits on one UTC day.
#[derive(Debug, Clone, Object)]
#[oai(rename = "UsageDay")]
pub struct UsageDayDoc {
    /// The UTC day.
    pub date: NaiveDate,
    /// Charged for actions that completed (settled that day).
    pub charged: i64,
    /// Given back for actions that failed (settled that day).
    pub refunded: i64,
    /// Bought (verified payments applied that day).
    pub bought: i64,
    /// Given free: sign-up credits, operator or sandbox grants.
    pub granted: i64,
    /// Taken from the balance because a payment was refunded or disputed (a dispute lost
    /// takes what its freeze could not).
    pub taken_back: i64,
    /// Given back to the balance when a dispute was won.
    pub released: i64,
    /// Charges and refunds per API key, largest first; empty on a day without tasks.
    pub by_key: Vec<KeyUsageDoc>,
}

/// Sums over the whole range.
#[derive(Debug, Clone, Object)]
pub struct UsageTotals {
    pub charged: i64,
    pub refunded: i64,
    pub bought: i64,
    pub granted: i64,
    pub taken_back: i64,
    pub released: i64,
}

/// The account's credits per UTC day over a range.
#[derive(Debug, Clone, Object)]
#[oai(rename = "UsageHistory")]
pub struct UsageHistoryDoc {
    /// First day (included).
    pub from: NaiveDate,
    /// Last day (included).
    pub to: NaiveDate,
    /// Every day of the range, oldest first (days without usage are zeros).
    pub days: Vec<UsageDayDoc>,
    pub totals: UsageTotals,
}

fn key_usage(k: &KeyUsage) -> KeyUsageDoc {
    KeyUsageDoc {
        key_prefix: NullableString(k.key_prefix.as_ref().map(|p| p.to_string())),
        charged: k.charged,
        refunded: k.refunded,
        completed: k.completed.max(0) as u64,
        failed: k.failed.max(0) as u64,
    }
}

fn usage_day(d: &UsageDay) -> UsageDayDoc {
    UsageDayDoc {
        date: d.date,
        charged: d.charged,
        refunded: d.refunded,
        bought: d.bought,
        granted: d.granted,
        taken_back: d.taken_back,
        released: d.released,
        by_key: d.by_key.iter().map(key_usage).collect(),
    }
}

impl From<&UsageHistory> for UsageHistoryDoc {
    fn from(h: &UsageHistory) -> Self {
        Self {
            from: h.from,
            to: h.to,
            days: h.days.iter().map(usage_day).collect(),
            totals: UsageTotals {
                charged: h.charged,
                refunded: h.refunded,
                bought: h.bought,
                granted: h.granted,
                taken_back: h.taken_back,
                released: h.released,
            },
        }
    }
}
