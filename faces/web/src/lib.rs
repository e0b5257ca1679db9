//! Pages for humans, rendered on the server (askama) and usable without JavaScript: sign-in by
//! an emailed code, the device approval page, the account page with keys and usage, terms and
//! privacy.
//!
//! Every form carries a CSRF token derived from an HttpOnly cookie (SHA-256 of its random
//! value, so a page from another origin can neither read nor compute it), every POST must come
//! with an `Origin` (or `Referer`) of this site, and a request that carries an API key is
//! refused: these are web-session endpoints.

use kit::problem::ApiProblem;
use kit::session::{SESSION_COOKIE, cookie_value, site_origin};
use poem::{Route, get};

/// Starts a visit, or answers the failure of looking up the session.
macro_rules! visit {
    ($req:expr, $ctx:expr) => {
        match Visit::begin($req, $ctx).await {
            Ok(v) => v,
            Err(e) => return ApiProblem::from(e).render("Bearer"),
        }
    };
}

mod account;
mod activity;
mod authority;
mod billing;
mod connect;
mod device;
mod legal;
pub mod markdown;
mod readiness;
mod signin;
mod usage_chart;
mod visit;
mod webhooks;
mod webmcp;

pub(crate) use account::*;
pub(crate) use device::*;
pub(crate) use legal::*;
pub(crate) use signin::*;
pub use visit::error_page;
use visit::*;

/// The landing page (`/`), mounted by the app after the API.
/// The text agents get from the landing page when they ask for Markdown (the llms.txt guide).
#[derive(Clone)]
pub struct LlmsText(pub String);

/// `GET /`: the landing page for people, Markdown (`llms`) for agents that ask for it.
pub fn home(llms: String) -> poem::endpoint::BoxEndpoint<'static> {
    poem::EndpointExt::boxed(poem::EndpointExt::map_to_response(poem::EndpointExt::data(
        get(readiness::home),
        LlmsText(llms),
    )))
}

/// Adds the human-facing pages to `route`.
pub fn mount(route: Route) -> Route {
    webhooks::mount(activity::mount(connect::mount(readiness::mount(
        authority::mount(billing::mount(markdown::mount(route))),
    ))))
    .at("/signin", get(signin_page).post(signin_submit))
    .at("/signin/code", get(code_page).post(code_submit))
    .at("/signout", poem::post(signout))
    .at("/device", get(device_page).post(device_submit))
    .at("/account", get(account_page))
    .at("/account/keys", poem::post(create_key))
    .at("/account/keys/rotate", poem::post(rotate_key))
    .at("/account/keys/revoke", poem::post(revoke_key))
    .at("/terms", get(terms))
    .at("/privacy", get(privacy))
}

/// `/index.md`: the landing page's Markdown mirror.
pub fn index_md(llms: String) -> poem::endpoint::BoxEndpoint<'static> {
    poem::EndpointExt::boxed(poem::EndpointExt::map_to_response(markdown::index(llms)))
}
