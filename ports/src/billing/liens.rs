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

/// The account's liens and frozen credits when a payment event is applied, read under the
/// account's lock, and the time the event is applied at (for liens it makes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liens {
    /// The account's frozen credits (every payment's, and what failed actions froze).
    pub frozen: i64,
    /// Open liens, oldest first (by `since`, then `reference`).
    pub open: Vec<Lien>,
    pub at: DateTime<Utc>,
}

impl Liens {
    /// An account with nothing frozen.
    pub fn none(at: DateTime<Utc>) -> Self {
        Self {
            frozen: 0,
            open: Vec::new(),
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

    /// Keeps liens within the frozen credits: the newest shrink first.
    pub(super) fn cap(&mut self) {
        let mut over = self.total() - self.frozen.max(0);
        for lien in self.open.iter_mut().rev() {
            if over <= 0 {
                break;
            }
            let part = lien.credits.min(over);
            lien.credits -= part;
            over -= part;
        }
        self.open.retain(|l| l.credits > 0);
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
        l.cap();
        assert_eq!(l.open, [lien("a", 300, 1), lien("b", 300, 2)]);
        l.frozen = 200;
        l.cap();
        assert_eq!(l.open, [lien("a", 200, 1)]);
        l.frozen = -5;
        l.cap();
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
