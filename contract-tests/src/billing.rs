//! Billing scenarios: checkouts, verified payment events applied exactly once in any order,
//! handoffs and meter events.

use chrono::Duration;
use futures_util::future::join_all;
use svc_ports::{
    AccountId, BeginOutcome, CheckoutId, EntryKind, KeyHash, MeterEventId, Plan, TaskId,
    billing::{
        CheckoutHandoff, CheckoutOutcome, CheckoutRecord, Currency, EventOutcome, MeterEvent,
        MeterOutcome, PaymentEvent, PaymentFact, ReceiptKind,
    },
};
use ulid::Ulid;

use crate::{
    Backend,
    actions::{new_task, settled},
    scenarios::{new_account, t0},
};

pub(crate) fn checkout(account: &AccountId, key: Option<&str>) -> CheckoutRecord {
    CheckoutRecord {
        id: CheckoutId::from_ulid(Ulid::new()),
        account_id: account.clone(),
        sku: "starter".into(),
        plan: Plan::Starter,
        credits: 1000,
        amount: 900,
        currency: Currency::parse("usd").unwrap(),
        provider_session_id: format!("cs_{}", Ulid::new()),
        checkout_url: "https://pay.example/cs".into(),
        idempotency_key: key.map(str::to_owned),
        created_at: t0(),
        expires_at: t0() + Duration::hours(1),
    }
}

pub(crate) fn event(fact: PaymentFact) -> PaymentEvent {
    PaymentEvent {
        provider: "sandbox".into(),
        webhook_id: format!("msg_{}", Ulid::new()),
        event_type: "test".into(),
        fact,
        body: b"{}".to_vec(),
        received_at: t0(),
    }
}

pub(crate) fn paid(c: &CheckoutRecord, payment: &str) -> PaymentFact {
    PaymentFact::Paid {
        payment_id: payment.into(),
        checkout_id: c.id.clone(),
        amount: c.amount,
        currency: c.currency.clone(),
    }
}

pub(crate) fn refunded(payment: &str, refund: &str, amount: i64) -> PaymentFact {
    PaymentFact::Refunded {
        payment_id: payment.into(),
        refund_id: refund.into(),
        amount,
    }
}

/// Spendable equals the sum of entries, and frozen equals what receipts froze minus released
/// and forfeited. Returns (spendable, frozen).
pub(crate) async fn books(b: &Backend, account: &AccountId) -> (i64, i64) {
    let balance = b.ledger.balance(account).await.unwrap();
    let entries = b.ledger.entries(account, 10_000).await.unwrap();
    assert_eq!(
        balance.spendable,
        entries.iter().map(|e| e.delta).sum::<i64>(),
        "{}: spendable vs entries",
        b.name
    );
    let receipts = b.billing.receipts(account, 10_000).await.unwrap();
    assert_eq!(
        balance.frozen,
        receipts.iter().map(|r| r.frozen_delta).sum::<i64>(),
        "{}: frozen vs receipts",
        b.name
    );
    assert!(balance.spendable >= 0 && balance.frozen >= 0);
    (balance.spendable, balance.frozen)
}

