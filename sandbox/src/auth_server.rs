//! The sandbox's authorization server for the booking site's `booking-sandbox` connections: a
//! fake OAuth 2.0 provider (wiremock) with a consent page that offers approve, refuse, and
//! sign in as another account. It checks PKCE (S256) like a real one. Codes and tokens carry
//! their account in the clear (base64url): it is a sandbox, and that keeps the server
//! stateless. `/qa/refresh?allowed=false` makes refreshes fail, so a connection can expire.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

/// The provider id the booking site's actions declare.
pub const BOOKING_PROVIDER: &str = "booking-sandbox";
/// The upstream account "approve" signs in as.
pub const BOOKING_ACCOUNT: &str = "traveller@booking.example";
/// The account of "sign in as another account".
pub const OTHER_BOOKING_ACCOUNT: &str = "someone-else@booking.example";
pub const SANDBOX_CLIENT_ID: &str = "svc-sandbox";
/// Lifetime of the access tokens it issues.
pub const ACCESS_TOKEN_SECONDS: u64 = 3600;

pub struct SandboxAuthServer {
    server: MockServer,
    refresh_allowed: Arc<AtomicBool>,
    userinfo_delay_ms: Arc<AtomicU64>,
}

impl SandboxAuthServer {
    pub async fn start() -> Self {
        let server = MockServer::builder()
            .disable_request_recording()
            .start()
            .await;
        let refresh_allowed = Arc::new(AtomicBool::new(true));
        let userinfo_delay_ms = Arc::new(AtomicU64::new(0));
        Mock::given(any())
            .respond_with(Provider {
                refresh_allowed: refresh_allowed.clone(),
                userinfo_delay_ms: userinfo_delay_ms.clone(),
                used_refresh_tokens: Default::default(),
            })
            .mount(&server)
            .await;
        Self {
            server,
            refresh_allowed,
            userinfo_delay_ms,
        }
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Whether refresh tokens are honoured (tests turn it off to expire connections).
    pub fn allow_refresh(&self, allowed: bool) {
        self.refresh_allowed.store(allowed, Ordering::SeqCst);
    }

    /// How long the userinfo endpoint takes to answer (tests widen the window between a
    /// refresh and the storing of its tokens, as a slow provider does).
    pub fn slow_userinfo(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.userinfo_delay_ms.store(ms, Ordering::SeqCst);
    }
}

fn b64(s: &str) -> String {
    URL_SAFE_NO_PAD.encode(s)
}

fn unb64(s: &str) -> Option<String> {
    String::from_utf8(URL_SAFE_NO_PAD.decode(s).ok()?).ok()
}

/// The account an `Authorization: Bearer` header of this server's access token stands for.
pub fn account_of_bearer(header: &str) -> Option<String> {
    let token = header.strip_prefix("Bearer ")?.strip_prefix("sbxat.")?;
    unb64(token.split('.').next()?)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn query(request: &Request) -> Vec<(String, String)> {
    request.url.query_pairs().into_owned().collect()
}

fn form(request: &Request) -> Vec<(String, String)> {
    url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect()
}

fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn oauth_error(status: u16, error: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"error": error}))
}

fn tokens(account: &str) -> ResponseTemplate {
    let nonce = ulid::Ulid::new().to_string();
    ResponseTemplate::new(200).set_body_json(json!({
        "access_token": format!("sbxat.{}.{nonce}", b64(account)),
        "token_type": "bearer",
        "expires_in": ACCESS_TOKEN_SECONDS,
        "refresh_token": format!("sbxrt.{}.{nonce}", b64(account)),
    }))
}

