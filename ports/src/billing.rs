//! Billing: hosted checkouts, the payment provider's verified events, and the credits they move.
//!
//! Credits arrive only from a verified provider event that names a checkout this service
//! created. Each event is stored once (by its `webhook-id`), and what it means for the
//! account is worked out by [`plan_payment`] from *every* event known for the same payment, in
//! arrival order, against the movements already applied. So a refund that arrives before its
//! payment waits, and is applied right after the payment when that arrives; a replay finds all
//! its movements applied and changes nothing. Each movement has a reference unique per account
//! (`payment:{id}:...`), so the database refuses to apply one twice.

use std::{collections::HashSet, fmt};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ulid::Ulid;

use crate::{
    KeyHash,
    account::Plan,
    ids::{AccountId, ArtifactId, CheckoutId, LedgerEntryId, MeterEventId, ReceiptId, TaskId},
    ledger::EntryKind,
};

/// Longest provider identifier kept (payment, refund, dispute and session ids).
pub const MAX_PROVIDER_ID_LEN: usize = 128;

/// An ISO 4217 currency code, lowercase (`usd`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Currency(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a currency is three ASCII letters (ISO 4217), got `{0}`")]
pub struct CurrencyError(pub String);

impl Currency {
    /// Accepts any case; keeps lowercase.
    pub fn parse(raw: &str) -> Result<Self, CurrencyError> {
        if raw.len() == 3 && raw.bytes().all(|b| b.is_ascii_alphabetic()) {
            Ok(Self(raw.to_ascii_lowercase()))
        } else {
            Err(CurrencyError(raw.chars().take(16).collect()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Currency {
    type Error = CurrencyError;
    fn try_from(s: String) -> Result<Self, CurrencyError> {
        Self::parse(&s)
    }
}

impl From<Currency> for String {
    fn from(c: Currency) -> String {
        c.0
    }
}

/// A provider's identifier (payment, refund, dispute, session): printable ASCII, bounded.
pub fn provider_id(raw: &str) -> Option<String> {
    (!raw.is_empty()
        && raw.len() <= MAX_PROVIDER_ID_LEN
        && raw.bytes().all(|b| b.is_ascii_graphic()))
    .then(|| raw.to_owned())
}

/// A hosted checkout the service asked the provider for, for one catalog SKU. The price and
/// the credits are copied from the server's catalog when it is created: what a payment for it
/// must match, and what it grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckoutRecord {
    pub id: CheckoutId,
    pub account_id: AccountId,
    pub sku: String,
    pub plan: Plan,
    pub credits: i64,
    /// Price in minor units of `currency`.
    pub amount: i64,
    pub currency: Currency,
    pub provider_session_id: String,
    pub checkout_url: String,
    /// The web session's `Idempotency-Key`; unique per account when present.
    pub idempotency_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckoutOutcome {
    Created(CheckoutRecord),
    /// The account already has a checkout under this idempotency key: that one.
    Existing(CheckoutRecord),
}

/// What one verified event says, once read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum PaymentFact {
    /// `checkout.completed` or `payment.succeeded`: money for one of our checkouts arrived.
    Paid {
        payment_id: String,
        checkout_id: CheckoutId,
        amount: i64,
        currency: Currency,
    },
    /// `payment.refunded`: `amount` (minor units) of the payment went back to the payer.
    Refunded {
        payment_id: String,
        refund_id: String,
        amount: i64,
    },
    /// `dispute.created`: the payer disputes `amount` of the payment.
    DisputeOpened {
        payment_id: String,
        dispute_id: String,
        amount: i64,
    },
    /// `dispute.closed`: won keeps the credits, lost gives them up.
    DisputeClosed {
        payment_id: String,
        dispute_id: String,
        won: bool,
    },
    /// A type this service does not act on: stored and acknowledged.
    Other,
    /// A known type whose data could not be read: stored (with why) and acknowledged, so the
    /// provider does not retry it forever; nothing is applied.
    Malformed { reason: String },
}

impl PaymentFact {
    pub fn payment_id(&self) -> Option<&str> {
        match self {
            PaymentFact::Paid { payment_id, .. }
            | PaymentFact::Refunded { payment_id, .. }
            | PaymentFact::DisputeOpened { payment_id, .. }
            | PaymentFact::DisputeClosed { payment_id, .. } => Some(payment_id),
            PaymentFact::Other | PaymentFact::Malformed { .. } => None,
        }
    }

    /// Reads a Standard Webhooks payload: `{"type": ..., "timestamp": ..., "data": {...}}`.
    /// Returns the event type and the fact.
    pub fn from_payload(body: &[u8]) -> (String, PaymentFact) {
        let value: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return (
                    String::new(),
                    PaymentFact::Malformed {
                        reason: format!("the body is not JSON: {e}"),
                    },
                );
            }
        };
        let event_type = value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .chars()
            .take(64)
            .collect::<String>();
        let data = value.get("data").cloned().unwrap_or_default();
        let text = |k: &str| {
            data.get(k)
                .and_then(|v| v.as_str())
                .and_then(provider_id)
                .ok_or_else(|| format!("`data.{k}` is missing or not an identifier"))
        };
        let amount = |k: &str| {
            data.get(k)
                .and_then(|v| v.as_i64())
                .filter(|a| (1..=1_000_000_000_000).contains(a))
                .ok_or_else(|| format!("`data.{k}` must be a positive integer (minor units)"))
        };
        let fact = (|| -> Result<PaymentFact, String> {
            Ok(match event_type.as_str() {
                "checkout.completed" | "payment.succeeded" => PaymentFact::Paid {
                    payment_id: text("payment_id")?,
                    checkout_id: CheckoutId::parse(&text("client_reference_id")?)
                        .map_err(|e| format!("`data.client_reference_id`: {e}"))?,
                    amount: amount("amount")?,
                    currency: Currency::parse(&text("currency")?).map_err(|e| e.to_string())?,
                },
                "payment.refunded" => PaymentFact::Refunded {
                    payment_id: text("payment_id")?,
                    refund_id: text("refund_id")?,
                    amount: amount("amount")?,
                },
                "dispute.created" => PaymentFact::DisputeOpened {
                    payment_id: text("payment_id")?,
                    dispute_id: text("dispute_id")?,
                    amount: amount("amount")?,
                },
                "dispute.closed" => PaymentFact::DisputeClosed {
                    payment_id: text("payment_id")?,
                    dispute_id: text("dispute_id")?,
                    won: match text("status")?.as_str() {
                        "won" => true,
                        "lost" => false,
                        _ => return Err("`data.status` must be `won` or `lost`".into()),
                    },
                },
                _ => PaymentFact::Other,
            })
        })();
        (
            event_type,
            fact.unwrap_or_else(|reason| PaymentFact::Malformed { reason }),
        )
    }
}

/// One verified delivery, ready to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentEvent {
    /// Which provider sent it (deduplication is per provider and `webhook-id`).
    pub provider: String,
    pub webhook_id: String,
    pub event_type: String,
    pub fact: PaymentFact,
    /// The raw body as received (it was verified byte for byte).
    pub body: String,
    pub received_at: DateTime<Utc>,
}

/// What storing an event did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    /// Credits moved; the receipts written.
    Applied(Vec<Receipt>),
    /// Stored; it waits for its payment (a refund or dispute that arrived first).
    Pending,
    /// Stored; nothing to do (an unknown type, or a second event for a payment already
    /// credited).
    Acknowledged,
    /// Stored; refused for the reason given (unknown checkout, amount that differs from the
    /// checkout, unreadable data). Nothing moved.
    Rejected(String),
    /// This `webhook-id` was stored before: nothing changed. Carries what it was then.
    Duplicate { status: String },
}

