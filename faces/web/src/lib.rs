//! Pages for humans, rendered on the server (askama) and usable without JavaScript: sign-in by
//! an emailed code, the device approval page, the account page with keys and usage, terms and
//! privacy.
//!
//! Every form carries a CSRF token derived from an HttpOnly cookie (SHA-256 of its random
//! value, so a page from another origin can neither read nor compute it), every POST must come
//! with an `Origin` (or `Referer`) of this site, and a request that carries an API key is
//! refused: these are web-session endpoints.

use askama::Template;
use kit::context::AppContext;
use kit::session::{SESSION_COOKIE, cookie_value, site_origin};
use kit::{edge::client_ip_of, problem::ApiProblem};
use poem::{
    Request, Response, Route, get, handler,
    http::{HeaderValue, StatusCode, header},
    web::{
        Data, Form, Query,
        cookie::{Cookie, SameSite},
    },
};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use svc_ports::{Account, ApiKeyRecord, ChallengePurpose, FailureClass};
use svc_services::IdentityFailure;

const CSRF_COOKIE: &str = "svc_csrf";

const CSRF_SEED_LEN: usize = 32;

// ---- templates ------------------------------------------------------------------------------

#[derive(Template)]
#[template(path = "signin.html")]
struct SignInPage {
    signed_in_as: Option<String>,
    csrf: String,
    next: String,
    email: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "signin_code.html")]
struct CodePage {
    signed_in_as: Option<String>,
    csrf: String,
    challenge: String,
    next: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "device_enter.html")]
struct DeviceEnterPage {
    signed_in_as: Option<String>,
    csrf: String,
    user_code: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "device_approve.html")]
struct DeviceApprovePage {
    signed_in_as: Option<String>,
    csrf: String,
    agent_name: String,
    client_id: String,
    user_code: String,
    scopes: Vec<(String, &'static str)>,
    email: String,
    expires_at: String,
}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    signed_in_as: Option<String>,
    csrf: String,
    heading: String,
    message: String,
    /// `notice` or `error`.
    kind: &'static str,
    link: Option<(String, String)>,
}

struct KeyRow {
    prefix: String,
    label: String,
    scopes: String,
    created_at: String,
    status: &'static str,
    active: bool,
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
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
}

#[derive(Template)]
#[template(path = "key_created.html")]
struct KeyCreatedPage {
    signed_in_as: Option<String>,
    csrf: String,
    heading: String,
    secret: String,
    setup_command: String,
}

#[derive(Template)]
#[template(path = "legal.html")]
struct LegalPage {
    signed_in_as: Option<String>,
    csrf: String,
    heading: &'static str,
    paragraphs: &'static [&'static str],
}

// ---- the visit: cookies, session, CSRF --------------------------------------------------------

/// What one request brings: its CSRF seed (new if it had none), its session, and the cookies
/// the answer must set.
struct Visit {
    csrf_seed: String,
    new_seed: bool,
    session_token: Option<String>,
    account: Option<Account>,
    secure: bool,
    set_cookies: Vec<String>,
}

