//! The group writer against the same calls made one at a time: many begins, settles and
//! webhook events queued at once (one account and one idempotency key shared, too little
//! credit for some, an unknown account, an authority's limit, an event's source recorded
//! twice (also by a settlement that records its event), deliveries to a deleted or another account's endpoint, items forced to fail, a
//! transaction lost mid-group) get
//! exactly the answers, books and tasks that a sequential run of the same calls gets.
//!
//! The grouped run queues every call in order on a single-threaded runtime (each future polled
//! once, yielding to the writer at random points, so groups of every size form); the writer
//! runs items in queue order, which is the order of the sequential run.
//!
//! Both stores run it. Postgres begins under an authority in a transaction of their own, not
//! in a group, so its runs have no spends.

use chrono::{DateTime, TimeZone, Utc};
use futures_util::{future::join_all, poll};
use proptest::{
    prelude::*,
    test_runner::{TestCaseError, TestRunner},
};
use svc_ports::{
    Account, AccountId, AccountStore, AmountLimit, ApiKeyId, ArtifactId, AuthorityId,
    AuthorityInterval, AuthoritySpend, AuthorityStore, CreditAmount, DeliveryIds, Email,
    Environment, HookEvent, HookEventType, HookStore, LedgerEntryId, LedgerStore, NewTask,
    PaymentAuthority, Plan, Principal, SealedSecret, Settlement, TaskId, TaskStatus, TaskStore,
    WebhookEndpoint, WebhookEndpointId, WebhookEventId, billing::Currency, ledger::Grant,
};
use ulid::Ulid;

use crate::{
    PostgresStore, SqliteStore,
    group::{Done, GroupWriter, Job},
};

/// A store with a group writer and every port the books are read through.
trait Grouped: AccountStore + LedgerStore + TaskStore + AuthorityStore + HookStore {
    fn writer(&self) -> &GroupWriter;
}

impl Grouped for SqliteStore {
    fn writer(&self) -> &GroupWriter {
        &self.group
    }
}

impl Grouped for PostgresStore {
    fn writer(&self) -> &GroupWriter {
        &self.group
    }
}

fn t0() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_780_000_000_123).unwrap()
}

/// The same ids in both runs: `kind` tells what they name, `n` which one.
fn ulid(kind: u64, n: usize) -> Ulid {
    Ulid::from_parts(kind, n as u128)
}

fn account(n: usize) -> AccountId {
    AccountId::from_ulid(ulid(1, n))
}

fn authority() -> AuthorityId {
    AuthorityId::from_ulid(ulid(2, 0))
}

/// Account 1's funding entry: an id a forced failure reuses (the ledger refuses it).
fn taken_entry() -> LedgerEntryId {
    LedgerEntryId::from_ulid(ulid(3, 1))
}

/// Endpoints 0 and 1 are account 0's (1 deleted), 2 is account 1's, all for `task.completed`;
/// 3 is account 0's for `credits.added` only.
fn endpoint(n: usize) -> WebhookEndpointId {
    WebhookEndpointId::from_ulid(ulid(9, n))
}

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Begin {
        /// 0 and 1 exist; 2 does not.
        account: usize,
        cost: i64,
        key: Option<u8>,
        params: u8,
        /// Under account 0's authority (4 a day), spending this much.
        spend: Option<i64>,
        /// Its hold reuses a taken ledger entry id: the item fails after writing the task.
        bad_entry: bool,
    },
    Settle {
        /// Which begin (of all in the sequence) it settles.
        nth: usize,
        completed: bool,
        bad_entry: bool,
        /// Records its event, with this source (shared with `Event`'s sources).
        event: Option<u8>,
    },
    /// A webhook event.
    Event {
        /// 0 and 1 exist; 2 does not.
        account: usize,
        /// Sources repeat: the second event of a source is a duplicate.
        source: u8,
    },
    /// An item that ends the whole transaction, as SQLite does on an I/O error.
    Lose,
}

