//! Postgres's transactions for the group writer (`crate::group`).
//!
//! Every begin and settle of an account locks its row until its transaction ends, so one
//! statement per transaction made every execution of a busy account wait its turn twice, each
//! wait as long as another statement and its commit. A group takes the row once and commits
//! once for many executions, on one connection per instance.
//!
//! The statements live in one function, `svc_run_items` (migration 0019), called through
//! `svc_run_group` (0027), which first locks every account the group touches, in id order,
//! when it touches two or more (0030; one account's first item locks it as before): a
//! whole group is one call, so one round trip and, being one statement, stored whole or not at
//! all. When the call fails, the group runs again an item per call inside a transaction that
//! takes the same locks first, which finds the item at fault: an item's error aborts a
//! Postgres transaction (no savepoints: each is a subtransaction, and past 64 of them in one
//! transaction every snapshot gets slower), so the group then runs again without it. Taking
//! the accounts in one order keeps two instances' groups from deadlocking on each other; a
//! deadlock or serialization failure that still comes (from other transactions) is not the
//! item's fault, so the group runs again whole, a few times.

use serde_json::Value;
use sqlx::{Connection, PgConnection, PgPool, postgres::PgRow, types::Json};

use super::{hooks, tasks};
use crate::{
    errors::undecodable,
    group::{Attempt, Done, GroupWriter, Job, Transactions},
};

/// How many times a group that met a deadlock or a serialization failure runs again before
/// the item it met it at gets the error.
const CONFLICT_RETRIES: u32 = 3;

pub(super) fn start(pool: PgPool) -> GroupWriter {
    GroupWriter::start(Writer { pool })
}

struct Writer {
    pool: PgPool,
}

impl Transactions for Writer {
    async fn attempt(&self, jobs: &[Job], todo: &[usize]) -> Attempt {
        let mut retries = 0;
        loop {
            match attempt(&self.pool, jobs, todo).await {
                Attempt::Lost { error, .. } | Attempt::Failed(error)
                    if retries < CONFLICT_RETRIES && conflict(&error) =>
                {
                    retries += 1;
                }
                other => return other,
            }
        }
    }
}

async fn attempt(pool: &PgPool, jobs: &[Job], todo: &[usize]) -> Attempt {
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(e) => return Attempt::Failed(e),
    };
    let group: Vec<&Job> = todo.iter().map(|&i| &jobs[i]).collect();
    let Some(items) = items(&group) else {
        return one_by_one(&mut conn, &group).await;
    };
    match run_items(&mut conn, &group, items).await {
        // Committed: an answer that cannot be read is that job's error, never a second run
        // of writes already stored.
        Ok(done) => Attempt::Committed(done),
        Err(error) if group.len() == 1 => Attempt::Lost { at: 0, error },
        // Nothing of the call is stored: find the item at fault.
        Err(_) => one_by_one(&mut conn, &group).await,
    }
}

/// The group in one transaction, an item per call: the first failing item loses it.
async fn one_by_one(conn: &mut PgConnection, group: &[&Job]) -> Attempt {
    let mut tx = match conn.begin().await {
        Ok(tx) => tx,
        Err(e) => return Attempt::Failed(e),
    };
    // Each job's item is built once, for the locks and for its own call.
    let built: Vec<Option<Value>> = group.iter().map(|job| item(job)).collect();
    // The same locks, in the same order, as the whole group's call takes.
    let lockable = Value::Array(built.iter().flatten().cloned().collect());
    if let Err(error) = sqlx::query("SELECT svc_lock_accounts($1)")
        .bind(Json(lockable))
        .execute(&mut *tx)
        .await
    {
        let _ = tx.rollback().await;
        return Attempt::Failed(error);
    }
    let mut done = Vec::with_capacity(group.len());
    for (at, (job, item)) in group.iter().zip(built).enumerate() {
        let result = match item {
            // Inside the transaction an unreadable answer rolls it back like any error.
            Some(item) => run_items(&mut tx, &[job], Value::Array(vec![item]))
                .await
                .and_then(|mut answer| answer.remove(0)),
            None => Err(not_an_item(job)),
        };
        match result {
            Ok(answer) => done.push(Ok(answer)),
            Err(error) => {
                // The transaction is aborted; a connection that cannot roll back is dropped
                // by the pool.
                let _ = tx.rollback().await;
                return Attempt::Lost { at, error };
            }
        }
    }
    match tx.commit().await {
        Ok(()) => Attempt::Committed(done),
        Err(e) => Attempt::Failed(e),
    }
}