fn csrf_token_of(seed: &str) -> String {
    let digest = Sha256::digest(format!("csrf:{seed}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl Visit {
    async fn begin(req: &Request, ctx: &AppContext) -> Result<Self, IdentityFailure> {
        let (csrf_seed, new_seed) = match cookie_value(req, CSRF_COOKIE) {
            Some(seed) => (seed, false),
            None => (ctx.services.identity.random_token(CSRF_SEED_LEN), true),
        };
        let session_token = cookie_value(req, SESSION_COOKIE);
        let account = match &session_token {
            Some(t) => ctx.services.identity.session_account(t).await?,
            None => None,
        };
        let mut visit = Self {
            csrf_seed,
            new_seed,
            session_token,
            account,
            secure: ctx.origins.site_url.starts_with("https://"),
            set_cookies: Vec::new(),
        };
        if visit.new_seed {
            let seed = visit.csrf_seed.clone();
            visit.set_cookie(CSRF_COOKIE, &seed, None);
        }
        Ok(visit)
    }

    fn csrf(&self) -> String {
        csrf_token_of(&self.csrf_seed)
    }

    fn signed_in_as(&self) -> Option<String> {
        self.account.as_ref().map(|a| a.email.to_string())
    }

    fn set_cookie(&mut self, name: &str, value: &str, max_age: Option<std::time::Duration>) {
        let mut c = Cookie::new_with_str(name, value);
        c.set_http_only(true);
        c.set_same_site(SameSite::Lax);
        c.set_path("/");
        c.set_secure(self.secure);
        if let Some(age) = max_age {
            c.set_max_age(age);
        }
        self.set_cookies.push(c.to_string());
    }

    /// Adds the cookies and the headers every page carries.
    fn finish(self, mut resp: Response) -> Response {
        let headers = resp.headers_mut();
        for c in self.set_cookies {
            if let Ok(v) = HeaderValue::from_str(&c) {
                headers.append(header::SET_COOKIE, v);
            }
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
        );
        resp
    }

    fn page(self, status: StatusCode, template: &impl Template) -> Response {
        let resp = match template.render() {
            Ok(html) => Response::builder()
                .status(status)
                .content_type("text/html; charset=utf-8")
                .body(html),
            Err(e) => {
                tracing::error!(error = %e, "page failed to render");
                Response::builder()
                    .status(StatusCode::INTERNAL_SERVER_ERROR)
                    .content_type("text/plain; charset=utf-8")
                    .body("The page failed to render.")
            }
        };
        self.finish(resp)
    }

    fn redirect(self, to: &str) -> Response {
        let resp = Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(header::LOCATION, to)
            .finish();
        self.finish(resp)
    }

    fn message(
        self,
        status: StatusCode,
        heading: &str,
        message: &str,
        link: Option<(&str, &str)>,
    ) -> Response {
        let kind = if status.is_success() {
            "notice"
        } else {
            "error"
        };
        let page = MessagePage {
            signed_in_as: self.signed_in_as(),
            csrf: self.csrf(),
            heading: heading.to_owned(),
            message: message.to_owned(),
            kind,
            link: link.map(|(a, b)| (a.to_owned(), b.to_owned())),
        };
        self.page(status, &page)
    }

    fn failure(self, e: IdentityFailure) -> Response {
        let problem = ApiProblem::from(e);
        let status =
            StatusCode::from_u16(problem.class.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
        let detail = if problem.class == FailureClass::Internal {
            "Something failed on our side; please try again.".to_owned()
        } else {
            problem.detail.clone()
        };
        let mut resp = self.message(
            status,
            problem.class.title(),
            &detail,
            Some(("/account", "Your account")),
        );
        if let Some(wait) = problem.retry_after {
            resp.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(wait.as_secs().max(1)),
            );
        }
        resp
    }
}

/// A POST from a form of this site: no API key, a matching Origin (or Referer), a CSRF token
/// that matches the cookie. `Err` is the refusal to send.
fn check_post(
    req: &Request,
    ctx: &AppContext,
    visit: &Visit,
    csrf: &str,
) -> Result<(), Box<Response>> {
    if req.headers().contains_key(header::AUTHORIZATION) {
        let problem = ApiProblem::new(
            FailureClass::ApiKeyNotAllowed,
            "This page belongs to a signed-in web session; requests with an API key are refused.",
        );
        return Err(Box::new(problem.render("Bearer")));
    }
    let origins = [
        site_origin(&ctx.origins.site_url),
        site_origin(&ctx.origins.base_url),
    ];
    let from_here = |v: &str| {
        origins
            .iter()
            .any(|o| v == o || v.starts_with(&format!("{o}/")))
    };
    let origin_ok = match (req.header(header::ORIGIN), req.header(header::REFERER)) {
        (Some(origin), _) => origins.iter().any(|o| origin == o),
        (None, Some(referer)) => from_here(referer),
        (None, None) => false,
    };
    let token_ok = !visit.new_seed && bool::from(csrf.as_bytes().ct_eq(visit.csrf().as_bytes()));
    if origin_ok && token_ok {
        return Ok(());
    }
    tracing::warn!(origin_ok, token_ok, "web form refused");
    let problem = ApiProblem::new(
        FailureClass::CsrfRejected,
        "This form could not be checked (it came from another site, or the page is stale). Reload the page and try again.",
    );
    let page = MessagePage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        heading: problem.class.title().into(),
        message: problem.detail,
        kind: "error",
        link: None,
    };
    let html = page.render().unwrap_or_default();
    Err(Box::new(
        Response::builder()
            .status(StatusCode::FORBIDDEN)
            .content_type("text/html; charset=utf-8")
            .body(html),
    ))
}

/// Only local paths may follow sign-in: never another site.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.contains('\\')
                && n.len() <= 512
                && !n.chars().any(char::is_control) =>
        {
            n.to_owned()
        }
        _ => "/account".into(),
    }
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn signin_redirect(visit: Visit, next: &str) -> Response {
    visit.redirect(&format!("/signin?next={}", encode(next)))
}

