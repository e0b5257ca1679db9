//! One page visit: its cookies, the CSRF token, the signed-in account, and how a page, a redirect or a message is answered; the checks every POST passes.

use askama::Template;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::session::{SESSION_COOKIE, cookie_value, site_origin};
use poem::{
    Request, Response,
    http::{HeaderValue, StatusCode, header},
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use svc_ports::{Account, FailureClass, SessionReach};
use svc_services::IdentityFailure;

pub(crate) const CSRF_COOKIE: &str = "svc_csrf";

pub(crate) const CSRF_SEED_LEN: usize = 32;

#[derive(Template)]
#[template(path = "message.html")]
pub(crate) struct MessagePage {
    signed_in_as: Option<String>,
    csrf: String,
    heading: String,
    message: String,
    /// `notice` or `error`.
    kind: &'static str,
    link: Option<(String, String)>,
}

/// The page a browser gets for a problem that reached the edge (a missing page, a refused
/// call): the problem's title and detail as sentences, and a way back. No session is read here.
pub fn error_page(problem: &ApiProblem) -> String {
    let message = if problem.class == FailureClass::Internal {
        "Something failed on our side; please try again.".to_owned()
    } else {
        problem.detail.clone()
    };
    MessagePage {
        signed_in_as: None,
        csrf: String::new(),
        heading: problem.class.title().into(),
        message,
        kind: "error",
        link: Some(("/".into(), "Go to the home page".into())),
    }
    .render()
    .unwrap_or_default()
}

// ---- the visit: cookies, session, CSRF --------------------------------------------------------

/// What one request brings: its CSRF seed (new if it had none), its session, and the cookies
/// the answer must set.
pub(crate) struct Visit {
    pub(crate) csrf_seed: String,
    pub(crate) new_seed: bool,
    pub(crate) session_token: Option<String>,
    /// The account of a session signed in with an e-mailed code: every page's "signed in".
    pub(crate) account: Option<Account>,
    /// The account of a checkout session (an agent's handoff link): seen only by the
    /// checkout's own pages; everywhere else the visitor is not signed in.
    pub(crate) checkout_account: Option<Account>,
    pub(crate) secure: bool,
    pub(crate) set_cookies: Vec<String>,
}

pub(crate) fn csrf_token_of(seed: &str) -> String {
    let digest = Sha256::digest(format!("csrf:{seed}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl Visit {
    pub(crate) async fn begin(req: &Request, ctx: &AppContext) -> Result<Self, IdentityFailure> {
        let (csrf_seed, new_seed) = match cookie_value(req, CSRF_COOKIE) {
            Some(seed) => (seed, false),
            None => (ctx.services.identity.random_token(CSRF_SEED_LEN), true),
        };
        let session_token = cookie_value(req, SESSION_COOKIE);
        let session = match &session_token {
            Some(t) => ctx.services.identity.session_reach(t).await?,
            None => None,
        };
        let (account, checkout_account) = match session {
            Some((account, SessionReach::Account)) => (Some(account), None),
            Some((account, SessionReach::Checkout)) => (None, Some(account)),
            None => (None, None),
        };
        let mut visit = Self {
            csrf_seed,
            new_seed,
            session_token,
            account,
            checkout_account,
            secure: ctx.origins.site_url.starts_with("https://"),
            set_cookies: Vec::new(),
        };
        if visit.new_seed {
            let seed = visit.csrf_seed.clone();
            visit.set_cookie(CSRF_COOKIE, &seed, None);
        }
        Ok(visit)
    }

    pub(crate) fn csrf(&self) -> String {
        csrf_token_of(&self.csrf_seed)
    }

    pub(crate) fn signed_in_as(&self) -> Option<String> {
        self.account.as_ref().map(|a| a.email.to_string())
    }

    pub(crate) fn set_cookie(
        &mut self,
        name: &str,
        value: &str,
        max_age: Option<std::time::Duration>,
    ) {
        // Names are constants and values are base62 tokens (or empty, to clear): nothing to
        // escape.
        debug_assert!(value.bytes().all(|b| b.is_ascii_alphanumeric()));
        let mut c = format!("{name}={value}; HttpOnly; SameSite=Lax; Path=/");
        if self.secure {
            c.push_str("; Secure");
        }
        if let Some(age) = max_age {
            c.push_str(&format!("; Max-Age={}", age.as_secs()));
        }
        self.set_cookies.push(c);
    }

    /// Adds the cookies and the headers every page carries.
    pub(crate) fn finish(self, mut resp: Response) -> Response {
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

    pub(crate) fn page(self, status: StatusCode, template: &impl Template) -> Response {
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

    pub(crate) fn redirect(self, to: &str) -> Response {
        let resp = Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(header::LOCATION, to)
            .finish();
        self.finish(resp)
    }

    pub(crate) fn message(
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

    pub(crate) fn failure(self, e: IdentityFailure) -> Response {
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
pub(crate) fn check_post(
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
pub(crate) fn safe_next(next: Option<&str>) -> String {
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

pub(crate) fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

pub(crate) fn signin_redirect(visit: Visit, next: &str) -> Response {
    visit.redirect(&format!("/signin?next={}", encode(next)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(crate) fn only_local_paths_follow_sign_in() {
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
    pub(crate) fn origins_drop_the_path() {
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
    pub(crate) fn csrf_tokens_depend_on_the_seed() {
        assert_ne!(csrf_token_of("a"), csrf_token_of("b"));
        assert_eq!(csrf_token_of("a").len(), 64);
    }
}
