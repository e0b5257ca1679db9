//! The account page: plan, credits, keys (create, rotate, revoke).

use askama::Template;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Data, Form, Query},
};
use serde::Deserialize;
use svc_ports::{Account, ApiKeyRecord};
use svc_services::IdentityFailure;

use crate::*;

pub(crate) struct KeyRow {
    prefix: String,
    label: String,
    scopes: String,
    created_at: String,
    status: &'static str,
    active: bool,
}

#[derive(Template)]
#[template(path = "account.html")]
pub(crate) struct AccountPage {
    signed_in_as: Option<String>,
    csrf: String,
    notice: Option<String>,
    error: Option<String>,
    email: String,
    account_id: String,
    plan: String,
    spendable: i64,
    held: i64,
    frozen: i64,
    cost_per_action: i64,
    keys: Vec<KeyRow>,
    /// "Starter: 1000 credits for 9.00 USD", when checkout sells it.
    starter: Option<String>,
    /// A fresh Idempotency-Key per rendering: submitting this form twice opens one checkout.
    checkout_key: String,
    contact_url: String,
    receipts: Vec<billing::ReceiptRow>,
    authorities: Vec<authority::AuthorityRow>,
    /// The activity section (`account_activity.html`).
    activity: activity::ActivitySection,
}

#[derive(Template)]
#[template(path = "key_created.html")]
pub(crate) struct KeyCreatedPage {
    signed_in_as: Option<String>,
    csrf: String,
    heading: String,
    secret: String,
    setup_command: String,
}

// ---- account ----------------------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct AccountQuery {
    notice: Option<String>,
}

pub(crate) fn key_row(k: &ApiKeyRecord) -> KeyRow {
    KeyRow {
        prefix: k.prefix.to_string(),
        label: k.label.clone(),
        scopes: k.scopes.to_list_string(),
        created_at: k.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        status: if k.is_revoked() { "revoked" } else { "active" },
        active: !k.is_revoked(),
    }
}

pub(crate) async fn render_account(
    visit: Visit,
    ctx: &AppContext,
    account: &Account,
    notice: Option<String>,
    error: Option<String>,
) -> Response {
    let keys = match ctx.services.identity.account_keys(account).await {
        Ok(k) => k,
        Err(e) => return visit.failure(e),
    };
    let billing = match ctx.services.billing.billing_account(account, 50).await {
        Ok(b) => b,
        Err(e) => return visit.failure(IdentityFailure::Internal(anyhow::Error::new(e))),
    };
    let authorities = match ctx.services.authorities.list(&account.id).await {
        Ok(a) => a,
        Err(e) => return visit.failure(IdentityFailure::Internal(anyhow::Error::new(e))),
    };
    let activity = match activity::account_section(ctx, account).await {
        Ok(a) => a,
        Err(e) => return visit.failure(IdentityFailure::Internal(anyhow::Error::new(e))),
    };
    let page = AccountPage {
        activity,
        authorities: authorities
            .iter()
            .map(authority::AuthorityRow::of)
            .collect(),
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        notice,
        error,
        email: account.email.to_string(),
        account_id: account.id.to_string(),
        plan: billing.account.plan.to_string(),
        spendable: billing.balance.spendable,
        held: billing.balance.held,
        frozen: billing.balance.frozen,
        cost_per_action: ctx.services.usage.policy().cost_per_completed_action,
        keys: keys.iter().map(key_row).collect(),
        starter: billing::starter_offer(ctx),
        checkout_key: ctx.services.identity.random_token(24),
        contact_url: billing::contact_url(ctx),
        receipts: billing
            .receipts
            .iter()
            .map(billing::ReceiptRow::of)
            .collect(),
    };
    visit.page(StatusCode::OK, &page)
}

#[handler]
pub(crate) async fn account_page(
    req: &Request,
    ctx: Data<&AppContext>,
    q: Query<AccountQuery>,
) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, "/account");
    };
    let notice = match q.notice.as_deref() {
        Some("revoked") => Some("The key was revoked; requests with it now get 401.".to_owned()),
        Some("authority-created") => {
            Some("The payment authority was created; give its id to your agent.".to_owned())
        }
        Some("authority-revoked") => Some(
            "The payment authority was revoked; no further payment is accepted under it."
                .to_owned(),
        ),
        Some("checkout-cancelled") => {
            Some("Checkout was cancelled; nothing was charged.".to_owned())
        }
        _ => None,
    };
    render_account(visit, &ctx, &account, notice, None).await
}

#[derive(Deserialize)]
pub(crate) struct KeyForm {
    #[serde(default)]
    csrf: String,
    prefix: Option<String>,
    label: Option<String>,
}

pub(crate) enum KeyAction {
    Create,
    Rotate,
    Revoke,
}

pub(crate) async fn key_action(
    req: &Request,
    ctx: &AppContext,
    form: &KeyForm,
    action: KeyAction,
) -> Response {
    let visit = visit!(req, ctx);
    if let Err(refusal) = check_post(req, ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, "/account");
    };
    let identity = &ctx.services.identity;
    let prefix = form.prefix.as_deref().unwrap_or_default();
    let (heading, result) = match action {
        KeyAction::Create => (
            "New API key",
            identity.create_key(&account, form.label.as_deref()).await,
        ),
        KeyAction::Rotate => (
            "Rotated API key",
            identity.rotate_key(&account, prefix).await,
        ),
        KeyAction::Revoke => {
            return match identity.revoke_key(&account, prefix).await {
                Ok(_) => visit.redirect("/account?notice=revoked"),
                Err(e @ (IdentityFailure::KeyNotFound | IdentityFailure::KeyAlreadyRevoked)) => {
                    render_account(visit, ctx, &account, None, Some(e.to_string())).await
                }
                Err(e) => visit.failure(e),
            };
        }
    };
    match result {
        Ok((secret, _)) => {
            let page = KeyCreatedPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                heading: heading.into(),
                setup_command: identity.mcp_setup_command(&secret),
                secret: secret.expose().to_owned(),
            };
            visit.page(StatusCode::OK, &page)
        }
        Err(
            e @ (IdentityFailure::KeyNotFound
            | IdentityFailure::KeyAlreadyRevoked
            | IdentityFailure::InvalidRequest(_)),
        ) => render_account(visit, ctx, &account, None, Some(e.to_string())).await,
        Err(e) => visit.failure(e),
    }
}

#[handler]
pub(crate) async fn create_key(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<KeyForm>,
) -> Response {
    key_action(req, &ctx, &form, KeyAction::Create).await
}

#[handler]
pub(crate) async fn rotate_key(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<KeyForm>,
) -> Response {
    key_action(req, &ctx, &form, KeyAction::Rotate).await
}

#[handler]
pub(crate) async fn revoke_key(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<KeyForm>,
) -> Response {
    key_action(req, &ctx, &form, KeyAction::Revoke).await
}
