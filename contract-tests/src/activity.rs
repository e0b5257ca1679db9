//! Activity scenarios: an account's tasks a page at a time (keyset, stable under inserts,
//! private to the account) and its credits per UTC day, which must add up to its ledger.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use svc_ports::{
    AccountId, ApiKeyId, BeginOutcome, TaskCursor, TaskId, TaskQuery, TaskRecord, TaskStatus,
    UsageKind, activity::day_start, billing::PaymentFact, ledger::EntryKind,
};
use ulid::Ulid;

use crate::{
    Backend,
    actions::{funded, new_task, settlement},
    billing::{checkout, event, paid, refunded},
    scenarios::{new_account, t0},
};

/// Begins a task of `account` at `at` on `domain` by `key`, costing 1, and settles it
/// (completed or failed) at `settle` when given.
async fn task_at(
    b: &Backend,
    account: &AccountId,
    key: &ApiKeyId,
    domain: &str,
    at: DateTime<Utc>,
    settle: Option<(bool, DateTime<Utc>)>,
) -> TaskId {
    let mut t = new_task(account, 1, None, "f");
    t.key_id = key.clone();
    t.domain = domain.into();
    t.created_at = at;
    let BeginOutcome::Started { task, .. } = b.tasks.begin_task(&t).await.unwrap() else {
        panic!("{}: not started", b.name)
    };
    if let Some((completed, when)) = settle {
        b.tasks
            .settle_task(&settlement(&task.id, completed, when))
            .await
            .unwrap();
    }
    task.id
}

fn query(limit: u32) -> TaskQuery {
    TaskQuery {
        status: None,
        domain: None,
        since: None,
        until: None,
        after: None,
        limit,
    }
}

fn ids(tasks: &[TaskRecord]) -> Vec<TaskId> {
    tasks.iter().map(|t| t.id.clone()).collect()
}

/// Every page of `q` in turn; `between` runs after each page (to insert tasks).
async fn all_pages(
    b: &Backend,
    account: &AccountId,
    mut q: TaskQuery,
    mut between: impl AsyncFnMut(usize),
) -> Vec<TaskRecord> {
    let mut seen = Vec::new();
    for page in 0.. {
        let tasks = b.tasks.list_tasks(account, &q).await.unwrap();
        assert!(
            tasks.len() <= q.limit as usize,
            "{}: over the limit",
            b.name
        );
        let Some(last) = tasks.last() else { break };
        q.after = Some(TaskCursor::after(last));
        seen.extend(tasks);
        between(page).await;
        assert!(page < 100, "{}: paging never ends", b.name);
    }
    seen
}

