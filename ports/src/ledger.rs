//! The credit ledger. Credits are integers. Every change to a balance is an entry, written in
//! the same store transaction as the balance it changes, so the balance always equals the sum
//! of the entries.

use std::{fmt, str::FromStr};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{AccountId, LedgerEntryId};

/// Upper bound on one grant: far above any plan, low enough that sums never overflow `i64`.
pub const MAX_GRANT: i64 = 1_000_000_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("credit amount must be between 1 and {MAX_GRANT}, got {0}")]
pub struct CreditAmountError(pub i64);

/// A strictly positive number of credits to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct CreditAmount(i64);

impl CreditAmount {
    pub fn new(n: i64) -> Result<Self, CreditAmountError> {
        if (1..=MAX_GRANT).contains(&n) {
            Ok(Self(n))
        } else {
            Err(CreditAmountError(n))
        }
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl TryFrom<i64> for CreditAmount {
    type Error = CreditAmountError;
    fn try_from(n: i64) -> Result<Self, CreditAmountError> {
        Self::new(n)
    }
}

impl From<CreditAmount> for i64 {
    fn from(a: CreditAmount) -> i64 {
        a.0
    }
}

/// Why an entry moved credits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// Credits given by an operator, a plan or the sandbox seed.
    Grant,
    /// Credits set aside when a task begins (spendable down, held up).
    Hold,
    /// A held amount charged when its task completed (held down; spendable unchanged).
    Capture,
    /// A held amount given back when its task failed (held down, spendable up).
    Refund,
    /// Credits bought, applied from a verified payment event.
    Purchase,
    /// Credits taken back because their payment was refunded (or its dispute lost): from
    /// spendable when the refund arrives, or from a failed task's refund when the task held
    /// them then (reference `task:{id}:clawback`; see [`spread_owed`]).
    Clawback,
    /// Credits set aside while their payment is disputed (spendable down, frozen up): when the
    /// dispute opens, or from a failed task's refund while a dispute claims credits that were
    /// in flight when it opened (reference `task:{id}:freeze`; see `billing::serve_claims`).
    Freeze,
    /// Frozen credits given back when the dispute was won (frozen down, spendable up).
    Release,
    /// Frozen credits given up when the dispute was lost (frozen down; spendable unchanged).
    Forfeit,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Grant => "grant",
            EntryKind::Hold => "hold",
            EntryKind::Capture => "capture",
            EntryKind::Refund => "refund",
            EntryKind::Purchase => "purchase",
            EntryKind::Clawback => "clawback",
            EntryKind::Freeze => "freeze",
            EntryKind::Release => "release",
            EntryKind::Forfeit => "forfeit",
        }
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EntryKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "grant" => Ok(EntryKind::Grant),
            "hold" => Ok(EntryKind::Hold),
            "capture" => Ok(EntryKind::Capture),
            "refund" => Ok(EntryKind::Refund),
            "purchase" => Ok(EntryKind::Purchase),
            "clawback" => Ok(EntryKind::Clawback),
            "freeze" => Ok(EntryKind::Freeze),
            "release" => Ok(EntryKind::Release),
            "forfeit" => Ok(EntryKind::Forfeit),
            other => Err(format!("unknown ledger entry kind `{other}`")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub id: LedgerEntryId,
    pub account_id: AccountId,
    pub kind: EntryKind,
    /// Signed change to the spendable balance.
    pub delta: i64,
    /// Spendable balance right after this entry.
    pub balance_after: i64,
    /// Idempotency reference of the grant, unique per account when present.
    pub reference: Option<String>,
    pub memo: String,
    pub created_at: DateTime<Utc>,
}

/// A request to add credits to an account.
impl LedgerEntry {
    /// The entry of a task's hold, capture or refund. Its reference, `task:{id}:{kind}`, is
    /// unique per account in every store, so each happens at most once per task.
    pub fn for_task(
        id: LedgerEntryId,
        account_id: AccountId,
        task: &crate::ids::TaskId,
        kind: EntryKind,
        delta: i64,
        balance_after: i64,
        at: DateTime<Utc>,
    ) -> Self {
        let (reference, memo) = Self::task_reference(task, kind);
        Self {
            id,
            account_id,
            kind,
            delta,
            balance_after,
            reference: Some(reference),
            memo,
            created_at: at,
        }
    }

