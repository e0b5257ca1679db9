//! The human's side of delegated payment authorities: the account page lists them and offers a
//! form to create one and a button to revoke each. Creating one is the signed-in human's act
//! only: these are web-session POSTs with CSRF, and requests with an API key are refused.

use super::{Visit, check_post, render_account, signin_redirect};
use kit::context::AppContext;
use kit::problem::ApiProblem;
use poem::{
    Request, Response, Route,
    web::{Data, Form},
};
use serde::Deserialize;
use svc_services::{AuthorityFailure, AuthorityReport, IdentityFailure, NewAuthority};

/// One authority as the account page shows it.
pub struct AuthorityRow {
    pub id: String,
    pub scope: String,
    pub limit: String,
    pub currency: String,
    pub expires_at: String,
    pub status: &'static str,
    pub remaining: i64,
    pub active: bool,
    pub flags: String,
}

impl AuthorityRow {
    pub fn of(r: &AuthorityReport) -> Self {
        let a = &r.authority;
        let mut flags = Vec::new();
        if a.receipt_required {
            flags.push("receipt");
        }
        if a.verification_required {
            flags.push("verification");
        }
        Self {
            id: a.authority_id.to_string(),
            scope: a.scope.join(", "),
            limit: format!(
                "{} per {}",
                a.amount_limit.value(),
                a.amount_limit.interval().as_str()
            )
            .replace("per single_use", "once (single use)"),
            currency: a.currency.to_string(),
            expires_at: a.expires_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            status: r.usage.status.as_str(),
            remaining: r.usage.remaining,
            active: a.revoked_at.is_none(),
            flags: flags.join(", "),
        }
    }
}

#[derive(Deserialize)]
struct CreateForm {
    #[serde(default)]
    csrf: String,
    scope_order: Option<String>,
    scope_booking: Option<String>,
    #[serde(default)]
    amount: String,
    #[serde(default)]
    interval: String,
    #[serde(default)]
    currency: String,
    #[serde(default)]
    expires_in_days: String,
    #[serde(default)]
    agent_provider: String,
    receipt_required: Option<String>,
    verification_required: Option<String>,
}

#[derive(Deserialize)]
struct RevokeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    authority_id: String,
}

const SECTION: &str = "/account#payment-authorities";

#[poem::handler]
async fn create(req: &Request, ctx: Data<&AppContext>, form: Form<CreateForm>) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, SECTION);
    };
    let mut scope = Vec::new();
    if form.scope_order.is_some() {
        scope.push("order".to_owned());
    }
    if form.scope_booking.is_some() {
        scope.push("booking".to_owned());
    }
    let (Ok(amount), Ok(expires_in_days)) = (
        form.amount.trim().parse::<i64>(),
        form.expires_in_days.trim().parse::<i64>(),
    ) else {
        let error = "The amount and the days until it expires are whole numbers.".to_owned();
        return render_account(visit, &ctx, &account, None, Some(error)).await;
    };
    let currency = match form.currency.trim() {
        "" => "usd".to_owned(),
        c => c.to_owned(),
    };
    let input = NewAuthority {
        scope,
        amount,
        interval: form.interval.clone(),
        currency,
        expires_in_days,
        agent_provider: form.agent_provider.clone(),
        receipt_required: form.receipt_required.is_some(),
        verification_required: form.verification_required.is_some(),
    };
    match ctx.services.authorities.create(&account, input).await {
        Ok(_) => visit.redirect("/account?notice=authority-created#payment-authorities"),
        Err(AuthorityFailure::Invalid(e)) => {
            render_account(visit, &ctx, &account, None, Some(e)).await
        }
        Err(e) => visit.failure(IdentityFailure::Internal(anyhow::Error::new(e))),
    }
}

#[poem::handler]
async fn revoke(req: &Request, ctx: Data<&AppContext>, form: Form<RevokeForm>) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, SECTION);
    };
    match ctx
        .services
        .authorities
        .revoke(&account.id, form.authority_id.trim())
        .await
    {
        Ok(_) => visit.redirect("/account?notice=authority-revoked#payment-authorities"),
        Err(e @ AuthorityFailure::NotFound) => {
            render_account(visit, &ctx, &account, None, Some(e.to_string())).await
        }
        Err(e) => visit.failure(IdentityFailure::Internal(anyhow::Error::new(e))),
    }
}

pub(super) fn mount(route: Route) -> Route {
    route
        .at("/account/payment-authorities", poem::post(create))
        .at("/account/payment-authorities/revoke", poem::post(revoke))
}