pub async fn tasks_are_listed_newest_first_a_page_at_a_time(b: &Backend) {
    let a = funded(b, "activity@example.com", 1000).await;
    let other = funded(b, "activity-other@example.com", 1000).await;
    let key = ApiKeyId::from_ulid(Ulid::new());
    let minute = Duration::minutes(1);
    let mut expected = Vec::new();
    for i in 0..9 {
        // Three tasks share each minute: ties are ordered by id.
        let at = t0() + minute * (i / 3);
        let domain = if i % 2 == 0 {
            "shop.example.com"
        } else {
            "books.example.com"
        };
        let settle = match i % 3 {
            0 => Some((true, at + minute)),
            1 => Some((false, at + minute)),
            _ => None,
        };
        let id = task_at(b, &a, &key, domain, at, settle).await;
        expected.push((at, id));
        // Another account's tasks at the same times.
        task_at(b, &other, &key, domain, at, None).await;
    }
    expected.sort_by(|x, y| (y.0, y.1.as_str()).cmp(&(x.0, x.1.as_str())));
    let expected: Vec<TaskId> = expected.into_iter().map(|(_, id)| id).collect();

    // Pages of 2, with newer tasks begun between them: each of the first nine exactly once,
    // in order, and nothing newer than the first page.
    let mut newer = Vec::new();
    let seen = all_pages(b, &a, query(2), async |page| {
        let at = t0() + Duration::hours(1) + minute * page as i32;
        newer.push(task_at(b, &a, &key, "shop.example.com", at, None).await);
    })
    .await;
    assert_eq!(ids(&seen), expected, "{}: keyset pages", b.name);
    assert!(seen.iter().all(|t| t.account_id == a));

    // Now the newer ones lead, and a fresh listing has them all once.
    let everything = all_pages(b, &a, query(100), async |_| {}).await;
    assert_eq!(everything.len(), expected.len() + newer.len(), "{}", b.name);
    let unique: HashSet<&TaskId> = everything.iter().map(|t| &t.id).collect();
    assert_eq!(unique.len(), everything.len(), "{}: a task twice", b.name);
    assert_eq!(everything[0].id, *newer.last().unwrap());

    // Another account sees only its own.
    let theirs = all_pages(b, &other, query(3), async |_| {}).await;
    assert_eq!(theirs.len(), 9, "{}", b.name);
    assert!(theirs.iter().all(|t| t.account_id == other), "{}", b.name);

    // Filters, alone and with a cursor: exactly what `TaskQuery::matches` keeps.
    let all = all_pages(b, &a, query(100), async |_| {}).await;
    let filters = [
        TaskQuery {
            status: Some(TaskStatus::Completed),
            ..query(2)
        },
        TaskQuery {
            status: Some(TaskStatus::InFlight),
            domain: Some("shop.example.com".into()),
            ..query(2)
        },
        TaskQuery {
            since: Some(t0() + minute),
            until: Some(t0() + minute * 2),
            ..query(1)
        },
        TaskQuery {
            domain: Some("nowhere.example.com".into()),
            ..query(5)
        },
    ];
    for filter in filters {
        let want: Vec<TaskId> = all
            .iter()
            .filter(|t| filter.matches(t))
            .map(|t| t.id.clone())
            .collect();
        let got = all_pages(b, &a, filter.clone(), async |_| {}).await;
        assert_eq!(ids(&got), want, "{}: {filter:?}", b.name);
    }
    let window = TaskQuery {
        since: Some(t0() + minute),
        until: Some(t0() + minute * 2),
        ..query(100)
    };
    assert_eq!(
        b.tasks.list_tasks(&a, &window).await.unwrap().len(),
        3,
        "{}: since is inclusive and until exclusive",
        b.name
    );
    // Settled tasks come back whole.
    let completed = all.iter().find(|t| t.status == TaskStatus::Completed);
    let stored = b
        .tasks
        .task(&completed.unwrap().id, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Some(&stored), completed, "{}", b.name);
}

