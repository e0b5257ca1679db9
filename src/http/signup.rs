//! Signup for agents on REST: the RFC 8628 device flow (`/agent/identity`, `/oauth2/token`)
//! and the email-code fallback (`/api/register`, `/api/verify`).
//!
//! The two OAuth endpoints answer errors in RFC 6749 §5.2's shape (`error`,
//! `error_description`) that OAuth clients parse, extended with the problem fields every other
//! endpoint carries.

use poem::Request;
use poem_openapi::{
    ApiRequest, ApiResponse, Object, OpenApi,
    payload::{Form, Json},
};
use serde::Deserialize;
use svc_ports::{ChallengePurpose, FailureClass};

use super::{
    Tags,
    middleware::client_ip_of,
    problem::{ApiProblem, NextActionKind},
    types::StrictString,
};
use crate::{
    context::AppContext,
    services::{IdentityFailure, SignupKey, identity::DeviceAuthorization},
};

pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

impl From<IdentityFailure> for ApiProblem {
    fn from(e: IdentityFailure) -> Self {
        let detail = e.to_string();
        match e {
            IdentityFailure::InvalidRequest(_) | IdentityFailure::KeyAlreadyRevoked => {
                ApiProblem::new(FailureClass::InvalidRequest, detail)
            }
            IdentityFailure::InvalidScope(_) => ApiProblem::new(FailureClass::InvalidScope, detail),
            IdentityFailure::AuthorizationPending => {
                ApiProblem::new(FailureClass::AuthorizationPending, detail)
            }
            IdentityFailure::SlowDown { interval } => {
                ApiProblem::new(FailureClass::SlowDown, detail)
                    .retry_after(std::time::Duration::from_secs(u64::from(interval)))
            }
            IdentityFailure::AccessDenied => ApiProblem::new(FailureClass::AccessDenied, detail),
            IdentityFailure::ExpiredToken => ApiProblem::new(FailureClass::ExpiredToken, detail)
                .next_action(NextActionKind::SignUp, None),
            IdentityFailure::InvalidGrant(_) => ApiProblem::new(FailureClass::InvalidGrant, detail),
            IdentityFailure::UnknownUserCode | IdentityFailure::WrongCode { .. } => {
                ApiProblem::new(FailureClass::InvalidCode, detail)
            }
            IdentityFailure::CodeDead(_) => ApiProblem::new(FailureClass::CodeExpired, detail)
                .next_action(NextActionKind::SignUp, None),
            IdentityFailure::LockedOut { retry_after } => {
                ApiProblem::new(FailureClass::LockedOut, detail).retry_after(retry_after)
            }
            IdentityFailure::TooManyCodes { retry_after } => {
                ApiProblem::new(FailureClass::RateLimited, detail).retry_after(retry_after)
            }
            IdentityFailure::MailUnavailable => ApiProblem::new(FailureClass::Unavailable, detail)
                .retry_after(std::time::Duration::from_secs(30)),
            IdentityFailure::KeyNotFound => ApiProblem::new(FailureClass::NotFound, detail),
            IdentityFailure::Internal(e) => ApiProblem::internal(format!("{e:#}")),
        }
    }
}

// ---- RFC 8628 -------------------------------------------------------------------------------

/// RFC 8628 §3.1 device authorization request, as an OAuth client sends it.
#[derive(Debug, Object, Deserialize)]
pub struct DeviceAuthorizationForm {
    /// The agent's client identifier (any string; public clients are not registered).
    pub client_id: Option<String>,
    /// Space-separated scopes; omitted means `read discover execute`.
    pub scope: Option<String>,
}

/// The same request as JSON, which may also name the agent for the human.
#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct DeviceAuthorizationJson {
    #[oai(validator(max_length = 128))]
    pub client_id: Option<StrictString>,
    /// How the agent names itself; shown to the human on the approval page.
    #[oai(validator(max_length = 80))]
    pub agent_name: Option<StrictString>,
    #[oai(validator(max_length = 256))]
    pub scope: Option<StrictString>,
}

#[derive(ApiRequest)]
pub enum DeviceAuthorizationRequest {
    /// RFC 8628 form body.
    Form(Form<DeviceAuthorizationForm>),
    /// JSON body naming the agent.
    Json(Json<DeviceAuthorizationJson>),
}

/// RFC 8628 §3.2 device authorization response.
#[derive(Debug, Object)]
pub struct DeviceAuthorizationResponse {
    /// Secret: keep it, poll `/oauth2/token` with it, never show it.
    pub device_code: String,
    /// The code the human confirms, `XXXX-XXXX`.
    pub user_code: String,
    /// Where the human can type the code.
    pub verification_uri: String,
    /// The one link to show the human: it carries the code.
    pub verification_uri_complete: String,
    /// Seconds until the device code expires.
    pub expires_in: u64,
    /// Seconds to wait between polls.
    pub interval: u32,
}

