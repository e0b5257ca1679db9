//! Billing on the site: the signed-in customer's checkout (as a form on the account page and
//! as `POST /api/billing/create-checkout-session` for the site's own scripts), the handoff
//! link an agent gets from `svc_create_checkout_session`, the return page (which grants
//! nothing), the billing account, the provider's webhook and the internal meter endpoint.
//!
//! Checkout is a web session's act: a request that carries an API key is refused; the JSON
//! endpoint needs this site's `Origin`, the session's CSRF token as its bearer and an
//! `Idempotency-Key`.

use super::{
    CSRF_COOKIE, CSRF_SEED_LEN, SESSION_COOKIE, Visit, check_post, cookie_value, csrf_token_of,
    signin_redirect, site_origin,
};
use askama::Template;
use kit::context::AppContext;
use kit::headers;
use kit::problem::ApiProblem;
use poem::{
    Body, Request, Response, Route, get, handler,
    http::{StatusCode, header},
    web::{Data, Form, Query},
};
use serde::Deserialize;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use svc_ports::{
    CheckoutRecord, EventOutcome, FailureClass, Receipt, ReceiptKind, webhooks::WebhookHeaders,
};
use svc_services::{
    BillingFailure, HandoffState,
    billing::{Offer, WebhookError},
};

/// Largest webhook body accepted (provider events are small).
const MAX_WEBHOOK_BYTES: usize = 256 * 1024;

/// Largest JSON body of the checkout and meter endpoints.
const MAX_SMALL_BODY: usize = 16 * 1024;

fn problem(class: FailureClass, detail: &str) -> Response {
    ApiProblem::new(class, detail).render("Bearer")
}

fn no_store(mut resp: Response) -> Response {
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    resp
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    no_store(
        Response::builder()
            .status(status)
            .content_type("application/json")
            .body(body.to_string()),
    )
}

fn money(amount: i64, currency: &str) -> String {
    format!(
        "{}.{:02} {}",
        amount / 100,
        amount % 100,
        currency.to_uppercase()
    )
}

pub(super) fn starter_offer(ctx: &AppContext) -> Option<String> {
    let billing = &ctx.services.billing;
    if !billing.is_configured() {
        return None;
    }
    match billing.catalog().sku("starter").map(|s| &s.offer) {
        Some(Offer::Checkout {
            amount,
            currency,
            credits,
        }) => Some(format!(
            "Starter: {credits} credits for {}",
            money(*amount, currency.as_str())
        )),
        _ => None,
    }
}

pub(super) fn contact_url(ctx: &AppContext) -> String {
    match ctx
        .services
        .billing
        .catalog()
        .sku("enterprise")
        .map(|s| &s.offer)
    {
        Some(Offer::Contact { url }) => url.clone(),
        _ => "mailto:sales@example.com".into(),
    }
}

/// One line of the receipts table.
pub(super) struct ReceiptRow {
    pub kind: &'static str,
    pub when: String,
    pub note: String,
    pub change: String,
    pub reference: String,
}

impl ReceiptRow {
    pub fn of(r: &Receipt) -> Self {
        let change = match r.kind {
            ReceiptKind::DisputeForfeit => format!("{} frozen given up", r.credits),
            ReceiptKind::ActionRefund => format!("{} held, refunded", r.credits),
            _ => format!("{:+}", r.spendable_delta),
        };
        let reference = match (&r.task_id, &r.artifact_id, &r.payment_id) {
            (Some(t), Some(a), _) => format!("{t} · {a}"),
            (Some(t), None, _) => t.to_string(),
            (_, _, Some(p)) => p.clone(),
            _ => r.reference.clone(),
        };
        Self {
            kind: r.kind.as_str(),
            when: r.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            note: r.note.clone(),
            change,
            reference,
        }
    }
}

pub(super) fn receipt_json(r: &Receipt) -> Value {
    json!({
        "receipt_id": r.id.as_str(),
        "kind": r.kind.as_str(),
        "credits": r.credits,
        "spendable_delta": r.spendable_delta,
        "frozen_delta": r.frozen_delta,
        "shortfall": r.shortfall,
        "amount": r.amount,
        "currency": r.currency.as_ref().map(|c| c.as_str()),
        "payment_id": r.payment_id,
        "checkout_id": r.checkout_id.as_ref().map(|c| c.as_str()),
        "task_id": r.task_id.as_ref().map(|t| t.as_str()),
        "artifact_id": r.artifact_id.as_ref().map(|a| a.as_str()),
        "note": r.note,
        "created_at": r.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    })
}