pub async fn usage_per_day_adds_up_to_the_ledger(b: &Backend) {
    // Funded at t0 (2026-05-28 20:26 UTC); tasks settle on that day, the next and the one after.
    let a = funded(b, "usage@example.com", 1000).await;
    let other = funded(b, "usage-other@example.com", 1000).await;
    let (k1, k2) = (
        ApiKeyId::from_ulid(Ulid::new()),
        ApiKeyId::from_ulid(Ulid::new()),
    );
    let hour = Duration::hours(1);
    let plan = [
        (&k1, true, hour),
        (&k1, true, hour * 2),
        (&k2, false, hour * 2),
        (&k2, true, hour * 5),
        (&k1, false, hour * 6),
        (&k1, true, hour * 30),
    ];
    for (key, completed, after) in plan {
        let at = t0() + after - Duration::minutes(1);
        task_at(
            b,
            &a,
            key,
            "shop.example.com",
            at,
            Some((completed, at + Duration::seconds(30))),
        )
        .await;
        task_at(b, &other, key, "shop.example.com", at, Some((true, at))).await;
    }
    // In flight: held, neither charged nor refunded.
    task_at(b, &a, &k1, "shop.example.com", t0() + hour, None).await;
    // A purchase on the second day.
    let c = checkout(&a, None);
    b.billing.insert_checkout(&c).await.unwrap();
    let mut bought = event(paid(&c, "pay_usage"));
    bought.received_at = t0() + hour * 7;
    b.billing.apply_payment_event(&bought).await.unwrap();
    // Then half of it refunded, and another purchase disputed and the dispute won: taken
    // back, and given back.
    let c2 = checkout(&a, None);
    b.billing.insert_checkout(&c2).await.unwrap();
    let facts = [
        paid(&c2, "pay_usage_2"),
        refunded("pay_usage", "re_usage", 450),
        PaymentFact::DisputeOpened {
            payment_id: "pay_usage_2".into(),
            dispute_id: "dp_usage".into(),
            amount: 900,
        },
        PaymentFact::DisputeClosed {
            payment_id: "pay_usage_2".into(),
            dispute_id: "dp_usage".into(),
            won: true,
        },
    ];
    for (i, fact) in facts.into_iter().enumerate() {
        let mut e = event(fact);
        e.received_at = t0() + hour * 7 + Duration::minutes(10 * (i as i64 + 1));
        b.billing.apply_payment_event(&e).await.unwrap();
    }

    let first = t0().date_naive();
    let (from, until) = (day_start(first), day_start(first) + Duration::days(2));
    let rows = b.ledger.usage_by_day(&a, from, until).await.unwrap();
    let got: BTreeMap<_, _> = rows
        .iter()
        .map(|r| ((r.day, r.kind, r.key_id.clone()), (r.credits, r.count)))
        .collect();
    assert_eq!(
        got.len(),
        rows.len(),
        "{}: one row per day, kind and key",
        b.name
    );

    // The same sums, from the ledger entries themselves.
    let entries = b.ledger.entries(&a, 10_000).await.unwrap();
    let mut want: BTreeMap<_, (i64, i64)> = BTreeMap::new();
    for e in entries
        .iter()
        .filter(|e| e.created_at >= from && e.created_at < until)
    {
        let task_of = |e: &svc_ports::LedgerEntry| {
            let r = e.reference.as_deref().unwrap();
            TaskId::parse(r.split(':').nth(1).unwrap()).unwrap()
        };
        let (kind, key, credits) = match e.kind {
            EntryKind::Capture | EntryKind::Refund => {
                let id = task_of(e);
                // What was captured is what was held.
                let hold = entries
                    .iter()
                    .find(|h| h.kind == EntryKind::Hold && task_of(h) == id)
                    .unwrap();
                let task = b.tasks.task(&id, None).await.unwrap().unwrap();
                let kind = if e.kind == EntryKind::Capture {
                    UsageKind::Charged
                } else {
                    UsageKind::Refunded
                };
                (kind, Some(task.key_id), -hold.delta)
            }
            EntryKind::Purchase => (UsageKind::Bought, None, e.delta),
            EntryKind::Grant => (UsageKind::Granted, None, e.delta),
            k if UsageKind::PAYMENT_MOVES.contains(&k) && e.delta != 0 => {
                if e.delta < 0 {
                    (UsageKind::TakenBack, None, -e.delta)
                } else {
                    (UsageKind::Released, None, e.delta)
                }
            }
            _ => continue,
        };
        let sum = want
            .entry((e.created_at.date_naive(), kind, key))
            .or_default();
        *sum = (sum.0 + credits, sum.1 + 1);
    }
    assert_eq!(got, want, "{}: usage differs from the ledger", b.name);
    let second = first.succ_opt().unwrap();
    assert_eq!(
        got.get(&(first, UsageKind::Charged, Some(k1.clone()))),
        Some(&(2, 2)),
        "{}",
        b.name
    );
    assert_eq!(
        got.get(&(second, UsageKind::Bought, None)),
        Some(&(2000, 2))
    );
    // Half the first purchase clawed back, the whole second one frozen, then released.
    assert_eq!(
        got.get(&(second, UsageKind::TakenBack, None)),
        Some(&(1500, 2)),
        "{}",
        b.name
    );
    assert_eq!(
        got.get(&(second, UsageKind::Released, None)),
        Some(&(1000, 1)),
        "{}",
        b.name
    );
    assert_eq!(
        got.get(&(first, UsageKind::Granted, None)),
        Some(&(1000, 1))
    );
    assert!(
        !got.keys().any(|(day, ..)| *day > second),
        "{}: until is exclusive",
        b.name
    );
    // Nothing for an account without entries, or a range with none.
    let stranger = AccountId::from_ulid(Ulid::new());
    assert!(
        b.ledger
            .usage_by_day(&stranger, from, until)
            .await
            .unwrap()
            .is_empty()
    );
    let later = until + Duration::days(30);
    assert!(
        b.ledger
            .usage_by_day(&a, later, later + Duration::days(1))
            .await
            .unwrap()
            .is_empty()
    );
}

