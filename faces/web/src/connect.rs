//! The human's side of a target-site connection: the connect link (sign-in required, as the
//! account the agent uses), the hand-over to the provider, and the provider's callback.

use askama::Template;
use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Data, Form, Query},
};
use serde::Deserialize;
use svc_ports::{ConnectionRecord, ConnectionState};

use super::{ApiProblem, Visit, check_post, encode, signin_redirect};
use kit::context::AppContext;
use svc_services::connections::ConnectionFailure;

#[derive(Template)]
#[template(path = "connect.html")]
struct ConnectPage {
    signed_in_as: Option<String>,
    csrf: String,
    provider: String,
    email: String,
    expected_account: Option<String>,
    link: String,
    expires_at: String,
}

/// Sends the browser on to the provider (a form may not be redirected to another origin under
/// this site's `form-action 'self'`; a link and a meta refresh may).
#[derive(Template)]
#[template(path = "connect_redirect.html")]
struct RedirectPage {
    signed_in_as: Option<String>,
    csrf: String,
    provider: String,
    authorization_url: String,
}

#[derive(Deserialize)]
struct LinkQuery {
    #[serde(default)]
    c: String,
}

/// The outcome of a connection, for the human.
fn outcome_page(visit: Visit, record: &ConnectionRecord) -> Response {
    let provider = record.provider.as_str();
    let (status, heading, message) = match record.state {
        ConnectionState::Connected => (
            StatusCode::OK,
            "Connected",
            format!(
                "Your {provider} account {} is connected. Your agent can now run the actions that need it; you can close this page.",
                record.upstream_account.as_deref().unwrap_or_default()
            ),
        ),
        ConnectionState::Refused => (
            StatusCode::OK,
            "Not connected",
            format!(
                "You refused access at {provider}. Nothing was connected; your agent will stop."
            ),
        ),
        ConnectionState::WrongAccount => (
            StatusCode::CONFLICT,
            "Another account",
            format!(
                "You signed in at {provider} as {}, but your agent expected {}. Nothing was connected; tell your agent which account to use.",
                record
                    .upstream_account
                    .as_deref()
                    .unwrap_or("another account"),
                record.expected_account.as_deref().unwrap_or("another one")
            ),
        ),
        ConnectionState::Expired => (
            StatusCode::GONE,
            "Link expired",
            "This connect link expired. Ask your agent for a new one.".to_owned(),
        ),
        ConnectionState::Pending => (
            StatusCode::OK,
            "Waiting",
            "This connection is still waiting for you at the provider.".to_owned(),
        ),
    };
    visit.message(status, heading, &message, None)
}

fn failure_page(visit: Visit, e: ConnectionFailure) -> Response {
    let status = match e {
        ConnectionFailure::UnknownLink => StatusCode::NOT_FOUND,
        ConnectionFailure::OtherAccount => StatusCode::FORBIDDEN,
        ConnectionFailure::LinkExpired => StatusCode::GONE,
        ConnectionFailure::ProviderUnavailable(_) => StatusCode::BAD_GATEWAY,
        ConnectionFailure::Internal(ref err) => {
            tracing::error!(error = %format!("{err:#}"), "connection page failed");
            return ApiProblem::internal("the connection could not be read").render("Bearer");
        }
        _ => StatusCode::BAD_REQUEST,
    };
    visit.message(status, "Cannot connect", &e.to_string(), None)
}

/// `GET /connect?c=...`: what the agent shows the human.
#[handler]
async fn connect_page(req: &Request, ctx: Data<&AppContext>, q: Query<LinkQuery>) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, &format!("/connect?c={}", encode(&q.c)));
    };
    match ctx.services.connections.link(&q.c, &account.id).await {
        Ok(record) if record.state == ConnectionState::Pending => {
            let page = ConnectPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                provider: record.provider.to_string(),
                email: account.email.as_str().to_owned(),
                expected_account: record.expected_account.clone(),
                link: q.c.clone(),
                expires_at: record.link_expires_at.format("%H:%M UTC").to_string(),
            };
            visit.page(StatusCode::OK, &page)
        }
        Ok(record) => outcome_page(visit, &record),
        Err(e) => failure_page(visit, e),
    }
}

#[derive(Deserialize)]
struct ContinueForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    c: String,
}

/// `POST /connect`: hands the browser over to the provider's authorization page.
#[handler]
async fn connect_continue(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<ContinueForm>,
) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(resp) = check_post(req, &ctx, &visit, &form.csrf) {
        return *resp;
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, &format!("/connect?c={}", encode(&form.c)));
    };
    match ctx
        .services
        .connections
        .authorization_url(&form.c, &account.id)
        .await
    {
        Ok(url) => {
            let page = RedirectPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                provider: ctx
                    .services
                    .connections
                    .link(&form.c, &account.id)
                    .await
                    .map(|r| r.provider.to_string())
                    .unwrap_or_default(),
                authorization_url: url,
            };
            visit.page(StatusCode::OK, &page)
        }
        Err(e) => failure_page(visit, e),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    #[serde(default)]
    state: String,
    code: Option<String>,
    error: Option<String>,
}

/// `GET /connect/callback`: the provider's answer. The signed-in human must be the account
/// that started it, so a callback cannot attach an upstream account to someone else.
#[handler]
async fn connect_callback(
    req: &Request,
    ctx: Data<&AppContext>,
    q: poem::Result<Query<CallbackQuery>>,
) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return visit.message(
            StatusCode::FORBIDDEN,
            "Sign in first",
            "Open the connect link your agent gave you while signed in to your account.",
            None,
        );
    };
    // A parameter twice or a malformed query: the site's own page, and nothing is decided.
    let Ok(q) = q else {
        return visit.message(
            StatusCode::BAD_REQUEST,
            "This answer could not be read",
            "The provider's answer could not be read, so nothing was connected. Ask your agent \
             for a new connect link and open it again.",
            None,
        );
    };
    match ctx
        .services
        .connections
        .complete(&q.state, &account.id, q.code.as_deref(), q.error.as_deref())
        .await
    {
        Ok(record) => outcome_page(visit, &record),
        Err(e) => failure_page(visit, e),
    }
}

pub fn mount(route: poem::Route) -> poem::Route {
    route
        .at("/connect", poem::get(connect_page).post(connect_continue))
        .at("/connect/callback", poem::get(connect_callback))
}