fn op(spends: bool) -> impl Strategy<Value = Op> {
    let begin = (
        prop_oneof![6 => Just(0usize), 2 => Just(1), 1 => Just(2)],
        0..4i64,
        proptest::option::of(0..3u8),
        0..2u8,
        proptest::option::weighted(0.3, 1..3i64),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            move |(account, cost, key, params, spend, bad_entry)| Op::Begin {
                account,
                cost,
                key,
                params,
                spend: spend.filter(|_| spends),
                bad_entry,
            },
        );
    let settle = (
        0..40usize,
        any::<bool>(),
        proptest::bool::weighted(0.1),
        proptest::option::weighted(0.7, 0..3u8),
    )
        .prop_map(|(nth, completed, bad_entry, event)| Op::Settle {
            nth,
            completed,
            bad_entry,
            event,
        });
    let event = (
        prop_oneof![4 => Just(0usize), 2 => Just(1), 1 => Just(2)],
        0..3u8,
    )
        .prop_map(|(account, source)| Op::Event { account, source });
    prop_oneof![6 => begin, 4 => settle, 3 => event, 1 => Just(Op::Lose)]
}

fn job(ops: &[(Op, bool)], i: usize) -> Job {
    let begins: Vec<usize> = (0..ops.len())
        .filter(|&j| matches!(ops[j].0, Op::Begin { .. }))
        .collect();
    match &ops[i].0 {
        Op::Begin {
            account: a,
            cost,
            key,
            params,
            spend,
            bad_entry,
        } => Job::Begin(NewTask {
            id: TaskId::from_ulid(ulid(4, i)),
            account_id: account(*a),
            key_id: ApiKeyId::from_ulid(ulid(5, 0)),
            domain: "shop.example.com".into(),
            action: "place_order".into(),
            cost: *cost,
            idempotency_key: key.map(|k| format!("k{k}")),
            fingerprint: format!("p{params}"),
            hold_entry: if *bad_entry {
                taken_entry()
            } else {
                LedgerEntryId::from_ulid(ulid(6, i))
            },
            authority_spend: spend.map(|amount| AuthoritySpend {
                authority_id: authority(),
                amount,
                currency: usd(),
                scope: "order".into(),
            }),
            created_at: t0(),
        }),
        Op::Settle {
            nth,
            completed,
            bad_entry,
            event,
        } => {
            // With no begin at all, a task that does not exist.
            let begin = begins.get(nth % begins.len().max(1)).copied();
            let owner = match begin.map(|j| &ops[j].0) {
                Some(Op::Begin { account: a, .. }) => *a,
                _ => 0,
            };
            Job::Settle(settlement(i, begin, owner, *completed, *bad_entry, *event))
        }
        Op::Event { account: a, source } => {
            Job::Enqueue(hook_event(i, *a, *source), delivery_ids(i))
        }
        Op::Lose => Job::LoseTransaction,
    }
}

/// The `i`-th call's event, of account `a`.
fn hook_event(i: usize, a: usize, source: u8) -> HookEvent {
    HookEvent {
        id: WebhookEventId::from_ulid(ulid(10, i)),
        account_id: account(a),
        event_type: HookEventType::TaskCompleted,
        source: format!("task:{source}"),
        payload: format!("{{\"n\": {i}}}"),
        created_at: t0(),
    }
}

fn delivery_ids(i: usize) -> DeliveryIds {
    DeliveryIds::new(ulid(11, i))
}

/// The `i`-th call's settlement of the task begun by call `begin`, of account `owner`,
/// recording its event with `source` when given.
fn settlement(
    i: usize,
    begin: Option<usize>,
    owner: usize,
    completed: bool,
    bad_entry: bool,
    source: Option<u8>,
) -> Settlement {
    Settlement {
        task_id: TaskId::from_ulid(ulid(4, begin.unwrap_or(999))),
        completed,
        release_spend: !completed,
        response_status: if completed { 200 } else { 502 },
        response_body: format!("{{\"completed\": {completed}}}"),
        artifact_id: ArtifactId::from_ulid(ulid(7, i)),
        artifact: "{\"signed\": true}".into(),
        entry: if bad_entry {
            taken_entry()
        } else {
            LedgerEntryId::from_ulid(ulid(8, i))
        },
        clawback_entry: LedgerEntryId::from_ulid(ulid(9, i)),
        freeze_entry: LedgerEntryId::from_ulid(ulid(10, i)),
        at: t0(),
        event: source.map(|source| (hook_event(i, owner, source), delivery_ids(i))),
    }
}