impl From<DeviceAuthorization> for DeviceAuthorizationResponse {
    fn from(d: DeviceAuthorization) -> Self {
        Self {
            device_code: d.device_code,
            user_code: d.user_code.display(),
            verification_uri: d.verification_uri,
            verification_uri_complete: d.verification_uri_complete,
            expires_in: d.expires_in,
            interval: d.interval,
        }
    }
}

/// RFC 6749 §4.1.3-style token request with the device-code grant.
#[derive(Debug, Object, Deserialize)]
pub struct TokenForm {
    /// `urn:ietf:params:oauth:grant-type:device_code`.
    pub grant_type: Option<String>,
    pub device_code: Option<String>,
    pub client_id: Option<String>,
}

/// The key, once the human approved: an OAuth access token that is the API key itself.
#[derive(Debug, Object)]
pub struct TokenResponse {
    /// The API key (`svc_live_...`), to send as `Authorization: Bearer ...`.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// The same API key, under the service's own name.
    pub api_key: String,
    /// Scopes the key carries, space-separated.
    pub scope: String,
    /// The key's listed prefix.
    pub key_prefix: String,
    pub account_id: String,
    /// Send this to the human in the original conversation.
    pub welcome_message: String,
    /// Command that adds the service to an MCP client with this key.
    pub mcp_setup_command: String,
}

impl From<SignupKey> for TokenResponse {
    fn from(k: SignupKey) -> Self {
        Self {
            access_token: k.secret.expose().to_owned(),
            token_type: "Bearer".into(),
            api_key: k.secret.expose().to_owned(),
            scope: k.record.scopes.to_list_string(),
            key_prefix: k.record.prefix.to_string(),
            account_id: k.account.id.to_string(),
            welcome_message: k.welcome_message,
            mcp_setup_command: k.mcp_setup_command,
        }
    }
}

/// RFC 6749 §5.2 error, with the problem fields of the rest of the API.
#[derive(Debug, Object)]
pub struct OAuthError {
    /// RFC 6749 / RFC 8628 error code: `authorization_pending`, `slow_down`, `access_denied`,
    /// `expired_token`, `invalid_grant`, `invalid_request`, `invalid_scope`,
    /// `unsupported_grant_type`, ...
    pub error: String,
    pub error_description: String,
    /// The polling interval to keep from now on (after `slow_down`).
    #[oai(skip_serializing_if_is_none)]
    pub interval: Option<u32>,
    #[oai(rename = "type")]
    pub problem_type: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub failure_class: String,
    pub retryable: bool,
    pub hint: String,
}

impl OAuthError {
    fn from_problem(p: &ApiProblem, interval: Option<u32>) -> Self {
        let body = p.body();
        let error = match p.class {
            FailureClass::InvalidRequest | FailureClass::MalformedRequest => "invalid_request",
            FailureClass::Internal => "server_error",
            FailureClass::Unavailable => "temporarily_unavailable",
            c => c.as_str(),
        };
        Self {
            error: error.to_owned(),
            error_description: body.detail.clone(),
            interval,
            problem_type: body.problem_type,
            title: body.title,
            // The status of the answer itself: RFC 6749 errors are 400 whatever the class.
            status: if p.class == FailureClass::Internal {
                500
            } else {
                400
            },
            detail: body.detail,
            failure_class: body.failure_class,
            retryable: body.retryable,
            hint: body.hint,
        }
    }
}