pub async fn checkouts_are_unique_per_idempotency_key(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let first = checkout(&a.id, Some("k1"));
    assert_eq!(
        b.billing.insert_checkout(&first).await.unwrap(),
        CheckoutOutcome::Created(first.clone())
    );
    assert_eq!(
        b.billing
            .insert_checkout(&checkout(&a.id, Some("k1")))
            .await
            .unwrap(),
        CheckoutOutcome::Existing(first.clone())
    );
    assert_eq!(
        b.billing.checkout_by_key(&a.id, "k1").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        b.billing.checkout(&first.id).await.unwrap(),
        Some(first.clone())
    );
    // Without a key, every checkout is new.
    for _ in 0..2 {
        assert!(matches!(
            b.billing
                .insert_checkout(&checkout(&a.id, None))
                .await
                .unwrap(),
            CheckoutOutcome::Created(_)
        ));
    }
    // Racing inserts under one key: one is created, all see it.
    let racers: Vec<CheckoutRecord> = (0..8).map(|_| checkout(&a.id, Some("k2"))).collect();
    let outcomes = join_all(racers.iter().map(|c| b.billing.insert_checkout(c))).await;
    let ids: std::collections::HashSet<CheckoutId> = outcomes
        .into_iter()
        .map(|o| match o.unwrap() {
            CheckoutOutcome::Created(c) | CheckoutOutcome::Existing(c) => c.id,
        })
        .collect();
    assert_eq!(ids.len(), 1, "{}", b.name);
    let unknown = checkout(&AccountId::from_ulid(Ulid::new()), Some("k"));
    assert!(matches!(
        b.billing.insert_checkout(&unknown).await,
        Err(svc_ports::BillingError::UnknownAccount)
    ));
}

pub async fn payments_credit_once_and_replays_change_nothing(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let c = checkout(&a.id, Some("k"));
    b.billing.insert_checkout(&c).await.unwrap();
    let completed = event(paid(&c, "pay_1"));
    let EventOutcome::Applied(receipts) = b.billing.apply_payment_event(&completed).await.unwrap()
    else {
        panic!("{}: the payment was not applied", b.name)
    };
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].kind, ReceiptKind::Purchase);
    assert_eq!(receipts[0].credits, 1000);
    assert_eq!(receipts[0].checkout_id.as_ref(), Some(&c.id));
    assert_eq!(books(b, &a.id).await, (1000, 0));
    // The same delivery again, and the other announcement of the same payment.
    assert_eq!(
        b.billing.apply_payment_event(&completed).await.unwrap(),
        EventOutcome::Duplicate {
            status: "applied".into()
        }
    );
    assert_eq!(
        b.billing
            .apply_payment_event(&event(paid(&c, "pay_1")))
            .await
            .unwrap(),
        EventOutcome::Acknowledged
    );
    assert_eq!(books(b, &a.id).await, (1000, 0));
    // The purchase raised the free plan to the checkout's.
    assert_eq!(
        b.accounts.account(&a.id).await.unwrap().unwrap().plan,
        Plan::Starter
    );
    // A partial refund, replayed: taken back once, rounded up.
    let refund = event(refunded("pay_1", "re_1", 450));
    assert!(matches!(
        b.billing.apply_payment_event(&refund).await.unwrap(),
        EventOutcome::Applied(_)
    ));
    assert!(matches!(
        b.billing.apply_payment_event(&refund).await.unwrap(),
        EventOutcome::Duplicate { .. }
    ));
    assert_eq!(books(b, &a.id).await, (500, 0));
    let kinds: Vec<ReceiptKind> = b
        .billing
        .receipts(&a.id, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.kind)
        .collect();
    assert!(kinds.contains(&ReceiptKind::Purchase) && kinds.contains(&ReceiptKind::RefundClawback));
}

