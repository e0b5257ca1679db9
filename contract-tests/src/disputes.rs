//! Disputes opened while actions hold the disputed payments' credits: what a dispute cannot
//! freeze at once is a claim on the credits in flight, served by what failing actions give back
//! (`billing::serve_claims`), held to what is still in flight (`cap_claims`), and replaced by
//! every event of its payment.

use chrono::Duration;
use futures_util::future::join_all;
use svc_ports::{
    BeginOutcome, EntryKind, SettleOutcome, TaskId,
    billing::{EventOutcome, PaymentEvent, PaymentFact, ReceiptKind},
};
use ulid::Ulid;

use crate::{
    Backend,
    actions::{new_task, settled, settlement},
    billing::{books, checkout, event, paid, refunded, started},
    scenarios::{new_account, t0},
};

fn opened(payment: &str) -> PaymentFact {
    PaymentFact::DisputeOpened {
        payment_id: payment.into(),
        dispute_id: "dp_1".into(),
        amount: 900,
    }
}

fn closed(payment: &str, won: bool) -> PaymentFact {
    PaymentFact::DisputeClosed {
        payment_id: payment.into(),
        dispute_id: "dp_1".into(),
        won,
    }
}

/// A new account with `n` payments of 1000 credits (for 900) applied: their ids.
async fn bought(b: &Backend, email: &str, n: usize) -> (svc_ports::AccountId, Vec<String>) {
    let a = new_account(b, email).await;
    let mut payments = Vec::new();
    for _ in 0..n {
        let c = checkout(&a.id, None);
        b.billing.insert_checkout(&c).await.unwrap();
        let p = format!("pay_{}", Ulid::new());
        b.billing
            .apply_payment_event(&event(paid(&c, &p)))
            .await
            .unwrap();
        payments.push(p);
    }
    (a.id, payments)
}

/// A dispute opened while actions hold the payment's credits: what spendable cannot cover is
/// claimed from those actions, oldest first. A failed action's refund comes back frozen (an
/// entry and a receipt of the payment's), a completed one spent its credits. Won, the frozen
/// credits come back; lost, they go. Before, the refunds came back spendable and could be spent
/// while the dispute was open.
pub async fn a_dispute_while_actions_run_freezes_what_those_that_fail_give_back(b: &Backend) {
    for won in [true, false] {
        let a = new_account(b, &format!("disputed-{won}@example.com")).await;
        let c = checkout(&a.id, None);
        b.billing.insert_checkout(&c).await.unwrap();
        let payment = format!("pay_{}", Ulid::new());
        b.billing
            .apply_payment_event(&event(paid(&c, &payment)))
            .await
            .unwrap();
        // Three actions hold 300 credits each; 100 stay spendable.
        let mut tasks = Vec::new();
        for n in 0..3 {
            let mut task = new_task(&a.id, 300, None, &format!("f{n}"));
            task.created_at = t0() + Duration::seconds(n);
            let outcome = b.tasks.begin_task(&task).await.unwrap();
            assert!(
                matches!(outcome, BeginOutcome::Started { .. }),
                "{outcome:?}"
            );
            tasks.push(task.id);
        }
        // The whole price disputed: all 1000 credits should be frozen; 100 can be now.
        let EventOutcome::Applied(receipts) = b
            .billing
            .apply_payment_event(&event(PaymentFact::DisputeOpened {
                payment_id: payment.clone(),
                dispute_id: "dp_1".into(),
                amount: 900,
            }))
            .await
            .unwrap()
        else {
            panic!("{}: dispute not applied", b.name)
        };
        assert_eq!(receipts[0].frozen_delta, 100, "{}", b.name);
        assert_eq!(books(b, &a.id).await, (0, 100), "{}", b.name);
        // The first action fails: its 300 come back, and are frozen at once.
        settled(b, &tasks[0], false).await;
        assert_eq!(books(b, &a.id).await, (0, 400), "{}", b.name);
        let entries = b.ledger.entries(&a.id, 100).await.unwrap();
        let of_task = |kind: EntryKind| {
            let reference = format!("task:{}:{}", tasks[0], kind.as_str());
            entries
                .iter()
                .find(|e| e.reference.as_deref() == Some(reference.as_str()))
                .map(|e| (e.delta, e.balance_after))
        };
        assert_eq!(of_task(EntryKind::Refund), Some((300, 300)), "{}", b.name);
        assert_eq!(of_task(EntryKind::Freeze), Some((-300, 0)), "{}", b.name);
        let all = b.billing.receipts(&a.id, 100).await.unwrap();
        let freeze = all
            .iter()
            .find(|r| r.reference == format!("task:{}:freeze:{payment}", tasks[0]))
            .unwrap_or_else(|| panic!("{}: no receipt of the freeze: {all:#?}", b.name));
        assert_eq!(
            (
                freeze.kind,
                freeze.frozen_delta,
                freeze.spendable_delta,
                freeze.payment_id.as_deref()
            ),
            (
                ReceiptKind::DisputeFreeze,
                300,
                -300,
                Some(payment.as_str())
            ),
            "{}",
            b.name
        );
        assert_eq!(freeze.task_id.as_ref(), Some(&tasks[0]), "{}", b.name);
        // The second completes: its credits were spent. The third fails: frozen too.
        settled(b, &tasks[1], true).await;
        assert_eq!(books(b, &a.id).await, (0, 400), "{}", b.name);
        settled(b, &tasks[2], false).await;
        assert_eq!(books(b, &a.id).await, (0, 700), "{}", b.name);
        b.billing
            .apply_payment_event(&event(PaymentFact::DisputeClosed {
                payment_id: payment.clone(),
                dispute_id: "dp_1".into(),
                won,
            }))
            .await
            .unwrap();
        let expected = if won { (700, 0) } else { (0, 0) };
        assert_eq!(books(b, &a.id).await, expected, "{} (won: {won})", b.name);
    }
}