#[derive(ApiResponse)]
#[oai(bad_request_handler = "device_request_unreadable")]
pub enum DeviceAuthorizationApiResponse {
    /// Show `verification_uri_complete` to the human, then poll `/oauth2/token`.
    #[oai(status = 200)]
    Ok(
        Json<DeviceAuthorizationResponse>,
        #[oai(header = "Cache-Control")] String,
    ),
    /// `invalid_request` or `invalid_scope`.
    #[oai(status = 400)]
    BadRequest(Json<OAuthError>, #[oai(header = "Cache-Control")] String),
}

#[derive(ApiResponse)]
#[oai(bad_request_handler = "token_request_unreadable")]
pub enum TokenApiResponse {
    /// The human approved: the API key, issued once for this device code.
    #[oai(status = 200)]
    Ok(Json<TokenResponse>, #[oai(header = "Cache-Control")] String),
    /// `authorization_pending`, `slow_down`, `access_denied`, `expired_token`, `invalid_grant`,
    /// `invalid_request` or `unsupported_grant_type`.
    #[oai(status = 400)]
    BadRequest(Json<OAuthError>, #[oai(header = "Cache-Control")] String),
    /// The service failed; poll again later.
    #[oai(status = 500)]
    Internal(Json<OAuthError>, #[oai(header = "Cache-Control")] String),
}

const NO_STORE: &str = "no-store";

/// A body that cannot be read as the form (or JSON) is RFC 6749's `invalid_request`, in the
/// OAuth shape clients parse.
fn unreadable(err: &poem::Error) -> Json<OAuthError> {
    let problem = ApiProblem::new(
        FailureClass::InvalidRequest,
        format!("the request body could not be read: {err}"),
    );
    Json(OAuthError::from_problem(&problem, None))
}

fn device_request_unreadable(err: poem::Error) -> DeviceAuthorizationApiResponse {
    DeviceAuthorizationApiResponse::BadRequest(unreadable(&err), NO_STORE.into())
}

fn token_request_unreadable(err: poem::Error) -> TokenApiResponse {
    TokenApiResponse::BadRequest(unreadable(&err), NO_STORE.into())
}

// ---- email-code fallback --------------------------------------------------------------------

#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct RegisterBody {
    /// The human's address; a 6-digit code is sent there. No account exists until the code
    /// comes back.
    #[oai(validator(min_length = 3, max_length = 254))]
    pub email: StrictString,
    /// How the agent names itself; quoted in the email.
    #[oai(validator(max_length = 80))]
    pub agent_name: Option<StrictString>,
    /// Space-separated scopes; omitted means `read discover execute`.
    #[oai(validator(max_length = 256))]
    pub scope: Option<StrictString>,
}

#[derive(Debug, Object)]
pub struct RegisterResponse {
    /// Pass it to `/api/verify` with the code the human reads from the email.
    #[oai(rename = "deviceId")]
    pub device_id: String,
    /// Seconds the code stays valid.
    pub expires_in: u64,
    /// Wrong codes allowed before the code dies.
    pub max_attempts: u32,
    /// What to tell the human.
    pub message: String,
}

#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct VerifyBody {
    /// From `/api/register`.
    #[oai(rename = "deviceId", validator(max_length = 64))]
    pub device_id: StrictString,
    /// The 6-digit code from the email.
    #[oai(validator(max_length = 16))]
    pub code: StrictString,
}

#[derive(Debug, Object)]
pub struct VerifyResponse {
    /// The API key, shown once: store it securely.
    pub api_key: String,
    pub key_prefix: String,
    pub scope: String,
    pub account_id: String,
    /// Send this to the human in the original conversation.
    pub welcome_message: String,
    /// Command that adds the service to an MCP client with this key.
    pub mcp_setup_command: String,
}

impl From<SignupKey> for VerifyResponse {
    fn from(k: SignupKey) -> Self {
        Self {
            api_key: k.secret.expose().to_owned(),
            key_prefix: k.record.prefix.to_string(),
            scope: k.record.scopes.to_list_string(),
            account_id: k.account.id.to_string(),
            welcome_message: k.welcome_message,
            mcp_setup_command: k.mcp_setup_command,
        }
    }
}

#[derive(ApiResponse)]
pub enum RegisterApiResponse {
    /// A code was sent; ask the human for it.
    #[oai(status = 200)]
    Sent(Json<RegisterResponse>),
}

#[derive(ApiResponse)]
pub enum VerifyApiResponse {
    /// The code was right: the key, shown once.
    #[oai(status = 200)]
    Verified(
        Json<VerifyResponse>,
        #[oai(header = "Cache-Control")] String,
    ),
}

pub struct SignupApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Signup")]
impl SignupApi {
    /// Start one-link signup (RFC 8628 device authorization)
    ///
    /// Show the human only `verification_uri_complete`; they sign in with an emailed code and
    /// approve. Then poll `/oauth2/token` every `interval` seconds with the `device_code`.
    #[oai(path = "/agent/identity", method = "post")]
    async fn device_authorization(
        &self,
        body: DeviceAuthorizationRequest,
    ) -> DeviceAuthorizationApiResponse {
        let (client_id, agent_name, scope) = match body {
            DeviceAuthorizationRequest::Form(Form(f)) => (f.client_id, None, f.scope),
            DeviceAuthorizationRequest::Json(Json(j)) => {
                let agent_name = j.agent_name.map(|s| s.0);
                let client_id = j.client_id.map(|s| s.0).or_else(|| agent_name.clone());
                (client_id, agent_name, j.scope.map(|s| s.0))
            }
        };
        let started = self
            .ctx
            .services
            .identity
            .start_device(
                client_id.as_deref().unwrap_or_default(),
                agent_name.as_deref(),
                scope.as_deref(),
            )
            .await;
        match started {
            Ok(d) => {
                self.ctx.services.telemetry.record(
                    crate::services::telemetry::FunnelStep::new(
                        crate::services::telemetry::Face::Rest,
                        "setup_session_created",
                        "signup",
                        client_id.as_deref().unwrap_or("anonymous"),
                    )
                    .capability("device_authorization"),
                );
                DeviceAuthorizationApiResponse::Ok(Json(d.into()), NO_STORE.into())
            }
            Err(e) => {
                let problem = ApiProblem::from(e);
                DeviceAuthorizationApiResponse::BadRequest(
                    Json(OAuthError::from_problem(&problem, None)),
                    NO_STORE.into(),
                )
            }
        }
    }

