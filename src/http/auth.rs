//! The API-key security scheme: `Authorization: Bearer svc_...`, checked against the store and
//! the per-key rate limit before any handler runs.

use poem::Request;
use poem_openapi::{SecurityScheme, auth::Bearer};

use super::{limits::RateLimits, problem::ApiProblem};
use crate::{context::AppContext, services::Principal};

/// An API key: `svc_live_` (or `svc_test_` on the sandbox) + 32 base62 characters.
#[derive(SecurityScheme)]
#[oai(
    ty = "bearer",
    bearer_format = "svc_<API_KEY>",
    checker = "check_api_key"
)]
pub struct ApiKeyAuth(pub Principal);

async fn check_api_key(req: &Request, bearer: Bearer) -> poem::Result<Principal> {
    let ctx = req
        .data::<AppContext>()
        .ok_or_else(|| ApiProblem::internal("app context missing"))?;
    let principal = ctx
        .services
        .auth
        .authenticate(&bearer.token)
        .await
        .map_err(ApiProblem::from)?;
    if let Some(limits) = req.data::<RateLimits>() {
        limits.check_key(&principal.key.id)?;
    }
    tracing::Span::current().record("account_id", principal.account.id.as_str());
    Ok(principal)
}
