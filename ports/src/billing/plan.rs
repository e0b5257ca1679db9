//! What a payment's verified events mean for the account, worked out the same way by every store.
//!
//! Each event is judged on its own (`judge.rs`): a payment event (`checkout.completed`,
//! `payment.succeeded`) counts only when the checkout it names exists and its amount and
//! currency match that checkout. The first payment event that passes establishes the payment;
//! one that fails is refused with its reason and never stands in the way of a later valid one.
//!
//! What the payment's credits should be is a pure function of the *set* of its events (the
//! target, `target.rs`): refunds and lost disputes take their share of the credits, open disputes freeze
//! their share. Movements bring what was applied so far (read back from the receipts) to that
//! target, one receipt per event that moved something, so the books end the same whatever the
//! order, duplication or interleaving of the events. Credits never go below zero: what should
//! have been taken back but is not spendable is recorded as a shortfall. The part of a
//! shortfall that actions in flight hold is owed: the store spreads it over those actions, and
//! each pays its share if it fails and gives its credits back (see `ledger::spread_owed`); the rest
//! was spent. Likewise what open disputes should freeze but spendable cannot cover: the store
//! keeps it as a claim on the credits in flight (`PaymentPlan::Moves::freeze_claim`), and what
//! a failing action gives back is frozen for it.

use std::collections::HashSet;

use chrono::SubsecRound;

use super::{
    AppliedMovement, CheckoutRecord, Movement, PaymentFact, RECOVERY_PREFIX, ReceiptKind,
    judge::judge_paid,
    liens::{Lien, Liens},
    target::target,
};

/// What a payment's events call for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentPlan {
    /// No valid payment event yet (only refunds, disputes or refused payment events): wait.
    Pending,
    /// The newest event is a payment event that cannot be credited, or an event of a payment
    /// that never will be (its checkout was bought by another): why. Nothing moves.
    Rejected(String),
    /// The payment's checkout, and the movements still to apply, in order (possibly none).
    Moves {
        checkout: Box<CheckoutRecord>,
        moves: Vec<Movement>,
        /// When this event brought something new: what open disputes should have frozen but
        /// spendable could not cover once the movements are applied. The store keeps it as the
        /// payment's claim in place of the earlier one, at most what the account's actions in
        /// flight hold that refunds and other claims do not; the credits failing actions give
        /// back serve the claims, oldest first, until the dispute closes
        /// (`billing::serve_claims`). `None`: nothing new, the claim stands.
        freeze_claim: Option<i64>,
        /// The account's liens once the movements are applied, oldest first, when they
        /// changed (`liens.rs`): the store keeps these in place of the ones it read. `None`:
        /// they stand.
        liens: Option<Vec<Lien>>,
    },
}