pub async fn events_out_of_order_end_in_the_right_balance(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let c = checkout(&a.id, Some("k"));
    b.billing.insert_checkout(&c).await.unwrap();
    // A refund and a dispute (closed before it opened) arrive before their payment.
    assert_eq!(
        b.billing
            .apply_payment_event(&event(refunded("pay_1", "re_1", 90)))
            .await
            .unwrap(),
        EventOutcome::Pending
    );
    let close = PaymentFact::DisputeClosed {
        payment_id: "pay_1".into(),
        dispute_id: "dp_1".into(),
        won: true,
    };
    assert_eq!(
        b.billing.apply_payment_event(&event(close)).await.unwrap(),
        EventOutcome::Pending
    );
    assert_eq!(books(b, &a.id).await, (0, 0));
    let open = PaymentFact::DisputeOpened {
        payment_id: "pay_1".into(),
        dispute_id: "dp_1".into(),
        amount: 450,
    };
    assert_eq!(
        b.billing.apply_payment_event(&event(open)).await.unwrap(),
        EventOutcome::Pending
    );
    let EventOutcome::Applied(receipts) = b
        .billing
        .apply_payment_event(&event(paid(&c, "pay_1")))
        .await
        .unwrap()
    else {
        panic!("{}: payment not applied", b.name)
    };
    // Purchase, clawback of 100, freeze of 500, release of 500: as if in order.
    assert_eq!(receipts.len(), 4, "{receipts:?}");
    assert_eq!(books(b, &a.id).await, (900, 0));
    // A second dispute stays open: its credits are frozen, not spendable.
    let open2 = PaymentFact::DisputeOpened {
        payment_id: "pay_1".into(),
        dispute_id: "dp_2".into(),
        amount: 90,
    };
    b.billing.apply_payment_event(&event(open2)).await.unwrap();
    assert_eq!(books(b, &a.id).await, (800, 100));
    let lost = PaymentFact::DisputeClosed {
        payment_id: "pay_1".into(),
        dispute_id: "dp_2".into(),
        won: false,
    };
    b.billing.apply_payment_event(&event(lost)).await.unwrap();
    assert_eq!(books(b, &a.id).await, (800, 0));
}

pub async fn concurrent_deliveries_apply_once(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let c = checkout(&a.id, Some("k"));
    b.billing.insert_checkout(&c).await.unwrap();
    // One delivery arriving 8 times at once, beside 4 other announcements of the payment and
    // its refund: one purchase, one clawback, whatever the interleaving.
    let same = event(paid(&c, "pay_1"));
    let mut events: Vec<PaymentEvent> = (0..8).map(|_| same.clone()).collect();
    events.extend((0..4).map(|_| event(paid(&c, "pay_1"))));
    events.push(event(refunded("pay_1", "re_1", 900)));
    let outcomes = join_all(events.iter().map(|e| b.billing.apply_payment_event(e))).await;
    let duplicates = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(EventOutcome::Duplicate { .. })))
        .count();
    assert_eq!(duplicates, 7, "{}: {outcomes:?}", b.name);
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(books(b, &a.id).await, (0, 0));
    let receipts = b.billing.receipts(&a.id, 100).await.unwrap();
    assert_eq!(receipts.len(), 2, "{}: {receipts:?}", b.name);
}

/// A checkout's credits are granted once, whatever ids its payment events carry: a provider
/// naming one payment by two ids in its two announcements would otherwise credit it twice.
pub async fn a_checkout_is_credited_once_whatever_its_payment_ids(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let c = checkout(&a.id, Some("k"));
    b.billing.insert_checkout(&c).await.unwrap();
    assert!(matches!(
        b.billing
            .apply_payment_event(&event(paid(&c, "pay_1")))
            .await
            .unwrap(),
        EventOutcome::Applied(_)
    ));
    for fact in [
        paid(&c, "pay_2"),
        paid(&c, "pay_2"),
        refunded("pay_2", "re_2", 900),
    ] {
        let outcome = b.billing.apply_payment_event(&event(fact)).await.unwrap();
        assert!(
            matches!(&outcome, EventOutcome::Rejected(r) if r.contains("already paid by payment pay_1")),
            "{}: {outcome:?}",
            b.name
        );
    }
    assert_eq!(books(b, &a.id).await, (1000, 0), "{}", b.name);
    // The payment that bought it is refunded as ever.
    b.billing
        .apply_payment_event(&event(refunded("pay_1", "re_1", 450)))
        .await
        .unwrap();
    assert_eq!(books(b, &a.id).await, (500, 0), "{}", b.name);
    // Two payments of a new checkout at once: one buys it.
    let c2 = checkout(&a.id, Some("k2"));
    b.billing.insert_checkout(&c2).await.unwrap();
    let racers: Vec<PaymentEvent> = (0..6)
        .map(|i| event(paid(&c2, &format!("pay_race_{i}"))))
        .collect();
    let outcomes = join_all(racers.iter().map(|e| b.billing.apply_payment_event(e))).await;
    let applied = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(EventOutcome::Applied(_))))
        .count();
    assert_eq!(applied, 1, "{}: {outcomes:?}", b.name);
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(books(b, &a.id).await, (1500, 0), "{}", b.name);
    let purchases = b
        .billing
        .receipts(&a.id, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == ReceiptKind::Purchase)
        .count();
    assert_eq!(purchases, 2, "{}", b.name);
}

