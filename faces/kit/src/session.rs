//! The web session as every face sees it: its cookie, the account it belongs to, and whether a
//! request came from a page of this site.

use poem::{Request, http::header};
use svc_ports::Account;

use crate::{context::AppContext, problem::ApiProblem};

pub const SESSION_COOKIE: &str = "svc_session";

pub fn cookie_value(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// `scheme://host[:port]` of a configured URL.
pub fn site_origin(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            format!("{scheme}://{host}")
        }
        None => url.to_owned(),
    }
}

/// The account of the request's web session, if it is a live one (for REST endpoints that a
/// signed-in page may also call).
pub async fn session_account_of(
    req: &Request,
    ctx: &AppContext,
) -> Result<Option<Account>, ApiProblem> {
    match cookie_value(req, SESSION_COOKIE) {
        Some(t) => ctx
            .services
            .identity
            .session_account(&t)
            .await
            .map_err(ApiProblem::from),
        None => Ok(None),
    }
}

/// Whether the request came from a page of this site (`Origin`, else `Referer`).
pub fn from_this_site(req: &Request, ctx: &AppContext) -> bool {
    let origins = [
        site_origin(&ctx.origins.site_url),
        site_origin(&ctx.origins.base_url),
    ];
    match (req.header(header::ORIGIN), req.header(header::REFERER)) {
        (Some(origin), _) => origins.iter().any(|o| origin == o),
        (None, Some(referer)) => origins
            .iter()
            .any(|o| referer == o || referer.starts_with(&format!("{o}/"))),
        (None, None) => false,
    }
}
