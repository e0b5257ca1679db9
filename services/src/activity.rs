//! Activity and usage of an account: its tasks a page at a time (filters, an opaque keyset
//! cursor) and the credits it moved per UTC day, charged, refunded, bought, granted, taken
//! back and given back for its payments, with the charges and refunds of each key. Every decision is here: defaults, bounds, what a
//! cursor holds, which day a figure belongs to; faces only translate.

use std::{collections::HashMap, sync::Arc};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, NaiveDate, TimeDelta, TimeZone, Utc};
use serde_json::Value;
use svc_ports::{
    AccountId, AccountStore, ApiKeyId, Clock, KeyPrefix, LedgerStore, Signer, StoreError,
    TaskCursor, TaskId, TaskQuery, TaskRecord, TaskStatus, TaskStore, UsageKind,
    activity::{MAX_HISTORY_DAYS, MAX_TASK_PAGE, day_start},
};

/// Tasks per page unless the caller asks for another number.
pub const DEFAULT_TASK_PAGE: u32 = 20;
/// Days of usage history unless the caller names a range.
pub const DEFAULT_HISTORY_DAYS: i64 = 30;
/// A domain is a host name: at most this long.
const MAX_DOMAIN_LEN: usize = 253;

#[derive(Debug, thiserror::Error)]
pub enum ActivityError {
    /// A filter, the cursor or the range is not acceptable: the sentence says which and why.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a caller asks of `GET /api/tasks` (or its MCP tool, or the account page).
#[derive(Debug, Clone, Default)]
pub struct TaskListRequest {
    pub status: Option<TaskStatus>,
    pub domain: Option<String>,
    /// Begun at or after.
    pub since: Option<DateTime<Utc>>,
    /// Begun before.
    pub until: Option<DateTime<Utc>>,
    /// `next_cursor` of the page before.
    pub cursor: Option<String>,
    /// 1 to 100; 20 when absent.
    pub limit: Option<u32>,
}

/// A task as the activity list shows it.
#[derive(Debug, Clone)]
pub struct ActivityTask {
    pub task: TaskRecord,
    /// The listed prefix of the key that ran it (`None` if that key is gone from the store).
    pub key_prefix: Option<KeyPrefix>,
}

impl ActivityTask {
    /// Credits the task cost the account: its cost once completed, nothing otherwise.
    pub fn credits_charged(&self) -> i64 {
        match self.task.status {
            TaskStatus::Completed => self.task.cost,
            _ => 0,
        }
    }

