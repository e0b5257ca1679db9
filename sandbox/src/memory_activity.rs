//! In-memory activity: an account's tasks page by page and its credits per UTC day, read from
//! the same state the task and ledger operations change.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, ApiKeyId, TaskRecord, TaskStatus,
    activity::{TaskQuery, UsageKind, UsageRow},
    ledger::EntryKind,
};

use crate::memory::State;

/// What [`svc_ports::TaskStore::list_tasks`] answers.
pub(crate) fn list_tasks(s: &State, account: &AccountId, query: &TaskQuery) -> Vec<TaskRecord> {
    let mut tasks: Vec<&TaskRecord> = s
        .actions
        .tasks
        .values()
        .filter(|t| &t.account_id == account && query.matches(t))
        .collect();
    tasks.sort_by(|a, b| (b.created_at, b.id.as_str()).cmp(&(a.created_at, a.id.as_str())));
    tasks
        .into_iter()
        .take(query.limit as usize)
        .cloned()
        .collect()
}

/// What [`svc_ports::LedgerStore::usage_by_day`] answers.
pub(crate) fn usage_by_day(
    s: &State,
    account: &AccountId,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<UsageRow> {
    let within = |t: DateTime<Utc>| t >= from && t < until;
    let mut sums: HashMap<(chrono::NaiveDate, UsageKind, Option<ApiKeyId>), (i64, i64)> =
        HashMap::new();
    for t in s.actions.tasks.values() {
        let Some(settled) = t.settled_at.filter(|at| within(*at)) else {
            continue;
        };
        let kind = match t.status {
            TaskStatus::Completed => UsageKind::Charged,
            TaskStatus::Failed => UsageKind::Refunded,
            TaskStatus::InFlight => continue,
        };
        if &t.account_id != account || t.cost <= 0 {
            continue;
        }
        let sum = sums
            .entry((settled.date_naive(), kind, Some(t.key_id.clone())))
            .or_default();
        *sum = (sum.0 + t.cost, sum.1 + 1);
    }
    for e in &s.entries {
        let kind = match e.kind {
            EntryKind::Purchase => UsageKind::Bought,
            EntryKind::Grant => UsageKind::Granted,
            k if UsageKind::PAYMENT_MOVES.contains(&k) => match e.delta {
                0 => continue,
                d if d < 0 => UsageKind::TakenBack,
                _ => UsageKind::Released,
            },
            _ => continue,
        };
        if &e.account_id != account || !within(e.created_at) {
            continue;
        }
        let sum = sums
            .entry((e.created_at.date_naive(), kind, None))
            .or_default();
        let credits = match kind {
            UsageKind::TakenBack | UsageKind::Released => e.delta.abs(),
            _ => e.delta,
        };
        *sum = (sum.0 + credits, sum.1 + 1);
    }
    sums.into_iter()
        .map(|((day, kind, key_id), (credits, count))| UsageRow {
            day,
            kind,
            key_id,
            credits,
            count,
        })
        .collect()
}