pub async fn unknown_and_mismatched_events_move_nothing(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let c = checkout(&a.id, Some("k"));
    b.billing.insert_checkout(&c).await.unwrap();
    let cheap = PaymentFact::Paid {
        payment_id: "pay_1".into(),
        checkout_id: c.id.clone(),
        amount: 1,
        currency: c.currency.clone(),
    };
    assert!(matches!(
        b.billing.apply_payment_event(&event(cheap)).await.unwrap(),
        EventOutcome::Rejected(_)
    ));
    let stranger = PaymentFact::Paid {
        payment_id: "pay_2".into(),
        checkout_id: CheckoutId::from_ulid(Ulid::new()),
        amount: 900,
        currency: c.currency.clone(),
    };
    assert!(matches!(
        b.billing
            .apply_payment_event(&event(stranger))
            .await
            .unwrap(),
        EventOutcome::Rejected(_)
    ));
    let other = event(PaymentFact::Other);
    assert_eq!(
        b.billing.apply_payment_event(&other).await.unwrap(),
        EventOutcome::Acknowledged
    );
    assert_eq!(
        b.billing.apply_payment_event(&other).await.unwrap(),
        EventOutcome::Duplicate {
            status: "acknowledged".into()
        }
    );
    let malformed = event(PaymentFact::Malformed {
        reason: "no amount".into(),
    });
    assert!(matches!(
        b.billing.apply_payment_event(&malformed).await.unwrap(),
        EventOutcome::Rejected(_)
    ));
    assert_eq!(books(b, &a.id).await, (0, 0));
    assert!(b.billing.receipts(&a.id, 10).await.unwrap().is_empty());
}

pub async fn handoffs_are_taken_once_and_not_after_expiry(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let handoff = |token: &str| CheckoutHandoff {
        token_hash: KeyHash::of(token),
        account_id: a.id.clone(),
        sku: "starter".into(),
        created_at: t0(),
        expires_at: t0() + Duration::minutes(10),
    };
    b.billing.insert_handoff(&handoff("one")).await.unwrap();
    b.billing.insert_handoff(&handoff("two")).await.unwrap();
    let now = t0() + Duration::minutes(1);
    let one = KeyHash::of("one");
    let peeked = b.billing.handoff(&one).await.unwrap().expect("stored");
    assert_eq!(
        (peeked.0.sku.as_str(), peeked.1),
        ("starter", false),
        "{}",
        b.name
    );
    assert_eq!(
        b.billing.handoff(&KeyHash::of("three")).await.unwrap(),
        None
    );
    let takes = join_all((0..6).map(|_| b.billing.take_handoff(&one, now))).await;
    let taken: Vec<_> = takes.into_iter().filter_map(|t| t.unwrap()).collect();
    assert_eq!(taken.len(), 1, "{}", b.name);
    assert_eq!(taken[0].account_id, a.id);
    assert_eq!(taken[0].sku, "starter");
    let after = b
        .billing
        .handoff(&one)
        .await
        .unwrap()
        .expect("still stored");
    assert!(after.1, "{}: taken is seen", b.name);
    assert_eq!(after.0.account_id, a.id);
    assert_eq!(
        b.billing
            .take_handoff(&KeyHash::of("two"), t0() + Duration::minutes(10))
            .await
            .unwrap(),
        None,
        "expired"
    );
    assert_eq!(
        b.billing
            .take_handoff(&KeyHash::of("three"), now)
            .await
            .unwrap(),
        None
    );
}

