//! Group commit for the writes every execution makes, shared by both stores: beginning and
//! settling its task (with the webhook event the settlement records), and other webhook
//! events. One task per store takes
//! every such write queued at that moment and runs them, in the order they were queued, in one
//! transaction of the store's own (`sqlite/group.rs`, `postgres/group.rs`). Many executions
//! then share one `BEGIN`/`COMMIT`, and on Postgres one lock of the account row per group
//! instead of one per statement (the row every begin and settle of an account locks).
//!
//! What callers keep:
//! - an answer is sent only after the transaction holding its writes committed (a crash
//!   mid-group loses only work no caller was told about);
//! - an item that fails gets its error and none of its writes stay; the other items keep
//!   theirs (the store either undoes the one item or runs the others again in a new
//!   transaction: none of their callers has an answer yet);
//! - when `BEGIN` or `COMMIT` fails, nothing of the group is stored and every item gets a
//!   retryable error.
//!
//! Items run in the order they were queued, so a group gives the answers the same calls made
//! one after another would.

use std::future::Future;

use svc_ports::{
    BeginOutcome, DeliveryIds, EnqueueOutcome, HookEvent, NewTask, Settlement, TaskRecord,
};
use tokio::sync::{mpsc, oneshot};

/// At most this many items share a transaction: bounds how long the first waits for the last.
const MAX_GROUP: usize = 64;

pub(crate) enum Job {
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
pub(crate) enum Done {
    Begun(Option<BeginOutcome>),
    Settled(Option<Landed>),
    Enqueued(EnqueueOutcome),
}

pub(crate) type Answer = Result<Done, sqlx::Error>;

/// A settlement that landed: the task as it left it and, when it named an event, what storing
/// that came to.
pub(crate) type Landed = (TaskRecord, Option<EnqueueOutcome>);

/// What one transaction over some of a group's jobs came to.
pub(crate) enum Attempt {
    /// Committed; one answer per job run (failed ones left nothing behind).
    Committed(Vec<Answer>),
    /// The `at`-th job run failed and took the transaction with it: nothing is stored.
    Lost { at: usize, error: sqlx::Error },
    /// `BEGIN` or `COMMIT` failed: nothing was stored.
    Failed(sqlx::Error),
}

/// A store's way of running jobs in one transaction.
pub(crate) trait Transactions: Send + Sync + 'static {
    /// Runs `jobs[i]` for every `i` in `todo`, in that order, in one transaction.
    fn attempt(&self, jobs: &[Job], todo: &[usize]) -> impl Future<Output = Attempt> + Send;
}

struct Item {
    job: Job,
    reply: oneshot::Sender<Answer>,
}

/// The queue into a group writer. The writer task ends when the last store clone is gone.
#[derive(Clone)]
pub(crate) struct GroupWriter {
    queue: mpsc::UnboundedSender<Item>,
}

impl GroupWriter {
    /// Starts the writer task on the current runtime.
    pub(crate) fn start(store: impl Transactions) -> Self {
        let (queue, items) = mpsc::unbounded_channel();
        tokio::spawn(write_groups(store, items));
        Self { queue }
    }

    /// Begins `task`; `None`: the account does not exist.
    pub(crate) async fn begin(&self, task: &NewTask) -> Result<Option<BeginOutcome>, sqlx::Error> {
        match self.run(Job::Begin(task.clone())).await? {
            Done::Begun(outcome) => Ok(outcome),
            _ => unreachable!("a begin is answered as a begin"),
        }
    }

    /// Settles a task (and stores its event); `None`: it was not in flight.
    pub(crate) async fn settle(&self, s: &Settlement) -> Result<Option<Landed>, sqlx::Error> {
        match self.run(Job::Settle(s.clone())).await? {
            Done::Settled(task) => Ok(task),
            _ => unreachable!("a settle is answered as a settle"),
        }
    }

    /// Stores a webhook event and its deliveries.
    pub(crate) async fn enqueue(
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
    pub(crate) async fn run(&self, job: Job) -> Answer {
        let (reply, answer) = oneshot::channel();
        // A writer that is gone (the runtime shutting down) is a store that cannot be reached.
        self.queue
            .send(Item { job, reply })
            .map_err(|_| sqlx::Error::PoolClosed)?;
        answer.await.unwrap_or(Err(sqlx::Error::PoolClosed))
    }
}

async fn write_groups(store: impl Transactions, mut items: mpsc::UnboundedReceiver<Item>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while items.recv_many(&mut group, MAX_GROUP).await > 0 {
        let (jobs, replies): (Vec<Job>, Vec<_>) =
            group.drain(..).map(|item| (item.job, item.reply)).unzip();
        let answers = run_group(&store, &jobs).await;
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A caller that went away still had its work committed; nobody to tell.
            let _ = reply.send(answer);
        }
    }
}

/// Every job's final answer, in order; the `Ok` ones are committed.
async fn run_group(store: &impl Transactions, jobs: &[Job]) -> Vec<Answer> {
    let mut answers: Vec<Option<Answer>> = jobs.iter().map(|_| None).collect();
    let mut todo: Vec<usize> = (0..jobs.len()).collect();
    // Each pass either ends or takes one failed job out, so this ends.
    while !todo.is_empty() {
        match store.attempt(jobs, &todo).await {
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

/// The answer of a job whose work was lost with the group's transaction: nothing of it was
/// stored and the same call can succeed a moment later, so it is retryable (an I/O error).
fn group_failed(e: &sqlx::Error) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(format!(
        "the transaction of this write's group failed: {e}"
    )))
}