    /// Poll for the key (RFC 8628 device access token request)
    ///
    /// `authorization_pending` until the human approves; `slow_down` adds 5 s to the interval;
    /// `access_denied` and `expired_token` are final. On approval the API key comes back once.
    #[oai(path = "/oauth2/token", method = "post")]
    async fn token(&self, body: Form<TokenForm>) -> TokenApiResponse {
        let refuse = |problem: ApiProblem, interval| {
            let body = Json(OAuthError::from_problem(&problem, interval));
            if problem.class == FailureClass::Internal {
                TokenApiResponse::Internal(body, NO_STORE.into())
            } else {
                TokenApiResponse::BadRequest(body, NO_STORE.into())
            }
        };
        let Form(form) = body;
        match form.grant_type.as_deref() {
            Some(DEVICE_CODE_GRANT) => {}
            None => {
                return refuse(
                    ApiProblem::new(FailureClass::InvalidRequest, "grant_type is required"),
                    None,
                );
            }
            Some(other) => {
                return refuse(
                    ApiProblem::new(
                        FailureClass::UnsupportedGrantType,
                        format!("grant_type `{other}` is not supported; use {DEVICE_CODE_GRANT}"),
                    ),
                    None,
                );
            }
        }
        let Some(device_code) = form.device_code.filter(|c| !c.is_empty()) else {
            return refuse(
                ApiProblem::new(FailureClass::InvalidRequest, "device_code is required"),
                None,
            );
        };
        match self.ctx.services.identity.poll_device(&device_code).await {
            Ok(key) => TokenApiResponse::Ok(Json(key.into()), NO_STORE.into()),
            Err(e) => {
                let interval = match &e {
                    IdentityFailure::SlowDown { interval } => Some(*interval),
                    _ => None,
                };
                refuse(ApiProblem::from(e), interval)
            }
        }
    }

    /// Email-code signup, step 1
    ///
    /// Sends a 6-digit code to the human's address and returns `deviceId`. The code lives 10
    /// minutes and dies after 5 wrong tries. No account is created until the code is verified.
    #[oai(path = "/api/register", method = "post")]
    async fn register(&self, body: Json<RegisterBody>) -> Result<RegisterApiResponse, ApiProblem> {
        let identity = &self.ctx.services.identity;
        let id = identity
            .start_email(
                ChallengePurpose::ApiKey,
                body.email.as_str(),
                body.agent_name.as_ref().map(StrictString::as_str),
                body.scope.as_ref().map(StrictString::as_str),
            )
            .await?;
        self.ctx.services.telemetry.record(
            crate::services::telemetry::FunnelStep::new(
                crate::services::telemetry::Face::Rest,
                "setup_session_created",
                "signup",
                id.as_str(),
            )
            .capability("register"),
        );
        Ok(RegisterApiResponse::Sent(Json(RegisterResponse {
            device_id: id.to_string(),
            expires_in: identity.settings().email_code_ttl.as_secs(),
            max_attempts: svc_ports::identity::MAX_CODE_ATTEMPTS,
            message: "A 6-digit code was sent to the address. Ask the human for it, then call /api/verify with deviceId and code.".into(),
        })))
    }

    /// Email-code signup, step 2
    ///
    /// Verifies the code and returns the API key (once) and the MCP setup command.
    #[oai(path = "/api/verify", method = "post")]
    async fn verify(
        &self,
        req: &Request,
        body: Json<VerifyBody>,
    ) -> Result<VerifyApiResponse, ApiProblem> {
        let ip = client_ip_of(req, self.ctx.limits.trust_forwarded_for);
        let key = self
            .ctx
            .services
            .identity
            .verify_api_key_code(body.device_id.as_str(), body.code.as_str(), ip)
            .await?;
        Ok(VerifyApiResponse::Verified(
            Json(key.into()),
            NO_STORE.into(),
        ))
    }
}
