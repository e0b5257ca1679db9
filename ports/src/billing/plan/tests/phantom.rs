//! A dispute opening that moved nothing (spendable was 0, so it has no receipt) whose closing
//! was recorded (a lost dispute writes off what it takes): the payment's next event re-plans
//! the openings still without a receipt, and the target of a step before that opening counts
//! the recorded closing without its opening, so it sees the lost credits as still owned.
//!
//! A review reported receipts that cancel out (a freeze with no spendable change, then its
//! undoing), and phantom releases that pay other payments' liens.

use std::collections::HashMap;

use chrono::DateTime;

use super::{Step, checkout, closed, opened, paid, replay_steps};
use crate::billing::{
    AppliedMovement, CheckoutRecord, Lien, Liens, Movement, PaymentFact, PaymentPlan,
    in_payment_books,
};

/// The shape no receipt but the purchase may have: raising what the payment owns.
fn creates_credits(m: &Movement) -> bool {
    in_payment_books(&m.reference)
        && !m.reference.ends_with(":purchase")
        && m.spendable_delta + m.frozen_delta - m.shortfall > 0
}

/// One payment, 1000 credits all spent; dispute a (450 of 900: 500 credits) and b (270: 300)
/// open while nothing is spendable, so neither freezes anything; b is lost (a write-off of
/// 300), and its closing is delivered again.
#[test]
fn a_redelivered_closing_of_a_dispute_that_froze_nothing_changes_nothing() {
    let c = checkout();
    let steps = [
        Step::Event(paid(&c)),
        Step::Spend(1000),
        Step::Event(opened("dp_a", 450)),
        Step::Event(opened("dp_b", 270)),
        Step::Event(closed("dp_b", false)),
    ];
    let (s, f, first, outcomes, _) = replay_steps(&steps, 0);
    assert_eq!(outcomes, ["moves:1", "moves:0", "moves:0", "moves:1"]);
    assert_eq!((s, f), (0, 0));
    let forfeit = &first[1];
    assert_eq!(
        (
            forfeit.reference.as_str(),
            forfeit.spendable_delta,
            forfeit.frozen_delta,
            forfeit.shortfall
        ),
        ("payment:pay_1:dispute:dp_b:forfeit", 0, 0, 300)
    );

    let mut again = steps.to_vec();
    again.push(Step::Event(closed("dp_b", false)));
    let (s2, f2, all, _, _) = replay_steps(&again, 0);
    let later: Vec<(&str, i64, i64, i64)> = all[first.len()..]
        .iter()
        .map(|m| {
            (
                m.reference.as_str(),
                m.spendable_delta,
                m.frozen_delta,
                m.shortfall,
            )
        })
        .collect();
    assert!(
        !all.iter().any(creates_credits),
        "a receipt raises what the payment owns: {later:?}"
    );
    assert!(later.is_empty(), "the redelivered closing moved: {later:?}");
    assert_eq!((s2, f2), (s, f));
}

/// A few payments of one account, applied one event at a time as the stores do: each
/// payment's own receipts fed back, the account's frozen credits and liens read before and
/// kept after.
struct Account {
    checkout: CheckoutRecord,
    spendable: i64,
    /// (payment the receipt is of, movement)
    receipts: Vec<(String, Movement)>,
    liens: Vec<Lien>,
    facts: HashMap<String, Vec<PaymentFact>>,
    clock: i64,
}

impl Account {
    fn new() -> Self {
        Self {
            checkout: checkout(),
            spendable: 0,
            receipts: Vec::new(),
            liens: Vec::new(),
            facts: HashMap::new(),
            clock: 0,
        }
    }

    fn frozen(&self) -> i64 {
        self.receipts.iter().map(|(_, m)| m.frozen_delta).sum()
    }

    fn spend(&mut self, n: i64) {
        self.spendable -= n.min(self.spendable);
    }

