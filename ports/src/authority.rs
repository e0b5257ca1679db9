//! Delegated payment authority: a human lets an agent spend up to `amount_limit` per interval,
//! in one currency, for some action families, until it expires or is revoked.
//!
//! Windows are fixed and anchored at the authority's `created_at`: window `n` covers
//! `[created_at + n*len, created_at + (n+1)*len)` with `len` 1, 7 or 30 days. `single_use`
//! has one window, forever, and allows one spend of at most `value`. A spend is made with its
//! task (in the same store transaction) and given back when that task fails without paying
//! (a failure that may hide a payment keeps it counted); the checks are
//! the pure functions below, so every store applies exactly the same rules.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    billing::Currency,
    ids::{AccountId, AuthorityId, TaskId},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorityInterval {
    SingleUse,
    Day,
    Week,
    Month,
}

impl AuthorityInterval {
    pub const ALL: [Self; 4] = [Self::SingleUse, Self::Day, Self::Week, Self::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SingleUse => "single_use",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The length of one window; `None` for `single_use`, whose one window never ends. A month
    /// is 30 days: fixed windows need a fixed length.
    pub fn window_len(self) -> Option<Duration> {
        match self {
            Self::SingleUse => None,
            Self::Day => Some(Duration::days(1)),
            Self::Week => Some(Duration::days(7)),
            Self::Month => Some(Duration::days(30)),
        }
    }
}

/// Who the authority was given to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub agent_provider: String,
}

/// `value` (minor units, > 0) per `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawAmountLimit")]
pub struct AmountLimit {
    value: i64,
    interval: AuthorityInterval,
}

#[derive(Deserialize)]
struct RawAmountLimit {
    value: i64,
    interval: AuthorityInterval,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an amount limit is a positive integer amount")]
pub struct AmountLimitError;

impl AmountLimit {
    pub fn new(value: i64, interval: AuthorityInterval) -> Result<Self, AmountLimitError> {
        if value > 0 {
            Ok(Self { value, interval })
        } else {
            Err(AmountLimitError)
        }
    }

    pub fn value(&self) -> i64 {
        self.value
    }

    pub fn interval(&self) -> AuthorityInterval {
        self.interval
    }
}

impl TryFrom<RawAmountLimit> for AmountLimit {
    type Error = AmountLimitError;
    fn try_from(raw: RawAmountLimit) -> Result<Self, AmountLimitError> {
        Self::new(raw.value, raw.interval)
    }
}

/// A delegated payment authority. Serialises to exactly the spec's public fields; the owner,
/// the signed-in creator and the revocation time are kept by the store only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PaymentAuthority {
    pub authority_id: AuthorityId,
    pub principal: Principal,
    /// Action families it may pay for (`order`, `booking`...).
    pub scope: Vec<String>,
    pub amount_limit: AmountLimit,
    pub currency: Currency,
    pub expires_at: DateTime<Utc>,
    pub revocation_url: String,
    pub receipt_required: bool,
    pub verification_required: bool,
    pub created_at: DateTime<Utc>,
    #[serde(skip_serializing)]
    pub account_id: AccountId,
    /// Who signed in on the site to create it.
    #[serde(skip_serializing)]
    pub created_by: String,
    #[serde(skip_serializing)]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorityStatus {
    Active,
    Revoked,
    /// `now` is at or past `expires_at`.
    Expired,
    /// Nothing can be spent in the current window: a `single_use` authority spent once, or a
    /// windowed one whose window's allowance is used up (it comes back in the next window).
    Exhausted,
}

impl AuthorityStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
            Self::Exhausted => "exhausted",
        }
    }
}

/// What a stored authority has spent, as of a given time; computed by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorityUsage {
    /// Start of the window that contains the time asked about.
    pub window_start: DateTime<Utc>,
    /// Spends not given back, in that window.
    pub spent_in_window: i64,
    /// Spends not given back, ever.
    pub spends: u32,
    pub remaining: i64,
    pub status: AuthorityStatus,
}

impl AuthorityUsage {
    pub fn compute(
        authority: &PaymentAuthority,
        spent_in_window: i64,
        spends: u32,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            window_start: window_start(authority, now),
            spent_in_window,
            spends,
            remaining: remaining(authority, spent_in_window, now),
            status: authority_status(authority, spent_in_window, now),
        }
    }
}