impl EventOutcome {
    /// The status kept with the event.
    pub fn status(&self) -> &str {
        match self {
            EventOutcome::Applied(_) => "applied",
            EventOutcome::Pending => "pending",
            EventOutcome::Acknowledged => "acknowledged",
            EventOutcome::Rejected(_) => "rejected",
            EventOutcome::Duplicate { status } => status,
        }
    }
}

/// Kinds of receipt: the payment movements, and the charges and refunds of actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptKind {
    Purchase,
    RefundClawback,
    DisputeFreeze,
    DisputeRelease,
    DisputeForfeit,
    ActionCharge,
    ActionRefund,
}

impl ReceiptKind {
    pub const ALL: [ReceiptKind; 7] = [
        ReceiptKind::Purchase,
        ReceiptKind::RefundClawback,
        ReceiptKind::DisputeFreeze,
        ReceiptKind::DisputeRelease,
        ReceiptKind::DisputeForfeit,
        ReceiptKind::ActionCharge,
        ReceiptKind::ActionRefund,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptKind::Purchase => "purchase",
            ReceiptKind::RefundClawback => "refund_clawback",
            ReceiptKind::DisputeFreeze => "dispute_freeze",
            ReceiptKind::DisputeRelease => "dispute_release",
            ReceiptKind::DisputeForfeit => "dispute_forfeit",
            ReceiptKind::ActionCharge => "action_charge",
            ReceiptKind::ActionRefund => "action_refund",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The ledger entry kind a payment movement writes.
    pub fn entry_kind(self) -> EntryKind {
        match self {
            ReceiptKind::Purchase => EntryKind::Purchase,
            ReceiptKind::RefundClawback => EntryKind::Clawback,
            ReceiptKind::DisputeFreeze => EntryKind::Freeze,
            ReceiptKind::DisputeRelease => EntryKind::Release,
            ReceiptKind::DisputeForfeit => EntryKind::Forfeit,
            ReceiptKind::ActionCharge => EntryKind::Capture,
            ReceiptKind::ActionRefund => EntryKind::Refund,
        }
    }
}

/// A line of the billing account: what moved, why, and the records that prove it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub id: ReceiptId,
    pub account_id: AccountId,
    pub kind: ReceiptKind,
    /// Credits this line is about (always >= 0).
    pub credits: i64,
    /// Change it made to the spendable balance.
    pub spendable_delta: i64,
    /// Change it made to the frozen (disputed) balance.
    pub frozen_delta: i64,
    /// Credits that should have moved but had already been spent.
    pub shortfall: i64,
    pub amount: Option<i64>,
    pub currency: Option<Currency>,
    pub payment_id: Option<String>,
    pub checkout_id: Option<CheckoutId>,
    pub task_id: Option<TaskId>,
    pub artifact_id: Option<ArtifactId>,
    /// Unique per account: `payment:{id}:...` or `task:{id}:...`.
    pub reference: String,
    pub note: String,
    pub created_at: DateTime<Utc>,
}

