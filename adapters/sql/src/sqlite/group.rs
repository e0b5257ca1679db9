//! SQLite's transactions for the group writer (`crate::group`).
//!
//! sqlx runs a SQLite connection on a thread of its own and every command is a hand-off to it
//! (two thread switches, `COMMIT` a few more), queued behind every other command on the one
//! writer. So a group runs in one `BEGIN IMMEDIATE` transaction, each item inside its own
//! `SAVEPOINT item` (opened and released by the item's own query): an execution costs the
//! writer three commands instead of nine.
//!
//! An item that fails is rolled back to its savepoint alone: the others keep their writes.
//! When SQLite loses the whole transaction (it rolls back by itself on an I/O error or a full
//! disk, so the savepoint is gone), the group runs again without the failed item.

use sqlx::{Connection, SqliteConnection, SqlitePool};

use super::{hooks, tasks};
use crate::group::{Attempt, Done, GroupWriter, Job, Transactions};

/// Starts the group writer on `pool`'s connection, taken for each group only, so other writes
/// still interleave between groups.
pub(super) fn start(pool: SqlitePool, only_connection: bool) -> GroupWriter {
    GroupWriter::start(Writer {
        pool,
        only_connection,
    })
}

/// What the writer task runs on.
struct Writer {
    pool: SqlitePool,
    /// The pool's one connection holds a private in-memory database: never replaced.
    only_connection: bool,
}

impl Transactions for Writer {
    async fn attempt(&self, jobs: &[Job], todo: &[usize]) -> Attempt {
        attempt(self, jobs, todo).await
    }
}

async fn attempt(writer: &Writer, jobs: &[Job], todo: &[usize]) -> Attempt {
    let mut conn = match writer.pool.acquire().await {
        Ok(conn) => conn,
        Err(e) => return Attempt::Failed(e),
    };
    // IMMEDIATE takes the write lock up front: no statement inside fails with SQLITE_BUSY.
    let mut tx = match conn.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(e) => return Attempt::Failed(e),
    };
    let mut done = Vec::with_capacity(todo.len());
    for (at, &i) in todo.iter().enumerate() {
        let answer = run_job(&mut tx, &jobs[i]).await;
        if answer.is_err() && undo_item(&mut tx).await.is_err() {
            // No savepoint to go back to: SQLite rolled the whole transaction back.
            let error = answer.err().expect("an error");
            if tx.rollback().await.is_err() && !writer.only_connection {
                // sqlx still counts a transaction SQLite already ended, and would refuse the
                // next BEGIN on this connection: a new one replaces it.
                conn.close_on_drop();
            }
            return Attempt::Lost { at, error };
        }
        done.push(answer);
    }
    match tx.commit().await {
        Ok(()) => Attempt::Committed(done),
        Err(e) => Attempt::Failed(e),
    }
}

/// One job on the group's connection: `Ok` leaves its savepoint released, `Err` may leave it
/// open (the group then rolls back to it).
async fn run_job(conn: &mut SqliteConnection, job: &Job) -> crate::group::Answer {
    match job {
        Job::Begin(task) if task.authority_spend.is_none() => {
            tasks::begin_plain(conn, task).await.map(Done::Begun)
        }
        Job::Begin(task) => tasks::begin_with_authority(conn, task)
            .await
            .map(Done::Begun),
        Job::Settle(s) => tasks::settle(conn, s).await.map(Done::Settled),
        Job::Enqueue(event, ids) => hooks::enqueue(conn, event, *ids).await.map(Done::Enqueued),
        #[cfg(test)]
        Job::LoseTransaction => {
            sqlx::query("ROLLBACK").execute(conn).await?;
            Err(sqlx::Error::Protocol("the transaction was lost".into()))
        }
    }
}

/// Takes back what the current item wrote; the group's transaction and the other items'
/// writes stay.
pub(super) async fn undo_item(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    sqlx::query("ROLLBACK TO item; RELEASE item")
        .execute(conn)
        .await
        .map(drop)
}