fn checkout_json(c: &CheckoutRecord) -> Value {
    json!({
        "checkout_id": c.id.as_str(),
        "checkout_url": c.checkout_url,
        "sku": c.sku,
        "amount": c.amount,
        "currency": c.currency.as_str(),
        "credits": c.credits,
        "expires_at": c.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "status": "pending",
        "note": "Credits are added only after the payment provider's signed webhook confirms the payment.",
    })
}

/// The account of the request's session cookie, if it is a live session.
async fn session_account(
    req: &Request,
    ctx: &AppContext,
) -> Result<Option<svc_ports::Account>, Box<Response>> {
    match cookie_value(req, SESSION_COOKIE) {
        Some(t) => ctx
            .services
            .identity
            .session_account(&t)
            .await
            .map_err(|e| Box::new(ApiProblem::from(e).render("Bearer"))),
        None => Ok(None),
    }
}

// ---- templates ------------------------------------------------------------------------------

#[derive(Template)]
#[template(path = "billing_redirect.html")]
struct RedirectPage {
    signed_in_as: Option<String>,
    csrf: String,
    checkout_url: String,
    description: String,
    price: String,
}

#[derive(Template)]
#[template(path = "billing_handoff.html")]
struct HandoffPage {
    signed_in_as: Option<String>,
    /// Signed in as another account than the link's: continuing signs that one out.
    signed_in_elsewhere: bool,
    csrf: String,
    email: String,
    name: String,
    description: String,
    price: String,
    token: String,
}

#[derive(Template)]
#[template(path = "billing_return.html")]
struct ReturnPage {
    signed_in_as: Option<String>,
    csrf: String,
    confirmed: bool,
    credits: i64,
}

/// The page that sends the browser on to the provider's hosted checkout (a form may not be
/// redirected to another origin under this site's `form-action 'self'`; a link and a meta
/// refresh may).
fn to_payment_page(visit: Visit, checkout: &CheckoutRecord) -> Response {
    let page = RedirectPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        checkout_url: checkout.checkout_url.clone(),
        description: format!("{} credits", checkout.credits),
        price: money(checkout.amount, checkout.currency.as_str()),
    };
    visit.page(StatusCode::OK, &page)
}

// ---- the signed-in customer's checkout ---------------------------------------------------------

#[derive(Deserialize)]
struct CheckoutForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    sku: String,
    #[serde(default)]
    idempotency_key: String,
}

/// The account page's "Buy" form.
#[handler]
async fn checkout_form(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<CheckoutForm>,
) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, "/account");
    };
    match ctx
        .services
        .billing
        .create_checkout(
            &account,
            &form.sku,
            Some(&form.idempotency_key),
            "account_page",
        )
        .await
    {
        Ok(started) => to_payment_page(visit, &started.checkout),
        Err(e) => billing_failure_page(visit, e),
    }
}