/// The group as the JSON array `svc_run_items` takes; `None` when a job is not one of its
/// items.
fn items(group: &[&Job]) -> Option<Value> {
    group
        .iter()
        .map(|job| item(job))
        .collect::<Option<Vec<_>>>()
        .map(Value::Array)
}

/// The job as an item of `svc_run_items`; `None` when it is not one.
fn item(job: &Job) -> Option<Value> {
    match job {
        Job::Begin(task) if task.authority_spend.is_none() => Some(tasks::begin_item(task)),
        Job::Settle(s) => Some(tasks::settle_item(s)),
        Job::Enqueue(event, ids) => Some(hooks::event_item(event, *ids)),
        _ => None,
    }
}

/// Runs `items` (built from `group`) in one call and reads each job's answer from the rows
/// naming it. `Err`: the call failed and stored nothing; otherwise one answer per job, an
/// `Err` where its row could not be read.
async fn run_items(
    conn: &mut PgConnection,
    group: &[&Job],
    items: Value,
) -> Result<Vec<Result<Done, sqlx::Error>>, sqlx::Error> {
    // A group of one account has no lock order to keep (its first item locks the account):
    // it skips the call that gathers and locks the accounts of the others.
    let rows = if one_account(group) {
        sqlx::query("SELECT * FROM svc_run_items($1)")
            .bind(Json(items))
            .fetch_all(conn)
            .await?
    } else {
        sqlx::query("SELECT * FROM svc_run_group($1)")
            .bind(Json(items))
            .fetch_all(conn)
            .await?
    };
    let mut rows = rows.iter().peekable();
    Ok(group
        .iter()
        .enumerate()
        .map(|(n, job)| {
            let row = rows.next_if(|row| item_no(row) == Some(n));
            answer(job, row).map_err(undecodable)
        })
        .collect())
}

/// Whether every job names the same account (a settlement names it by the event it records;
/// one that records none names no account here).
fn one_account(group: &[&Job]) -> bool {
    let first = group.first().and_then(|job| account_of(job));
    first.is_some() && group.iter().all(|job| account_of(job) == first)
}

fn account_of(job: &Job) -> Option<&svc_ports::AccountId> {
    match job {
        Job::Begin(task) => Some(&task.account_id),
        Job::Settle(s) => s.event.as_ref().map(|(event, _)| &event.account_id),
        Job::Enqueue(event, _) => Some(&event.account_id),
        #[cfg(test)]
        Job::LoseTransaction => None,
    }
}

fn item_no(row: &PgRow) -> Option<usize> {
    sqlx::Row::try_get::<i32, _>(row, "item_no")
        .ok()
        .and_then(|n| usize::try_from(n).ok())
}

/// A job's answer from its row (a settle that settled nothing has none).
fn answer(job: &Job, row: Option<&PgRow>) -> Result<Done, svc_ports::StoreError> {
    let missing = || svc_ports::StoreError(anyhow::anyhow!("svc_run_items returned no row"));
    match job {
        Job::Begin(task) => tasks::begun(row.ok_or_else(missing)?, task).map(Done::Begun),
        Job::Settle(s) => row
            .map(|row| {
                let event = s.event.as_ref().map(|_| hooks::enqueued(row)).transpose()?;
                Ok((crate::rows::task(row)?, event))
            })
            .transpose()
            .map(Done::Settled),
        Job::Enqueue(..) => hooks::enqueued(row.ok_or_else(missing)?).map(Done::Enqueued),
        #[cfg(test)]
        Job::LoseTransaction => Err(missing()),
    }
}

/// The error of a job `svc_run_items` does not take.
fn not_an_item(job: &Job) -> sqlx::Error {
    match job {
        // Its refusals drop a transaction of its own (`TaskStore::begin_task` runs it there).
        Job::Begin(_) => {
            sqlx::Error::Protocol("a begin under an authority is not grouped on Postgres".into())
        }
        _ => sqlx::Error::Protocol("the transaction was lost".into()),
    }
}

/// A deadlock (40P01) or a serialization failure (40001): the transaction's bad luck, not the
/// item's.
fn conflict(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}
