//! Delegated payment authorities: created by the signed-in human on the site (never through an
//! API key), read by the agent of the same account, revoked by either, and reported on at the
//! authority's `revocation_url`, which is a capability in itself (anyone holding the URL may
//! read the status and revoke; nobody can spend with it).
//!
//! Spending happens only in execution, with the task, in the task store's transaction.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use svc_ports::{
    Account, AccountId, AmountLimit, AuthorityId, AuthorityInterval, AuthorityUsage, Clock,
    Currency, Entropy, PaymentAuthority, Principal,
    store::{AuthorityError, AuthorityStore},
};

/// Action families an authority may cover: the payment-capable ones.
pub const PAYMENT_FAMILIES: &[&str] = &["order", "booking"];
pub const MAX_EXPIRY_DAYS: i64 = 365;
/// Principal `type` of every authority created here: an agent acting for the account.
pub const PRINCIPAL_TYPE: &str = "agent";

#[derive(Debug, thiserror::Error)]
pub enum AuthorityFailure {
    #[error("{0}")]
    Invalid(String),
    /// Unknown, or another account's.
    #[error("no payment authority of this account has that id")]
    NotFound,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<svc_ports::StoreError> for AuthorityFailure {
    fn from(e: svc_ports::StoreError) -> Self {
        Self::Internal(anyhow::Error::new(e))
    }
}

impl From<AuthorityError> for AuthorityFailure {
    fn from(e: AuthorityError) -> Self {
        match e {
            AuthorityError::NotFound => Self::NotFound,
            other => Self::Internal(anyhow::Error::new(other)),
        }
    }
}

/// What the human fills in on the account page.
#[derive(Debug, Clone)]
pub struct NewAuthority {
    pub scope: Vec<String>,
    pub amount: i64,
    pub interval: String,
    pub currency: String,
    pub expires_in_days: i64,
    pub agent_provider: String,
    pub receipt_required: bool,
    pub verification_required: bool,
}

/// An authority with its usage now, and when its current window ends.
#[derive(Debug, Clone)]
pub struct AuthorityReport {
    pub authority: PaymentAuthority,
    pub usage: AuthorityUsage,
    /// `None` for `single_use` (one window, forever).
    pub window_end: Option<DateTime<Utc>>,
}

impl AuthorityReport {
    fn of((authority, usage): (PaymentAuthority, AuthorityUsage)) -> Self {
        let window_end = authority
            .amount_limit
            .interval()
            .window_len()
            .map(|len| usage.window_start + len);
        Self {
            authority,
            usage,
            window_end,
        }
    }
}

pub struct AuthorityService {
    store: Arc<dyn AuthorityStore>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    site_url: String,
}

impl AuthorityService {
    pub fn new(
        store: Arc<dyn AuthorityStore>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        site_url: &str,
    ) -> Self {
        Self {
            store,
            clock,
            entropy,
            site_url: site_url.trim_end_matches('/').to_owned(),
        }
    }

    pub fn revocation_url(&self, id: &AuthorityId) -> String {
        format!("{}/api/payment-authorities/{id}/revocation", self.site_url)
    }

