//! Write-offs that disputes' frozen credits may still pay back.
//!
//! A refund or a lost dispute takes back credits; what is not spendable, not frozen for the
//! same payment and not held by actions in flight was spent, and is written off (the
//! movement's `shortfall`). But while *another* payment's dispute holds credits frozen, the
//! write-off depends on the order the events arrive in: had that dispute been won first, the
//! refund would have taken the released credits. So the part of a write-off that other
//! disputes' frozen credits could cover is kept as a lien on them: the first credits a dispute
//! releases pay it back (a `recovery:` movement of the payment that wrote it off), and a lost
//! dispute ends it (its credits are gone, and so is the chance). Liens never add up to more
//! than the account's frozen credits; when those shrink, the newest liens shrink first.
//!
//! A review found a won dispute handing back 1000 credits that a refund of another payment
//! had just written off as spent: the customer kept 1000 credits having bought 1000, spent
//! 1000 and been refunded for half of the payments.
//!
//! A lien of the second kind re-freezes (`Lien::refreezes`): what a payment's open disputes
//! should hold frozen but could not, because spendable credits were short when the dispute
//! opened or a refund took the dispute's own frozen credits, while another payment's dispute
//! held credits frozen. Had that dispute been won first, the released credits would have been
//! frozen (or the refund would have taken them instead). So the first credits another dispute
//! releases are frozen again for the payment (a `dispute_freeze` receipt in its own books),
//! and its own events keep the lien within what its disputes still lack.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::ReceiptKind;

/// Credits a payment's refund or lost dispute wrote off while other disputes held as many
/// frozen: what those disputes release goes to it first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lien {
    /// The movement that wrote the credits off (`payment:{id}:refund:{id}`, ...).
    pub reference: String,
    /// The payment whose books the write-off is in.
    pub payment_id: String,
    /// The kind of that movement; a recovery is recorded under the same kind.
    pub kind: ReceiptKind,
    /// Credits still to be paid back (> 0).
    pub credits: i64,
    /// When it was made: liens are paid back oldest first, and shrink newest first.
    pub since: DateTime<Utc>,
}

impl Lien {
    /// Whether the lien re-freezes credits for the payment's open disputes (its kind is
    /// `DisputeFreeze`) rather than takes back a write-off.
    pub fn refreezes(&self) -> bool {
        self.kind == ReceiptKind::DisputeFreeze
    }

    /// The reference of a re-freeze lien made by the movement `reference`: distinct from a
    /// write-off lien the same movement may make.
    pub fn refreeze_reference(reference: &str) -> String {
        format!("{reference}:refreeze")
    }
}

/// The account's liens and frozen credits when a payment event is applied, read under the
/// account's lock, and the time the event is applied at (for liens it makes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liens {
    /// The account's frozen credits (every payment's, and what failed actions froze).
    pub frozen: i64,
    /// Open liens, oldest first (by `since`, then `reference`).
    pub open: Vec<Lien>,
    /// The frozen credits of each payment with an open lien (its receipts' and failed
    /// actions' freezes for it): a payment's liens are covered only by what *other* payments
    /// hold frozen. A payment missing here holds none.
    pub frozen_of: BTreeMap<String, i64>,
    pub at: DateTime<Utc>,
}

impl Liens {
    /// An account with nothing frozen.
    pub fn none(at: DateTime<Utc>) -> Self {
        Self {
            frozen: 0,
            open: Vec::new(),
            frozen_of: BTreeMap::new(),
            at,
        }
    }

    pub fn total(&self) -> i64 {
        self.open.iter().map(|l| l.credits).sum()
    }

    /// Pays liens back from `released` credits, oldest first: what each got.
    pub(super) fn pay_back(&mut self, released: i64) -> Vec<(Lien, i64)> {
        let mut left = released.max(0);
        let mut paid = Vec::new();
        for lien in &mut self.open {
            if left == 0 {
                break;
            }
            let part = lien.credits.min(left);
            left -= part;
            lien.credits -= part;
            paid.push((lien.clone(), part));
        }
        self.open.retain(|l| l.credits > 0);
        paid
    }

    /// What other payments' frozen credits can still cover beside the liens there are, for
    /// a payment that holds `own_frozen` of the account's frozen credits.
    pub(super) fn room(&self, own_frozen: i64) -> i64 {
        (self.frozen - own_frozen - self.total()).max(0)
    }

    /// Holds `payment`'s re-freeze liens to `most` credits: the newest shrink first.
    pub(super) fn hold_refreezes(&mut self, payment: &str, most: i64) {
        self.shrink_newest(|l| l.payment_id == payment && l.refreezes(), most);
    }

