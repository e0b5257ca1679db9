//! Re-freeze liens: what a payment's open disputes could not freeze while another payment's
//! dispute held credits frozen, frozen again by that dispute's release (`liens.rs`). Each case
//! is checked against the order where the release came first: both must end alike.

use super::*;

fn lien(reference: &str, payment: &str, kind: ReceiptKind, credits: i64, since: i64) -> Lien {
    Lien {
        reference: reference.into(),
        payment_id: payment.into(),
        kind,
        credits,
        since: DateTime::from_timestamp_millis(since).unwrap(),
    }
}

fn refreeze(reference: &str, payment: &str, credits: i64, since: i64) -> Lien {
    lien(
        reference,
        payment,
        ReceiptKind::DisputeFreeze,
        credits,
        since,
    )
}

fn applied(reference: &str, spendable: i64, frozen: i64) -> AppliedMovement {
    AppliedMovement {
        reference: reference.into(),
        spendable_delta: spendable,
        frozen_delta: frozen,
        shortfall: 0,
    }
}

fn moves_of(plan: PaymentPlan) -> (Vec<Movement>, Option<Vec<Lien>>, Option<i64>) {
    let PaymentPlan::Moves {
        moves,
        liens,
        freeze_claim,
        ..
    } = plan
    else {
        panic!("{plan:?}")
    };
    (moves, liens, freeze_claim)
}

/// 300 spendable of the payment's 1000 when a dispute of half of it opens: 200 short. While
/// another payment's dispute holds credits frozen, the part no action in flight may give back
/// is a re-freeze lien, at most what those credits cover.
#[test]
fn a_dispute_short_of_spendable_beside_another_frozen_dispute_is_a_refreeze_lien() {
    let c = checkout();
    let events = [paid(&c), opened("dp_1", 450)];
    let reference = "payment:pay_1:dispute:dp_1:freeze:refreeze";
    for (unclaimed, other_frozen, want) in [
        (0, 1000, 200),
        (150, 1000, 50),
        (300, 1000, 0),
        (0, 120, 120),
    ] {
        let plan = super::super::plan_payment(
            &events,
            std::slice::from_ref(&c),
            &[purchase()],
            300,
            unclaimed,
            None,
            &books(other_frozen, Vec::new()),
        );
        let (moves, liens, claim) = moves_of(plan);
        assert_eq!(moves[0].frozen_delta, 300);
        // The claim on the actions in flight is the whole 200; the store holds it to them.
        assert_eq!(claim, Some(200));
        let want = (want > 0).then(|| vec![refreeze(reference, "pay_1", want, 7)]);
        assert_eq!(
            liens, want,
            "unclaimed {unclaimed}, other frozen {other_frozen}"
        );
    }

    // Nothing spendable: nothing moves, the step waits for the payment's next event, and the
    // lien is made once however often it is planned.
    let plan = |open: Vec<Lien>| {
        super::super::plan_payment(
            &events,
            std::slice::from_ref(&c),
            &[purchase()],
            0,
            0,
            None,
            &books(1000, open),
        )
    };
    let (moves, liens, _) = moves_of(plan(Vec::new()));
    assert!(moves.is_empty());
    let made = vec![refreeze(reference, "pay_1", 500, 7)];
    assert_eq!(liens, Some(made.clone()));
    let (_, again, _) = moves_of(plan(made));
    assert_eq!(again, None);
}

/// Another payment's release pays the re-freeze lien in its turn, oldest first, with a
/// `dispute_freeze` movement of the lien's payment inside its own books.
#[test]
fn another_payments_release_freezes_again_what_a_dispute_lacks() {
    let c = checkout();
    let open = vec![
        refreeze(
            "payment:pay_2:dispute:dp_2:freeze:refreeze",
            "pay_2",
            600,
            0,
        ),
        lien(
            "payment:pay_3:refund:re_3",
            "pay_3",
            ReceiptKind::RefundClawback,
            900,
            1,
        ),
    ];
    let plan = super::super::plan_payment(
        &[paid(&c), opened("dp_1", 900), closed("dp_1", true)],
        std::slice::from_ref(&c),
        &[
            purchase(),
            applied("payment:pay_1:dispute:dp_1:freeze", -1000, 1000),
        ],
        0,
        0,
        None,
        &books(1500, open),
    );
    let (moves, liens, _) = moves_of(plan);
    let got: Vec<(&str, i64, i64, Option<&str>, ReceiptKind)> = moves
        .iter()
        .map(|m| {
            (
                m.reference.as_str(),
                m.spendable_delta,
                m.frozen_delta,
                m.of_payment.as_deref(),
                m.kind,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "payment:pay_1:dispute:dp_1:release",
                1000,
                -1000,
                None,
                ReceiptKind::DisputeRelease
            ),
            (
                "payment:pay_2:dispute:dp_2:freeze:refreeze:payment:pay_1:dispute:dp_1:release",
                -600,
                600,
                Some("pay_2"),
                ReceiptKind::DisputeFreeze
            ),
            (
                "recovery:payment:pay_3:refund:re_3:payment:pay_1:dispute:dp_1:release",
                -400,
                0,
                Some("pay_3"),
                ReceiptKind::RefundClawback
            ),
        ]
    );
    assert!(crate::billing::in_payment_books(&moves[1].reference));
    assert_eq!(
        liens,
        Some(vec![lien(
            "payment:pay_3:refund:re_3",
            "pay_3",
            ReceiptKind::RefundClawback,
            500,
            1
        )])
    );
}