/// An answer as text: the stores' errors and records compare by their full description.
fn show(answer: Result<Done, sqlx::Error>) -> String {
    match answer {
        Ok(Done::Begun(outcome)) => format!("begun {outcome:?}"),
        Ok(Done::Settled(task)) => format!("settled {task:?}"),
        Ok(Done::Enqueued(outcome)) => format!("enqueued {outcome:?}"),
        Err(e) => format!("error {e}"),
    }
}

async fn sqlite(path: std::path::PathBuf) -> SqliteStore {
    let url = format!("sqlite://{}", path.display());
    SqliteStore::open(&url).await.unwrap()
}

/// A fresh database on the test server (`SVC_TEST_POSTGRES_URL`).
async fn postgres(name: String) -> PostgresStore {
    PostgresStore::open(&postgres_database(name).await, 4)
        .await
        .unwrap()
}

/// A fresh, empty database on the test server; its URL.
async fn postgres_database(name: String) -> String {
    use sqlx::{Connection, Executor};
    let server = std::env::var("SVC_TEST_POSTGRES_URL").expect(
        "SVC_TEST_POSTGRES_URL: a Postgres server for the store tests (scripts/test.sh starts one)",
    );
    let name = format!("svc_group_{}_{name}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&server).await.unwrap();
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.execute(sqlx::AssertSqlSafe(statement)).await.unwrap();
    }
    format!("{}/{name}", server.rsplit_once('/').unwrap().0)
}

/// Accounts 0 (`credits`) and 1 (3 credits), and account 0's authority, in a fresh `store`.
async fn seed<S: Grouped>(store: S, credits: i64) -> S {
    for (n, credits) in [(0, credits), (1, 3)] {
        store
            .create_account(&Account {
                id: account(n),
                email: Email::parse(&format!("a{n}@example.com")).unwrap(),
                plan: Plan::Free,
                environment: Environment::Live,
                created_at: t0(),
            })
            .await
            .unwrap();
        if credits == 0 {
            continue;
        }
        store
            .grant(&Grant {
                id: LedgerEntryId::from_ulid(ulid(3, n)),
                account_id: account(n),
                amount: CreditAmount::new(credits).unwrap(),
                reference: None,
                memo: "fund".into(),
                at: t0(),
            })
            .await
            .unwrap();
    }
    store
        .insert_authority(&PaymentAuthority {
            authority_id: authority(),
            principal: Principal {
                kind: "agent".into(),
                id: "agent-7".into(),
                agent_provider: "example-agents".into(),
            },
            scope: vec!["order".into()],
            amount_limit: AmountLimit::new(4, AuthorityInterval::Day).unwrap(),
            currency: usd(),
            expires_at: t0() + chrono::Duration::days(30),
            revocation_url: "https://svc.example/authorities/revoke".into(),
            receipt_required: false,
            verification_required: false,
            created_at: t0(),
            account_id: account(0),
            created_by: "human@example.com".into(),
            revoked_at: None,
        })
        .await
        .unwrap();
    for (n, owner, events) in [
        (0, 0, HookEventType::TaskCompleted),
        (1, 0, HookEventType::TaskCompleted),
        (2, 1, HookEventType::TaskCompleted),
        (3, 0, HookEventType::CreditsAdded),
    ] {
        store
            .insert_endpoint(&WebhookEndpoint {
                id: endpoint(n),
                account_id: account(owner),
                url: format!("https://hooks.example/{n}"),
                description: String::new(),
                events: vec![events],
                secret: SealedSecret::new(vec![n as u8]),
                created_at: t0(),
            })
            .await
            .unwrap();
    }
    store
        .delete_endpoint(&account(0), &endpoint(1), t0())
        .await
        .unwrap();
    store
}