fn billing_failure_page(visit: Visit, e: BillingFailure) -> Response {
    let problem = ApiProblem::from(e);
    let status =
        StatusCode::from_u16(problem.class.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let detail = if problem.class == FailureClass::Internal {
        "Something failed on our side; please try again.".to_owned()
    } else {
        problem.detail.clone()
    };
    visit.message(
        status,
        problem.class.title(),
        &detail,
        Some(("/account", "Your account")),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckoutBody {
    sku: String,
}

/// `POST /api/billing/create-checkout-session`: JSON for the site's own scripts.
#[handler]
async fn create_checkout_session(req: &Request, ctx: Data<&AppContext>, body: Body) -> Response {
    let authorization = req.header(header::AUTHORIZATION).unwrap_or_default();
    let bearer = authorization
        .strip_prefix("Bearer ")
        .map(str::trim)
        .unwrap_or_default();
    if bearer.starts_with("svc_") {
        return problem(
            FailureClass::ApiKeyNotAllowed,
            "Checkout is the signed-in customer's own act: API keys are refused here. Agents call the MCP tool \
             svc_create_checkout_session and hand the human its link.",
        );
    }
    let account = match session_account(req, &ctx).await {
        Ok(a) => a,
        Err(resp) => return *resp,
    };
    let Some(account) = account else {
        return problem(
            FailureClass::SignInRequired,
            "Sign in on this site first: checkout needs the customer's web session.",
        );
    };
    let here = [
        site_origin(&ctx.origins.site_url),
        site_origin(&ctx.origins.base_url),
    ];
    let origin_ok = req
        .header(header::ORIGIN)
        .is_some_and(|o| here.iter().any(|h| h == o));
    let expected = cookie_value(req, CSRF_COOKIE).map(|seed| csrf_token_of(&seed));
    let token_ok = expected
        .as_deref()
        .is_some_and(|e| !bearer.is_empty() && bool::from(e.as_bytes().ct_eq(bearer.as_bytes())));
    if !origin_ok || !token_ok {
        tracing::warn!(origin_ok, token_ok, "checkout session refused");
        return problem(
            FailureClass::CsrfRejected,
            "This request must come from this site's pages: an Origin of this site and the page's CSRF token as the bearer.",
        );
    }
    // Held to what every other JSON endpoint holds a body to: its type, UTF-8 throughout
    // (an ignored field is not checked by the parser), no field it does not know.
    if !headers::is_json(headers::content_type(req)) {
        return problem(
            FailureClass::UnsupportedMediaType,
            "The body must be sent as application/json.",
        );
    }
    let bytes = match body.into_bytes_limit(MAX_SMALL_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return problem(
                FailureClass::PayloadTooLarge,
                "The body must be JSON of at most 16 KiB.",
            );
        }
    };
    if std::str::from_utf8(&bytes).is_err() {
        return problem(
            FailureClass::MalformedRequest,
            "The body must be UTF-8 JSON like {\"sku\": \"starter\"}.",
        );
    }
    let parsed: CheckoutBody = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => {
            return problem(
                FailureClass::MalformedRequest,
                &format!("The body must be JSON like {{\"sku\": \"starter\"}}: {e}"),
            );
        }
    };
    // As sent: poem's `header` hands a value past visible ASCII over as absent, which would
    // read as no key; the service refuses it by name.
    let key = match headers::idempotency_key(req) {
        Ok(key) => key,
        Err(refused) => return no_store(refused.render("Bearer")),
    };
    match ctx
        .services
        .billing
        .create_checkout(
            &account,
            &parsed.sku,
            key.as_deref(),
            "create_checkout_session",
        )
        .await
    {
        Ok(started) => {
            let status = if started.replayed {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            let mut resp = json_response(status, &checkout_json(&started.checkout));
            if started.replayed {
                resp.headers_mut().insert(
                    "idempotent-replayed",
                    header::HeaderValue::from_static("true"),
                );
            }
            resp
        }
        Err(e) => no_store(ApiProblem::from(e).render("Bearer")),
    }
}

/// `GET /api/billing/account`: the signed-in customer's plan, credits and receipts.
#[handler]
async fn billing_account(req: &Request, ctx: Data<&AppContext>) -> Response {
    if req.headers().contains_key(header::AUTHORIZATION) {
        return problem(
            FailureClass::ApiKeyNotAllowed,
            "The billing account is read in the customer's signed-in web session; agents read credits with GET /api/usage.",
        );
    }
    let account = match session_account(req, &ctx).await {
        Ok(a) => a,
        Err(resp) => return *resp,
    };
    let Some(account) = account else {
        return problem(
            FailureClass::SignInRequired,
            "Sign in on this site to read the billing account.",
        );
    };
    match ctx.services.billing.billing_account(&account, 200).await {
        Ok(b) => json_response(
            StatusCode::OK,
            &json!({
                "account_id": b.account.id.as_str(),
                "plan": b.account.plan.as_str(),
                "credits": {
                    "spendable": b.balance.spendable,
                    "held": b.balance.held,
                    "frozen": b.balance.frozen,
                },
                "receipts": b.receipts.iter().map(receipt_json).collect::<Vec<_>>(),
            }),
        ),
        Err(e) => ApiProblem::from(e).render("Bearer"),
    }
}

// ---- the agent's handoff link ---------------------------------------------------------------

#[derive(Deserialize)]
struct HandoffQuery {
    #[serde(default)]
    token: String,
}

/// Shows what the link would buy; nothing is taken until the human continues.
#[handler]
async fn handoff_page(req: &Request, ctx: Data<&AppContext>, q: Query<HandoffQuery>) -> Response {
    let visit = visit!(req, &ctx);
    if q.token.is_empty()
        || q.token.len() > 128
        || !q.token.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return billing_failure_page(visit, BillingFailure::HandoffUnusable);
    }
    let handoff = match ctx.services.billing.handoff_offer(&q.token).await {
        Ok(h) => h,
        Err(e) => return billing_failure_page(visit, e),
    };
    let who = &handoff.masked_email;
    let again = "It signs nobody in again; if you still want to buy credits, ask your agent for a new link.";
    let (heading, message) = match handoff.state {
        HandoffState::Usable => (String::new(), String::new()),
        HandoffState::Used => (
            "This link was already used".to_owned(),
            format!("It already opened a checkout for the account {who}. {again}"),
        ),
        HandoffState::Expired => (
            "This link has expired".to_owned(),
            format!("It was for the account {who} and expired before it was used. {again}"),
        ),
    };
    if handoff.state != HandoffState::Usable {
        let link = Some(("/account", "Your account"));
        return visit.message(StatusCode::GONE, &heading, &message, link);
    }
    let Some(offer) = ctx.services.billing.catalog().sku(&handoff.sku).cloned() else {
        return billing_failure_page(visit, BillingFailure::NotConfigured);
    };
    let Offer::Checkout {
        amount, currency, ..
    } = &offer.offer
    else {
        return billing_failure_page(visit, BillingFailure::NotConfigured);
    };
    let page = HandoffPage {
        signed_in_as: visit.signed_in_as(),
        signed_in_elsewhere: visit
            .account
            .as_ref()
            .is_some_and(|a| a.id != handoff.account_id),
        csrf: visit.csrf(),
        email: handoff.masked_email.clone(),
        name: offer.name.clone(),
        description: offer.description.clone(),
        price: money(*amount, currency.as_str()),
        token: q.token.clone(),
    };
    visit.page(StatusCode::OK, &page)
}

#[derive(Deserialize)]
struct HandoffForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    token: String,
}

