//! Sign-in by an emailed code, and sign-out.

use askama::Template;
use kit::context::AppContext;
use kit::session::{SESSION_COOKIE, cookie_value};
use kit::{edge::client_ip_of, problem::ApiProblem};
use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Data, Form, Query},
};
use serde::Deserialize;
use svc_services::{IdentityFailure, identity::KNOWN_BROWSER_TTL};

use crate::*;

/// The mark of a browser that signed in with an e-mailed code (`KnownBrowser`): it may ask
/// for more sign-in codes to its address than strangers can, so they cannot hold its sign-in.
pub(crate) const KNOWN_BROWSER_COOKIE: &str = "svc_known";

// ---- templates ------------------------------------------------------------------------------

#[derive(Template)]
#[template(path = "signin.html")]
pub(crate) struct SignInPage {
    signed_in_as: Option<String>,
    csrf: String,
    next: String,
    email: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "signin_code.html")]
pub(crate) struct CodePage {
    signed_in_as: Option<String>,
    csrf: String,
    challenge: String,
    next: String,
    error: Option<String>,
}

// ---- sign-in ----------------------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct NextQuery {
    next: Option<String>,
}

#[handler]
pub(crate) async fn signin_page(
    req: &Request,
    ctx: Data<&AppContext>,
    q: Query<NextQuery>,
) -> Response {
    let visit = visit!(req, &ctx);
    let page = SignInPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        next: safe_next(q.next.as_deref()),
        email: String::new(),
        error: None,
    };
    visit.page(StatusCode::OK, &page)
}

#[derive(Deserialize)]
pub(crate) struct SignInForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    next: Option<String>,
}

#[handler]
pub(crate) async fn signin_submit(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<SignInForm>,
) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let next = safe_next(form.next.as_deref());
    let known = cookie_value(req, KNOWN_BROWSER_COOKIE);
    let started = ctx
        .services
        .identity
        .start_sign_in(&form.email, known.as_deref())
        .await;
    match started {
        Ok(id) => visit.redirect(&format!(
            "/signin/code?challenge={id}&next={}",
            encode(&next)
        )),
        Err(e) => {
            let problem = ApiProblem::from(e);
            let status = StatusCode::from_u16(problem.class.http_status())
                .unwrap_or(StatusCode::BAD_REQUEST);
            let page = SignInPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                next,
                email: form.email.chars().take(254).collect(),
                error: Some(problem.detail),
            };
            visit.page(status, &page)
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct CodeQuery {
    challenge: Option<String>,
    next: Option<String>,
}

#[handler]
pub(crate) async fn code_page(
    req: &Request,
    ctx: Data<&AppContext>,
    q: Query<CodeQuery>,
) -> Response {
    let visit = visit!(req, &ctx);
    let page = CodePage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        challenge: q
            .challenge
            .clone()
            .unwrap_or_default()
            .chars()
            .take(64)
            .collect(),
        next: safe_next(q.next.as_deref()),
        error: None,
    };
    visit.page(StatusCode::OK, &page)
}

#[derive(Deserialize)]
pub(crate) struct CodeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    challenge: String,
    #[serde(default)]
    code: String,
    next: Option<String>,
}

#[handler]
pub(crate) async fn code_submit(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<CodeForm>,
) -> Response {
    let mut visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let next = safe_next(form.next.as_deref());
    let ip = client_ip_of(req, &ctx.proxies);
    let code: String = form.code.chars().filter(|c| !c.is_whitespace()).collect();
    match ctx
        .services
        .identity
        .verify_sign_in_code(&form.challenge, &code, ip)
        .await
    {
        Ok(signed_in) => {
            if let Some(old) = visit.session_token.take() {
                let _ = ctx.services.identity.sign_out(&old).await;
            }
            // A new CSRF seed with the new session: nothing from before sign-in carries over.
            let seed = ctx.services.identity.random_token(CSRF_SEED_LEN);
            visit.set_cookie(CSRF_COOKIE, &seed, None);
            let ttl = ctx.services.identity.settings().session_ttl;
            visit.set_cookie(SESSION_COOKIE, &signed_in.session_token, Some(ttl));
            if let Some(mark) = &signed_in.known_browser {
                visit.set_cookie(KNOWN_BROWSER_COOKIE, mark, Some(KNOWN_BROWSER_TTL));
            }
            visit.redirect(&next)
        }
        Err(
            e @ (IdentityFailure::WrongCode { .. }
            | IdentityFailure::InvalidRequest(_)
            | IdentityFailure::UnknownChallenge),
        ) => {
            let page = CodePage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                challenge: form.challenge.chars().take(64).collect(),
                next,
                error: Some(e.to_string()),
            };
            visit.page(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
        Err(e) => visit.failure(e),
    }
}

#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

#[handler]
pub(crate) async fn signout(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<CsrfOnly>,
) -> Response {
    let mut visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    if let Some(token) = visit.session_token.take()
        && let Err(e) = ctx.services.identity.sign_out(&token).await
    {
        return visit.failure(e);
    }
    visit.set_cookie(SESSION_COOKIE, "", Some(std::time::Duration::ZERO));
    visit.redirect("/signin")
}