/// A payment's own release ends its re-freeze liens (its disputes lack nothing once they
/// release) and never pays them: that would freeze again what it just released.
#[test]
fn a_payments_own_release_ends_its_refreeze_lien_and_never_pays_it() {
    let c = checkout();
    let open = vec![
        refreeze(
            "payment:pay_1:dispute:dp_1:freeze:refreeze",
            "pay_1",
            200,
            1,
        ),
        lien(
            "payment:pay_3:refund:re_3",
            "pay_3",
            ReceiptKind::RefundClawback,
            100,
            2,
        ),
    ];
    let plan = super::super::plan_payment(
        &[paid(&c), opened("dp_1", 450), closed("dp_1", true)],
        std::slice::from_ref(&c),
        &[
            purchase(),
            applied("payment:pay_1:dispute:dp_1:freeze", -300, 300),
        ],
        0,
        0,
        None,
        &books(1300, open),
    );
    let (moves, liens, _) = moves_of(plan);
    let got: Vec<(&str, i64)> = moves
        .iter()
        .map(|m| (m.reference.as_str(), m.spendable_delta))
        .collect();
    assert_eq!(
        got,
        [
            ("payment:pay_1:dispute:dp_1:release", 300),
            (
                "recovery:payment:pay_3:refund:re_3:payment:pay_1:dispute:dp_1:release",
                -100
            ),
        ]
    );
    assert_eq!(liens, Some(Vec::new()));
}

/// A refund that takes its own dispute's frozen credits, and writes off the rest, while
/// another dispute holds 1000 frozen: the write-off's lien comes first, then the re-freeze,
/// as a release that came first would have paid the refund before the dispute froze.
#[test]
fn a_refund_that_takes_its_own_disputes_frozen_credits_makes_a_refreeze_lien() {
    let c = checkout();
    let plan = super::super::plan_payment(
        &[paid(&c), opened("dp_1", 450), refund("re_1", 450)],
        std::slice::from_ref(&c),
        &[
            purchase(),
            applied("payment:pay_1:dispute:dp_1:freeze", -200, 200),
        ],
        0,
        0,
        None,
        &books(1200, Vec::new()),
    );
    let (moves, liens, _) = moves_of(plan);
    assert_eq!(
        (moves[0].frozen_delta, moves[0].shortfall),
        (-200, 300),
        "{moves:?}"
    );
    assert_eq!(
        liens,
        Some(vec![
            lien(
                "payment:pay_1:refund:re_1",
                "pay_1",
                ReceiptKind::RefundClawback,
                300,
                7
            ),
            refreeze("payment:pay_1:refund:re_1:refreeze", "pay_1", 500, 7),
        ])
    );
}

/// Liens of one payment never exceed what other payments hold frozen: its own frozen credits
/// cannot pay them.
#[test]
fn a_payments_liens_stay_within_what_others_hold_frozen() {
    let mut l = books(
        900,
        vec![
            refreeze("payment:pay_1:x:refreeze", "pay_1", 500, 1),
            refreeze("payment:pay_2:x:refreeze", "pay_2", 300, 2),
        ],
    );
    // pay_1 holds 600 of the 900: its liens are held to 300.
    l.cap("pay_1", 600);
    assert_eq!(
        l.open,
        [
            refreeze("payment:pay_1:x:refreeze", "pay_1", 300, 1),
            refreeze("payment:pay_2:x:refreeze", "pay_2", 300, 2),
        ]
    );
    // pay_2 holds 800 (the store says so): 100 is left to cover its lien.
    l.frozen_of.insert("pay_2".into(), 800);
    l.cap("pay_1", 100);
    assert_eq!(
        l.open,
        [
            refreeze("payment:pay_1:x:refreeze", "pay_1", 300, 1),
            refreeze("payment:pay_2:x:refreeze", "pay_2", 100, 2),
        ]
    );
}

/// Payment 2's dispute is lost while payment 1's re-freeze lien stands on its frozen credits:
/// the cover is gone, and so is the lien, though payment 1 still holds credits frozen itself.
/// Had the dispute been lost first, payment 1's dispute would have opened short with nothing
/// to re-freeze it.
#[test]
fn a_lost_dispute_ends_the_liens_it_covered_whatever_else_is_frozen() {
    let c = checkout();
    let pay_2 = |e: PaymentFact| match e {
        PaymentFact::DisputeOpened {
            dispute_id, amount, ..
        } => PaymentFact::DisputeOpened {
            payment_id: "pay_2".into(),
            dispute_id,
            amount,
        },
        PaymentFact::DisputeClosed {
            dispute_id, won, ..
        } => PaymentFact::DisputeClosed {
            payment_id: "pay_2".into(),
            dispute_id,
            won,
        },
        other => other,
    };
    let mut c2 = c.clone();
    c2.id = CheckoutId::from_ulid(Ulid::from_parts(2, 1));
    let paid_2 = PaymentFact::Paid {
        payment_id: "pay_2".into(),
        checkout_id: c2.id.clone(),
        amount: c2.amount,
        currency: c2.currency.clone(),
    };
    let mut open = books(
        1300,
        vec![refreeze(
            "payment:pay_1:dispute:dp_1:freeze:refreeze",
            "pay_1",
            700,
            1,
        )],
    );
    // pay_1 froze 300 of its 1000; pay_2 holds its whole 1000 frozen.
    open.frozen_of.insert("pay_1".into(), 300);
    let plan = super::super::plan_payment(
        &[
            paid_2,
            pay_2(opened("dp_2", 900)),
            pay_2(closed("dp_2", false)),
        ],
        std::slice::from_ref(&c2),
        &[
            AppliedMovement {
                reference: "payment:pay_2:purchase".into(),
                ..purchase()
            },
            applied("payment:pay_2:dispute:dp_2:freeze", -1000, 1000),
        ],
        0,
        0,
        None,
        &open,
    );
    let (moves, liens, _) = moves_of(plan);
    assert_eq!(moves[0].frozen_delta, -1000);
    assert_eq!(liens, Some(Vec::new()));
}