pub async fn meter_events_are_recorded_once(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let meter = |identifier: &str| MeterEvent {
        id: MeterEventId::from_ulid(Ulid::new()),
        identifier: identifier.into(),
        event_name: "actions".into(),
        account_id: Some(a.id.clone()),
        value: 3,
        occurred_at: t0(),
        recorded_at: t0(),
        forwarded_at: None,
    };
    let first = meter("m-1");
    assert_eq!(
        b.billing.record_meter_event(&first).await.unwrap(),
        MeterOutcome::Recorded(first.clone())
    );
    b.billing
        .mark_meter_forwarded(&first.id, t0() + Duration::seconds(1))
        .await
        .unwrap();
    let MeterOutcome::Existing(again) = b.billing.record_meter_event(&meter("m-1")).await.unwrap()
    else {
        panic!("{}: identifier recorded twice", b.name)
    };
    assert_eq!(again.id, first.id);
    assert_eq!(again.forwarded_at, Some(t0() + Duration::seconds(1)));
}

/// A payment refunded while actions hold its credits: what they hold is owed, not kept. The
/// claim is spread over them oldest first; a failed action pays its share from the credits it
/// gives back; a completed one spent its credits, so its share is not collected.
pub async fn a_refund_while_actions_run_is_paid_by_those_that_fail(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let c = checkout(&a.id, Some("k"));
    b.billing.insert_checkout(&c).await.unwrap();
    b.billing
        .apply_payment_event(&event(paid(&c, "pay_1")))
        .await
        .unwrap();
    // Four actions hold 100 credits each; 600 stay spendable.
    let mut tasks = Vec::new();
    for n in 0..4 {
        let mut task = new_task(&a.id, 100, None, &format!("f{n}"));
        // Claims are spread oldest first.
        task.created_at = t0() + Duration::seconds(n);
        let outcome = b.tasks.begin_task(&task).await.unwrap();
        assert!(
            matches!(outcome, BeginOutcome::Started { .. }),
            "{outcome:?}"
        );
        tasks.push(task.id);
    }
    // 720 of 900 refunded: 800 credits go, 600 now and 200 owed by what is in flight.
    let EventOutcome::Applied(receipts) = b
        .billing
        .apply_payment_event(&event(refunded("pay_1", "re_1", 720)))
        .await
        .unwrap()
    else {
        panic!("{}: refund not applied", b.name)
    };
    assert_eq!(
        (receipts[0].spendable_delta, receipts[0].shortfall),
        (-600, 200),
        "{}",
        b.name
    );
    assert!(
        receipts[0]
            .note
            .ends_with(", 200 held by actions in flight (taken back if they fail)"),
        "{}: {}",
        b.name,
        receipts[0].note
    );
    let books_now = async || {
        let balance = b.ledger.balance(&a.id).await.unwrap();
        books(b, &a.id).await;
        (balance.spendable, balance.held)
    };
    assert_eq!(books_now().await, (0, 400), "{}", b.name);
    // A failure's refund gives its 100 back; a clawback then takes them for the payment.
    settled(b, &tasks[0], false).await;
    assert_eq!(books_now().await, (0, 300), "{}", b.name);
    let entries = b.ledger.entries(&a.id, 100).await.unwrap();
    let of_task = |kind: EntryKind| {
        let reference = format!("task:{}:{}", tasks[0], kind.as_str());
        entries
            .iter()
            .find(|e| e.reference.as_deref() == Some(reference.as_str()))
            .map(|e| (e.delta, e.balance_after))
    };
    assert_eq!(of_task(EntryKind::Refund), Some((100, 100)), "{}", b.name);
    assert_eq!(of_task(EntryKind::Clawback), Some((-100, 0)), "{}", b.name);
    // The claim was spread oldest first: the second action's share goes with its completion
    // (its credits were spent), and the last two were never claimed.
    settled(b, &tasks[1], true).await;
    assert_eq!(books_now().await, (0, 200), "{}", b.name);
    settled(b, &tasks[2], false).await;
    assert_eq!(books_now().await, (100, 100), "{}", b.name);
    settled(b, &tasks[3], false).await;
    // 1000 bought, 800 refunded: 600 taken at once, 100 from the first action's credits, and
    // 100 spent by the second before they could be taken.
    assert_eq!(books_now().await, (200, 0), "{}", b.name);
}

