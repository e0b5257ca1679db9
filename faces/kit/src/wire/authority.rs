//! Delegated payment authorities over REST: the agent reads its account's authorities; anyone
//! holding an authority's `revocation_url` reads its status there; the owning account (API key
//! or signed-in web session) revokes it there. There is no way to create one with an API key:
//! the human creates it on the account page.

use chrono::{DateTime, Utc};
use poem_openapi::Object;
use svc_services::AuthorityReport;

/// Who the authority was given to.
#[derive(Debug, Clone, Object)]
pub struct AuthorityPrincipal {
    /// `agent`.
    #[oai(rename = "type")]
    pub kind: String,
    /// The account (or key) the agent acts as.
    pub id: String,
    /// Who runs the agent (e.g. `anthropic`), as the human typed it.
    pub agent_provider: String,
}

#[derive(Debug, Clone, Object)]
pub struct AuthorityAmountLimit {
    /// Minor units of `currency` (cents), per interval.
    pub value: i64,
    /// `single_use` (one payment of at most `value`, ever), `day`, `week` or `month` (30
    /// days); windows are fixed and start at `created_at`.
    pub interval: String,
}

/// What may still be spent now.
#[derive(Debug, Clone, Object)]
pub struct AuthorityRemaining {
    /// Minor units that may still be spent in the current window (0 unless `status` is
    /// `active`).
    pub value: i64,
    pub currency: String,
    /// Spent (and not given back) in the current window.
    pub spent_in_window: i64,
    pub window_start: DateTime<Utc>,
    /// When the window ends and the allowance comes back; absent for `single_use`.
    #[oai(skip_serializing_if_is_none)]
    pub window_end: Option<DateTime<Utc>>,
    /// Payments made under it, ever (failed ones are given back and not counted).
    pub spends: u32,
}

/// The spec's delegated payment authority record, plus its `status` and what `remaining`.
#[derive(Debug, Clone, Object)]
pub struct PaymentAuthorityView {
    /// `pa_...`: pass it as `authority_id` to execute a payment action.
    pub authority_id: String,
    pub principal: AuthorityPrincipal,
    /// Action families it may pay for: `order`, `booking`.
    pub scope: Vec<String>,
    pub amount_limit: AuthorityAmountLimit,
    /// Lowercase ISO 4217 code.
    pub currency: String,
    pub expires_at: DateTime<Utc>,
    /// GET: status and remaining, no credentials needed. POST: revoke (the owning account).
    pub revocation_url: String,
    /// Artifacts of its payments carry a receipt in `evidence.receipt`.
    pub receipt_required: bool,
    /// Its payments' artifacts stay `payment_completed` until the business outcome is
    /// verified; otherwise a payment the site confirmed is `verified`.
    pub verification_required: bool,
    pub created_at: DateTime<Utc>,
    /// `active`, `revoked`, `expired` or `exhausted` (nothing left in the current window).
    pub status: String,
    pub remaining: AuthorityRemaining,
}

impl PaymentAuthorityView {
    pub fn of(r: &AuthorityReport) -> Self {
        let a = &r.authority;
        Self {
            authority_id: a.authority_id.to_string(),
            principal: AuthorityPrincipal {
                kind: a.principal.kind.clone(),
                id: a.principal.id.clone(),
                agent_provider: a.principal.agent_provider.clone(),
            },
            scope: a.scope.clone(),
            amount_limit: AuthorityAmountLimit {
                value: a.amount_limit.value(),
                interval: a.amount_limit.interval().as_str().to_owned(),
            },
            currency: a.currency.to_string(),
            expires_at: a.expires_at,
            revocation_url: a.revocation_url.clone(),
            receipt_required: a.receipt_required,
            verification_required: a.verification_required,
            created_at: a.created_at,
            status: r.usage.status.as_str().to_owned(),
            remaining: AuthorityRemaining {
                value: r.usage.remaining,
                currency: a.currency.to_string(),
                spent_in_window: r.usage.spent_in_window,
                window_start: r.usage.window_start,
                window_end: r.window_end,
                spends: r.usage.spends,
            },
        }
    }
}

/// What an authority's revocation URL tells anyone who holds it: its status and what remains,
/// nothing about whose it is or its limits.
#[derive(Debug, Clone, Object)]
pub struct AuthorityStatusView {
    /// `active`, `revoked`, `expired` or `exhausted`.
    pub status: String,
    pub remaining: AuthorityRemainingAmount,
}

#[derive(Debug, Clone, Object)]
pub struct AuthorityRemainingAmount {
    /// Minor units that may still be spent now (0 unless `status` is `active`).
    pub value: i64,
    /// Lowercase ISO 4217 code.
    pub currency: String,
}

#[derive(Debug, Clone, Object)]
pub struct PaymentAuthorityList {
    /// Newest first.
    pub authorities: Vec<PaymentAuthorityView>,
    /// Where the human creates one (sign-in required).
    pub create_url: String,
}
