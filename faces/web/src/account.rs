//! The account page: plan, credits, keys (create, rotate, revoke).

use askama::Template;
use chrono::{DateTime, Utc};
use kit::context::AppContext;
use kit::problem::ApiProblem;
use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Data, Form, Query},
};
use serde::Deserialize;
use svc_ports::{Account, ApiKeyRecord, Scopes, actions::CONSEQUENTIAL_SCOPE};
use svc_services::IdentityFailure;

use crate::*;

pub(crate) struct KeyRow {
    prefix: String,
    label: String,
    scopes: String,
    created_at: String,
    /// When it last worked, to the minute, or "never".
    last_used: String,
    status: &'static str,
    /// For a rotated key in its overlap: when it stops working (else empty).
    until: String,
    /// It still works: it may be revoked.
    live: bool,
    /// Never rotated and live: it may be rotated.
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
    consequential_words: &'static str,
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
    /// After a rotation: the old key and when it stops working.
    previous: Option<(String, String)>,
    /// What the new key may do, in a sentence.
    scopes: String,
}

// ---- account ----------------------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct AccountQuery {
    notice: Option<String>,
}

pub(crate) fn key_row(k: &ApiKeyRecord, now: DateTime<Utc>) -> KeyRow {
    KeyRow {
        prefix: k.prefix.to_string(),
        label: k.label.clone(),
        scopes: k.scopes.to_list_string(),
        created_at: when(k.created_at),
        last_used: k.last_used_at.map_or_else(|| "never".to_owned(), when),
        status: k.status(now),
        until: k
            .expires_at
            .filter(|_| k.is_live(now))
            .map(when)
            .unwrap_or_default(),
        live: k.is_live(now),
        active: k.is_live(now) && k.expires_at.is_none(),
    }
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
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
        keys: keys
            .iter()
            .map(|k| key_row(k, ctx.services.clock.now()))
            .collect(),
        consequential_words: CONSEQUENTIAL_WORDS,
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
    /// Set by the create form: the scope boxes below say what the key holds.
    scopes_chosen: Option<String>,
    scope_read: Option<String>,
    scope_discover: Option<String>,
    scope_execute: Option<String>,
    scope_consequential: Option<String>,
    /// The box naming what `execute:consequential` allows.
    confirm_consequential: Option<String>,
}

impl KeyForm {
    /// The ticked scopes, when the form offered them.
    fn scopes(&self) -> Option<Scopes> {
        self.scopes_chosen.as_ref()?;
        let ticked: Vec<&str> = [
            (&self.scope_read, "read"),
            (&self.scope_discover, "discover"),
            (&self.scope_execute, "execute"),
            (&self.scope_consequential, CONSEQUENTIAL_SCOPE),
        ]
        .into_iter()
        .filter(|(v, _)| v.is_some())
        .map(|(_, s)| s)
        .collect();
        Scopes::parse_list(&ticked.join(" ")).ok()
    }
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
            identity
                .create_key(
                    &account,
                    form.label.as_deref(),
                    form.scopes(),
                    form.confirm_consequential.is_some(),
                )
                .await
                .map(|(secret, record)| (secret, record, None)),
        ),
        KeyAction::Rotate => (
            "Rotated API key",
            identity.rotate_key(&account, prefix).await.map(|r| {
                let until = r.previous.expires_at.map(when).unwrap_or_default();
                (
                    r.secret,
                    r.record,
                    Some((r.previous.prefix.to_string(), until)),
                )
            }),
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
        Ok((secret, record, previous)) => {
            let page = KeyCreatedPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                heading: heading.into(),
                setup_command: identity.mcp_setup_command(&secret),
                secret: secret.expose().to_owned(),
                previous,
                scopes: record.scopes.to_list_string(),
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
