//! Signup for agents on REST: the RFC 8628 device flow (`/agent/identity`, `/oauth2/token`)
//! and the email-code fallback (`/api/register`, `/api/verify`).
//!
//! The two OAuth endpoints answer errors in RFC 6749 §5.2's shape (`error`,
//! `error_description`) that OAuth clients parse, extended with the problem fields every other
//! endpoint carries.

use crate::problem::*;
use poem_openapi::{ApiRequest, Object, payload::Form};
use serde::Deserialize;
use svc_ports::FailureClass;
use svc_services::{SignupKey, identity::DeviceAuthorization};

pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

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
    pub client_id: Option<String>,
    /// How the agent names itself; shown to the human on the approval page.
    #[oai(validator(max_length = 80))]
    pub agent_name: Option<String>,
    #[oai(validator(max_length = 256))]
    pub scope: Option<String>,
}

#[derive(ApiRequest)]
pub enum DeviceAuthorizationRequest {
    /// RFC 8628 form body.
    Form(Form<DeviceAuthorizationForm>),
    /// JSON body naming the agent.
    Json(crate::JsonBody<DeviceAuthorizationJson>),
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
    pub fn from_problem(p: &ApiProblem, interval: Option<u32>) -> Self {
        let body = p.body();
        let error = match p.class {
            FailureClass::InvalidRequest
            | FailureClass::MalformedRequest
            | FailureClass::PayloadTooLarge => "invalid_request",
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

// ---- email-code fallback --------------------------------------------------------------------

#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct RegisterBody {
    /// The human's address; a 6-digit code is sent there. No account exists until the code
    /// comes back.
    #[oai(validator(min_length = 3, max_length = 254))]
    pub email: String,
    /// How the agent names itself; quoted in the email.
    #[oai(validator(max_length = 80))]
    pub agent_name: Option<String>,
    /// Space-separated scopes; omitted means `read discover execute`.
    #[oai(validator(max_length = 256))]
    pub scope: Option<String>,
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
    pub device_id: String,
    /// The 6-digit code from the email.
    #[oai(validator(max_length = 16))]
    pub code: String,
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