    /// Applies one event; the movements it brought.
    fn event(&mut self, fact: PaymentFact) -> Vec<Movement> {
        let payment = match &fact {
            PaymentFact::Paid { payment_id, .. }
            | PaymentFact::Refunded { payment_id, .. }
            | PaymentFact::DisputeOpened { payment_id, .. }
            | PaymentFact::DisputeClosed { payment_id, .. } => payment_id.clone(),
            _ => unreachable!(),
        };
        self.clock += 1;
        let known = self.facts.entry(payment.clone()).or_default();
        known.push(fact);
        let known = known.clone();
        let applied: Vec<AppliedMovement> = self
            .receipts
            .iter()
            .filter(|(p, m)| *p == payment && in_payment_books(&m.reference))
            .map(|(_, m)| AppliedMovement {
                reference: m.reference.clone(),
                spendable_delta: m.spendable_delta,
                frozen_delta: m.frozen_delta,
                shortfall: m.shortfall,
            })
            .collect();
        let books = Liens {
            frozen: self.frozen(),
            open: self.liens.clone(),
            at: DateTime::from_timestamp_millis(self.clock).unwrap(),
        };
        let plan = crate::billing::plan_payment(
            &known,
            std::slice::from_ref(&self.checkout),
            &applied,
            self.spendable,
            0,
            None,
            &books,
        );
        let PaymentPlan::Moves { moves, liens, .. } = plan else {
            panic!("{plan:?}")
        };
        for m in &moves {
            self.spendable += m.spendable_delta;
            assert!(self.spendable >= 0, "{m:?}");
            let of = m.of_payment.clone().unwrap_or_else(|| payment.clone());
            self.receipts.push((of, m.clone()));
        }
        assert!(self.frozen() >= 0);
        if let Some(l) = liens {
            self.liens = l;
        }
        moves
    }
}

fn fact(payment: &str, f: PaymentFact) -> PaymentFact {
    match f {
        PaymentFact::Paid {
            checkout_id,
            amount,
            currency,
            ..
        } => PaymentFact::Paid {
            payment_id: payment.into(),
            checkout_id,
            amount,
            currency,
        },
        PaymentFact::Refunded {
            refund_id, amount, ..
        } => PaymentFact::Refunded {
            payment_id: payment.into(),
            refund_id,
            amount,
        },
        PaymentFact::DisputeOpened {
            dispute_id, amount, ..
        } => PaymentFact::DisputeOpened {
            payment_id: payment.into(),
            dispute_id,
            amount,
        },
        PaymentFact::DisputeClosed {
            dispute_id, won, ..
        } => PaymentFact::DisputeClosed {
            payment_id: payment.into(),
            dispute_id,
            won,
        },
        other => other,
    }
}

fn brief(moves: &[Movement]) -> Vec<(String, i64, i64, i64)> {
    moves
        .iter()
        .map(|m| {
            (
                m.reference.clone(),
                m.spendable_delta,
                m.frozen_delta,
                m.shortfall,
            )
        })
        .collect()
}

/// Three payments of 1000 credits: pay_3's dispute freezes 500; everything else is spent;
/// pay_2's refund of 540 (600 credits) writes off 600, 500 of them a lien on pay_3's frozen
/// credits. pay_1's disputes a and b open with nothing spendable (nothing frozen), b is lost
/// (300 written off), then a is won: a froze nothing, so it can release nothing and pay no
/// lien. When pay_3's dispute is won, its 500 pay pay_2's lien back whole.
#[test]
fn a_won_dispute_that_froze_nothing_releases_nothing_and_pays_no_lien() {
    let c = checkout();
    let mut a = Account::new();
    for p in ["pay_1", "pay_2", "pay_3"] {
        a.event(fact(p, paid(&c)));
    }
    a.event(fact("pay_3", opened("dp_e", 450)));
    assert_eq!((a.spendable, a.frozen()), (2500, 500));
    a.spend(2500);
    a.event(fact("pay_2", super::refund("re_q", 540)));
    assert_eq!(a.liens.len(), 1);
    assert_eq!(
        (a.liens[0].reference.as_str(), a.liens[0].credits),
        ("payment:pay_2:refund:re_q", 500)
    );

    assert!(a.event(fact("pay_1", opened("dp_a", 270))).is_empty());
    assert!(a.event(fact("pay_1", opened("dp_b", 270))).is_empty());
    let lost = a.event(fact("pay_1", closed("dp_b", false)));
    assert_eq!(
        brief(&lost),
        [("payment:pay_1:dispute:dp_b:forfeit".to_string(), 0, 0, 300)]
    );
    let liens_before = a.liens.clone();

    let won = a.event(fact("pay_1", closed("dp_a", true)));
    assert!(
        !won.iter().any(creates_credits),
        "a receipt raises what pay_1 owns: {:?}",
        brief(&won)
    );
    assert!(
        won.iter().all(|m| m.of_payment.is_none()),
        "a release of credits never frozen paid a lien: {:?}",
        brief(&won)
    );
    assert!(won.is_empty(), "dispute a froze nothing: {:?}", brief(&won));
    assert_eq!(a.liens, liens_before);
    let written_off: i64 = a
        .receipts
        .iter()
        .filter(|(p, _)| p == "pay_1")
        .map(|(_, m)| m.shortfall)
        .sum();
    assert_eq!(written_off, 300, "pay_1 lost 300 credits once");

    a.event(fact("pay_3", closed("dp_e", true)));
    // Nothing spendable was ever given back: pay_3's 500 all went to pay_2's lien.
    assert_eq!((a.spendable, a.frozen()), (0, 0));
    assert!(a.liens.is_empty());
}
