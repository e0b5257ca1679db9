//! Billing: hosted checkouts, the payment provider's verified events, and the credits they move.
//!
//! Credits arrive only from a verified provider event that names a checkout this service
//! created, for its price. Each event is stored once (by its `webhook-id`) and judged on its
//! own; what the payment's events mean for the account is worked out by [`plan_payment`] from
//! *every* event known for the same payment against the movements already applied. So a
//! refund that arrives before its payment waits, and is applied right after the payment when
//! that arrives; a replay finds the books at their target and changes nothing. Each movement
//! has a reference unique per account (`payment:{id}:...`), so the database refuses to apply
//! one twice.

mod judge;
mod liens;
mod plan;
mod target;

use std::fmt;

pub use judge::{judge_paid, named_checkouts, payment_checkout};
pub use liens::{Lien, Liens, oldest_first};
pub use plan::{PaymentPlan, plan_payment};
pub use target::{share, target};

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
#[error("a currency is an ISO 4217 code such as usd or eur, got `{0}`")]
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

    /// What a person or an operator names: only an active ISO 4217 currency (no funds,
    /// metals or test codes). Stored rows are read with [`Currency::parse`], so a row written
    /// before this check still loads.
    pub fn parse_iso4217(raw: &str) -> Result<Self, CurrencyError> {
        let currency = Self::parse(raw)?;
        let upper = currency.0.to_ascii_uppercase();
        if ISO_4217.split_ascii_whitespace().any(|c| c == upper) {
            Ok(currency)
        } else {
            Err(CurrencyError(raw.chars().take(16).collect()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Active ISO 4217 currencies (list of 2025), without funds, precious metals and test codes.
const ISO_4217: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND \
    BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN \
    ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD \
    JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT \
    MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR \
    RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND \
    TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW \
    ZWG";

#[cfg(test)]
mod currency_tests {
    use super::Currency;

    #[test]
    fn only_active_iso_4217_currencies_are_named() {
        for ok in ["usd", "EUR", "jpy", "Chf", "xof"] {
            assert!(Currency::parse_iso4217(ok).is_ok(), "{ok}");
        }
        for bad in ["zzz", "xts", "xau", "xxx", "us", "usdd", ""] {
            assert!(Currency::parse_iso4217(bad).is_err(), "{bad}");
        }
        // Stored rows keep loading whatever they hold.
        assert!(Currency::parse("zzz").is_ok());
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

/// `s` with every control character (NUL among them) written as a `\u{..}` escape: a name
/// a caller sent that is kept for the record, storable anywhere and unambiguous to read.
pub fn printable(s: &str) -> String {
    if !s.chars().any(char::is_control) && !s.contains('\\') {
        return s.to_owned();
    }
    s.chars()
        .map(|c| match c {
            '\\' => "\\\\".to_owned(),
            c if c.is_control() => format!("\\u{{{:x}}}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
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
        // A key given twice is refused, not read as one reader or another would (the provider's
        // first, ours the last): `"amount": 1, "amount": 900` must not credit either.
        let value = match serde_json::from_slice::<crate::json::Unique>(body) {
            Ok(v) => v.0,
            Err(e) => {
                return (
                    String::new(),
                    PaymentFact::Malformed {
                        // The error may quote the body (a key given twice): printable, so
                        // that every store can keep it.
                        reason: printable(&format!(
                            "the body is not JSON whose keys each appear once: {e}"
                        )),
                    },
                );
            }
        };
        let event_type = printable(
            &value
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or_default()
                .chars()
                .take(64)
                .collect::<String>(),
        );
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
    /// The raw body as received (it was verified byte for byte): kept as bytes, so a body
    /// that is not UTF-8 or holds a NUL is stored faithfully.
    pub body: Vec<u8>,
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
    pub spendable_delta: i64,
    pub frozen_delta: i64,
    pub shortfall: i64,
}

/// Whether a receipt of a payment is in that payment's books: a recovery (`liens.rs`) is of
/// the payment but not in its books.
pub fn in_payment_books(reference: &str) -> bool {
    !reference.starts_with(RECOVERY_PREFIX)
}

/// How a recovery's reference starts (every movement of a payment's own starts `payment:`).
pub const RECOVERY_PREFIX: &str = "recovery:";

impl From<&Receipt> for AppliedMovement {
    fn from(r: &Receipt) -> Self {
        Self {
            reference: r.reference.clone(),
            spendable_delta: r.spendable_delta,
            frozen_delta: r.frozen_delta,
            shortfall: r.shortfall,
        }
    }
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
    /// What was not taken back at once (`shortfall`), yet held by actions in flight: the
    /// store spreads it over them (`ledger::spread_owed`), and each pays its share from its
    /// credits if it fails.
    pub owed_delta: i64,
    /// A recovery (`liens.rs`): the payment whose write-off it pays back. Its receipt is that
    /// payment's, and it stays out of that payment's books (the reference is `recovery:`).
    pub of_payment: Option<String>,
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
        let own = self.of_payment.is_none();
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
            // A recovery's payment may be of another checkout, in another currency.
            currency: own.then(|| checkout.currency.clone()),
            payment_id: Some(self.of_payment.as_deref().unwrap_or(payment_id).to_owned()),
            checkout_id: own.then(|| checkout.id.clone()),
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

/// What a failed task's refund froze for a disputed payment's claim (see
/// `PaymentPlan::Moves::freeze_claim`): stored by the task's settlement, read back as a receipt
/// of the payment's ([`TaskFreeze::receipt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFreeze {
    pub task_id: TaskId,
    pub account_id: AccountId,
    pub payment_id: String,
    pub credits: i64,
    pub at: DateTime<Utc>,
}

impl TaskFreeze {
    /// Unique per account: a task freezes at most once for each payment.
    pub fn reference(&self) -> String {
        format!("task:{}:freeze:{}", self.task_id, self.payment_id)
    }

    /// The payment's receipt line for it (its id derived from the account and the reference,
    /// as a payment event's movements are).
    pub fn receipt(&self) -> Receipt {
        let reference = self.reference();
        Receipt {
            id: ReceiptId::from_ulid(derived_ulid(&self.account_id, &reference, self.at)),
            account_id: self.account_id.clone(),
            kind: ReceiptKind::DisputeFreeze,
            credits: self.credits,
            spendable_delta: -self.credits,
            frozen_delta: self.credits,
            shortfall: 0,
            amount: None,
            currency: None,
            payment_id: Some(self.payment_id.clone()),
            checkout_id: None,
            task_id: Some(self.task_id.clone()),
            artifact_id: None,
            note: format!(
                "{} credits a failed action gave back frozen while payment {} is disputed",
                self.credits, self.payment_id
            ),
            reference,
            created_at: self.at,
        }
    }

    /// The movement the payment's plan reads back for it.
    pub fn applied(&self) -> AppliedMovement {
        AppliedMovement {
            reference: self.reference(),
            spendable_delta: -self.credits,
            frozen_delta: self.credits,
            shortfall: 0,
        }
    }
}

/// How the credits a failed task gives back (after what refunds claim of it) serve the
/// account's freeze claims, given as (payment, credits) in the order they are served (oldest
/// claim first): what each one takes. The SQL stores say the same in SQL.
///
/// The same rule holds the claims to the credits in flight that refunds do not claim, when
/// those go down (a settlement, a refund): given that room, what each claim keeps (the newest
/// shrink first; one that keeps nothing is gone).
pub fn serve_claims(returned: i64, claims: &[(String, i64)]) -> Vec<(String, i64)> {
    let mut left = returned.max(0);
    claims
        .iter()
        .filter_map(|(payment, credits)| {
            let take = (*credits).min(left).max(0);
            left -= take;
            (take > 0).then(|| (payment.clone(), take))
        })
        .collect()
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
mod claim_tests {
    use super::serve_claims;

    fn claims() -> Vec<(String, i64)> {
        vec![("a".into(), 200), ("b".into(), 300), ("c".into(), 500)]
    }

    #[test]
    fn returned_credits_serve_the_oldest_claims_first() {
        assert_eq!(
            serve_claims(450, &claims()),
            [("a".to_owned(), 200), ("b".to_owned(), 250)]
        );
        assert_eq!(serve_claims(0, &claims()), []);
        assert_eq!(serve_claims(-5, &claims()).len(), 0);
    }

    /// As the cap, given the room in flight: the oldest keep theirs, the newest shrink first
    /// and one left with nothing is gone.
    #[test]
    fn a_cap_shrinks_the_newest_claims_first() {
        let kept = |room| serve_claims(room, &claims());
        assert_eq!(kept(5000), claims());
        assert_eq!(
            kept(501),
            [
                ("a".to_owned(), 200),
                ("b".to_owned(), 300),
                ("c".to_owned(), 1)
            ]
        );
        assert_eq!(kept(199), [("a".to_owned(), 199)]);
        assert_eq!(kept(0), []);
    }
}
