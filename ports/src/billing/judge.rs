//! Each payment event judged on its own: a payment event (`checkout.completed`,
//! `payment.succeeded`) counts only when the checkout it names exists and its amount and
//! currency match that checkout (see `plan.rs` for what the events then call for).

use super::{CheckoutRecord, PaymentFact};
use crate::ids::CheckoutId;

/// The checkouts the payment events among `facts` name: what a store looks up before
/// [`super::plan_payment`].
pub fn named_checkouts(facts: &[PaymentFact]) -> Vec<CheckoutId> {
    let mut ids: Vec<CheckoutId> = Vec::new();
    for f in facts {
        if let PaymentFact::Paid { checkout_id, .. } = f
            && !ids.contains(checkout_id)
        {
            ids.push(checkout_id.clone());
        }
    }
    ids
}

/// Judges one payment event against the checkouts known: the checkout it pays, or why not.
pub fn judge_paid<'a>(
    fact: &PaymentFact,
    checkouts: &'a [CheckoutRecord],
) -> Result<&'a CheckoutRecord, String> {
    let PaymentFact::Paid {
        checkout_id,
        amount,
        currency,
        ..
    } = fact
    else {
        return Err("not a payment event".into());
    };
    let Some(checkout) = checkouts.iter().find(|c| &c.id == checkout_id) else {
        return Err(format!(
            "the payment names {checkout_id}, which is no checkout of this service"
        ));
    };
    if *amount != checkout.amount || currency != &checkout.currency {
        return Err(format!(
            "paid {amount} {currency}, but checkout {} costs {} {}",
            checkout.id, checkout.amount, checkout.currency
        ));
    }
    Ok(checkout)
}

/// The checkout of the first payment event among `facts` that passes [`judge_paid`]: the
/// payment's, whose account the store reads before [`super::plan_payment`].
pub fn payment_checkout<'a>(
    facts: &[PaymentFact],
    checkouts: &'a [CheckoutRecord],
) -> Option<&'a CheckoutRecord> {
    facts
        .iter()
        .filter(|f| matches!(f, PaymentFact::Paid { .. }))
        .find_map(|f| judge_paid(f, checkouts).ok())
}