    /// Credits held while it runs, given back when it failed.
    pub fn credits_refunded(&self) -> i64 {
        match self.task.status {
            TaskStatus::Failed => self.task.cost,
            _ => 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct TaskPage {
    pub tasks: Vec<ActivityTask>,
    /// Pass it as `cursor` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// One key's charges and refunds on a day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyUsage {
    /// The key's listed prefix; `None` if the key is gone from the store.
    pub key_prefix: Option<KeyPrefix>,
    pub charged: i64,
    pub refunded: i64,
    /// Tasks completed (charged) and failed (refunded) that cost something.
    pub completed: i64,
    pub failed: i64,
}

/// What credits did on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageDay {
    pub date: NaiveDate,
    pub charged: i64,
    pub refunded: i64,
    pub bought: i64,
    pub granted: i64,
    /// Taken back because their payment was refunded or disputed.
    pub taken_back: i64,
    /// Given back when a dispute was won.
    pub released: i64,
    /// Per key, charged first (largest first), then by prefix.
    pub by_key: Vec<KeyUsage>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageHistory {
    /// The first and the last day, both included.
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// Every day of the range, oldest first, days without usage as zeros.
    pub days: Vec<UsageDay>,
    pub charged: i64,
    pub refunded: i64,
    pub bought: i64,
    pub granted: i64,
    pub taken_back: i64,
    pub released: i64,
}

impl UsageHistory {
    /// The history of `days` (every day from `from` to `to`, oldest first), its totals their
    /// sums.
    pub fn of_days(from: NaiveDate, to: NaiveDate, days: Vec<UsageDay>) -> Self {
        let sum = |f: fn(&UsageDay) -> i64| days.iter().map(f).sum();
        Self {
            from,
            to,
            charged: sum(|d| d.charged),
            refunded: sum(|d| d.refunded),
            bought: sum(|d| d.bought),
            granted: sum(|d| d.granted),
            taken_back: sum(|d| d.taken_back),
            released: sum(|d| d.released),
            days,
        }
    }
}

/// What the account page's verify link shows: the artifact and whether its signature holds.
#[derive(Debug, Clone)]
pub struct ArtifactCheck {
    pub task: TaskRecord,
    pub artifact: Value,
    /// `Ok` when the signature verifies against the service's JWKS, else why not.
    pub verdict: Result<(), String>,
    /// The `verified` artifact of a payment, checked the same way, when there is one.
    pub verification: Option<(Value, Result<(), String>)>,
}

pub struct ActivityService {
    tasks: Arc<dyn TaskStore>,
    ledger: Arc<dyn LedgerStore>,
    accounts: Arc<dyn AccountStore>,
    signer: Arc<dyn Signer>,
    clock: Arc<dyn Clock>,
}

impl ActivityService {
    pub fn new(
        tasks: Arc<dyn TaskStore>,
        ledger: Arc<dyn LedgerStore>,
        accounts: Arc<dyn AccountStore>,
        signer: Arc<dyn Signer>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            tasks,
            ledger,
            accounts,
            signer,
            clock,
        }
    }

    /// A page of the account's tasks, newest first.
    pub async fn list_tasks(
        &self,
        account: &AccountId,
        request: TaskListRequest,
    ) -> Result<TaskPage, ActivityError> {
        let limit = request.limit.unwrap_or(DEFAULT_TASK_PAGE);
        if !(1..=MAX_TASK_PAGE).contains(&limit) {
            return Err(ActivityError::Invalid(format!(
                "limit must be between 1 and {MAX_TASK_PAGE}, not {limit}."
            )));
        }
        // No store keeps a NUL in text, and no host name has a control character.
        if let Some(d) = &request.domain
            && (d.is_empty() || d.len() > MAX_DOMAIN_LEN || d.chars().any(char::is_control))
        {
            return Err(ActivityError::Invalid(format!(
                "domain must be a host name of 1 to {MAX_DOMAIN_LEN} characters."
            )));
        }
        if let (Some(since), Some(until)) = (request.since, request.until)
            && since > until
        {
            return Err(ActivityError::Invalid(
                "since must not be later than until.".into(),
            ));
        }
        let after = request.cursor.as_deref().map(decode_cursor).transpose()?;
        // One more than asked says whether another page follows.
        let query = TaskQuery {
            status: request.status,
            domain: request.domain,
            since: request.since,
            until: request.until,
            after,
            limit: limit + 1,
        };
        let mut tasks = self.tasks.list_tasks(account, &query).await?;
        let next_cursor = if tasks.len() > limit as usize {
            tasks.truncate(limit as usize);
            tasks.last().map(|t| encode_cursor(&TaskCursor::after(t)))
        } else {
            None
        };
        let prefixes = self.key_prefixes(account).await?;
        Ok(TaskPage {
            tasks: tasks
                .into_iter()
                .map(|task| ActivityTask {
                    key_prefix: prefixes.get(&task.key_id).cloned(),
                    task,
                })
                .collect(),
            next_cursor,
        })
    }

    /// The account's credits per UTC day from `from` to `to` (both included; by default the
    /// last 30 days up to today), at most 366 days.
    pub async fn usage_history(
        &self,
        account: &AccountId,
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    ) -> Result<UsageHistory, ActivityError> {
        let today = self.clock.now().date_naive();
        let to = to.unwrap_or(today);
        let from = from.unwrap_or(to - TimeDelta::days(DEFAULT_HISTORY_DAYS - 1));
        if from > to {
            return Err(ActivityError::Invalid(
                "from must not be later than to.".into(),
            ));
        }
        let span = (to - from).num_days() + 1;
        if span > MAX_HISTORY_DAYS {
            return Err(ActivityError::Invalid(format!(
                "The range covers {span} days; at most {MAX_HISTORY_DAYS} are allowed."
            )));
        }
        let rows = self
            .ledger
            .usage_by_day(account, day_start(from), day_start(to) + TimeDelta::days(1))
            .await?;
        let prefixes = self.key_prefixes(account).await?;
        let mut days: Vec<UsageDay> = from
            .iter_days()
            .take(span as usize)
            .map(|date| UsageDay {
                date,
                charged: 0,
                refunded: 0,
                bought: 0,
                granted: 0,
                taken_back: 0,
                released: 0,
                by_key: Vec::new(),
            })
            .collect();
        for row in rows {
            let Some(day) = days.get_mut((row.day - from).num_days() as usize) else {
                continue;
            };
            match row.kind {
                UsageKind::Bought => day.bought += row.credits,
                UsageKind::Granted => day.granted += row.credits,
                UsageKind::TakenBack => day.taken_back += row.credits,
                UsageKind::Released => day.released += row.credits,
                UsageKind::Charged | UsageKind::Refunded => {
                    let usage = key_usage(day, &prefixes, row.key_id.as_ref());
                    if row.kind == UsageKind::Charged {
                        usage.charged += row.credits;
                        usage.completed += row.count;
                        day.charged += row.credits;
                    } else {
                        usage.refunded += row.credits;
                        usage.failed += row.count;
                        day.refunded += row.credits;
                    }
                }
            }
        }
        for day in &mut days {
            day.by_key.sort_by(|a, b| {
                (b.charged, b.refunded)
                    .cmp(&(a.charged, a.refunded))
                    .then_with(|| a.key_prefix.cmp(&b.key_prefix))
            });
        }
        Ok(UsageHistory::of_days(from, to, days))
    }

    /// The account's task with its artifact and whether the signature holds; `None` for an
    /// unknown id, another account's task or a task without an artifact yet.
    pub async fn check_artifact(
        &self,
        account: &AccountId,
        task_id: &str,
    ) -> Result<Option<ArtifactCheck>, ActivityError> {
        let Ok(id) = TaskId::parse(task_id) else {
            return Ok(None);
        };
        let Some(task) = self.tasks.task(&id, Some(account.clone())).await? else {
            return Ok(None);
        };
        let parse = |json: Option<&str>| json.and_then(|a| serde_json::from_str::<Value>(a).ok());
        let Some(artifact) = parse(task.artifact.as_deref()) else {
            return Ok(None);
        };
        let verification = parse(task.verified_artifact.as_deref()).map(|v| {
            let verdict = self.signer.verify(&v);
            (v, verdict)
        });
        Ok(Some(ArtifactCheck {
            verdict: self.signer.verify(&artifact),
            artifact,
            verification,
            task,
        }))
    }

    async fn key_prefixes(
        &self,
        account: &AccountId,
    ) -> Result<HashMap<ApiKeyId, KeyPrefix>, StoreError> {
        Ok(self
            .accounts
            .keys(Some(account.clone()))
            .await?
            .into_iter()
            .map(|k| (k.id, k.prefix))
            .collect())
    }
}

fn key_usage<'a>(
    day: &'a mut UsageDay,
    prefixes: &HashMap<ApiKeyId, KeyPrefix>,
    key: Option<&ApiKeyId>,
) -> &'a mut KeyUsage {
    let prefix = key.and_then(|k| prefixes.get(k)).cloned();
    let i = match day.by_key.iter().position(|u| u.key_prefix == prefix) {
        Some(i) => i,
        None => {
            day.by_key.push(KeyUsage {
                key_prefix: prefix,
                charged: 0,
                refunded: 0,
                completed: 0,
                failed: 0,
            });
            day.by_key.len() - 1
        }
    };
    &mut day.by_key[i]
}

/// The cursor as the caller sees it: base64url of `{created_at in ns}.{task id}` (nanoseconds:
/// exact for every store's precision). Opaque to callers; its form may change (an old one is
/// then refused as invalid, never misread).
fn encode_cursor(c: &TaskCursor) -> String {
    let at = c
        .created_at
        .timestamp_nanos_opt()
        .unwrap_or(c.created_at.timestamp_micros().saturating_mul(1000));
    URL_SAFE_NO_PAD.encode(format!("{at}.{}", c.id))
}

fn decode_cursor(s: &str) -> Result<TaskCursor, ActivityError> {
    let invalid = || {
        ActivityError::Invalid(
            "cursor is not one this service gave; pass next_cursor exactly as it came.".into(),
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(s).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (nanos, id) = text.split_once('.').ok_or_else(invalid)?;
    let created_at = Utc.timestamp_nanos(nanos.parse::<i64>().map_err(|_| invalid())?);
    let id = TaskId::parse(id).map_err(|_| invalid())?;
    Ok(TaskCursor { created_at, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_anything_else_is_refused() {
        let c = TaskCursor {
            created_at: Utc.timestamp_nanos(1_780_000_000_123_456_789),
            id: TaskId::from_ulid(ulid::Ulid::new()),
        };
        assert_eq!(decode_cursor(&encode_cursor(&c)).unwrap(), c);
        for bad in ["", "x", "!!!", &URL_SAFE_NO_PAD.encode("12.task_nope")] {
            assert!(
                matches!(decode_cursor(bad), Err(ActivityError::Invalid(_))),
                "{bad:?}"
            );
        }
    }
}