struct Provider {
    refresh_allowed: Arc<AtomicBool>,
    userinfo_delay_ms: Arc<AtomicU64>,
    /// Refresh tokens already used: like real providers, each refresh rotates the token.
    used_refresh_tokens: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Provider {
    fn consent_page(&self, q: &[(String, String)]) -> ResponseTemplate {
        let (Some(state), Some(redirect), Some(challenge)) = (
            get(q, "state"),
            get(q, "redirect_uri"),
            get(q, "code_challenge"),
        ) else {
            return oauth_error(400, "invalid_request");
        };
        if get(q, "code_challenge_method") != Some("S256")
            || get(q, "response_type") != Some("code")
            || get(q, "client_id") != Some(SANDBOX_CLIENT_ID)
        {
            return oauth_error(400, "invalid_request");
        }
        let hidden = format!(
            "<input type=\"hidden\" name=\"state\" value=\"{}\"><input type=\"hidden\" name=\"redirect_uri\" value=\"{}\"><input type=\"hidden\" name=\"code_challenge\" value=\"{}\">",
            html_escape(state),
            html_escape(redirect),
            html_escape(challenge)
        );
        let button = |choice: &str, id: &str, label: &str| {
            format!(
                "<form method=\"get\" action=\"/decide\">{hidden}<input type=\"hidden\" name=\"choice\" value=\"{choice}\"><button type=\"submit\" id=\"{id}\">{label}</button></form>"
            )
        };
        let html = format!(
            "<!doctype html><html><head><title>Booking sandbox: allow access</title></head><body><h1>Booking sandbox</h1><p>svc asks to act for your booking account.</p><p>Signed in as <strong id=\"signed-in\">{BOOKING_ACCOUNT}</strong>.</p>{}{}{}</body></html>",
            button("approve", "approve", &format!("Allow as {BOOKING_ACCOUNT}")),
            button("refuse", "refuse", "Refuse"),
            button(
                "other",
                "other-account",
                &format!("Sign in as another account ({OTHER_BOOKING_ACCOUNT}) and allow")
            ),
        );
        ResponseTemplate::new(200).set_body_raw(html.into_bytes(), "text/html; charset=utf-8")
    }

    fn decide(&self, q: &[(String, String)]) -> ResponseTemplate {
        let (Some(state), Some(redirect), Some(challenge), Some(choice)) = (
            get(q, "state"),
            get(q, "redirect_uri"),
            get(q, "code_challenge"),
            get(q, "choice"),
        ) else {
            return oauth_error(400, "invalid_request");
        };
        let Ok(mut back) = url::Url::parse(redirect) else {
            return oauth_error(400, "invalid_request");
        };
        let account = match choice {
            "approve" => Some(BOOKING_ACCOUNT),
            "other" => Some(OTHER_BOOKING_ACCOUNT),
            _ => None,
        };
        {
            let mut pairs = back.query_pairs_mut();
            match account {
                Some(account) => {
                    let code = json!({"a": account, "c": challenge, "r": redirect}).to_string();
                    pairs.append_pair("code", &format!("sbxc.{}", b64(&code)));
                }
                None => {
                    pairs.append_pair("error", "access_denied");
                }
            }
            pairs.append_pair("state", state);
        }
        ResponseTemplate::new(303).insert_header("location", back.as_str())
    }

    fn token(&self, f: &[(String, String)]) -> ResponseTemplate {
        match get(f, "grant_type") {
            Some("authorization_code") => {
                let code: Option<Value> = get(f, "code")
                    .and_then(|c| c.strip_prefix("sbxc."))
                    .and_then(unb64)
                    .and_then(|j| serde_json::from_str(&j).ok());
                let (Some(code), Some(verifier)) = (code, get(f, "code_verifier")) else {
                    return oauth_error(400, "invalid_grant");
                };
                let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                if code["c"] != challenge || code["r"].as_str() != get(f, "redirect_uri") {
                    return oauth_error(400, "invalid_grant");
                }
                tokens(code["a"].as_str().unwrap_or_default())
            }
            Some("refresh_token") => {
                let fresh = get(f, "refresh_token").is_some_and(|t| {
                    self.used_refresh_tokens
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(t.to_owned())
                });
                if !fresh {
                    return oauth_error(400, "invalid_grant");
                }
                let account = get(f, "refresh_token")
                    .and_then(|t| t.strip_prefix("sbxrt."))
                    .and_then(|t| unb64(t.split('.').next()?));
                match account {
                    Some(a) if self.refresh_allowed.load(Ordering::SeqCst) => tokens(&a),
                    _ => oauth_error(400, "invalid_grant"),
                }
            }
            _ => oauth_error(400, "unsupported_grant_type"),
        }
    }
}

impl Respond for Provider {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        match (request.method.as_str(), request.url.path()) {
            ("GET", "/authorize") => self.consent_page(&query(request)),
            ("GET", "/decide") => self.decide(&query(request)),
            ("POST", "/token") => self.token(&form(request)),
            ("GET", "/userinfo") => match request
                .headers
                .get("authorization")
                .and_then(|h| h.to_str().ok())
                .and_then(account_of_bearer)
            {
                Some(account) => ResponseTemplate::new(200)
                    .set_body_json(json!({"account": account}))
                    .set_delay(Duration::from_millis(
                        self.userinfo_delay_ms.load(Ordering::SeqCst),
                    )),
                None => oauth_error(401, "invalid_token"),
            },
            ("POST", "/qa/refresh") => {
                let allowed = get(&query(request), "allowed") != Some("false");
                self.refresh_allowed.store(allowed, Ordering::SeqCst);
                ResponseTemplate::new(200).set_body_json(json!({"refresh_allowed": allowed}))
            }
            _ => oauth_error(404, "not_found"),
        }
    }
}