/// Everything the calls could have written, as text.
async fn books(store: &impl Grouped, ops: &[(Op, bool)]) -> Vec<String> {
    let mut books = Vec::new();
    for n in 0..2 {
        books.push(format!("{:?}", store.balance(&account(n)).await.unwrap()));
        books.push(format!(
            "{:?}",
            store.entries(&account(n), 1000).await.unwrap()
        ));
    }
    for i in 0..ops.len() {
        let task = store
            .task(&TaskId::from_ulid(ulid(4, i)), None)
            .await
            .unwrap();
        books.push(format!("{task:?}"));
    }
    books.push(format!(
        "{:?}",
        store.authority_spends(&authority()).await.unwrap()
    ));
    for n in 0..2 {
        let events = store.events_after(&account(n), None, 1000).await.unwrap();
        books.push(format!("{events:?}"));
        let deliveries = store.deliveries(&account(n), 1000).await.unwrap();
        books.push(format!("{deliveries:?}"));
    }
    books
}

async fn stored_events(store: &impl Grouped) -> Vec<HookEvent> {
    let mut events = Vec::new();
    for n in 0..2 {
        events.extend(store.events_after(&account(n), None, 1000).await.unwrap());
    }
    events
}

async fn stored_deliveries(store: &impl Grouped) -> Vec<svc_ports::DeliveryRecord> {
    let mut deliveries = Vec::new();
    for n in 0..2 {
        deliveries.extend(store.deliveries(&account(n), 1000).await.unwrap());
    }
    deliveries
}

/// Every item answered with an error wrote nothing; an event is stored when its answer says
/// so, with deliveries to its account's live endpoints only; spendable is the sum of the entries and
/// held the cost of the tasks in flight.
async fn books_hold(
    store: &impl Grouped,
    ops: &[(Op, bool)],
    answers: &[String],
) -> Result<(), TestCaseError> {
    let mut held = [0i64; 2];
    for (i, (op, _)) in ops.iter().enumerate() {
        let failed = answers[i].starts_with("error");
        match (op, job(ops, i)) {
            (Op::Begin { .. }, Job::Begin(t)) => {
                let task = store.task(&t.id, None).await.unwrap();
                prop_assert!(
                    !(failed && task.is_some()),
                    "failed begin {i} wrote its task"
                );
                if let Some(task) = task
                    && task.status == TaskStatus::InFlight
                {
                    held[if task.account_id == account(0) { 0 } else { 1 }] += task.cost;
                }
            }
            (Op::Settle { .. }, Job::Settle(s)) => {
                let task = store.task(&s.task_id, None).await.unwrap();
                let landed = task.is_some_and(|t| t.artifact_id.as_ref() == Some(&s.artifact_id));
                prop_assert!(
                    !(failed && landed),
                    "failed settle {i} wrote its settlement"
                );
                // Its event is stored exactly when the answer says so, and only if it landed.
                if let Some((event, _)) = &s.event {
                    let has = stored_events(store).await.iter().any(|e| e.id == event.id);
                    prop_assert_eq!(
                        answers[i].contains("Enqueued {"),
                        has,
                        "settle {} answered {} but its event stored: {}",
                        i,
                        &answers[i],
                        has
                    );
                    prop_assert!(landed || !has, "settle {i} stored its event but not itself");
                }
            }
            (Op::Event { account: a, .. }, Job::Enqueue(event, _)) => {
                // Only an unknown account fails an event; a source seen before is a duplicate.
                prop_assert_eq!(failed, *a == 2, "event {}: {}", i, &answers[i]);
                let stored = stored_events(store).await;
                let deliveries = stored_deliveries(store).await;
                let has = stored.iter().any(|e| e.id == event.id);
                prop_assert!(!(failed && has), "failed event {i} was stored");
                prop_assert_eq!(
                    answers[i].starts_with("enqueued Enqueued"),
                    has,
                    "event {} answered {} but stored: {}",
                    i,
                    &answers[i],
                    has
                );
                // Deliveries only of an event stored, only to the account's live endpoints
                // subscribed to its type.
                for d in deliveries.iter().filter(|d| d.event_id == event.id) {
                    let live = [(endpoint(0), account(0)), (endpoint(2), account(1))];
                    prop_assert!(
                        has && live.contains(&(d.endpoint_id.clone(), d.account_id.clone()))
                    );
                    prop_assert_eq!(&d.account_id, &event.account_id);
                }
            }
            _ => {}
        }
    }
    for (n, held) in held.into_iter().enumerate() {
        let balance = store.balance(&account(n)).await.unwrap();
        let entries = store.entries(&account(n), 1000).await.unwrap();
        prop_assert_eq!(
            balance.spendable,
            entries.iter().map(|e| e.delta).sum::<i64>()
        );
        prop_assert_eq!(balance.held, held);
    }
    Ok(())
}