/// A spend asked for with a new task (`NewTask::authority_spend`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthoritySpend {
    pub authority_id: AuthorityId,
    /// Minor units of `currency`, > 0.
    pub amount: i64,
    pub currency: Currency,
    /// The action family the task pays for (`order`).
    pub scope: String,
}

/// One stored spend: made with its task, given back (`released_at`) when the task fails
/// without paying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthoritySpendRecord {
    pub authority_id: AuthorityId,
    pub task_id: TaskId,
    pub amount: i64,
    pub currency: Currency,
    pub scope: String,
    /// Start of the window it counts against.
    pub window_start: DateTime<Utc>,
    pub spent_at: DateTime<Utc>,
    pub released_at: Option<DateTime<Utc>>,
}

/// Why a task's spend was refused; the store then stores nothing (no task, no hold).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityRefusal {
    /// No such authority, or it belongs to another account.
    #[error("no such payment authority")]
    UnknownAuthority,
    #[error("the payment authority was revoked")]
    Revoked,
    #[error("the payment authority has expired")]
    Expired,
    #[error("the payment authority does not cover this kind of action")]
    ScopeNotAllowed,
    #[error("the payment authority is in another currency")]
    CurrencyMismatch,
    /// A `single_use` authority was already spent.
    #[error("the single-use payment authority was already used")]
    Exhausted,
    /// The amount is more than what remains in the current window.
    #[error("the amount is over the payment authority's limit ({remaining} remaining)")]
    OverLimit { remaining: i64 },
    /// The amount is zero or negative (a caller bug; nothing is spent).
    #[error("the amount to spend must be positive")]
    InvalidAmount,
}

impl AuthorityRefusal {
    /// A short machine-readable reason, named in problems.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownAuthority => "unknown",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
            Self::ScopeNotAllowed => "scope",
            Self::CurrencyMismatch => "currency",
            Self::Exhausted => "exhausted",
            Self::OverLimit { .. } => "over_limit",
            Self::InvalidAmount => "invalid_amount",
        }
    }
}

/// Start of the window that contains `now` (the first window for a time before `created_at`).
pub fn window_start(authority: &PaymentAuthority, now: DateTime<Utc>) -> DateTime<Utc> {
    let Some(len) = authority.amount_limit.interval().window_len() else {
        return authority.created_at;
    };
    if now <= authority.created_at {
        return authority.created_at;
    }
    let len = len.num_milliseconds();
    let elapsed = (now - authority.created_at).num_milliseconds();
    authority.created_at + Duration::milliseconds(elapsed / len * len)
}

/// What may still be spent at `now`, given what was spent (and not given back) in the window
/// containing `now`: 0 once revoked or expired; for `single_use`, `value` until any spend and
/// 0 after; otherwise `value` minus the window's spending, never below 0.
pub fn remaining(authority: &PaymentAuthority, spent_in_window: i64, now: DateTime<Utc>) -> i64 {
    let limit = authority.amount_limit;
    if authority.revoked_at.is_some() || now >= authority.expires_at {
        0
    } else if limit.interval() == AuthorityInterval::SingleUse {
        if spent_in_window > 0 {
            0
        } else {
            limit.value()
        }
    } else {
        (limit.value() - spent_in_window).max(0)
    }
}

/// Revoked first, then expired, then exhausted (nothing [`remaining`]), else active.
pub fn authority_status(
    authority: &PaymentAuthority,
    spent_in_window: i64,
    now: DateTime<Utc>,
) -> AuthorityStatus {
    if authority.revoked_at.is_some() {
        AuthorityStatus::Revoked
    } else if now >= authority.expires_at {
        AuthorityStatus::Expired
    } else if remaining(authority, spent_in_window, now) == 0 {
        AuthorityStatus::Exhausted
    } else {
        AuthorityStatus::Active
    }
}

/// When the window that started at `window_start` ends and its allowance comes back; `None`
/// when it never does: a `single_use` authority, or one that expires by then.
pub fn window_end(
    interval: AuthorityInterval,
    window_start: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    interval
        .window_len()
        .map(|len| window_start + len)
        .filter(|end| *end < expires_at)
}