    /// The reference and the memo of a task's entry of `kind` (see [`Self::for_task`]), for a
    /// store that writes the entry in SQL.
    pub fn task_reference(task: &crate::ids::TaskId, kind: EntryKind) -> (String, String) {
        (
            format!("task:{task}:{}", kind.as_str()),
            format!("{} for {task}", kind.as_str()),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: LedgerEntryId,
    pub account_id: AccountId,
    pub amount: CreditAmount,
    /// When set, the grant is applied at most once per (account, reference).
    pub reference: Option<String>,
    pub memo: String,
    pub at: DateTime<Utc>,
}

impl Grant {
    /// The ledger entry this grant writes, given the balance it leaves.
    pub fn entry(&self, balance_after: i64) -> LedgerEntry {
        LedgerEntry {
            id: self.id.clone(),
            account_id: self.account_id.clone(),
            kind: EntryKind::Grant,
            delta: self.amount.get(),
            balance_after,
            reference: self.reference.clone(),
            memo: self.memo.clone(),
            created_at: self.at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantOutcome {
    Applied(LedgerEntry),
    /// A grant with the same reference was applied before; nothing changed.
    AlreadyApplied(LedgerEntry),
}

impl GrantOutcome {
    pub fn entry(&self) -> &LedgerEntry {
        match self {
            GrantOutcome::Applied(e) | GrantOutcome::AlreadyApplied(e) => e,
        }
    }
}

/// An account's credits. `spendable` is what an action may draw on now; `held` is reserved by
/// actions in flight (always 0 until execution holds credits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Balance {
    pub spendable: i64,
    pub held: i64,
    /// Credits of disputed payments, set aside until the dispute closes.
    pub frozen: i64,
}

/// How a claim of `owed` credits is spread over the actions in flight, given as (cost, already
/// claimed) oldest first: what each one's claim grows by. The SQL stores say the same in SQL.
///
/// When a payment is refunded (or its dispute lost) while actions in flight hold credits,
/// those credits are neither spendable nor spent: what the clawback could not take from
/// spendable is claimed from them, each up to its cost (the task's `owed`). An action that
/// fails gives its cost back and a clawback entry takes its share; one that completes spent
/// its credits, and its share is dropped. What an account's actions in flight do not owe
/// (`held` less their shares) is what a later claim may take.
pub fn spread_owed(owed: i64, in_flight: &[(i64, i64)]) -> Vec<i64> {
    let mut left = owed.max(0);
    in_flight
        .iter()
        .map(|(cost, claimed)| {
            let add = (cost - claimed).max(0).min(left);
            left -= add;
            add
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_positive_and_bounded() {
        assert!(CreditAmount::new(0).is_err());
        assert!(CreditAmount::new(-5).is_err());
        assert!(CreditAmount::new(MAX_GRANT + 1).is_err());
        assert_eq!(CreditAmount::new(7).unwrap().get(), 7);
    }

    #[test]
    fn a_claim_is_spread_oldest_first_each_up_to_its_cost() {
        assert_eq!(
            spread_owed(250, &[(100, 0), (100, 40), (300, 0), (5, 0)]),
            [100, 60, 90, 0]
        );
        assert_eq!(spread_owed(0, &[(100, 0)]), [0]);
        assert_eq!(spread_owed(1000, &[(100, 100)]), [0]);
    }

    #[test]
    fn kinds_round_trip() {
        assert_eq!("grant".parse::<EntryKind>().unwrap(), EntryKind::Grant);
        assert!("gift".parse::<EntryKind>().is_err());
    }
}