/// Takes the link (once), signs its account in, and opens the checkout.
#[handler]
async fn handoff_submit(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<HandoffForm>,
) -> Response {
    let mut visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let billing = &ctx.services.billing;
    let (account, sku) = match billing.take_handoff(&form.token).await {
        Ok(taken) => taken,
        Err(e) => return billing_failure_page(visit, e),
    };
    // Signed in with a code as the link's account already: that session stays. Otherwise
    // the link signs in for this checkout only; anything more asks for the e-mailed code.
    if visit.account.as_ref().map(|a| &a.id) != Some(&account.id) {
        let signed_in = match ctx
            .services
            .identity
            .start_checkout_session(account.clone())
            .await
        {
            Ok(s) => s,
            Err(e) => return visit.failure(e),
        };
        if let Some(old) = visit.session_token.take() {
            let _ = ctx.services.identity.sign_out(&old).await;
        }
        let seed = ctx.services.identity.random_token(CSRF_SEED_LEN);
        visit.set_cookie(CSRF_COOKIE, &seed, None);
        visit.set_cookie(SESSION_COOKIE, &signed_in.session_token, None);
        visit.account = None;
        visit.checkout_account = Some(account.clone());
    }
    // One checkout per link, also when this form is sent twice.
    let key = format!("handoff-{}", svc_ports::KeyHash::of(&form.token).to_hex());
    match billing
        .create_checkout(&account, &sku, Some(&key), "checkout_handoff")
        .await
    {
        Ok(started) => to_payment_page(visit, &started.checkout),
        Err(e) => billing_failure_page(visit, e),
    }
}

#[derive(Deserialize)]
struct ReturnQuery {
    #[serde(default)]
    checkout: String,
}

/// Where the provider sends the browser after paying: says "pending" until the verified
/// webhook has credited the purchase, and grants nothing itself.
#[handler]
async fn return_page(req: &Request, ctx: Data<&AppContext>, q: Query<ReturnQuery>) -> Response {
    let visit = visit!(req, &ctx);
    let mut confirmed = None;
    if let (Some(account), Ok(Some(checkout))) = (
        visit.account.clone().or(visit.checkout_account.clone()),
        ctx.services.billing.checkout(&q.checkout).await,
    ) && checkout.account_id == account.id
        && let Ok(b) = ctx.services.billing.billing_account(&account, 200).await
    {
        confirmed = b
            .receipts
            .iter()
            .find(|r| {
                r.kind == ReceiptKind::Purchase && r.checkout_id.as_ref() == Some(&checkout.id)
            })
            .map(|r| r.credits);
    }
    let page = ReturnPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        confirmed: confirmed.is_some(),
        credits: confirmed.unwrap_or(0),
    };
    visit.page(StatusCode::OK, &page)
}

// ---- the provider's webhook and the internal meter -------------------------------------------