    /// Shrinks the liens `which` picks, the newest first, until they add up to at most `most`.
    fn shrink_newest(&mut self, which: impl Fn(&Lien) -> bool, most: i64) {
        let mut over = self
            .open
            .iter()
            .filter(|l| which(l))
            .map(|l| l.credits)
            .sum::<i64>()
            - most.max(0);
        for lien in self.open.iter_mut().rev() {
            if over <= 0 {
                break;
            }
            if which(lien) {
                let part = lien.credits.min(over);
                lien.credits -= part;
                over -= part;
            }
        }
        self.open.retain(|l| l.credits > 0);
    }

    /// Brings `payment`'s re-freeze liens to `wanted` credits, as far as other payments'
    /// frozen credits can cover them: what is missing is a lien of the movement `reference`
    /// (added to it when the same movement already made one: a step that moved nothing is
    /// planned again with the payment's next event).
    pub(super) fn refreeze(
        &mut self,
        payment: &str,
        reference: &str,
        wanted: i64,
        own_frozen: i64,
    ) {
        self.hold_refreezes(payment, wanted);
        let have: i64 = self
            .open
            .iter()
            .filter(|l| l.payment_id == payment && l.refreezes())
            .map(|l| l.credits)
            .sum();
        let more = (wanted - have).min(self.room(own_frozen));
        if more <= 0 {
            return;
        }
        let reference = Lien::refreeze_reference(reference);
        if let Some(l) = self.open.iter_mut().find(|l| l.reference == reference) {
            l.credits += more;
            return;
        }
        self.open.push(Lien {
            reference,
            payment_id: payment.to_owned(),
            kind: ReceiptKind::DisputeFreeze,
            credits: more,
            since: self.at,
        });
    }

    /// Keeps each payment's liens within what other payments hold frozen (`payment`, whose
    /// event is planned, holds `own_frozen`; the others what `frozen_of` says), and all of
    /// them within the frozen credits: the newest shrink first. A lost dispute takes its
    /// frozen credits, and with them the cover of the liens on them.
    pub(super) fn cap(&mut self, payment: &str, own_frozen: i64) {
        oldest_first(&mut self.open);
        let payments: BTreeSet<String> = self.open.iter().map(|l| l.payment_id.clone()).collect();
        for p in payments {
            let theirs = if p == payment {
                own_frozen
            } else {
                self.frozen_of.get(&p).copied().unwrap_or(0)
            };
            let cover = self.frozen - theirs;
            self.shrink_newest(|l| l.payment_id == p, cover);
        }
        let frozen = self.frozen;
        self.shrink_newest(|_| true, frozen);
    }
}

/// Orders liens as they are paid back: oldest first.
pub fn oldest_first(liens: &mut [Lien]) {
    liens.sort_by(|a, b| (a.since, &a.reference).cmp(&(b.since, &b.reference)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lien(reference: &str, credits: i64, since: i64) -> Lien {
        Lien {
            reference: reference.into(),
            payment_id: "pay_b".into(),
            kind: ReceiptKind::RefundClawback,
            credits,
            since: DateTime::from_timestamp_millis(since).unwrap(),
        }
    }

    fn liens(frozen: i64, open: Vec<Lien>) -> Liens {
        Liens {
            frozen,
            open,
            frozen_of: BTreeMap::new(),
            at: DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn releases_pay_the_oldest_liens_first() {
        let mut l = liens(1000, vec![lien("a", 300, 1), lien("b", 500, 2)]);
        let paid = l.pay_back(400);
        let paid: Vec<(&str, i64)> = paid
            .iter()
            .map(|(l, n)| (l.reference.as_str(), *n))
            .collect();
        assert_eq!(paid, [("a", 300), ("b", 100)]);
        assert_eq!(l.open, [lien("b", 400, 2)]);
        assert!(l.pay_back(0).is_empty());
        assert_eq!(l.pay_back(1000).len(), 1);
        assert!(l.open.is_empty());
    }

    #[test]
    fn liens_never_exceed_what_is_frozen_and_the_newest_shrink_first() {
        let mut l = liens(600, vec![lien("a", 300, 1), lien("b", 500, 2)]);
        l.cap("pay_c", 0);
        assert_eq!(l.open, [lien("a", 300, 1), lien("b", 300, 2)]);
        l.frozen = 200;
        l.cap("pay_c", 0);
        assert_eq!(l.open, [lien("a", 200, 1)]);
        l.frozen = -5;
        l.cap("pay_c", 0);
        assert!(l.open.is_empty());
    }

    #[test]
    fn the_oldest_come_first_and_ties_go_by_reference() {
        let mut v = vec![lien("b", 1, 2), lien("c", 1, 1), lien("a", 1, 2)];
        oldest_first(&mut v);
        let order: Vec<&str> = v.iter().map(|l| l.reference.as_str()).collect();
        assert_eq!(order, ["c", "a", "b"]);
    }
}
