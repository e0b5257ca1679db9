//! Activity and usage over time: an account's tasks, page by page (keyset pagination on
//! `(created_at, id)`, newest first), and the credits it moved per UTC day.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};

use crate::{
    ids::{ApiKeyId, TaskId},
    ledger::EntryKind,
    tasks::{TaskRecord, TaskStatus},
};

/// A page of tasks holds at most this many.
pub const MAX_TASK_PAGE: u32 = 100;
/// A usage history spans at most this many days.
pub const MAX_HISTORY_DAYS: i64 = 366;

/// Where the next page starts: strictly after this task in the order newest first, that is
/// `(created_at, id)` descending. A task inserted later sorts by its own `created_at` and id,
/// so it can never shift what a cursor already passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCursor {
    pub created_at: DateTime<Utc>,
    pub id: TaskId,
}

impl TaskCursor {
    /// The cursor that follows `task`.
    pub fn after(task: &TaskRecord) -> Self {
        Self {
            created_at: task.created_at,
            id: task.id.clone(),
        }
    }

    /// Whether `task` comes after the cursor, newest first.
    pub fn precedes(&self, task: &TaskRecord) -> bool {
        (task.created_at, task.id.as_str()) < (self.created_at, self.id.as_str())
    }
}

/// Which of an account's tasks to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskQuery {
    pub status: Option<TaskStatus>,
    /// Exactly this domain.
    pub domain: Option<String>,
    /// Begun at or after (inclusive).
    pub since: Option<DateTime<Utc>>,
    /// Begun before (exclusive).
    pub until: Option<DateTime<Utc>>,
    pub after: Option<TaskCursor>,
    /// At most this many, 1 to [`MAX_TASK_PAGE`] (a store may be asked for one more, to know
    /// whether another page follows).
    pub limit: u32,
}

impl TaskQuery {
    /// Whether `task` passes the filters and the cursor (the rule every store follows).
    pub fn matches(&self, task: &TaskRecord) -> bool {
        self.status.is_none_or(|s| task.status == s)
            && self.domain.as_ref().is_none_or(|d| &task.domain == d)
            && self.since.is_none_or(|t| task.created_at >= t)
            && self.until.is_none_or(|t| task.created_at < t)
            && self.after.as_ref().is_none_or(|c| c.precedes(task))
    }
}

/// What credits did on a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UsageKind {
    /// Captured for a completed task: its cost, on the day it settled (the `capture` entry).
    Charged,
    /// Given back for a failed task: its cost, on the day it settled (the `refund` entry).
    Refunded,
    /// Bought: the `purchase` entries.
    Bought,
    /// Given by an operator, a plan or the sandbox: the `grant` entries.
    Granted,
    /// Taken from the balance because their payment was refunded or disputed: the
    /// `clawback`, `freeze`, `release` and `forfeit` entries that took credits (a dispute lost
    /// takes what its freeze could not), as a positive number.
    TakenBack,
    /// Given back to the balance by those kinds of entries: a dispute won.
    Released,
}

impl UsageKind {
    /// The ledger kinds whose entries move credits for a payment's refund or dispute, either
    /// way: the sign of an entry's delta says whether it is [`Self::TakenBack`] or
    /// [`Self::Released`] (one step of a payment may release for one dispute and freeze for
    /// another).
    pub const PAYMENT_MOVES: [EntryKind; 4] = [
        EntryKind::Clawback,
        EntryKind::Freeze,
        EntryKind::Release,
        EntryKind::Forfeit,
    ];
}

/// Credits of one kind on one UTC day; for `Charged` and `Refunded`, of one key's tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub day: NaiveDate,
    pub kind: UsageKind,
    /// The key that ran the tasks (`Charged`, `Refunded`); `None` for the other kinds.
    pub key_id: Option<ApiKeyId>,
    /// Credits, always positive.
    pub credits: i64,
    /// How many entries (tasks, purchases, grants) add up to it.
    pub count: i64,
}

/// The UTC day `days` after 1970-01-01 (what a store's `time / 1 day` gives).
pub fn epoch_day(days: i64) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(1970, 1, 1)?.checked_add_signed(TimeDelta::try_days(days)?)
}

/// The first instant of a UTC day.
pub fn day_start(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_days_are_utc_dates() {
        assert_eq!(epoch_day(0), NaiveDate::from_ymd_opt(1970, 1, 1));
        assert_eq!(epoch_day(20_000), NaiveDate::from_ymd_opt(2024, 10, 4));
        let day = NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
        let since_epoch = day_start(day).timestamp_millis() / 86_400_000;
        assert_eq!(epoch_day(since_epoch), Some(day));
    }
}
