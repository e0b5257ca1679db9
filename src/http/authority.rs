//! Delegated payment authorities over REST: the agent reads its account's authorities; anyone
//! holding an authority's `revocation_url` reads its status there; the owning account (API key
//! or signed-in web session) revokes it there. There is no way to create one with an API key:
//! the human creates it on the account page.

use chrono::{DateTime, Utc};
use poem::Request;
use poem_openapi::{ApiResponse, Object, OpenApi, param::Path, payload::Json};
use svc_ports::FailureClass;

use super::{Tags, auth::ApiKeyAuth, problem::ApiProblem};
use crate::{
    context::AppContext,
    services::{AuthorityFailure, AuthorityReport},
};

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

#[derive(ApiResponse)]
pub enum AuthorityStatusResponse {
    #[oai(status = 200)]
    Ok(Json<AuthorityStatusView>),
}

#[derive(Debug, Clone, Object)]
pub struct PaymentAuthorityList {
    /// Newest first.
    pub authorities: Vec<PaymentAuthorityView>,
    /// Where the human creates one (sign-in required).
    pub create_url: String,
}

#[derive(ApiResponse)]
pub enum AuthorityListResponse {
    #[oai(status = 200)]
    Ok(Json<PaymentAuthorityList>),
}

#[derive(ApiResponse)]
pub enum AuthorityResponse {
    #[oai(status = 200)]
    Ok(Json<PaymentAuthorityView>),
}

#[derive(ApiResponse)]
pub enum RevocationResponse {
    /// Revoked (now or before): no further payment is accepted under it.
    #[oai(status = 200)]
    Ok(Json<PaymentAuthorityView>),
}

impl From<AuthorityFailure> for ApiProblem {
    fn from(e: AuthorityFailure) -> Self {
        match e {
            AuthorityFailure::NotFound => ApiProblem::new(FailureClass::NotFound, e.to_string()),
            AuthorityFailure::Invalid(d) => ApiProblem::new(FailureClass::InvalidRequest, d),
            AuthorityFailure::Internal(e) => ApiProblem::internal(format!("{e:#}")),
        }
    }
}

pub struct AuthorityApi {
    pub ctx: AppContext,
}

impl AuthorityApi {
    /// The account of the revoking request: its API key, or else its signed-in web session
    /// (from a page of this site: `Origin` or `Referer` must be ours).
    async fn revoking_account(&self, req: &Request) -> Result<svc_ports::AccountId, ApiProblem> {
        if req.header(poem::http::header::AUTHORIZATION).is_some() {
            let principal = self
                .ctx
                .services
                .auth
                .authenticate_header(req.header(poem::http::header::AUTHORIZATION))
                .await
                .map_err(ApiProblem::from)?;
            return Ok(principal.account.id);
        }
        match crate::web::session_account_of(req, &self.ctx).await? {
            Some(account) if crate::web::from_this_site(req, &self.ctx) => Ok(account.id),
            Some(_) => Err(ApiProblem::new(
                FailureClass::CsrfRejected,
                "A web session may revoke only from this site's pages (Origin of this site).",
            )),
            None => Err(ApiProblem::new(
                FailureClass::MissingApiKey,
                "Revoking needs the owning account: its API key, or its signed-in web session.",
            )),
        }
    }
}

#[OpenApi(tag = "Tags::PaymentAuthorities")]
impl AuthorityApi {
    /// The account's payment authorities
    ///
    /// Every delegated payment authority the human created for this account, newest first,
    /// with its status and what remains in the current window. Agents cannot create one: the
    /// human does, signed in on the account page (`create_url`).
    #[oai(path = "/api/payment-authorities", method = "get")]
    async fn list(&self, auth: ApiKeyAuth) -> Result<AuthorityListResponse, ApiProblem> {
        let reports = self
            .ctx
            .services
            .authorities
            .list(&auth.0.account.id)
            .await?;
        Ok(AuthorityListResponse::Ok(Json(PaymentAuthorityList {
            authorities: reports.iter().map(PaymentAuthorityView::of).collect(),
            create_url: format!("{}/account#payment-authorities", self.ctx.origins.site_url),
        })))
    }

    /// One payment authority of the account
    #[oai(path = "/api/payment-authorities/:authority_id", method = "get")]
    async fn get(
        &self,
        auth: ApiKeyAuth,
        /// `pa_...`
        authority_id: Path<String>,
    ) -> Result<AuthorityResponse, ApiProblem> {
        let report = self
            .ctx
            .services
            .authorities
            .get(&auth.0.account.id, &authority_id.0)
            .await?;
        Ok(AuthorityResponse::Ok(Json(PaymentAuthorityView::of(
            &report,
        ))))
    }

    /// Status of a payment authority (its revocation URL)
    ///
    /// No credentials: the URL is the capability. Reports only `status` (`active`, `revoked`,
    /// `expired` or `exhausted`) and what `remaining` may be spent now; whose it is, its limit
    /// and its history are for the owning account (`GET /api/payment-authorities/{id}`).
    #[oai(
        path = "/api/payment-authorities/:authority_id/revocation",
        method = "get"
    )]
    async fn revocation_status(
        &self,
        /// `pa_...`
        authority_id: Path<String>,
    ) -> Result<AuthorityStatusResponse, ApiProblem> {
        let id = crate::services::AuthorityService::parse_id(&authority_id.0)?;
        let report = self.ctx.services.authorities.report(&id).await?;
        Ok(AuthorityStatusResponse::Ok(Json(AuthorityStatusView {
            status: report.usage.status.as_str().to_owned(),
            remaining: AuthorityRemainingAmount {
                value: report.usage.remaining,
                currency: report.authority.currency.to_string(),
            },
        })))
    }

    /// Revoke a payment authority
    ///
    /// Stops every further payment under it at once (a payment already running settles as
    /// it was). Needs the owning account: its API key (`Authorization: Bearer svc_...`) or its
    /// signed-in web session from this site's pages. Idempotent: revoking again answers the
    /// same. Another account's authority is 404.
    #[oai(
        path = "/api/payment-authorities/:authority_id/revocation",
        method = "post"
    )]
    async fn revoke(
        &self,
        req: &Request,
        /// `pa_...`
        authority_id: Path<String>,
    ) -> Result<RevocationResponse, ApiProblem> {
        let account = self.revoking_account(req).await?;
        let report = self
            .ctx
            .services
            .authorities
            .revoke(&account, &authority_id.0)
            .await?;
        Ok(RevocationResponse::Ok(Json(PaymentAuthorityView::of(
            &report,
        ))))
    }
}
