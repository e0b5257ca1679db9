//! Group commit for the writes every execution makes: beginning and settling its task, and
//! the webhook event its settlement records.
//!
//! sqlx runs a SQLite connection on a thread of its own and every command is a hand-off to it
//! (two thread switches, `COMMIT` a few more), queued behind every other command on the one
//! writer. So one task here takes every begin, settle and event queued at that moment and runs
//! them in one `BEGIN IMMEDIATE` transaction, each inside its own `SAVEPOINT item` (opened and
//! released by the item's own query): an execution costs the writer three commands instead of
//! nine, and one `BEGIN`/`COMMIT` is shared by the whole group.
//!
//! What callers keep:
//! - an answer is sent only after the transaction holding its writes committed (a crash
//!   mid-group loses only work no caller was told about);
//! - an item that fails is rolled back to its savepoint alone: the others keep their writes;
//! - when SQLite loses the whole transaction (it rolls back by itself on an I/O error or a
//!   full disk, so the savepoint is gone), the failed item gets its error and every other item
//!   runs again in a new transaction: none of their callers has an answer yet;
//! - when `BEGIN` or `COMMIT` fails, nothing of the group is stored and every item gets a
//!   retryable error.
//!
//! Items run in the order they were queued, so a group gives the answers the same calls made
//! one after another would.

use sqlx::{Connection, SqliteConnection, SqlitePool};
use svc_ports::{
    BeginOutcome, DeliveryIds, EnqueueOutcome, HookEvent, NewTask, Settlement, TaskRecord,
};
use tokio::sync::{mpsc, oneshot};

use super::{hooks, tasks};

/// At most this many items share a transaction: bounds how long the first waits for the last.
const MAX_GROUP: usize = 64;

pub(super) enum Job {
    Begin(NewTask),
    Settle(Settlement),
    /// A webhook event (every settled task records one) and the ids for its deliveries.
    Enqueue(HookEvent, DeliveryIds),
    /// Tests only: an item that ends the whole transaction, as SQLite does by itself on an
    /// I/O error or a full disk.
    #[cfg(test)]
    LoseTransaction,
}

/// A job's answer. `Begun(None)`: the account does not exist. `Settled(None)`: the task was
/// not in flight.
pub(super) enum Done {
    Begun(Option<BeginOutcome>),
    Settled(Option<TaskRecord>),
    Enqueued(EnqueueOutcome),
}

type Answer = Result<Done, sqlx::Error>;

struct Item {
    job: Job,
    reply: oneshot::Sender<Answer>,
}

/// The queue into the group writer. The writer task ends when the last store clone is gone.
#[derive(Clone)]
pub(super) struct GroupWriter {
    queue: mpsc::UnboundedSender<Item>,
}

impl GroupWriter {
    /// Starts the writer task on the current runtime; it takes `pool`'s connection for each
    /// group only, so other writes still interleave between groups.
    pub(super) fn start(pool: SqlitePool, only_connection: bool) -> Self {
        let (queue, items) = mpsc::unbounded_channel();
        let writer = Writer {
            pool,
            only_connection,
        };
        tokio::spawn(write_groups(writer, items));
        Self { queue }
    }

    /// Begins `task`; `None`: the account does not exist.
    pub(super) async fn begin(&self, task: &NewTask) -> Result<Option<BeginOutcome>, sqlx::Error> {
        match self.run(Job::Begin(task.clone())).await? {
            Done::Begun(outcome) => Ok(outcome),
            _ => unreachable!("a begin is answered as a begin"),
        }
    }

    /// Settles a task; `None`: it was not in flight.
    pub(super) async fn settle(&self, s: &Settlement) -> Result<Option<TaskRecord>, sqlx::Error> {
        match self.run(Job::Settle(s.clone())).await? {
            Done::Settled(task) => Ok(task),
            _ => unreachable!("a settle is answered as a settle"),
        }
    }

    /// Stores a webhook event and its deliveries.
    pub(super) async fn enqueue(
        &self,
        event: &HookEvent,
        ids: DeliveryIds,
    ) -> Result<EnqueueOutcome, sqlx::Error> {
        match self.run(Job::Enqueue(event.clone(), ids)).await? {
            Done::Enqueued(outcome) => Ok(outcome),
            _ => unreachable!("an event is answered as an event"),
        }
    }

    /// Queues `job` (before the first await, so calls queue in the order they are first
    /// polled) and waits for its committed answer.
    pub(super) async fn run(&self, job: Job) -> Answer {
        let (reply, answer) = oneshot::channel();
        // A writer that is gone (the runtime shutting down) is a store that cannot be reached.
        self.queue
            .send(Item { job, reply })
            .map_err(|_| sqlx::Error::PoolClosed)?;
        answer.await.unwrap_or(Err(sqlx::Error::PoolClosed))
    }
}

/// What the writer task runs on.
struct Writer {
    pool: SqlitePool,
    /// The pool's one connection holds a private in-memory database: never replaced.
    only_connection: bool,
}

async fn write_groups(writer: Writer, mut items: mpsc::UnboundedReceiver<Item>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while items.recv_many(&mut group, MAX_GROUP).await > 0 {
        let (jobs, replies): (Vec<Job>, Vec<_>) =
            group.drain(..).map(|item| (item.job, item.reply)).unzip();
        let answers = run_group(&writer, &jobs).await;
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A caller that went away still had its work committed; nobody to tell.
            let _ = reply.send(answer);
        }
    }
}

/// Every job's final answer, in order; the `Ok` ones are committed.
async fn run_group(writer: &Writer, jobs: &[Job]) -> Vec<Answer> {
    let mut answers: Vec<Option<Answer>> = jobs.iter().map(|_| None).collect();
    let mut todo: Vec<usize> = (0..jobs.len()).collect();
    // Each pass either ends or takes one failed job out, so this ends.
    while !todo.is_empty() {
        match attempt(writer, jobs, &todo).await {
            Attempt::Committed(done) => {
                for (&i, answer) in todo.iter().zip(done) {
                    answers[i] = Some(answer);
                }
                break;
            }
            Attempt::Lost { at, error } => {
                answers[todo[at]] = Some(Err(error));
                todo.remove(at);
            }
            Attempt::Failed(error) => {
                for &i in &todo {
                    answers[i] = Some(Err(group_failed(&error)));
                }
                break;
            }
        }
    }
    answers
        .into_iter()
        .map(|a| a.expect("every job answered"))
        .collect()
}

enum Attempt {
    /// Committed; one answer per job run (failed ones rolled back to their savepoint).
    Committed(Vec<Answer>),
    /// The `at`-th job failed and took the transaction with it.
    Lost { at: usize, error: sqlx::Error },
    /// `BEGIN` or `COMMIT` failed: nothing was stored.
    Failed(sqlx::Error),
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
async fn run_job(conn: &mut SqliteConnection, job: &Job) -> Answer {
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

/// The answer of a job whose work was lost with the group's transaction: nothing of it was
/// stored and the same call can succeed a moment later, so it is retryable (an I/O error).
fn group_failed(e: &sqlx::Error) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(format!(
        "the transaction of this write's group failed: {e}"
    )))
}