pub(crate) async fn started(b: &Backend, a: &AccountId, cost: i64) -> TaskId {
    let task = new_task(a, cost, None, "f");
    let outcome = b.tasks.begin_task(&task).await.unwrap();
    assert!(
        matches!(outcome, BeginOutcome::Started { .. }),
        "{outcome:?}"
    );
    task.id
}

/// What a refund claims is the share of the actions in flight when it arrived: an action begun
/// later, on credits bought later, gives them all back when it fails, whether it began before
/// or after the claimed action completed (found by a review of the first version, which kept
/// one claim for the whole account and let the later action pay it).
pub async fn a_refund_claims_only_the_actions_in_flight_when_it_arrived(b: &Backend) {
    for later_begins_first in [false, true] {
        let a = new_account(b, &format!("buyer-{later_begins_first}@example.com")).await;
        let (c1, c2) = (checkout(&a.id, None), checkout(&a.id, None));
        b.billing.insert_checkout(&c1).await.unwrap();
        b.billing.insert_checkout(&c2).await.unwrap();
        let (p1, p2) = (
            format!("pay_{}", Ulid::new()),
            format!("pay_{}", Ulid::new()),
        );
        b.billing
            .apply_payment_event(&event(paid(&c1, &p1)))
            .await
            .unwrap();
        let t1 = started(b, &a.id, 1000).await;
        b.billing
            .apply_payment_event(&event(refunded(&p1, "re_1", 900)))
            .await
            .unwrap();
        b.billing
            .apply_payment_event(&event(paid(&c2, &p2)))
            .await
            .unwrap();
        let t2 = if later_begins_first {
            let t2 = started(b, &a.id, 1000).await;
            settled(b, &t1, true).await;
            t2
        } else {
            settled(b, &t1, true).await;
            started(b, &a.id, 1000).await
        };
        settled(b, &t2, false).await;
        let balance = b.ledger.balance(&a.id).await.unwrap();
        books(b, &a.id).await;
        assert_eq!(
            (balance.spendable, balance.held),
            (1000, 0),
            "{}: the later action began first: {later_begins_first}",
            b.name
        );
    }
}

/// Refunds of four payments race forty settlements on one account: the books hold, nothing
/// stays owed once all settled, and none of the refunded credits is left.
pub async fn refunds_racing_settlements_leave_nothing_owed(b: &Backend) {
    let a = new_account(b, "buyer@example.com").await;
    let mut payments = Vec::new();
    for _ in 0..4 {
        let c = checkout(&a.id, None);
        b.billing.insert_checkout(&c).await.unwrap();
        let p = format!("pay_{}", Ulid::new());
        b.billing
            .apply_payment_event(&event(paid(&c, &p)))
            .await
            .unwrap();
        payments.push(p);
    }
    let mut tasks = Vec::new();
    for _ in 0..40 {
        tasks.push(started(b, &a.id, 100).await);
    }
    let refunds = payments.iter().enumerate().map(|(i, p)| async move {
        let refund = event(refunded(p, &format!("re_{i}"), 900));
        b.billing.apply_payment_event(&refund).await.unwrap();
    });
    let settles = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| settled(b, t, i % 3 == 0));
    futures_util::join!(join_all(refunds), join_all(settles));
    let balance = b.ledger.balance(&a.id).await.unwrap();
    books(b, &a.id).await;
    // 4000 bought and all refunded; 14 actions completed: spent, not owed.
    assert_eq!((balance.spendable, balance.held), (0, 0), "{}", b.name);
}
