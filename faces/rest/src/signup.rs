//! Signup for agents on REST: the RFC 8628 device flow (`/agent/identity`, `/oauth2/token`)
//! and the email-code fallback (`/api/register`, `/api/verify`).
//!
//! The two OAuth endpoints answer errors in RFC 6749 §5.2's shape (`error`,
//! `error_description`) that OAuth clients parse, extended with the problem fields every other
//! endpoint carries.

use crate::Tags;
use kit::JsonBody;
use kit::context::AppContext;
use kit::edge::client_ip_of;
use kit::problem::ApiProblem;
use kit::wire::signup::*;
use poem::Request;
use poem_openapi::{
    ApiResponse, OpenApi,
    payload::{Form, Json},
};
use svc_ports::{ChallengePurpose, FailureClass};
use svc_services::IdentityFailure;
use svc_services::telemetry::Face;

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
            DeviceAuthorizationRequest::Json(JsonBody(j)) => {
                let client_id = j.client_id.or_else(|| j.agent_name.clone());
                (client_id, j.agent_name, j.scope)
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
                Face::Rest,
            )
            .await;
        match started {
            Ok(d) => DeviceAuthorizationApiResponse::Ok(Json(d.into()), NO_STORE.into()),
            Err(e) => {
                let problem = ApiProblem::from(e);
                DeviceAuthorizationApiResponse::BadRequest(
                    Json(OAuthError::from_problem(&problem, None)),
                    NO_STORE.into(),
                )
            }
        }
    }

    /// RFC 8628 device authorization endpoint (same as `/agent/identity`)
    ///
    /// The standard path, for OAuth clients configured without discovery; it answers exactly
    /// like `POST /agent/identity`. Poll `/oauth2/token` with the `device_code`.
    #[oai(path = "/oauth2/device_authorization", method = "post")]
    async fn oauth2_device_authorization(
        &self,
        body: DeviceAuthorizationRequest,
    ) -> DeviceAuthorizationApiResponse {
        self.device_authorization(body).await
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
        let client_id = form.client_id.as_deref().filter(|c| !c.is_empty());
        match self
            .ctx
            .services
            .identity
            .poll_device(&device_code, client_id)
            .await
        {
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
    async fn register(
        &self,
        body: JsonBody<RegisterBody>,
    ) -> Result<RegisterApiResponse, ApiProblem> {
        let identity = &self.ctx.services.identity;
        let id = identity
            .start_email(
                ChallengePurpose::ApiKey,
                body.email.as_str(),
                body.agent_name.as_deref(),
                body.scope.as_deref(),
                Face::Rest,
            )
            .await?;
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
        body: JsonBody<VerifyBody>,
    ) -> Result<VerifyApiResponse, ApiProblem> {
        let ip = client_ip_of(req, &self.ctx.proxies);
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