/// Whether the settlement of `task` is the one that tells that `authority` has nothing left in
/// the window of the task's spend. `window` holds that window's spends not given back, each
/// with the time its task settled (`None`: still in flight). True when the task's spend is
/// among them and settled, they add up to the limit (any spend uses up a `single_use`
/// authority), every one of them has settled and the task settled last (by time, then task
/// id), and the authority was neither revoked nor expired then. The last settlement, not the
/// last spend: spends are stamped before they wait for the authority's lock, so their order
/// can differ from the order they were taken in, and a payment of unknown outcome keeps its
/// spend though its task failed. Exactly one settlement of a full window is the one; a spend
/// given back later reopens the window.
pub fn used_up_by(
    authority: &PaymentAuthority,
    task: &TaskId,
    window: &[(&AuthoritySpendRecord, Option<DateTime<Utc>>)],
) -> bool {
    let Some(settled_at) = window
        .iter()
        .find(|(s, _)| &s.task_id == task)
        .and_then(|(_, at)| *at)
    else {
        return false;
    };
    let full = authority.amount_limit.interval() == AuthorityInterval::SingleUse
        || window.iter().map(|(s, _)| s.amount).sum::<i64>() >= authority.amount_limit.value();
    let last = window
        .iter()
        .all(|(s, at)| at.is_some_and(|at| (at, &s.task_id) <= (settled_at, task)));
    full && last
        && authority.revoked_at.is_none_or(|at| at > settled_at)
        && authority.expires_at > settled_at
}