    /// Creates an authority for `account`. Only the signed-in web session calls this: an agent
    /// alone can never give itself money to spend.
    pub async fn create(
        &self,
        account: &Account,
        input: NewAuthority,
    ) -> Result<AuthorityReport, AuthorityFailure> {
        let invalid = |m: &str| Err(AuthorityFailure::Invalid(m.to_owned()));
        let mut scope: Vec<String> = input
            .scope
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        scope.sort();
        scope.dedup();
        if scope.is_empty() {
            return invalid("Choose at least one kind of action (order or booking).");
        }
        if let Some(bad) = scope
            .iter()
            .find(|s| !PAYMENT_FAMILIES.contains(&s.as_str()))
        {
            return invalid(&format!(
                "`{bad}` is not a kind of action that pays; choose order or booking."
            ));
        }
        let Some(interval) = AuthorityInterval::parse(input.interval.trim()) else {
            return invalid("The interval is single_use, day, week or month.");
        };
        let Ok(amount_limit) = AmountLimit::new(input.amount, interval) else {
            return invalid("The amount is a positive whole number of minor units (cents).");
        };
        let Ok(currency) = Currency::parse_iso4217(input.currency.trim()) else {
            return invalid("The currency is an ISO 4217 code such as usd or eur.");
        };
        if !(1..=MAX_EXPIRY_DAYS).contains(&input.expires_in_days) {
            return invalid(&format!("It expires in 1 to {MAX_EXPIRY_DAYS} days."));
        }
        let agent_provider = input.agent_provider.trim();
        if agent_provider.is_empty()
            || agent_provider.len() > 64
            || svc_ports::text::misleads(agent_provider)
        {
            return invalid(
                "Name the agent's provider (1 to 64 characters, none invisible or direction-changing), e.g. anthropic.",
            );
        }
        let now = self.clock.now();
        let authority_id = AuthorityId::from_ulid(self.entropy.ulid());
        let authority = PaymentAuthority {
            revocation_url: self.revocation_url(&authority_id),
            authority_id,
            principal: Principal {
                kind: PRINCIPAL_TYPE.into(),
                id: account.id.to_string(),
                agent_provider: agent_provider.to_owned(),
            },
            scope,
            amount_limit,
            currency,
            expires_at: now + Duration::days(input.expires_in_days),
            receipt_required: input.receipt_required,
            verification_required: input.verification_required,
            created_at: now,
            account_id: account.id.clone(),
            created_by: account.email.to_string(),
            revoked_at: None,
        };
        self.store
            .insert_authority(&authority)
            .await
            .map_err(|e| match e {
                AuthorityError::UnknownAccount => {
                    AuthorityFailure::Internal(anyhow::anyhow!("account vanished"))
                }
                other => other.into(),
            })?;
        tracing::info!(authority_id = %authority.authority_id, account_id = %account.id, "payment authority created");
        self.report(&authority.authority_id).await
    }

    /// Any authority by id, with its usage now (the capability view of `revocation_url`).
    pub async fn report(&self, id: &AuthorityId) -> Result<AuthorityReport, AuthorityFailure> {
        self.store
            .authority(id, self.clock.now())
            .await?
            .map(AuthorityReport::of)
            .ok_or(AuthorityFailure::NotFound)
    }

    /// Parses an id from a path; an id that does not parse is simply not found.
    pub fn parse_id(raw: &str) -> Result<AuthorityId, AuthorityFailure> {
        AuthorityId::parse(raw).map_err(|_| AuthorityFailure::NotFound)
    }

    /// One of the account's authorities.
    pub async fn get(
        &self,
        account: &AccountId,
        id: &str,
    ) -> Result<AuthorityReport, AuthorityFailure> {
        let report = self.report(&Self::parse_id(id)?).await?;
        if &report.authority.account_id != account {
            return Err(AuthorityFailure::NotFound);
        }
        Ok(report)
    }

    /// The account's authorities, newest first.
    pub async fn list(
        &self,
        account: &AccountId,
    ) -> Result<Vec<AuthorityReport>, AuthorityFailure> {
        Ok(self
            .store
            .authorities(account, self.clock.now())
            .await?
            .into_iter()
            .map(AuthorityReport::of)
            .collect())
    }

    /// Revokes one of the account's authorities. Idempotent.
    pub async fn revoke(
        &self,
        account: &AccountId,
        id: &str,
    ) -> Result<AuthorityReport, AuthorityFailure> {
        let id = Self::parse_id(id)?;
        self.store
            .revoke_authority(account, &id, self.clock.now())
            .await?;
        tracing::info!(authority_id = %id, account_id = %account, "payment authority revoked");
        self.report(&id).await
    }
}
