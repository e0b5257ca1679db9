//! An event the credited payment already has, delivered again under a new id: nothing is
//! planned. A dispute that opened with nothing spendable moved nothing and has no receipt; its
//! opening delivered again after another payment's credits arrived froze those, where the
//! same opening delivered once did not (the order property found the books differing by 153
//! credits between two orders, one of which had re-planned it).

use super::{checkout, opened, paid, plan_payment, purchase, refund};
use crate::billing::{AppliedMovement, PaymentPlan};

/// What the payment's events call for, as movements.
fn moves(plan: PaymentPlan) -> Vec<(i64, i64)> {
    match plan {
        PaymentPlan::Moves { moves, .. } => moves
            .iter()
            .map(|m| (m.spendable_delta, m.frozen_delta))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_dispute_opening_delivered_again_freezes_nothing_that_arrived_since() {
    let c = checkout();
    let facts = [paid(&c), opened("dp_1", 450)];
    // Opened with everything spent: nothing frozen, nothing recorded.
    let first = plan_payment(&facts, std::slice::from_ref(&c), &[purchase()], 0, 0, None);
    assert_eq!(moves(first), []);
    // The same opening again, with 1000 credits of another payment spendable.
    let again = [paid(&c), opened("dp_1", 450), opened("dp_1", 450)];
    let plan = plan_payment(
        &again,
        std::slice::from_ref(&c),
        &[purchase()],
        1000,
        0,
        None,
    );
    assert_eq!(moves(plan.clone()), []);
    let PaymentPlan::Moves {
        freeze_claim,
        liens,
        ..
    } = plan
    else {
        unreachable!()
    };
    // The claim and the liens stand as they were.
    assert_eq!((freeze_claim, liens), (None, None));
    // A new event of the payment is planned, and the opening with it (the rule of a step
    // without a receipt): the refund takes its share and the dispute freezes its own.
    let refunded = [paid(&c), opened("dp_1", 450), refund("re_1", 90)];
    let plan = plan_payment(
        &refunded,
        std::slice::from_ref(&c),
        &[purchase()],
        1000,
        0,
        None,
    );
    assert_eq!(moves(plan), [(-500, 500), (-100, 0)]);
}

#[test]
fn the_payment_announced_again_plans_nothing_once_credited() {
    let c = checkout();
    let facts = [paid(&c), opened("dp_1", 450), paid(&c)];
    let plan = plan_payment(
        &facts,
        std::slice::from_ref(&c),
        &[purchase()],
        1000,
        0,
        None,
    );
    assert_eq!(moves(plan), []);
    // Not yet credited (the first announcement came before its checkout was known), the
    // second one credits it.
    let plan = plan_payment(&facts, std::slice::from_ref(&c), &[], 0, 0, None);
    assert_eq!(moves(plan), [(1000, 0), (-500, 500)]);
}

#[test]
fn a_refund_or_closing_delivered_again_plans_nothing() {
    let c = checkout();
    // Everything spent: the dispute froze nothing, the refund wrote its 100 credits off.
    let written_off = AppliedMovement {
        reference: "payment:pay_1:refund:re_1".into(),
        spendable_delta: 0,
        frozen_delta: 0,
        shortfall: 100,
    };
    let applied = [purchase(), written_off];
    let facts = [
        paid(&c),
        opened("dp_1", 450),
        refund("re_1", 90),
        refund("re_1", 90),
    ];
    let plan = plan_payment(&facts, std::slice::from_ref(&c), &applied, 1000, 0, None);
    assert_eq!(moves(plan), []);
    let closed = super::closed("dp_2", true);
    let facts = [
        paid(&c),
        opened("dp_1", 450),
        opened("dp_2", 90),
        closed.clone(),
        closed,
    ];
    let plan = plan_payment(
        &facts,
        std::slice::from_ref(&c),
        &[purchase()],
        1000,
        0,
        None,
    );
    assert_eq!(moves(plan), []);
}
