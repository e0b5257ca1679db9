//! Postgres's transactions for the group writer (`crate::group`).
//!
//! Every begin and settle of an account locks its row until its transaction ends, so one
//! statement per transaction made every execution of a busy account wait its turn twice, each
//! wait as long as another statement and its commit (plus the event's foreign-key check,
//! which waits on the same row). A group takes the row once and commits once for many
//! executions, on one connection per instance: the statements run one after another without
//! waiting on each other.
//!
//! An item's error aborts a Postgres transaction (no savepoints: each is a subtransaction, and
//! past 64 of them in one transaction every snapshot gets slower), so the group runs again
//! without it. Groups of two instances can lock two accounts in opposite orders: the deadlock
//! Postgres breaks is not the item's fault, so the group runs again whole, a few times.

use sqlx::{Connection, PgConnection, PgPool};

use super::{hooks, tasks};
use crate::group::{Answer, Attempt, Done, GroupWriter, Job, Transactions};

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
                Attempt::Lost { error, .. } if retries < CONFLICT_RETRIES && conflict(&error) => {
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
    if let [only] = todo {
        // One statement is atomic by itself: no `BEGIN`/`COMMIT` round trips for a group of
        // one (every item, when executions come one at a time).
        return match run_job(&mut conn, &jobs[*only]).await {
            Ok(answer) => Attempt::Committed(vec![Ok(answer)]),
            Err(error) => Attempt::Lost { at: 0, error },
        };
    }
    let mut tx = match conn.begin().await {
        Ok(tx) => tx,
        Err(e) => return Attempt::Failed(e),
    };
    let mut done = Vec::with_capacity(todo.len());
    for (at, &i) in todo.iter().enumerate() {
        match run_job(&mut tx, &jobs[i]).await {
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

async fn run_job(conn: &mut PgConnection, job: &Job) -> Answer {
    match job {
        Job::Begin(task) if task.authority_spend.is_none() => {
            tasks::begin_plain(conn, task).await.map(Done::Begun)
        }
        // Its refusals drop a transaction of its own (`TaskStore::begin_task` runs it there).
        Job::Begin(_) => Err(sqlx::Error::Protocol(
            "a begin under an authority is not grouped on Postgres".into(),
        )),
        Job::Settle(s) => tasks::settle(conn, s).await.map(Done::Settled),
        Job::Enqueue(event, ids) => hooks::enqueue(conn, event, *ids).await.map(Done::Enqueued),
        #[cfg(test)]
        Job::LoseTransaction => Err(sqlx::Error::Protocol("the transaction was lost".into())),
    }
}

/// A deadlock (40P01) or a serialization failure (40001): the transaction's bad luck, not the
/// item's.
fn conflict(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}