/// `POST /api/billing/webhook`: verified against the raw body before anything is applied.
#[handler]
async fn webhook(req: &Request, ctx: Data<&AppContext>, body: Body) -> Response {
    let Ok(bytes) = body.into_bytes_limit(MAX_WEBHOOK_BYTES).await else {
        tracing::warn!(check = "body size", "webhook rejected");
        return problem(
            FailureClass::PayloadTooLarge,
            "Webhook bodies are at most 256 KiB.",
        );
    };
    let headers = WebhookHeaders {
        id: req.header("webhook-id"),
        timestamp: req.header("webhook-timestamp"),
        signature: req.header("webhook-signature"),
    };
    match ctx.services.billing.receive_webhook(&headers, &bytes).await {
        Ok(received) => {
            let (status, detail) = match &received.outcome {
                EventOutcome::Applied(r) => ("applied", format!("{} movement(s) applied", r.len())),
                EventOutcome::Pending => ("pending", "stored; waits for its payment".into()),
                EventOutcome::Acknowledged => ("acknowledged", "stored; nothing to apply".into()),
                EventOutcome::Rejected(reason) => ("rejected", reason.clone()),
                EventOutcome::Duplicate { status } => (
                    "duplicate",
                    format!("already received ({status}); nothing changed"),
                ),
            };
            json_response(
                StatusCode::OK,
                &json!({
                    "received": true,
                    "webhook_id": received.webhook_id,
                    "type": received.event_type,
                    "status": status,
                    "detail": detail,
                }),
            )
        }
        // Which check failed is in the log, not in the answer.
        Err(WebhookError::Rejected(_)) => problem(
            FailureClass::WebhookRejected,
            "The webhook could not be verified.",
        ),
        Err(WebhookError::Unavailable) => ApiProblem::new(
            FailureClass::Unavailable,
            "The webhook could not be stored now; deliver it again.",
        )
        .retry_after(std::time::Duration::from_secs(30))
        .render("Bearer"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MeterBody {
    identifier: String,
    event_name: String,
    account_id: Option<String>,
    /// A JSON number: `3.0` is the integer 3 (as JSON Schema has it), `3.5` is refused.
    value: serde_json::Number,
    timestamp: Option<chrono::DateTime<chrono::Utc>>,
}

/// The integer a JSON number stands for, if it is one (`2.0` is 2).
fn integer_of(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

/// `POST /api/billing/report-meter-event`: internal usage reporting, by the internal token.
#[handler]
async fn report_meter_event(req: &Request, ctx: Data<&AppContext>, body: Body) -> Response {
    let token = req
        .header(header::AUTHORIZATION)
        .and_then(|a| a.strip_prefix("Bearer "));
    // No credentials at all is 401 with a challenge; a wrong token stays 403 `internal_only`.
    if token.is_none() {
        return problem(
            FailureClass::InternalTokenRequired,
            "Send the internal token as `Authorization: Bearer ...`.",
        );
    }
    if let Err(e) = ctx.services.billing.check_internal_token(token) {
        return ApiProblem::from(e).render("Bearer");
    }
    let Ok(bytes) = body.into_bytes_limit(MAX_SMALL_BODY).await else {
        return problem(
            FailureClass::PayloadTooLarge,
            "The body must be at most 16 KiB.",
        );
    };
    let parsed: MeterBody = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => {
            return problem(
                FailureClass::MalformedRequest,
                &format!(
                    "Expected {{identifier, event_name, account_id?, value, timestamp?}}: {e}"
                ),
            );
        }
    };
    let Some(value) = integer_of(&parsed.value) else {
        return problem(
            FailureClass::InvalidRequest,
            "`value` must be an integer between 0 and 1000000000",
        );
    };
    match ctx
        .services
        .billing
        .report_meter_event(
            &parsed.identifier,
            &parsed.event_name,
            parsed.account_id.as_deref(),
            value,
            parsed.timestamp,
        )
        .await
    {
        Ok(recorded) => json_response(
            StatusCode::ACCEPTED,
            &json!({
                "meter_event_id": recorded.event.id.as_str(),
                "identifier": recorded.event.identifier,
                "replayed": recorded.replayed,
                "forwarded": recorded.event.forwarded_at.is_some(),
            }),
        ),
        Err(e) => ApiProblem::from(e).render("Bearer"),
    }
}

pub(super) fn mount(route: Route) -> Route {
    route
        .at("/billing/checkout", poem::post(checkout_form))
        .at("/billing/handoff", get(handoff_page).post(handoff_submit))
        .at("/billing/return", get(return_page))
        .at(
            "/api/billing/create-checkout-session",
            poem::post(create_checkout_session),
        )
        .at("/api/billing/account", get(billing_account))
        .at("/api/billing/webhook", poem::post(webhook))
        .at(
            "/api/billing/report-meter-event",
            poem::post(report_meter_event),
        )
}