/// A movement already applied for a payment (read back from its receipt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMovement {
    pub reference: String,
    pub credits: i64,
    pub shortfall: i64,
}

/// A movement still to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Movement {
    pub kind: ReceiptKind,
    pub reference: String,
    pub credits: i64,
    pub spendable_delta: i64,
    pub frozen_delta: i64,
    pub shortfall: i64,
    pub note: String,
}

impl Movement {
    /// The ledger entry and receipt this movement writes, given the balance it leaves.
    /// Their ids derive from the account and reference, so they are the same wherever the
    /// movement is computed (the reference is what keeps it unique).
    pub fn records(
        &self,
        checkout: &CheckoutRecord,
        payment_id: &str,
        balance_after: i64,
        at: DateTime<Utc>,
    ) -> (crate::LedgerEntry, Receipt) {
        let ulid = derived_ulid(&checkout.account_id, &self.reference, at);
        let entry = crate::LedgerEntry {
            id: LedgerEntryId::from_ulid(ulid),
            account_id: checkout.account_id.clone(),
            kind: self.kind.entry_kind(),
            delta: self.spendable_delta,
            balance_after,
            reference: Some(self.reference.clone()),
            memo: self.note.clone(),
            created_at: at,
        };
        let receipt = Receipt {
            id: ReceiptId::from_ulid(ulid),
            account_id: checkout.account_id.clone(),
            kind: self.kind,
            credits: self.credits,
            spendable_delta: self.spendable_delta,
            frozen_delta: self.frozen_delta,
            shortfall: self.shortfall,
            amount: (self.kind == ReceiptKind::Purchase).then_some(checkout.amount),
            currency: Some(checkout.currency.clone()),
            payment_id: Some(payment_id.to_owned()),
            checkout_id: Some(checkout.id.clone()),
            task_id: None,
            artifact_id: None,
            reference: self.reference.clone(),
            note: self.note.clone(),
            created_at: at,
        };
        (entry, receipt)
    }
}

fn derived_ulid(account: &AccountId, reference: &str, at: DateTime<Utc>) -> Ulid {
    let digest = Sha256::digest(format!("{account}\n{reference}").as_bytes());
    let mut random = [0u8; 16];
    random[6..].copy_from_slice(&digest[..10]);
    let ms = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    Ulid::from_parts(ms, u128::from_be_bytes(random))
}