/// A dispute's claim on the credits in flight lasts while the dispute is open: closed before the
/// actions settle, their refunds come back as they would have (won: spendable).
pub async fn a_closed_dispute_claims_nothing_of_actions_still_in_flight(b: &Backend) {
    let a = new_account(b, "closed-dispute@example.com").await;
    let c = checkout(&a.id, None);
    b.billing.insert_checkout(&c).await.unwrap();
    let payment = format!("pay_{}", Ulid::new());
    b.billing
        .apply_payment_event(&event(paid(&c, &payment)))
        .await
        .unwrap();
    let first = started(b, &a.id, 500).await;
    let second = started(b, &a.id, 500).await;
    b.billing
        .apply_payment_event(&event(PaymentFact::DisputeOpened {
            payment_id: payment.clone(),
            dispute_id: "dp_1".into(),
            amount: 450,
        }))
        .await
        .unwrap();
    // Nothing spendable: 500 claimed of the credits in flight.
    b.billing
        .apply_payment_event(&event(PaymentFact::DisputeClosed {
            payment_id: payment.clone(),
            dispute_id: "dp_1".into(),
            won: true,
        }))
        .await
        .unwrap();
    settled(b, &first, false).await;
    assert_eq!(books(b, &a.id).await, (500, 0), "{}", b.name);
    settled(b, &second, false).await;
    assert_eq!(books(b, &a.id).await, (1000, 0), "{}", b.name);
}

/// Disputes opened while settlements race them: every action fails, so every credit of the
/// four disputed payments ends frozen, however the two interleave (a settlement waits for the
/// dispute's claim, or the dispute finds the credits spendable).
pub async fn disputes_racing_failures_freeze_every_credit(b: &Backend) {
    let (account, payments) = bought(b, "disputed-race@example.com", 4).await;
    // 57 actions of 70 (a claim is served in part), 10 credits spendable.
    let mut tasks = Vec::new();
    for _ in 0..57 {
        tasks.push(started(b, &account, 70).await);
    }
    let disputes = payments.iter().map(|p| async move {
        let opened = event(PaymentFact::DisputeOpened {
            payment_id: p.clone(),
            dispute_id: "dp_1".into(),
            amount: 900,
        });
        b.billing.apply_payment_event(&opened).await.unwrap();
    });
    let settles = tasks.iter().map(|t| settled(b, t, false));
    futures_util::join!(join_all(disputes), join_all(settles));
    assert_eq!(books(b, &account).await, (0, 4000), "{}", b.name);
    assert_eq!(b.ledger.balance(&account).await.unwrap().held, 0);
}

