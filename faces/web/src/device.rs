//! The device flow's approval page: enter the user code, see which agent asks for what, approve or deny.

use askama::Template;
use kit::context::AppContext;
use kit::{edge::client_ip_of, problem::ApiProblem};
use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Data, Form, Query},
};
use serde::Deserialize;
use svc_ports::actions::CONSEQUENTIAL_SCOPE;
use svc_services::IdentityFailure;

use crate::*;

#[derive(Template)]
#[template(path = "device_enter.html")]
pub(crate) struct DeviceEnterPage {
    signed_in_as: Option<String>,
    csrf: String,
    user_code: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "device_approve.html")]
pub(crate) struct DeviceApprovePage {
    signed_in_as: Option<String>,
    csrf: String,
    agent_name: String,
    client_id: String,
    user_code: String,
    scopes: Vec<(String, &'static str)>,
    /// The agent asked for `execute:consequential`: shown apart, unticked, in words.
    consequential: bool,
    consequential_words: &'static str,
    email: String,
    expires_at: String,
}

/// What `execute:consequential` allows, in the words the human confirms.
pub(crate) const CONSEQUENTIAL_WORDS: &str = "place orders, make bookings and make payments on sites \
    for you, spending your credits and, where an action pays, money under a payment authority you create";

pub(crate) fn scope_description(scope: &str) -> &'static str {
    match scope {
        "read" => "read public web pages",
        "discover" => "see which actions a site offers",
        "execute" => "run mapped site actions, spending your credits",
        _ => "a permission of the service",
    }
}

// ---- device approval ----------------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct DeviceQuery {
    user_code: Option<String>,
}

#[handler]
pub(crate) async fn device_page(
    req: &Request,
    ctx: Data<&AppContext>,
    q: Query<DeviceQuery>,
) -> Response {
    let visit = visit!(req, &ctx);
    let code = q.user_code.clone().unwrap_or_default();
    let Some(account) = visit.account.clone() else {
        let next = if code.is_empty() {
            "/device".to_owned()
        } else {
            format!("/device?user_code={}", encode(&code))
        };
        return signin_redirect(visit, &next);
    };
    if code.trim().is_empty() {
        let page = DeviceEnterPage {
            signed_in_as: visit.signed_in_as(),
            csrf: visit.csrf(),
            user_code: String::new(),
            error: None,
        };
        return visit.page(StatusCode::OK, &page);
    }
    let ip = client_ip_of(req, &ctx.proxies);
    match ctx.services.identity.pending_device(&code, ip).await {
        Ok(grant) => {
            let page = DeviceApprovePage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                agent_name: grant
                    .agent_name
                    .clone()
                    // No name given: the client id is what the agent calls itself.
                    .unwrap_or_else(|| grant.client_id.clone()),
                client_id: grant.client_id.clone(),
                user_code: grant.user_code.display(),
                scopes: grant
                    .scopes
                    .iter()
                    .filter(|s| s.as_str() != CONSEQUENTIAL_SCOPE)
                    .map(|s| (s.as_str().to_owned(), scope_description(s.as_str())))
                    .collect(),
                consequential: grant.scopes.contains(CONSEQUENTIAL_SCOPE),
                consequential_words: CONSEQUENTIAL_WORDS,
                email: account.email.to_string(),
                expires_at: grant.expires_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            };
            visit.page(StatusCode::OK, &page)
        }
        Err(e @ IdentityFailure::UnknownUserCode) => {
            let page = DeviceEnterPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                user_code: code.chars().take(12).collect(),
                error: Some(e.to_string()),
            };
            visit.page(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
        Err(e) => visit.failure(e),
    }
}

#[derive(Deserialize)]
pub(crate) struct DeviceForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    user_code: String,
    #[serde(default)]
    decision: String,
    /// Present when the human ticked the consequential scope.
    consequential: Option<String>,
}

#[handler]
pub(crate) async fn device_submit(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<DeviceForm>,
) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        let next = format!("/device?user_code={}", encode(&form.user_code));
        return signin_redirect(visit, &next);
    };
    let approve = match form.decision.as_str() {
        "approve" => true,
        "deny" => false,
        _ => {
            return visit.message(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Choose Approve or Deny",
                "The form did not say whether to approve or deny.",
                Some(("/device", "Back")),
            );
        }
    };
    let ip = client_ip_of(req, &ctx.proxies);
    match ctx
        .services
        .identity
        .decide_device(
            &form.user_code,
            &account,
            approve,
            form.consequential.is_some(),
            ip,
        )
        .await
    {
        Ok(_) if approve => visit.message(
            StatusCode::OK,
            "Agent approved",
            "Done. Go back to your agent: it receives its API key on its next check. You can revoke it on your account page.",
            Some(("/account", "Your account")),
        ),
        Ok(_) => visit.message(
            StatusCode::OK,
            "Request denied",
            "The agent was told no and gets no key.",
            None,
        ),
        Err(e) => visit.failure(e),
    }
}
