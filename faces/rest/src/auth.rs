//! The API-key security scheme: `Authorization: Bearer svc_...`, checked against the store and
//! the per-key rate limit before any handler runs.

use poem::Request;
use poem_openapi::{SecurityScheme, auth::Bearer};

use kit::context::AppContext;
use kit::limits::RateLimits;
use kit::problem::ApiProblem;
use svc_services::Principal;

/// An API key: `svc_live_` (or `svc_test_` on the sandbox) + 32 base62 characters.
#[derive(SecurityScheme)]
#[oai(
    ty = "bearer",
    bearer_format = "svc_<API_KEY>",
    checker = "check_api_key"
)]
pub struct ApiKeyAuth(pub Principal);

/// The bearer token of `Authorization`, if the header holds one.
pub fn bearer_token(req: &Request) -> Option<&str> {
    let value = req
        .headers()
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// An API key (its own account's view) or the operator's internal token
/// (`SVC_INTERNAL_TOKEN`: the whole service's view).
#[derive(SecurityScheme)]
#[oai(
    ty = "bearer",
    bearer_format = "svc_<API_KEY> or the internal token",
    checker = "check_key_or_internal"
)]
pub struct FunnelAuth(pub Option<svc_ports::AccountId>);

async fn check_key_or_internal(
    req: &Request,
    bearer: Bearer,
) -> poem::Result<Option<svc_ports::AccountId>> {
    let ctx = req
        .data::<AppContext>()
        .ok_or_else(|| ApiProblem::internal("app context missing"))?;
    if !bearer.token.starts_with("svc_")
        && ctx
            .services
            .billing
            .check_internal_token(Some(&bearer.token))
            .is_ok()
    {
        return Ok(None);
    }
    Ok(Some(check_api_key(req, bearer).await?.account.id))
}

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