/// A dispute lost after its payment's credits were spent takes what its freeze could not from
/// credits bought since: that `forfeit` entry is taken back like every entry of a payment's
/// refund or dispute that takes credits, and the day's figures still explain the balance.
pub async fn usage_counts_what_a_lost_dispute_takes(b: &Backend) {
    let a = new_account(b, "usage-dispute@example.com").await.id;
    let hour = Duration::hours(1);
    let apply = async |fact: PaymentFact, at: DateTime<Utc>| {
        let mut e = event(fact);
        e.received_at = at;
        b.billing.apply_payment_event(&e).await.unwrap();
    };
    // 1000 bought, 900 of them held by an action when the whole price is disputed: only 100
    // can be frozen; the action then completes and spends its 900.
    let c = checkout(&a, None);
    b.billing.insert_checkout(&c).await.unwrap();
    apply(paid(&c, "pay_spent"), t0()).await;
    let mut task = new_task(&a, 900, None, "f");
    task.created_at = t0() + hour / 2;
    let BeginOutcome::Started { task, .. } = b.tasks.begin_task(&task).await.unwrap() else {
        panic!("{}: not started", b.name)
    };
    let dispute = |won: Option<bool>| match won {
        None => PaymentFact::DisputeOpened {
            payment_id: "pay_spent".into(),
            dispute_id: "dp_spent".into(),
            amount: 900,
        },
        Some(won) => PaymentFact::DisputeClosed {
            payment_id: "pay_spent".into(),
            dispute_id: "dp_spent".into(),
            won,
        },
    };
    apply(dispute(None), t0() + hour).await;
    b.tasks
        .settle_task(&settlement(&task.id, true, t0() + hour * 2))
        .await
        .unwrap();
    // More bought, then the dispute lost.
    let c2 = checkout(&a, None);
    b.billing.insert_checkout(&c2).await.unwrap();
    apply(paid(&c2, "pay_later"), t0() + hour * 3).await;
    apply(dispute(Some(false)), t0() + hour * 4).await;

    let entries = b.ledger.entries(&a, 1000).await.unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e.kind == EntryKind::Forfeit && e.delta == -900),
        "{}: the lost dispute took 900 from spendable: {entries:#?}",
        b.name
    );
    let from = day_start(t0().date_naive());
    let rows = b
        .ledger
        .usage_by_day(&a, from, from + Duration::days(2))
        .await
        .unwrap();
    let sum = |kind: UsageKind| -> i64 {
        rows.iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.credits)
            .sum()
    };
    // 100 frozen when it opened, 900 forfeited when it was lost.
    assert_eq!(sum(UsageKind::TakenBack), 1000, "{}: {rows:?}", b.name);
    assert_eq!(sum(UsageKind::Released), 0, "{}: {rows:?}", b.name);
    let spendable = b.ledger.balance(&a).await.unwrap().spendable;
    assert_eq!(
        sum(UsageKind::Bought) + sum(UsageKind::Granted) + sum(UsageKind::Released)
            - sum(UsageKind::TakenBack)
            - sum(UsageKind::Charged),
        spendable,
        "{}: the figures explain the balance: {rows:?}",
        b.name
    );
}