/// Whether `account` may make `spend` at `at` against `authority`, given what was spent (and
/// not given back) in the window containing `at`. Returns the window start the spend counts
/// against. Every store calls this with the authority locked.
pub fn check_spend(
    authority: &PaymentAuthority,
    account: &AccountId,
    spend: &AuthoritySpend,
    spent_in_window: i64,
    at: DateTime<Utc>,
) -> Result<DateTime<Utc>, AuthorityRefusal> {
    if &authority.account_id != account || authority.authority_id != spend.authority_id {
        return Err(AuthorityRefusal::UnknownAuthority);
    }
    if spend.amount <= 0 {
        return Err(AuthorityRefusal::InvalidAmount);
    }
    if authority.revoked_at.is_some() {
        return Err(AuthorityRefusal::Revoked);
    }
    if at >= authority.expires_at {
        return Err(AuthorityRefusal::Expired);
    }
    if !authority.scope.iter().any(|s| s == &spend.scope) {
        return Err(AuthorityRefusal::ScopeNotAllowed);
    }
    if authority.currency != spend.currency {
        return Err(AuthorityRefusal::CurrencyMismatch);
    }
    if authority.amount_limit.interval() == AuthorityInterval::SingleUse && spent_in_window > 0 {
        return Err(AuthorityRefusal::Exhausted);
    }
    let left = remaining(authority, spent_in_window, at);
    if spend.amount > left {
        return Err(AuthorityRefusal::OverLimit { remaining: left });
    }
    Ok(window_start(authority, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;
    use ulid::Ulid;

    fn t0() -> DateTime<Utc> {
        Utc.timestamp_millis_opt(1_780_000_000_123).unwrap()
    }

    fn authority(value: i64, interval: AuthorityInterval) -> PaymentAuthority {
        PaymentAuthority {
            authority_id: AuthorityId::from_ulid(Ulid::from_parts(1, 1)),
            principal: Principal {
                kind: "agent".into(),
                id: "agent-1".into(),
                agent_provider: "example".into(),
            },
            scope: vec!["order".into()],
            amount_limit: AmountLimit::new(value, interval).unwrap(),
            currency: Currency::parse("usd").unwrap(),
            expires_at: t0() + Duration::days(90),
            revocation_url: "https://svc.example/authorities/pa_1/revoke".into(),
            receipt_required: true,
            verification_required: false,
            created_at: t0(),
            account_id: AccountId::from_ulid(Ulid::from_parts(1, 2)),
            created_by: "human@example.com".into(),
            revoked_at: None,
        }
    }

    fn spend(a: &PaymentAuthority, amount: i64) -> AuthoritySpend {
        AuthoritySpend {
            authority_id: a.authority_id.clone(),
            amount,
            currency: a.currency.clone(),
            scope: "order".into(),
        }
    }

    #[test]
    fn serialises_exactly_the_public_fields() {
        let a = authority(500, AuthorityInterval::Week);
        let json = serde_json::to_value(&a).unwrap();
        let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "amount_limit",
                "authority_id",
                "created_at",
                "currency",
                "expires_at",
                "principal",
                "receipt_required",
                "revocation_url",
                "scope",
                "verification_required"
            ]
        );
        assert_eq!(
            json["amount_limit"],
            serde_json::json!({"value": 500, "interval": "week"})
        );
        assert_eq!(json["principal"]["type"], "agent");
        assert!(
            serde_json::from_value::<AmountLimit>(
                serde_json::json!({"value": 0, "interval": "day"})
            )
            .is_err()
        );
        assert_eq!(
            serde_json::from_value::<AmountLimit>(
                serde_json::json!({"value": 3, "interval": "single_use"})
            )
            .unwrap(),
            AmountLimit::new(3, AuthorityInterval::SingleUse).unwrap()
        );
    }

    #[test]
    fn windows_are_fixed_and_anchored_at_creation() {
        let a = authority(100, AuthorityInterval::Day);
        assert_eq!(window_start(&a, t0()), t0());
        assert_eq!(window_start(&a, t0() - Duration::hours(3)), t0());
        assert_eq!(window_start(&a, t0() + Duration::hours(23)), t0());
        assert_eq!(
            window_start(&a, t0() + Duration::hours(24)),
            t0() + Duration::days(1)
        );
        assert_eq!(
            window_start(&a, t0() + Duration::days(9) + Duration::milliseconds(1)),
            t0() + Duration::days(9)
        );
        let m = authority(100, AuthorityInterval::Month);
        assert_eq!(
            window_start(&m, t0() + Duration::days(61)),
            t0() + Duration::days(60)
        );
        let s = authority(100, AuthorityInterval::SingleUse);
        assert_eq!(window_start(&s, t0() + Duration::days(400)), t0());
    }

    #[test]
    fn status_and_remaining() {
        let mut a = authority(100, AuthorityInterval::Day);
        let now = t0() + Duration::hours(1);
        assert_eq!(remaining(&a, 30, now), 70);
        assert_eq!(authority_status(&a, 30, now), AuthorityStatus::Active);
        assert_eq!(authority_status(&a, 100, now), AuthorityStatus::Exhausted);
        assert_eq!(remaining(&a, 130, now), 0);
        let late = a.expires_at;
        assert_eq!(authority_status(&a, 0, late), AuthorityStatus::Expired);
        assert_eq!(remaining(&a, 0, late), 0);
        a.revoked_at = Some(now);
        assert_eq!(authority_status(&a, 0, late), AuthorityStatus::Revoked);
        let s = authority(100, AuthorityInterval::SingleUse);
        assert_eq!(remaining(&s, 0, now), 100);
        assert_eq!(remaining(&s, 1, now), 0);
        assert_eq!(authority_status(&s, 1, now), AuthorityStatus::Exhausted);
    }

    #[test]
    fn spends_are_checked_in_order() {
        let a = authority(100, AuthorityInterval::Day);
        let now = t0() + Duration::hours(30);
        assert_eq!(
            check_spend(&a, &a.account_id, &spend(&a, 60), 40, now),
            Ok(t0() + Duration::days(1))
        );
        assert_eq!(
            check_spend(&a, &a.account_id, &spend(&a, 61), 40, now),
            Err(AuthorityRefusal::OverLimit { remaining: 60 })
        );
        let stranger = AccountId::from_ulid(Ulid::from_parts(9, 9));
        assert_eq!(
            check_spend(&a, &stranger, &spend(&a, 1), 0, now),
            Err(AuthorityRefusal::UnknownAuthority)
        );
        assert_eq!(
            check_spend(&a, &a.account_id, &spend(&a, 0), 0, now),
            Err(AuthorityRefusal::InvalidAmount)
        );
        let mut other_scope = spend(&a, 1);
        other_scope.scope = "booking".into();
        assert_eq!(
            check_spend(&a, &a.account_id, &other_scope, 0, now),
            Err(AuthorityRefusal::ScopeNotAllowed)
        );
        let mut eur = spend(&a, 1);
        eur.currency = Currency::parse("EUR").unwrap();
        assert_eq!(
            check_spend(&a, &a.account_id, &eur, 0, now),
            Err(AuthorityRefusal::CurrencyMismatch)
        );
        assert_eq!(
            check_spend(&a, &a.account_id, &spend(&a, 1), 0, a.expires_at),
            Err(AuthorityRefusal::Expired)
        );
        let mut revoked = a.clone();
        revoked.revoked_at = Some(now);
        assert_eq!(
            check_spend(&revoked, &a.account_id, &spend(&a, 1), 0, now),
            Err(AuthorityRefusal::Revoked)
        );
        let s = authority(100, AuthorityInterval::SingleUse);
        assert_eq!(
            check_spend(&s, &s.account_id, &spend(&s, 100), 0, now),
            Ok(t0())
        );
        assert_eq!(
            check_spend(&s, &s.account_id, &spend(&s, 101), 0, now),
            Err(AuthorityRefusal::OverLimit { remaining: 100 })
        );
        assert_eq!(
            check_spend(&s, &s.account_id, &spend(&s, 1), 5, now),
            Err(AuthorityRefusal::Exhausted)
        );
    }

    #[test]
    fn the_last_settlement_of_a_full_window_tells_while_the_authority_stands() {
        let a = authority(100, AuthorityInterval::Day);
        let record = |task: u128, amount: i64| AuthoritySpendRecord {
            authority_id: a.authority_id.clone(),
            task_id: TaskId::from_ulid(Ulid::from_parts(2, task)),
            amount,
            currency: a.currency.clone(),
            scope: "order".into(),
            window_start: t0(),
            spent_at: t0(),
            released_at: None,
        };
        let at = |minutes| Some(t0() + Duration::minutes(minutes));
        let (first, second) = (record(1, 60), record(2, 40));
        let (one, two) = (&first.task_id, &second.task_id);
        // The first spend's task settled last: it tells, though its spend came first.
        let window = [(&first, at(3)), (&second, at(2))];
        assert!(used_up_by(&a, one, &window));
        assert!(!used_up_by(&a, two, &window));
        // Nobody tells while a task of the window is in flight.
        let waiting = [(&first, at(3)), (&second, None)];
        assert!(!used_up_by(&a, one, &waiting));
        assert!(!used_up_by(&a, two, &waiting));
        // Settled in the same millisecond: the later task id.
        let tie = [(&first, at(3)), (&second, at(3))];
        assert!(used_up_by(&a, two, &tie) && !used_up_by(&a, one, &tie));
        // Not full without the second spend (given back); not in the window, not the one.
        assert!(!used_up_by(&a, one, &[(&first, at(3))]));
        assert!(!used_up_by(&a, two, &[(&first, at(3))]));
        let mut revoked = a.clone();
        revoked.revoked_at = at(3);
        assert!(!used_up_by(&revoked, one, &window));
        revoked.revoked_at = Some(t0() + Duration::minutes(3) + Duration::milliseconds(1));
        assert!(used_up_by(&revoked, one, &window));
        let mut expired = a.clone();
        expired.expires_at = t0() + Duration::minutes(3);
        assert!(!used_up_by(&expired, one, &window));
        let once = authority(100, AuthorityInterval::SingleUse);
        let small = record(4, 1);
        assert!(used_up_by(&once, &small.task_id, &[(&small, at(1))]));
    }

    /// Spends checked one at a time, their tasks settled in any order, some given back, over
    /// several windows.
    #[derive(Debug, Clone)]
    enum SpendOp {
        Spend(i64),
        Settle(usize),
        GiveBack(usize),
        Wait(i64),
    }

    fn spend_op() -> impl Strategy<Value = SpendOp> {
        prop_oneof![
            4 => (1..80i64).prop_map(SpendOp::Spend),
            3 => any::<usize>().prop_map(SpendOp::Settle),
            1 => any::<usize>().prop_map(SpendOp::GiveBack),
            1 => (0..30i64).prop_map(SpendOp::Wait),
        ]
    }

    fn any_interval() -> impl Strategy<Value = AuthorityInterval> {
        prop::sample::select(AuthorityInterval::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn the_window_contains_now_and_is_aligned(
            interval in any_interval(),
            offset_ms in 0..400i64 * 86_400_000,
        ) {
            let a = authority(10, interval);
            let now = t0() + Duration::milliseconds(offset_ms);
            let start = window_start(&a, now);
            prop_assert!(start >= a.created_at && start <= now);
            match interval.window_len() {
                None => prop_assert_eq!(start, a.created_at),
                Some(len) => {
                    prop_assert!(now < start + len);
                    prop_assert_eq!((start - a.created_at).num_milliseconds() % len.num_milliseconds(), 0);
                }
            }
        }

        #[test]
        fn exactly_one_settlement_tells_of_each_full_settled_window(
            interval in any_interval(),
            value in 1..200i64,
            ops in prop::collection::vec(spend_op(), 1..40),
        ) {
            let a = authority(value, interval);
            let mut spends: Vec<(AuthoritySpendRecord, Option<DateTime<Utc>>)> = Vec::new();
            let mut at = t0();
            for (n, op) in ops.into_iter().enumerate() {
                let pick = |i: usize, len: usize| (len > 0).then(|| i % len);
                match op {
                    SpendOp::Wait(hours) => at += Duration::hours(hours),
                    SpendOp::Settle(i) => {
                        if let Some(i) = pick(i, spends.len()) {
                            spends[i].1.get_or_insert(at);
                        }
                    }
                    SpendOp::GiveBack(i) => {
                        if let Some(i) = pick(i, spends.len()) {
                            spends[i].0.released_at.get_or_insert(at);
                        }
                    }
                    SpendOp::Spend(amount) => {
                        let start = window_start(&a, at);
                        let spent: i64 = spends
                            .iter()
                            .filter(|(s, _)| s.window_start == start && s.released_at.is_none())
                            .map(|(s, _)| s.amount)
                            .sum();
                        if let Ok(start) = check_spend(&a, &a.account_id, &spend(&a, amount), spent, at) {
                            spends.push((AuthoritySpendRecord {
                                authority_id: a.authority_id.clone(),
                                task_id: TaskId::from_ulid(Ulid::from_parts(2, n as u128)),
                                amount,
                                currency: a.currency.clone(),
                                scope: "order".into(),
                                window_start: start,
                                spent_at: at,
                                released_at: None,
                            }, None));
                        }
                    }
                }
                let mut starts: Vec<DateTime<Utc>> = spends.iter().map(|(s, _)| s.window_start).collect();
                starts.dedup();
                for start in starts {
                    let window: Vec<(&AuthoritySpendRecord, Option<DateTime<Utc>>)> = spends
                        .iter()
                        .filter(|(s, _)| s.window_start == start && s.released_at.is_none())
                        .map(|(s, settled)| (s, *settled))
                        .collect();
                    let tellers: Vec<&TaskId> = window
                        .iter()
                        .filter(|(s, _)| used_up_by(&a, &s.task_id, &window))
                        .map(|(s, _)| &s.task_id)
                        .collect();
                    let sum: i64 = window.iter().map(|(s, _)| s.amount).sum();
                    let full = !window.is_empty() && remaining(&a, sum, start) == 0;
                    let settled = window.iter().all(|(_, at)| at.is_some());
                    prop_assert_eq!(tellers.len(), usize::from(full && settled), "{:?}", window);
                    if let Some(teller) = tellers.first() {
                        let last = window.iter().max_by_key(|(s, at)| (*at, &s.task_id)).unwrap();
                        prop_assert_eq!(*teller, &last.0.task_id);
                    }
                }
            }
        }

        #[test]
        fn an_accepted_spend_never_exceeds_what_remains(
            interval in any_interval(),
            value in 1..1_000i64,
            spent in 0..1_500i64,
            amount in -5..1_500i64,
            offset_h in -48..(24 * 120i64),
            revoked in any::<bool>(),
        ) {
            let mut a = authority(value, interval);
            if revoked {
                a.revoked_at = Some(t0());
            }
            let at = t0() + Duration::hours(offset_h);
            let left = remaining(&a, spent, at);
            prop_assert!((0..=value).contains(&left));
            let status = authority_status(&a, spent, at);
            prop_assert_eq!(status == AuthorityStatus::Active, left > 0);
            match check_spend(&a, &a.account_id, &spend(&a, amount), spent, at) {
                Ok(start) => {
                    prop_assert_eq!(status, AuthorityStatus::Active);
                    prop_assert!(amount > 0 && amount <= left && spent + amount <= value);
                    prop_assert_eq!(start, window_start(&a, at));
                    if interval == AuthorityInterval::SingleUse {
                        prop_assert_eq!(spent, 0);
                    }
                }
                Err(_) => prop_assert!(amount <= 0 || amount > left || status != AuthorityStatus::Active),
            }
        }
    }
}