/// Starts a visit, or answers the failure of looking up the session.
macro_rules! visit {
    ($req:expr, $ctx:expr) => {
        match Visit::begin($req, $ctx).await {
            Ok(v) => v,
            Err(e) => return ApiProblem::from(e).render("Bearer"),
        }
    };
}

fn scope_description(scope: &str) -> &'static str {
    match scope {
        "read" => "read public web pages",
        "discover" => "see which actions a site offers",
        "execute" => "run mapped site actions, spending your credits",
        _ => "a permission of the service",
    }
}

// Declared after `visit!`, which it uses.
mod authority;

mod billing;

mod connect;

mod readiness;

// ---- sign-in ----------------------------------------------------------------------------------

#[derive(Deserialize)]
struct NextQuery {
    next: Option<String>,
}

#[handler]
async fn signin_page(req: &Request, ctx: Data<&AppContext>, q: Query<NextQuery>) -> Response {
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
struct SignInForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    next: Option<String>,
}

#[handler]
async fn signin_submit(req: &Request, ctx: Data<&AppContext>, form: Form<SignInForm>) -> Response {
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let next = safe_next(form.next.as_deref());
    let started = ctx
        .services
        .identity
        .start_email(ChallengePurpose::SignIn, &form.email, None, None)
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
struct CodeQuery {
    challenge: Option<String>,
    next: Option<String>,
}

#[handler]
async fn code_page(req: &Request, ctx: Data<&AppContext>, q: Query<CodeQuery>) -> Response {
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
struct CodeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    challenge: String,
    #[serde(default)]
    code: String,
    next: Option<String>,
}

#[handler]
async fn code_submit(req: &Request, ctx: Data<&AppContext>, form: Form<CodeForm>) -> Response {
    let mut visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let next = safe_next(form.next.as_deref());
    let ip = client_ip_of(req, ctx.limits.trust_forwarded_for);
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
            visit.redirect(&next)
        }
        Err(e @ (IdentityFailure::WrongCode { .. } | IdentityFailure::InvalidRequest(_))) => {
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
struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

#[handler]
async fn signout(req: &Request, ctx: Data<&AppContext>, form: Form<CsrfOnly>) -> Response {
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

// ---- device approval ----------------------------------------------------------------------------

#[derive(Deserialize)]
struct DeviceQuery {
    user_code: Option<String>,
}

#[handler]
async fn device_page(req: &Request, ctx: Data<&AppContext>, q: Query<DeviceQuery>) -> Response {
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
    let ip = client_ip_of(req, ctx.limits.trust_forwarded_for);
    match ctx.services.identity.pending_device(&code, ip).await {
        Ok(grant) => {
            let page = DeviceApprovePage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                agent_name: grant
                    .agent_name
                    .clone()
                    .unwrap_or_else(|| "An agent that did not give its name".into()),
                client_id: grant.client_id.clone(),
                user_code: grant.user_code.display(),
                scopes: grant
                    .scopes
                    .iter()
                    .map(|s| (s.as_str().to_owned(), scope_description(s.as_str())))
                    .collect(),
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
struct DeviceForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    user_code: String,
    #[serde(default)]
    decision: String,
}

#[handler]
async fn device_submit(req: &Request, ctx: Data<&AppContext>, form: Form<DeviceForm>) -> Response {
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
    let ip = client_ip_of(req, ctx.limits.trust_forwarded_for);
    match ctx
        .services
        .identity
        .decide_device(&form.user_code, &account, approve, ip)
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

// ---- account ----------------------------------------------------------------------------------

#[derive(Deserialize)]
struct AccountQuery {
    notice: Option<String>,
}

fn key_row(k: &ApiKeyRecord) -> KeyRow {
    KeyRow {
        prefix: k.prefix.to_string(),
        label: k.label.clone(),
        scopes: k.scopes.to_list_string(),
        created_at: k.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        status: if k.is_revoked() { "revoked" } else { "active" },
        active: !k.is_revoked(),
    }
}

async fn render_account(
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
    let page = AccountPage {
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
async fn account_page(req: &Request, ctx: Data<&AppContext>, q: Query<AccountQuery>) -> Response {
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
struct KeyForm {
    #[serde(default)]
    csrf: String,
    prefix: Option<String>,
    label: Option<String>,
}

enum KeyAction {
    Create,
    Rotate,
    Revoke,
}

async fn key_action(
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
async fn create_key(req: &Request, ctx: Data<&AppContext>, form: Form<KeyForm>) -> Response {
    key_action(req, &ctx, &form, KeyAction::Create).await
}

#[handler]
async fn rotate_key(req: &Request, ctx: Data<&AppContext>, form: Form<KeyForm>) -> Response {
    key_action(req, &ctx, &form, KeyAction::Rotate).await
}

#[handler]
async fn revoke_key(req: &Request, ctx: Data<&AppContext>, form: Form<KeyForm>) -> Response {
    key_action(req, &ctx, &form, KeyAction::Revoke).await
}

// ---- terms and privacy ------------------------------------------------------------------------

const TERMS: &[&str] = &[
    "The service lets AI agents read public web pages, discover the actions learned for a site and run one mapped action for you, with a signed record of what happened.",
    "An agent you approve gets its own API key for your account. It acts within the key's scopes and spends your credits: about one credit per completed action; failed actions are refunded. You can revoke any key on your account page at any time.",
    "Keys may be used only through approved Agent Maps: not for raw browser control, private account access or unrestricted payment-provider actions. Never send passwords, session cookies, card numbers or unrestricted third-party keys through a chat or an action parameter.",
    "Credits are granted only after the payment provider confirms a payment; a redirect after checkout is not a payment.",
];

const PRIVACY: &[&str] = &[
    "We keep your email address to sign you in and to send the one-time codes you ask for. Codes, API keys and session tokens are stored only as one-way hashes.",
    "We record which agent asked for access, which keys exist, and the actions and charges made with them, so that you can see and control them.",
    "Agent traffic events we record carry no raw prompts, payment credentials, email addresses or card-like numbers; such values are removed before storage.",
];

#[handler]
async fn terms(req: &Request, ctx: Data<&AppContext>) -> Response {
    let visit = visit!(req, &ctx);
    let page = LegalPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        heading: "Terms of service",
        paragraphs: TERMS,
    };
    visit.page(StatusCode::OK, &page)
}

#[handler]
async fn privacy(req: &Request, ctx: Data<&AppContext>) -> Response {
    let visit = visit!(req, &ctx);
    let page = LegalPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        heading: "Privacy policy",
        paragraphs: PRIVACY,
    };
    visit.page(StatusCode::OK, &page)
}

/// The landing page (`/`), mounted by the app after the API.
/// The text agents get from the landing page when they ask for Markdown (the llms.txt guide).
#[derive(Clone)]
pub struct LlmsText(pub String);

/// `GET /`: the landing page for people, Markdown (`llms`) for agents that ask for it.
pub fn home(llms: String) -> impl poem::Endpoint<Output = Response> {
    poem::EndpointExt::map_to_response(poem::EndpointExt::data(
        get(readiness::home),
        LlmsText(llms),
    ))
}

/// Adds the human-facing pages to `route`.
pub fn mount(route: Route) -> Route {
    connect::mount(readiness::mount(authority::mount(billing::mount(route))))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_follow_sign_in() {
        assert_eq!(
            safe_next(Some("/device?user_code=BCDF-GHJK")),
            "/device?user_code=BCDF-GHJK"
        );
        for bad in [
            "//evil.example",
            "https://evil.example",
            "/\\evil",
            "evil",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/account", "{bad}");
        }
        assert_eq!(safe_next(None), "/account");
    }

    #[test]
    fn origins_drop_the_path() {
        assert_eq!(
            site_origin("https://svc.example/app"),
            "https://svc.example"
        );
        assert_eq!(
            site_origin("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn csrf_tokens_depend_on_the_seed() {
        assert_ne!(csrf_token_of("a"), csrf_token_of("b"));
        assert_eq!(csrf_token_of("a").len(), 64);
    }
}
