//! What a payment's credits should be: a pure function of the *set* of its events (see
//! `plan.rs` for the movements that bring the books to it).

use std::collections::HashSet;

use super::{CheckoutRecord, PaymentFact};

/// Credits of `part` of a payment of `price` that bought `credits`, rounded up (a partial
/// refund never leaves a fraction of a credit with the customer).
pub fn share(credits: i64, part: i64, price: i64) -> i64 {
    if price <= 0 || part <= 0 {
        return 0;
    }
    let n = i128::from(credits) * i128::from(part.min(price));
    i64::try_from((n + i128::from(price) - 1) / i128::from(price)).unwrap_or(credits)
}

/// What the payment's credits should be, given some of its events: `(owned, frozen)`, the
/// credits still with the customer and the part of them frozen by open disputes.
///
/// Refunds and lost disputes together take at most the whole price; an open dispute freezes
/// its share of what is still owned. The first event of each refund or dispute id counts; a
/// dispute's closing counts once its opening is known.
pub fn target(checkout: &CheckoutRecord, facts: &[&PaymentFact]) -> (i64, i64) {
    let (credits, price) = (checkout.credits, checkout.amount);
    let mut refunds = HashSet::new();
    let mut refunded = 0i64;
    // (dispute id, amount, closing: None open, Some(won))
    let mut disputes: Vec<(&str, i64, Option<bool>)> = Vec::new();
    for f in facts {
        match f {
            PaymentFact::Refunded {
                refund_id, amount, ..
            } if refunds.insert(refund_id.as_str()) => refunded = refunded.saturating_add(*amount),
            PaymentFact::DisputeOpened {
                dispute_id, amount, ..
            } if !disputes.iter().any(|(d, _, _)| d == dispute_id) => {
                disputes.push((dispute_id, *amount, None))
            }
            _ => {}
        }
    }
    for f in facts {
        if let PaymentFact::DisputeClosed {
            dispute_id, won, ..
        } = f
            && let Some(d) = disputes.iter_mut().find(|(d, _, _)| d == dispute_id)
            && d.2.is_none()
        {
            d.2 = Some(*won);
        }
    }
    let lost: i64 = disputes
        .iter()
        .filter(|d| d.2 == Some(false))
        .map(|d| d.1)
        .fold(0, i64::saturating_add);
    let open: i64 = disputes
        .iter()
        .filter(|d| d.2.is_none())
        .map(|d| d.1)
        .fold(0, i64::saturating_add);
    let owned = credits - share(credits, refunded.saturating_add(lost).min(price), price);
    let frozen = share(credits, open.min(price), price).min(owned);
    (owned, frozen)
}