/// The receipt of a settled task: its charge, or its refund. `None` while it is in flight.
pub fn task_receipt(task: &crate::TaskRecord) -> Option<Receipt> {
    let settled_at = task.settled_at?;
    let (kind, spendable_delta, suffix, note) = match task.status {
        crate::TaskStatus::Completed => (
            ReceiptKind::ActionCharge,
            -task.cost,
            "capture",
            format!("{} on {} completed", task.action, task.domain),
        ),
        crate::TaskStatus::Failed => (
            ReceiptKind::ActionRefund,
            0,
            "refund",
            format!("{} on {} failed: refunded", task.action, task.domain),
        ),
        crate::TaskStatus::InFlight => return None,
    };
    let ulid = Ulid::from_string(&task.id.as_str()[TaskId::PREFIX.len()..]).ok()?;
    Some(Receipt {
        id: ReceiptId::from_ulid(ulid),
        account_id: task.account_id.clone(),
        kind,
        credits: task.cost,
        spendable_delta,
        frozen_delta: 0,
        shortfall: 0,
        amount: None,
        currency: None,
        payment_id: None,
        checkout_id: None,
        task_id: Some(task.id.clone()),
        artifact_id: task.artifact_id.clone(),
        reference: format!("task:{}:{suffix}", task.id),
        note,
        created_at: settled_at,
    })
}

/// What a payment's events call for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentPlan {
    /// No payment event yet (only refunds or disputes): wait.
    Pending,
    /// The payment cannot be credited: why.
    Rejected(String),
    /// The movements still to apply, in order (possibly none).
    Moves(Vec<Movement>),
}

/// Credits of `part` of a payment of `price` that bought `credits`, rounded up (a partial
/// refund never leaves a fraction of a credit with the customer).
fn share(credits: i64, part: i64, price: i64) -> i64 {
    if price <= 0 {
        return 0;
    }
    let n = i128::from(credits) * i128::from(part.min(price));
    i64::try_from((n + i128::from(price) - 1) / i128::from(price)).unwrap_or(credits)
}