/// Runs the model over stores `open` gives (a fresh one per name), with authority spends
/// among the begins or not.
fn grouped_as_sequential<S, F>(open: impl Fn(String) -> F, spends: bool, cases: u32)
where
    S: Grouped,
    F: std::future::Future<Output = S>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..Default::default()
    };
    let ops = proptest::collection::vec((op(spends), proptest::bool::weighted(0.1)), 1..100);
    let credits = 0..12i64;
    let cases = std::cell::Cell::new(0);
    TestRunner::new(config)
        .run(&(ops, credits), |(ops, credits)| {
            let case = cases.get() + 1;
            cases.set(case);
            runtime.block_on(async {
                let one_by_one = seed(open(format!("one_by_one_{case}")).await, credits).await;
                let mut expected = Vec::new();
                for i in 0..ops.len() {
                    expected.push(show(one_by_one.writer().run(job(&ops, i)).await));
                }

                let grouped = seed(open(format!("grouped_{case}")).await, credits).await;
                let mut calls: Vec<_> = (0..ops.len())
                    .map(|i| Box::pin(grouped.writer().run(job(&ops, i))))
                    .collect();
                for (i, call) in calls.iter_mut().enumerate() {
                    // The first poll queues the call; its answer waits for the writer.
                    assert!(poll!(call.as_mut()).is_pending());
                    if ops[i].1 {
                        // The writer takes what is queued so far as one group.
                        tokio::task::yield_now().await;
                    }
                }
                let answers: Vec<String> = join_all(calls).await.into_iter().map(show).collect();

                prop_assert_eq!(&answers, &expected);
                prop_assert_eq!(books(&grouped, &ops).await, books(&one_by_one, &ops).await);
                // Both runs share the code under test: the books must also hold on their own.
                books_hold(&grouped, &ops, &answers).await
            })
        })
        .unwrap();
}

#[test]
fn sqlite_groups_answer_and_book_as_sequential_calls_do() {
    let dir = tempfile::tempdir().unwrap();
    grouped_as_sequential(|name| sqlite(dir.path().join(name)), true, 64);
}

#[test]
fn postgres_groups_answer_and_book_as_sequential_calls_do() {
    grouped_as_sequential(postgres, false, 32);
}