/// Two disputed payments whose credits one action holds: both claims are served by what it
/// gives back, and each dispute's closing moves only its own.
pub async fn two_disputes_are_served_by_one_failed_action(b: &Backend) {
    let (account, payments) = bought(b, "two-disputes@example.com", 2).await;
    let task = started(b, &account, 2000).await;
    for p in &payments {
        b.billing
            .apply_payment_event(&event(opened(p)))
            .await
            .unwrap();
    }
    settled(b, &task, false).await;
    assert_eq!(books(b, &account).await, (0, 2000), "{}", b.name);
    for (p, won) in payments.iter().zip([true, false]) {
        b.billing
            .apply_payment_event(&event(closed(p, won)))
            .await
            .unwrap();
    }
    assert_eq!(books(b, &account).await, (1000, 0), "{}", b.name);
}

/// A refund of one payment and a dispute of another while two actions hold all the credits:
/// the first to fail pays the refund (its clawback), the second's credits are frozen for the
/// dispute, in whichever order the two events came. The entries of each action are in the
/// order they were written: refund, clawback, freeze.
pub async fn a_refund_and_another_payments_dispute_share_the_failures(b: &Backend) {
    for refund_first in [false, true] {
        let (account, payments) =
            bought(b, &format!("refund-dispute-{refund_first}@example.com"), 2).await;
        let mut tasks = Vec::new();
        for n in 0..2 {
            let mut task = new_task(&account, 1000, None, &format!("f{n}"));
            task.created_at = t0() + Duration::seconds(n);
            let outcome = b.tasks.begin_task(&task).await.unwrap();
            assert!(
                matches!(outcome, BeginOutcome::Started { .. }),
                "{outcome:?}"
            );
            tasks.push(task.id);
        }
        let refund = event(refunded(&payments[0], "re_1", 900));
        let dispute = event(PaymentFact::DisputeOpened {
            payment_id: payments[1].clone(),
            dispute_id: "dp_1".into(),
            amount: 900,
        });
        let events = if refund_first {
            [refund, dispute]
        } else {
            [dispute, refund]
        };
        for e in &events {
            b.billing.apply_payment_event(e).await.unwrap();
        }
        settled(b, &tasks[0], false).await;
        settled(b, &tasks[1], false).await;
        assert_eq!(
            books(b, &account).await,
            (0, 1000),
            "{} (refund first: {refund_first})",
            b.name
        );
        // Newest first: each action's entries, oldest of them last.
        let entries = b.ledger.entries(&account, 100).await.unwrap();
        let kinds = |task: &TaskId| -> Vec<(EntryKind, i64)> {
            let mut of_task: Vec<(EntryKind, i64)> = entries
                .iter()
                .filter(|e| {
                    e.reference
                        .as_deref()
                        .is_some_and(|r| r.starts_with(&format!("task:{task}:")))
                })
                .map(|e| (e.kind, e.delta))
                .collect();
            of_task.reverse();
            of_task
        };
        assert_eq!(
            kinds(&tasks[0]),
            [
                (EntryKind::Hold, -1000),
                (EntryKind::Refund, 1000),
                (EntryKind::Clawback, -1000)
            ],
            "{}",
            b.name
        );
        assert_eq!(
            kinds(&tasks[1]),
            [
                (EntryKind::Hold, -1000),
                (EntryKind::Refund, 1000),
                (EntryKind::Freeze, -1000)
            ],
            "{}",
            b.name
        );
    }
}

/// Credits spent while a dispute holds the rest of a payment frozen, then a refund of that
/// payment: the refund takes the frozen credits spendable cannot cover, so a dispute won later
/// releases nothing a refund took back. A review found the won dispute handing back half the
/// payment again. Whichever of refund and dispute came first, and won or lost, nothing is left.
pub async fn a_refund_during_a_dispute_takes_what_the_dispute_froze_once_the_rest_is_spent(
    b: &Backend,
) {
    for (won, refund_first) in [(true, false), (false, false), (true, true), (false, true)] {
        let (account, payments) = bought(
            b,
            &format!("spent-during-dispute-{won}-{refund_first}@example.com"),
            1,
        )
        .await;
        let payment = &payments[0];
        let half = PaymentFact::DisputeOpened {
            payment_id: payment.clone(),
            dispute_id: "dp_1".into(),
            amount: 450,
        };
        let refund = event(refunded(payment, "re_1", 450));
        if refund_first {
            let task = started(b, &account, 500).await;
            settled(b, &task, true).await;
            b.billing.apply_payment_event(&refund).await.unwrap();
            b.billing.apply_payment_event(&event(half)).await.unwrap();
        } else {
            b.billing.apply_payment_event(&event(half)).await.unwrap();
            assert_eq!(books(b, &account).await, (500, 500), "{}", b.name);
            // Actions complete and spend every spendable credit.
            let task = started(b, &account, 500).await;
            settled(b, &task, true).await;
            b.billing.apply_payment_event(&refund).await.unwrap();
        }
        assert_eq!(
            books(b, &account).await,
            (0, 0),
            "{}: after the refund (refund first: {refund_first})",
            b.name
        );
        b.billing
            .apply_payment_event(&event(closed(payment, won)))
            .await
            .unwrap();
        assert_eq!(
            books(b, &account).await,
            (0, 0),
            "{}: won {won}, refund first: {refund_first}",
            b.name
        );
    }
}