/// Works out what every known event of one payment calls for, given what was applied.
///
/// `facts` are all events of the payment in arrival order; `checkout` is the checkout its
/// payment event names (`None` when none is known or the name is unknown); `spendable` the
/// account's spendable credits now. Credits are never taken below zero: what should have been
/// clawed back or frozen but was already spent is recorded as a shortfall.
pub fn plan_payment(
    facts: &[PaymentFact],
    checkout: Option<&CheckoutRecord>,
    applied: &[AppliedMovement],
    spendable: i64,
) -> PaymentPlan {
    let Some((payment_id, amount, currency)) = facts.iter().find_map(|f| match f {
        PaymentFact::Paid {
            payment_id,
            amount,
            currency,
            ..
        } => Some((payment_id.as_str(), *amount, currency)),
        _ => None,
    }) else {
        return PaymentPlan::Pending;
    };
    let Some(checkout) = checkout else {
        return PaymentPlan::Rejected("the payment names no checkout of this service".into());
    };
    if amount != checkout.amount || currency != &checkout.currency {
        return PaymentPlan::Rejected(format!(
            "paid {amount} {currency}, but checkout {} costs {} {}",
            checkout.id, checkout.amount, checkout.currency
        ));
    }
    let done = |r: &str| applied.iter().find(|a| a.reference == r);
    let credits = checkout.credits;
    let price = checkout.amount;
    let mut spendable = spendable.max(0);
    let mut moves = Vec::new();
    // Credits of this payment still with the customer (spendable or frozen), and frozen ones.
    let mut owned = credits;
    let mut frozen = 0i64;

    let purchase = format!("payment:{payment_id}:purchase");
    if done(&purchase).is_none() {
        moves.push(Movement {
            kind: ReceiptKind::Purchase,
            reference: purchase,
            credits,
            spendable_delta: credits,
            frozen_delta: 0,
            shortfall: 0,
            note: format!(
                "{credits} credits bought ({} {})",
                checkout.amount, checkout.currency
            ),
        });
        spendable += credits;
    }

    let mut refunds_seen = HashSet::new();
    let mut disputes_opened: Vec<(&str, i64, i64)> = Vec::new(); // (id, frozen, target)
    let close = |dispute_id: &str,
                 won: bool,
                 frozen_here: i64,
                 target: i64,
                 moves: &mut Vec<Movement>,
                 spendable: &mut i64,
                 frozen: &mut i64,
                 owned: &mut i64| {
        let (kind, suffix) = if won {
            (ReceiptKind::DisputeRelease, "release")
        } else {
            (ReceiptKind::DisputeForfeit, "forfeit")
        };
        let reference = format!("payment:{payment_id}:dispute:{dispute_id}:{suffix}");
        *frozen -= frozen_here;
        if !won {
            *owned -= target;
        }
        if done(&reference).is_some() {
            return;
        }
        let (spendable_delta, note) = if won {
            *spendable += frozen_here;
            (
                frozen_here,
                format!("dispute {dispute_id} won: {frozen_here} credits released"),
            )
        } else {
            (
                0,
                format!("dispute {dispute_id} lost: {frozen_here} frozen credits given up"),
            )
        };
        moves.push(Movement {
            kind,
            reference,
            credits: frozen_here,
            spendable_delta,
            frozen_delta: -frozen_here,
            shortfall: if won { 0 } else { target - frozen_here },
            note,
        });
    };

    for fact in facts {
        match fact {
            PaymentFact::Refunded {
                refund_id, amount, ..
            } => {
                if !refunds_seen.insert(refund_id.as_str()) {
                    continue;
                }
                let reference = format!("payment:{payment_id}:refund:{refund_id}");
                if let Some(a) = done(&reference) {
                    owned -= a.credits + a.shortfall;
                    continue;
                }
                let target = share(credits, *amount, price).min(owned - frozen).max(0);
                let take = target.min(spendable);
                spendable -= take;
                owned -= target;
                moves.push(Movement {
                    kind: ReceiptKind::RefundClawback,
                    reference,
                    credits: take,
                    spendable_delta: -take,
                    frozen_delta: 0,
                    shortfall: target - take,
                    note: format!(
                        "refund {refund_id} of {amount} {}: {take} credits taken back{}",
                        checkout.currency,
                        if target > take {
                            format!(", {} already spent", target - take)
                        } else {
                            String::new()
                        }
                    ),
                });
            }
            PaymentFact::DisputeOpened {
                dispute_id, amount, ..
            } => {
                if disputes_opened.iter().any(|(d, _, _)| d == dispute_id) {
                    continue;
                }
                let reference = format!("payment:{payment_id}:dispute:{dispute_id}:freeze");
                let target = share(credits, *amount, price).min(owned - frozen).max(0);
                let frozen_here = match done(&reference) {
                    Some(a) => a.credits,
                    None => {
                        let take = target.min(spendable);
                        spendable -= take;
                        moves.push(Movement {
                            kind: ReceiptKind::DisputeFreeze,
                            reference,
                            credits: take,
                            spendable_delta: -take,
                            frozen_delta: take,
                            shortfall: target - take,
                            note: format!(
                                "dispute {dispute_id} of {amount} {}: {take} credits frozen",
                                checkout.currency
                            ),
                        });
                        take
                    }
                };
                frozen += frozen_here;
                disputes_opened.push((dispute_id, frozen_here, target));
                // A closing that arrived before its opening is applied right after it.
                let closing = facts.iter().find_map(|f| match f {
                    PaymentFact::DisputeClosed {
                        dispute_id: d, won, ..
                    } if d == dispute_id => Some(*won),
                    _ => None,
                });
                if let Some(won) = closing {
                    close(
                        dispute_id,
                        won,
                        frozen_here,
                        target,
                        &mut moves,
                        &mut spendable,
                        &mut frozen,
                        &mut owned,
                    );
                }
            }
            // Closings are applied with their opening (above), whichever came first.
            PaymentFact::DisputeClosed { .. }
            | PaymentFact::Paid { .. }
            | PaymentFact::Other
            | PaymentFact::Malformed { .. } => {}
        }
    }
    PaymentPlan::Moves(moves)
}

