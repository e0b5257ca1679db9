//! Delegated payment authorities over REST: the agent reads its account's authorities; anyone
//! holding an authority's `revocation_url` reads its status there; the owning account (API key
//! or signed-in web session) revokes it there. There is no way to create one with an API key:
//! the human creates it on the account page.

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::authority::*;
use poem::Request;
use poem_openapi::{ApiResponse, OpenApi, param::Path, payload::Json};
use svc_ports::FailureClass;

#[derive(ApiResponse)]
pub enum AuthorityStatusResponse {
    #[oai(status = 200)]
    Ok(Json<AuthorityStatusView>),
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
        match kit::session::session_account_of(req, &self.ctx).await? {
            Some(account) if kit::session::from_this_site(req, &self.ctx) => Ok(account.id),
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
        let id = svc_services::AuthorityService::parse_id(&authority_id.0)?;
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