/// A claim is made of the credits in flight when its dispute opened: once those are spent (the
/// action completed), it is gone, and an action begun later on another payment's credits
/// serves that payment's dispute, not the older one's.
pub async fn a_claim_ends_with_the_credits_in_flight_it_was_made_of(b: &Backend) {
    let (a, payments) = bought(b, "claim-ends@example.com", 1).await;
    let first = started(b, &a, 1000).await;
    b.billing
        .apply_payment_event(&event(opened(&payments[0])))
        .await
        .unwrap();
    settled(b, &first, true).await;
    // Credits from elsewhere (a grant), spent on an action that fails, come back spendable: the
    // claim went with the credits the completed action spent.
    b.ledger
        .grant(&svc_ports::Grant {
            id: svc_ports::LedgerEntryId::from_ulid(Ulid::new()),
            account_id: a.clone(),
            amount: svc_ports::CreditAmount::new(500).unwrap(),
            reference: None,
            memo: "goodwill".into(),
            at: t0(),
        })
        .await
        .unwrap();
    let granted = started(b, &a, 500).await;
    settled(b, &granted, false).await;
    assert_eq!(books(b, &a).await, (500, 0), "{}", b.name);
    let c = checkout(&a, None);
    b.billing.insert_checkout(&c).await.unwrap();
    let later = format!("pay_{}", Ulid::new());
    b.billing
        .apply_payment_event(&event(paid(&c, &later)))
        .await
        .unwrap();
    let second = started(b, &a, 1000).await;
    b.billing
        .apply_payment_event(&event(opened(&later)))
        .await
        .unwrap();
    settled(b, &second, false).await;
    assert_eq!(books(b, &a).await, (500, 1000), "{}", b.name);
    // The first payment's dispute won: none of the frozen credits are its own.
    b.billing
        .apply_payment_event(&event(closed(&payments[0], true)))
        .await
        .unwrap();
    assert_eq!(books(b, &a).await, (500, 1000), "{}", b.name);
    b.billing
        .apply_payment_event(&event(closed(&later, false)))
        .await
        .unwrap();
    assert_eq!(books(b, &a).await, (500, 0), "{}", b.name);
}

/// A second settlement of a task already settled (recovery settled it first) changes nothing:
/// not the claim its first settlement served.
pub async fn a_late_settlement_leaves_the_claims_alone(b: &Backend) {
    let (a, payments) = bought(b, "late-settlement@example.com", 1).await;
    let first = started(b, &a, 600).await;
    let second = started(b, &a, 400).await;
    b.billing
        .apply_payment_event(&event(opened(&payments[0])))
        .await
        .unwrap();
    settled(b, &first, false).await;
    assert_eq!(books(b, &a).await, (0, 600), "{}", b.name);
    let again = b
        .tasks
        .settle_task(&settlement(&first, false, t0()))
        .await
        .unwrap();
    assert!(
        matches!(again, SettleOutcome::AlreadySettled(_)),
        "{}: {again:?}",
        b.name
    );
    settled(b, &second, false).await;
    assert_eq!(books(b, &a).await, (0, 1000), "{}", b.name);
}

/// What each of `payments`' disputes got frozen from the account's failed actions.
async fn frozen_by_actions(b: &Backend, a: &svc_ports::AccountId, payments: &[String]) -> Vec<i64> {
    let receipts = b.billing.receipts(a, 100).await.unwrap();
    payments
        .iter()
        .map(|p| {
            receipts
                .iter()
                .filter(|r| {
                    r.payment_id.as_ref() == Some(p) && r.kind == ReceiptKind::DisputeFreeze
                })
                .map(|r| r.frozen_delta)
                .sum()
        })
        .collect()
}