/// A one-time link that signs an agent's human in and starts checkout (made by the MCP tool
/// `svc_create_checkout_session`). Only the hash of its token is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutHandoff {
    pub token_hash: KeyHash,
    pub account_id: AccountId,
    pub sku: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// An internal usage-meter event (`/api/billing/report-meter-event`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeterEvent {
    pub id: MeterEventId,
    /// The reporter's idempotency identifier, unique.
    pub identifier: String,
    pub event_name: String,
    pub account_id: Option<AccountId>,
    pub value: i64,
    pub occurred_at: DateTime<Utc>,
    pub recorded_at: DateTime<Utc>,
    pub forwarded_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeterOutcome {
    Recorded(MeterEvent),
    /// The identifier was recorded before: that record.
    Existing(MeterEvent),
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn checkout() -> CheckoutRecord {
        CheckoutRecord {
            id: CheckoutId::from_ulid(Ulid::from_parts(1, 1)),
            account_id: AccountId::from_ulid(Ulid::from_parts(1, 2)),
            sku: "starter".into(),
            plan: Plan::Starter,
            credits: 1000,
            amount: 900,
            currency: Currency::parse("usd").unwrap(),
            provider_session_id: "cs_1".into(),
            checkout_url: "https://pay.example/cs_1".into(),
            idempotency_key: None,
            created_at: DateTime::UNIX_EPOCH,
            expires_at: DateTime::UNIX_EPOCH,
        }
    }

    fn paid(c: &CheckoutRecord) -> PaymentFact {
        PaymentFact::Paid {
            payment_id: "pay_1".into(),
            checkout_id: c.id.clone(),
            amount: c.amount,
            currency: c.currency.clone(),
        }
    }

    fn refund(id: &str, amount: i64) -> PaymentFact {
        PaymentFact::Refunded {
            payment_id: "pay_1".into(),
            refund_id: id.into(),
            amount,
        }
    }

    fn opened(id: &str, amount: i64) -> PaymentFact {
        PaymentFact::DisputeOpened {
            payment_id: "pay_1".into(),
            dispute_id: id.into(),
            amount,
        }
    }

    fn closed(id: &str, won: bool) -> PaymentFact {
        PaymentFact::DisputeClosed {
            payment_id: "pay_1".into(),
            dispute_id: id.into(),
            won,
        }
    }

    /// Applies events one at a time, as the stores do: returns (spendable, frozen, receipts).
    fn replay(events: &[PaymentFact], start: i64) -> (i64, i64, Vec<Movement>) {
        let c = checkout();
        let mut known = Vec::new();
        let mut applied: Vec<Movement> = Vec::new();
        let (mut spendable, mut frozen) = (start, 0);
        for e in events {
            known.push(e.clone());
            let done: Vec<AppliedMovement> = applied
                .iter()
                .map(|m| AppliedMovement {
                    reference: m.reference.clone(),
                    credits: m.credits,
                    shortfall: m.shortfall,
                })
                .collect();
            if let PaymentPlan::Moves(moves) = plan_payment(&known, Some(&c), &done, spendable) {
                for m in moves {
                    spendable += m.spendable_delta;
                    frozen += m.frozen_delta;
                    assert!(spendable >= 0 && frozen >= 0, "{m:?}");
                    applied.push(m);
                }
            }
        }
        (spendable, frozen, applied)
    }

    #[test]
    fn a_payment_credits_once_however_often_it_is_announced() {
        let c = checkout();
        let (s, f, r) = replay(&[paid(&c), paid(&c), paid(&c)], 0);
        assert_eq!((s, f, r.len()), (1000, 0, 1));
    }

    #[test]
    fn refunds_and_disputes_before_their_payment_wait_for_it() {
        let c = checkout();
        assert_eq!(
            plan_payment(&[refund("re_1", 900)], Some(&c), &[], 0),
            PaymentPlan::Pending
        );
        let in_order = replay(&[paid(&c), refund("re_1", 450)], 0);
        let reversed = replay(&[refund("re_1", 450), paid(&c)], 0);
        assert_eq!((in_order.0, in_order.1), (500, 0));
        assert_eq!((reversed.0, reversed.1), (500, 0));
        let lost = replay(&[closed("dp_1", false), opened("dp_1", 900), paid(&c)], 0);
        assert_eq!((lost.0, lost.1), (0, 0));
        let won = replay(&[paid(&c), closed("dp_1", true), opened("dp_1", 900)], 0);
        assert_eq!((won.0, won.1), (1000, 0));
        let open = replay(&[opened("dp_1", 900), paid(&c)], 5);
        assert_eq!((open.0, open.1), (5, 1000));
    }

    #[test]
    fn a_mismatched_or_unknown_payment_is_rejected() {
        let c = checkout();
        let cheap = PaymentFact::Paid {
            payment_id: "pay_1".into(),
            checkout_id: c.id.clone(),
            amount: 1,
            currency: c.currency.clone(),
        };
        assert!(matches!(
            plan_payment(&[cheap], Some(&c), &[], 0),
            PaymentPlan::Rejected(_)
        ));
        assert!(matches!(
            plan_payment(&[paid(&c)], None, &[], 0),
            PaymentPlan::Rejected(_)
        ));
    }

    #[test]
    fn credits_already_spent_are_a_shortfall_not_a_negative_balance() {
        let c = checkout();
        let plan = plan_payment(
            &[paid(&c), refund("re_1", 900)],
            Some(&c),
            &[AppliedMovement {
                reference: "payment:pay_1:purchase".into(),
                credits: 1000,
                shortfall: 0,
            }],
            300,
        );
        let PaymentPlan::Moves(moves) = plan else {
            panic!("{plan:?}")
        };
        assert_eq!(moves.len(), 1);
        assert_eq!((moves[0].credits, moves[0].shortfall), (300, 700));
    }

    #[test]
    fn payloads_are_read_strictly() {
        let (t, f) = PaymentFact::from_payload(
            br#"{"type":"payment.refunded","data":{"payment_id":"pay_1","refund_id":"re_1","amount":100}}"#,
        );
        assert_eq!(t, "payment.refunded");
        assert_eq!(f, refund("re_1", 100));
        let (_, f) = PaymentFact::from_payload(br#"{"type":"payment.refunded","data":{}}"#);
        assert!(matches!(f, PaymentFact::Malformed { .. }));
        let (_, f) = PaymentFact::from_payload(br#"{"type":"invoice.sent","data":{}}"#);
        assert_eq!(f, PaymentFact::Other);
        let (_, f) = PaymentFact::from_payload(b"not json");
        assert!(matches!(f, PaymentFact::Malformed { .. }));
        let (_, f) = PaymentFact::from_payload(
            br#"{"type":"payment.succeeded","data":{"payment_id":"pay_1","client_reference_id":"chk_x","amount":900,"currency":"usd"}}"#,
        );
        assert!(matches!(f, PaymentFact::Malformed { .. }));
    }

    fn any_fact() -> impl Strategy<Value = PaymentFact> {
        let c = checkout();
        prop_oneof![
            Just(paid(&c)),
            (0..3u8, 1..1200i64).prop_map(|(i, a)| refund(&format!("re_{i}"), a)),
            (0..2u8, 1..1200i64).prop_map(|(i, a)| opened(&format!("dp_{i}"), a)),
            (0..2u8, any::<bool>()).prop_map(|(i, w)| closed(&format!("dp_{i}"), w)),
            Just(PaymentFact::Other),
        ]
    }

    proptest! {
        /// Whatever arrives, in whatever order and however often: nothing goes negative, the
        /// purchase is credited at most once, a replay of everything changes nothing, and the
        /// credits out never exceed the credits in.
        #[test]
        fn movements_keep_the_books(events in proptest::collection::vec(any_fact(), 0..12), start in 0..50i64) {
            let (spendable, frozen, moves) = replay(&events, start);
            let purchases = moves.iter().filter(|m| m.kind == ReceiptKind::Purchase).count();
            prop_assert!(purchases <= 1);
            let refs: HashSet<&str> = moves.iter().map(|m| m.reference.as_str()).collect();
            prop_assert_eq!(refs.len(), moves.len());
            prop_assert_eq!(spendable + frozen, start + moves.iter().map(|m| m.spendable_delta + m.frozen_delta).sum::<i64>());
            prop_assert!(spendable + frozen <= start + 1000);
            // Everything again, as replays: no new movement.
            let mut doubled = events.clone();
            doubled.extend(events.iter().cloned());
            let (s2, f2, m2) = replay(&doubled, start);
            prop_assert_eq!((s2, f2, m2.len()), (spendable, frozen, moves.len()));
        }

        /// With ample credits, the order of a payment and its refunds does not change the end.
        #[test]
        fn refunds_end_the_same_in_any_order(amounts in proptest::collection::vec(1..400i64, 0..4), at in any::<prop::sample::Index>()) {
            let c = checkout();
            let refunds: Vec<PaymentFact> = amounts.iter().enumerate().map(|(i, a)| refund(&format!("re_{i}"), *a)).collect();
            let mut in_order = vec![paid(&c)];
            in_order.extend(refunds.iter().cloned());
            let mut shuffled = refunds.clone();
            shuffled.insert(at.index(refunds.len() + 1), paid(&c));
            prop_assert_eq!(replay(&in_order, 0).0, replay(&shuffled, 0).0);
        }
    }
}