/// On Postgres a group is one call: when it committed but one item's answer cannot be read,
/// that item gets an error and the others their answers; nothing runs a second time. (A
/// second run would have begun the first task again: its answer an error though its hold
/// was stored.)
#[test]
fn postgres_answers_a_committed_call_once_even_when_one_answer_is_unreadable() {
    use sqlx::{Connection, Executor};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let url = postgres_database("unreadable".into()).await;
        let store = seed(PostgresStore::open(&url, 4).await.unwrap(), 10).await;
        // A task under key "k" whose key id no `ApiKeyId` reads: a begin with that key gets
        // it back as the existing task, and its answer cannot be decoded.
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        conn.execute(sqlx::AssertSqlSafe(format!(
            "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key, \
             fingerprint, status, created_at) VALUES ('{}', '{}', 'not-a-key-id', 'd', 'a', 1, \
             'k', 'f', 'in_flight', now())",
            TaskId::from_ulid(ulid(4, 90)),
            account(0)
        )))
        .await
        .unwrap();
        let begin = |n: usize, key: Option<&str>| {
            Job::Begin(NewTask {
                id: TaskId::from_ulid(ulid(4, n)),
                account_id: account(0),
                key_id: ApiKeyId::from_ulid(ulid(5, 0)),
                domain: "shop.example.com".into(),
                action: "place_order".into(),
                cost: 1,
                idempotency_key: key.map(str::to_owned),
                fingerprint: format!("p{n}"),
                hold_entry: LedgerEntryId::from_ulid(ulid(6, n)),
                authority_spend: None,
                created_at: t0(),
            })
        };
        let mut first = Box::pin(store.writer().run(begin(1, None)));
        let mut second = Box::pin(store.writer().run(begin(2, Some("k"))));
        // Both queued before the writer runs: one group, one call.
        assert!(poll!(first.as_mut()).is_pending());
        assert!(poll!(second.as_mut()).is_pending());
        let (first, second) = futures_util::join!(first, second);
        assert!(
            matches!(
                first,
                Ok(Done::Begun(Some(svc_ports::BeginOutcome::Started { .. })))
            ),
            "{}",
            show(first)
        );
        assert!(second.is_err(), "{}", show(second));
        // The first task's hold was stored once.
        let balance = store.balance(&account(0)).await.unwrap();
        assert_eq!((balance.spendable, balance.held), (9, 1));
    });
}

/// On Postgres a group takes the rows of all its accounts, in id order, before its first item.
/// Items lock their account's row as they run, in queue order, so two instances' groups
/// holding [an item of account 1, one of account 0] and [one of 0, one of 1] could each hold
/// one row and wait for the other: a deadlock Postgres breaks after a second, and a group
/// that meets it three times in a row fails its item. Here account 0 is held elsewhere: the
/// group [event of 1, event of 0] waits for it holding nothing, so account 1 stays free.
#[test]
fn postgres_groups_lock_their_accounts_in_id_order() {
    use sqlx::Connection;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let url = postgres_database("ordered".into()).await;
        let store = seed(PostgresStore::open(&url, 4).await.unwrap(), 10).await;
        let lock = "SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE NOWAIT";
        let mut holder = sqlx::PgConnection::connect(&url).await.unwrap();
        let mut held = holder.begin().await.unwrap();
        sqlx::query(lock)
            .bind(account(0).as_str())
            .execute(&mut *held)
            .await
            .unwrap();
        let mut first = Box::pin(
            store
                .writer()
                .run(Job::Enqueue(hook_event(1, 1, 1), delivery_ids(1))),
        );
        let mut second = Box::pin(
            store
                .writer()
                .run(Job::Enqueue(hook_event(2, 0, 2), delivery_ids(2))),
        );
        // Both queued before the writer runs: one group.
        assert!(poll!(first.as_mut()).is_pending());
        assert!(poll!(second.as_mut()).is_pending());
        let mut watcher = sqlx::PgConnection::connect(&url).await.unwrap();
        for polled in 0.. {
            assert!(polled < 2_000, "the group never waited for account 0");
            let waiting: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(&mut watcher)
            .await
            .unwrap();
            if waiting > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let mut probe = watcher.begin().await.unwrap();
        let free = sqlx::query(lock)
            .bind(account(1).as_str())
            .execute(&mut *probe)
            .await;
        assert!(
            free.is_ok(),
            "account 1 was locked while the group waited for account 0: {free:?}"
        );
        probe.rollback().await.unwrap();
        held.commit().await.unwrap();
        let (first, second) = futures_util::join!(first, second);
        for answer in [first, second] {
            assert!(
                matches!(
                    answer,
                    Ok(Done::Enqueued(svc_ports::EnqueueOutcome::Enqueued { .. }))
                ),
                "{}",
                show(answer)
            );
        }
    });
}