/// Two claims on the same actions: one completing spends part of what they were made of, and
/// the newest claim shrinks by that much (not the oldest, not to nothing); the failing one
/// then serves both, the oldest first.
pub async fn an_action_that_completes_shrinks_the_newest_claim_by_what_it_spent(b: &Backend) {
    let (a, payments) = bought(b, "newest-shrinks@example.com", 2).await;
    let spends = started(b, &a, 600).await;
    let fails = started(b, &a, 1400).await;
    for (n, p) in payments.iter().enumerate() {
        let mut e = event(opened(p));
        // The first payment's claim is the older one, whatever its id.
        e.received_at = t0() + Duration::seconds(n as i64);
        b.billing.apply_payment_event(&e).await.unwrap();
    }
    assert_eq!(books(b, &a).await, (0, 0), "{}", b.name);
    // 1400 left in flight: the older claim keeps its 1000, the newer one is cut to 400.
    settled(b, &spends, true).await;
    settled(b, &fails, false).await;
    assert_eq!(books(b, &a).await, (0, 1400), "{}", b.name);
    assert_eq!(
        frozen_by_actions(b, &a, &payments).await,
        [1000, 400],
        "{}",
        b.name
    );
    // The older dispute lost takes its 1000; the newer one won gives its 400 back.
    b.billing
        .apply_payment_event(&event(closed(&payments[0], false)))
        .await
        .unwrap();
    b.billing
        .apply_payment_event(&event(closed(&payments[1], true)))
        .await
        .unwrap();
    assert_eq!(books(b, &a).await, (400, 0), "{}", b.name);
}

/// Claims made within one millisecond are served in the order of their payment ids on every
/// store, whatever finer time each event came at: the stores keep milliseconds.
pub async fn claims_made_within_one_millisecond_are_served_in_payment_id_order(b: &Backend) {
    let (a, mut payments) = bought(b, "one-millisecond@example.com", 2).await;
    payments.sort();
    let spends = started(b, &a, 1000).await;
    let fails = started(b, &a, 1000).await;
    // The payment whose id sorts last disputes first, 800 microseconds earlier.
    for (p, micros) in [(&payments[1], 100), (&payments[0], 900)] {
        let mut e = event(opened(p));
        e.received_at = t0() + Duration::microseconds(micros);
        b.billing.apply_payment_event(&e).await.unwrap();
    }
    // 1000 left in flight: the claim served first keeps it; the failure then serves it.
    settled(b, &spends, true).await;
    settled(b, &fails, false).await;
    assert_eq!(books(b, &a).await, (0, 1000), "{}", b.name);
    assert_eq!(
        frozen_by_actions(b, &a, &payments).await,
        [1000, 0],
        "{}",
        b.name
    );
}