/// The order movements are attributed in: the payment first, then refunds and dispute
/// openings in arrival order, each closing right after its opening (whichever came first).
/// Each step carries the receipt kind and reference it is recorded under.
fn steps<'a>(
    paid: &'a PaymentFact,
    facts: &'a [PaymentFact],
    payment_id: &str,
) -> Vec<(&'a PaymentFact, ReceiptKind, String)> {
    let mut out = vec![(
        paid,
        ReceiptKind::Purchase,
        format!("payment:{payment_id}:purchase"),
    )];
    let mut seen = HashSet::new();
    for f in facts {
        match f {
            PaymentFact::Refunded { refund_id, .. } if seen.insert(format!("r{refund_id}")) => {
                out.push((
                    f,
                    ReceiptKind::RefundClawback,
                    format!("payment:{payment_id}:refund:{refund_id}"),
                ));
            }
            PaymentFact::DisputeOpened { dispute_id, .. }
                if seen.insert(format!("d{dispute_id}")) =>
            {
                out.push((
                    f,
                    ReceiptKind::DisputeFreeze,
                    format!("payment:{payment_id}:dispute:{dispute_id}:freeze"),
                ));
                let closing = facts.iter().find(|c| {
                    matches!(c, PaymentFact::DisputeClosed { dispute_id: d, .. } if d == dispute_id)
                });
                if let Some(c @ PaymentFact::DisputeClosed { won, .. }) = closing {
                    let (kind, suffix) = if *won {
                        (ReceiptKind::DisputeRelease, "release")
                    } else {
                        (ReceiptKind::DisputeForfeit, "forfeit")
                    };
                    out.push((
                        c,
                        kind,
                        format!("payment:{payment_id}:dispute:{dispute_id}:{suffix}"),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// Works out what a payment's events call for.
///
/// `facts` are every event of the payment in arrival order, the newest last; `checkouts` the
/// checkouts their payment events name (those that exist); `applied` the movements already
/// recorded for the payment; `spendable` the account's spendable credits now; `unclaimed`
/// its credits held by actions in flight that nothing owes yet (`held - owed`); `bought_by`
/// another payment that already bought the payment's checkout (the one [`super::payment_checkout`]
/// names), read under the same lock as the receipts; `liens` the account's frozen credits and
/// the write-offs they may yet pay back (`liens.rs`).
///
/// Besides the payment's own movements, `moves` holds a `recovery:` movement of another
/// payment for each lien that credits this payment's disputes release pay back, right after
/// the movement that released them.
pub fn plan_payment(
    facts: &[PaymentFact],
    checkouts: &[CheckoutRecord],
    applied: &[AppliedMovement],
    spendable: i64,
    unclaimed: i64,
    bought_by: Option<&str>,
    liens: &Liens,
) -> PaymentPlan {
    let established = facts
        .iter()
        .find(|f| matches!(f, PaymentFact::Paid { .. }) && judge_paid(f, checkouts).is_ok());
    if let Some(newest @ PaymentFact::Paid { payment_id, .. }) = facts.last() {
        let checkout = match judge_paid(newest, checkouts) {
            Ok(c) => c,
            Err(reason) => return PaymentPlan::Rejected(reason),
        };
        if let Some(PaymentFact::Paid { checkout_id, .. }) = established
            && checkout_id != &checkout.id
        {
            return PaymentPlan::Rejected(format!(
                "payment {payment_id} already paid checkout {checkout_id}, not {}",
                checkout.id
            ));
        }
    }
    let Some(paid @ PaymentFact::Paid { payment_id, .. }) = established else {
        return PaymentPlan::Pending;
    };
    let Ok(checkout) = judge_paid(paid, checkouts) else {
        return PaymentPlan::Pending;
    };
    // A checkout's credits are granted once. A second payment naming a checkout another one
    // bought (a provider naming one payment by two ids in its two announcements, or taking a
    // second payment) is refused for a person to look at, unless it was credited already:
    // what it bought is then its own to refund.
    let purchase = format!("payment:{payment_id}:purchase");
    if let Some(other) = bought_by
        && !applied.iter().any(|a| a.reference == purchase)
    {
        return PaymentPlan::Rejected(format!(
            "checkout {} was already paid by payment {other}; its credits are granted once",
            checkout.id
        ));
    }

    // An event the credited payment already has (a redelivery under a new id) plans nothing:
    // planned again, a step that moved nothing would freeze credits that arrived since, so
    // that the books would depend on how often the provider said it.
    if applied.iter().any(|a| a.reference == purchase) && redelivered(facts) {
        return PaymentPlan::Moves {
            checkout: Box::new(checkout.clone()),
            moves: Vec::new(),
            freeze_claim: None,
            liens: None,
        };
    }
    let done: HashSet<&str> = applied.iter().map(|a| a.reference.as_str()).collect();
    // What was applied: credits of this payment still with the customer, and frozen ones.
    let mut owned: i64 = applied
        .iter()
        .map(|a| a.spendable_delta + a.frozen_delta - a.shortfall)
        .sum();
    let mut frozen: i64 = applied.iter().map(|a| a.frozen_delta).sum();
    let mut spendable = spendable.max(0);
    let mut unclaimed = unclaimed.max(0);
    let mut liens = liens.clone();
    let liens_before = liens.open.clone();
    let mut moves = Vec::new();
    let steps = steps(paid, facts, payment_id);
    // The events whose movements are in `owned` and `frozen`; each new step joins them, so a
    // closing that arrives late is judged with the refunds already applied after its opening.
    // A recorded closing was planned with its opening known (a closing follows its opening in
    // `steps`), so the opening counts too, recorded or not. Without it, an opening that moved
    // nothing (nothing was spendable) and is planned again saw a lost dispute's credits as
    // owned once more: a review found a won dispute beside it releasing 300 credits it never
    // froze, which paid another payment's lien, and the write-off counted twice.
    let mut included: Vec<&PaymentFact> = Vec::new();
    for (i, (fact, _, reference)) in steps.iter().enumerate() {
        if !done.contains(reference.as_str()) {
            continue;
        }
        if matches!(fact, PaymentFact::DisputeClosed { .. }) {
            included.push(steps[i - 1].0);
        }
        included.push(fact);
    }
    let mut new_step = false;
    for (fact, kind, reference) in &steps {
        if done.contains(reference.as_str()) {
            continue;
        }
        new_step = true;
        included.push(fact);
        let (owned_t, frozen_t) = target(checkout, &included);
        let (mut spendable_delta, mut frozen_delta, mut shortfall, mut moved) = (0, 0, 0, 0);
        let mut owed_delta = 0;
        let mut gone = 0;
        if owned_t > owned {
            // Only the purchase adds credits.
            spendable_delta += owned_t - owned;
            moved += owned_t - owned;
        } else if owned_t < owned {
            gone = owned - owned_t;
            // Frozen credits no longer needed frozen go first, then spendable ones.
            let from_frozen = gone.min((frozen - frozen_t).max(0));
            let from_spendable = gone - from_frozen;
            let take = from_spendable.min(spendable + spendable_delta);
            // What spendable cannot cover comes out of what open disputes still hold frozen
            // before any of it is written off as spent: a refund or a lost dispute is final,
            // while an open dispute may yet be won and release what it froze (it claims what
            // comes back instead, below). A review found a won dispute handing back credits a
            // refund had just written off as spent.
            let from_held = (from_spendable - take).min(frozen - from_frozen);
            frozen_delta -= from_frozen + from_held;
            spendable_delta -= take;
            shortfall = from_spendable - take - from_held;
            // Credits in flight come back to the account if their actions fail: owe them.
            owed_delta = shortfall.min(unclaimed);
            moved += from_frozen + take + from_held;
        }
        let frozen_now = frozen + frozen_delta;
        let mut release = 0;
        if frozen_now > frozen_t {
            release = frozen_now - frozen_t;
            frozen_delta -= release;
            spendable_delta += release;
            moved += release;
        } else if frozen_now < frozen_t {
            let freeze = (frozen_t - frozen_now).min((spendable + spendable_delta).max(0));
            frozen_delta += freeze;
            spendable_delta -= freeze;
            moved += freeze;
        }
        if spendable_delta == 0 && frozen_delta == 0 && shortfall == 0 {
            continue;
        }
        owned += spendable_delta + frozen_delta - shortfall;
        frozen += frozen_delta;
        spendable += spendable_delta;
        unclaimed -= owed_delta;
        liens.frozen += frozen_delta;
        // Released credits pay back what was written off while they were frozen; what spendable
        // cannot cover now, and no action in flight owes, other disputes' frozen credits may.
        let paid_back = liens.pay_back(release);
        let spent = shortfall - owed_delta;
        let recoverable = spent.min(liens.frozen - liens.total()).max(0);
        if recoverable > 0 {
            liens.open.push(Lien {
                reference: reference.clone(),
                payment_id: payment_id.clone(),
                kind: *kind,
                credits: recoverable,
                // To the millisecond, as the SQL stores keep it: liens made within one
                // millisecond are paid back in reference order on every store.
                since: liens.at.trunc_subsecs(3),
            });
        }
        liens.cap();
        let currency = &checkout.currency;
        let note = match (kind, fact) {
            (ReceiptKind::Purchase, _) => {
                format!("{moved} credits bought ({} {currency})", checkout.amount)
            }
            (
                _,
                PaymentFact::Refunded {
                    refund_id, amount, ..
                },
            ) => format!(
                "refund {refund_id} of {amount} {currency}: {} credits taken back{}",
                gone - shortfall,
                spent_note(shortfall, owed_delta, recoverable)
            ),
            (
                _,
                PaymentFact::DisputeOpened {
                    dispute_id, amount, ..
                },
            ) => format!(
                "dispute {dispute_id} of {amount} {currency}: {frozen_delta} credits frozen"
            ),
            (ReceiptKind::DisputeRelease, PaymentFact::DisputeClosed { dispute_id, .. }) => {
                format!("dispute {dispute_id} won: {spendable_delta} credits released")
            }
            (_, PaymentFact::DisputeClosed { dispute_id, .. }) => format!(
                "dispute {dispute_id} lost: {} credits given up{}",
                gone - shortfall,
                spent_note(shortfall, owed_delta, recoverable)
            ),
            _ => format!("{moved} credits moved"),
        };
        moves.push(Movement {
            kind: *kind,
            reference: reference.clone(),
            credits: moved,
            spendable_delta,
            frozen_delta,
            shortfall,
            owed_delta,
            of_payment: None,
            note,
        });
        for (lien, credits) in paid_back {
            spendable -= credits;
            moves.push(recovery(&lien, credits, reference));
        }
    }
    // Credits held by actions in flight cannot be frozen now; those the actions give back can.
    let freeze_claim = new_step.then(|| (target(checkout, &included).1 - frozen).max(0));
    PaymentPlan::Moves {
        checkout: Box::new(checkout.clone()),
        moves,
        freeze_claim,
        liens: (liens.open != liens_before).then_some(liens.open),
    }
}

/// Whether the newest of `facts` says again what an earlier one said: the same refund, dispute
/// opening or closing, or the payment (asked once it was credited: its first valid payment
/// event was planned, and a later one naming another checkout is refused before this).
fn redelivered(facts: &[PaymentFact]) -> bool {
    let Some((newest, earlier)) = facts.split_last() else {
        return false;
    };
    let same = |f: &PaymentFact| match (f, newest) {
        (
            PaymentFact::Refunded { refund_id: a, .. },
            PaymentFact::Refunded { refund_id: b, .. },
        ) => a == b,
        (
            PaymentFact::DisputeOpened { dispute_id: a, .. },
            PaymentFact::DisputeOpened { dispute_id: b, .. },
        )
        | (
            PaymentFact::DisputeClosed { dispute_id: a, .. },
            PaymentFact::DisputeClosed { dispute_id: b, .. },
        ) => a == b,
        _ => false,
    };
    match newest {
        PaymentFact::Paid { .. } => true,
        _ => earlier.iter().any(same),
    }
}

/// The movement that pays `credits` of a lien back from what `released_by` released: a
/// movement of the lien's payment, outside its own books (its reference is not `payment:`),
/// as the credits it took back were its to take.
fn recovery(lien: &Lien, credits: i64, released_by: &str) -> Movement {
    Movement {
        kind: lien.kind,
        reference: format!("{RECOVERY_PREFIX}{}:{released_by}", lien.reference),
        credits,
        spendable_delta: -credits,
        frozen_delta: 0,
        shortfall: 0,
        owed_delta: 0,
        of_payment: Some(lien.payment_id.clone()),
        note: format!(
            "{credits} credits written off by {} while a dispute held them frozen, taken back \
             as {released_by} released them",
            lien.reference
        ),
    }
}

fn spent_note(shortfall: i64, owed: i64, recoverable: i64) -> String {
    let spent = shortfall - owed;
    let mut note = String::new();
    if owed > 0 {
        note.push_str(&format!(
            ", {owed} held by actions in flight (taken back if they fail)"
        ));
    }
    if spent > 0 {
        note.push_str(&format!(", {spent} already spent"));
    }
    if recoverable > 0 {
        note.push_str(&format!(
            " ({recoverable} taken back if a dispute releases what it holds frozen)"
        ));
    }
    note
}

#[cfg(test)]
mod tests;