/// Payment A is disputed in full (its 1000 frozen) while payment B's 1000 are spent; then B is
/// refunded and A's dispute closes, in either order. Refunded first, B's 1000 cannot be taken
/// back (nothing spendable) and are written off as spent, but as a lien on A's frozen credits:
/// won, A's release pays it back (a `recovery:` receipt of B's); lost, the credits are gone
/// either way. Both orders end with nothing, and the lien never reaches a later purchase. A
/// review found the won dispute handing back 1000 credits the refund had written off.
pub async fn a_write_off_during_another_payments_dispute_is_paid_back_by_its_release(b: &Backend) {
    for (won, refund_first) in [(true, true), (true, false), (false, true), (false, false)] {
        let (account, payments) =
            bought(b, &format!("lien-{won}-{refund_first}@example.com"), 2).await;
        let (a, bee) = (&payments[0], &payments[1]);
        let mut events = vec![event(opened(a))];
        b.billing.apply_payment_event(&events[0]).await.unwrap();
        let task = started(b, &account, 1000).await;
        settled(b, &task, true).await;
        assert_eq!(books(b, &account).await, (0, 1000), "{}", b.name);
        let refund = event(refunded(bee, "re_1", 900));
        let close = event(closed(a, won));
        if refund_first {
            events.extend([refund, close]);
        } else {
            events.extend([close, refund]);
        }
        let case = format!("{}: won {won}, refund first {refund_first}", b.name);
        b.billing.apply_payment_event(&events[1]).await.unwrap();
        // Refunded first, the write-off is a lien on the 1000 credits the dispute holds.
        let liens: Vec<_> = (b.billing.liens(&account).await.unwrap().into_iter())
            .map(|l| (l.reference, l.payment_id, l.kind, l.credits))
            .collect();
        let expected = if refund_first {
            vec![(
                format!("payment:{bee}:refund:re_1"),
                bee.clone(),
                ReceiptKind::RefundClawback,
                1000,
            )]
        } else {
            Vec::new()
        };
        assert_eq!(liens, expected, "{case}");
        b.billing.apply_payment_event(&events[2]).await.unwrap();
        assert_eq!(books(b, &account).await, (0, 0), "{case}");
        assert!(
            b.billing.liens(&account).await.unwrap().is_empty(),
            "{case}"
        );
        let receipts = b.billing.receipts(&account, 100).await.unwrap();
        let recoveries: Vec<_> = receipts
            .iter()
            .filter(|r| r.reference.starts_with("recovery:"))
            .map(|r| {
                (
                    r.kind,
                    r.payment_id.as_deref(),
                    r.spendable_delta,
                    r.frozen_delta,
                )
            })
            .collect();
        let expected = if won && refund_first {
            vec![(ReceiptKind::RefundClawback, Some(bee.as_str()), -1000, 0)]
        } else {
            Vec::new()
        };
        assert_eq!(recoveries, expected, "{case}");
        // Every event again, as a provider redelivers them under new ids: nothing moves.
        for e in &events {
            let again = PaymentEvent {
                webhook_id: format!("msg_{}", Ulid::new()),
                ..e.clone()
            };
            b.billing.apply_payment_event(&again).await.unwrap();
        }
        // A later payment, refunded in part, disputed and won: its credits are all its own.
        let later = checkout(&account, None);
        b.billing.insert_checkout(&later).await.unwrap();
        let c = format!("pay_{}", Ulid::new());
        for fact in [
            paid(&later, &c),
            opened(&c),
            refunded(&c, "re_2", 450),
            closed(&c, true),
        ] {
            b.billing.apply_payment_event(&event(fact)).await.unwrap();
        }
        assert_eq!(
            books(b, &account).await,
            (500, 0),
            "{case}: a later payment"
        );
    }
}

/// Three payments of 1000 credits: payment 3's dispute freezes 500, the rest is spent, and
/// payment 2's refund of 540 (600 credits) writes off 600, 500 of them a lien on payment 3's
/// frozen credits. Payment 1's disputes a and b open with nothing spendable, so they freeze
/// nothing; b is lost (300 written off), then a is won. A froze nothing, so its close moves
/// nothing; payment 3's release then pays payment 2's lien whole. The store re-planned a's
/// opening without b's, saw b's 300 as owned again, released them on a's close and paid the
/// lien with them: the account ended with 300 credits it never had.
pub async fn a_dispute_that_froze_nothing_releases_nothing_when_won(b: &Backend) {
    let (account, payments) = bought(b, "froze-nothing@example.com", 3).await;
    let dispute = |p: usize, d: &str, amount| PaymentFact::DisputeOpened {
        payment_id: payments[p].clone(),
        dispute_id: d.into(),
        amount,
    };
    let close = |p: usize, d: &str, won| PaymentFact::DisputeClosed {
        payment_id: payments[p].clone(),
        dispute_id: d.into(),
        won,
    };
    let apply = |fact| async move { b.billing.apply_payment_event(&event(fact)).await.unwrap() };
    apply(dispute(2, "dp_e", 450)).await;
    for cost in [1000, 1000, 500] {
        let task = started(b, &account, cost).await;
        settled(b, &task, true).await;
    }
    assert_eq!(books(b, &account).await, (0, 500), "{}", b.name);
    apply(refunded(&payments[1], "re_q", 540)).await;
    apply(dispute(0, "dp_a", 270)).await;
    apply(dispute(0, "dp_b", 270)).await;
    apply(close(0, "dp_b", false)).await;
    let won = apply(close(0, "dp_a", true)).await;
    assert!(
        matches!(won, EventOutcome::Acknowledged),
        "{}: {won:?}",
        b.name
    );
    assert_eq!(books(b, &account).await, (0, 500), "{}", b.name);
    apply(close(2, "dp_e", true)).await;
    assert_eq!(books(b, &account).await, (0, 0), "{}", b.name);
    let written_off: i64 = b
        .billing
        .receipts(&account, 100)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.payment_id.as_deref() == Some(payments[0].as_str()))
        .map(|r| r.shortfall)
        .sum();
    assert_eq!(written_off, 300, "{}", b.name);
}
