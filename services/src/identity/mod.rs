//! Signup and sign-in: the RFC 8628 device flow, the email-code fallback, the human's web
//! session, and the account owner's key management. Written against ports only.

mod device;
mod email;
mod lockout;
mod web;

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use svc_ports::{Account, ApiKeyRecord, ApiKeySecret, Scopes, UserCode, keys::BASE62};

use super::{KeyService, Ports};

pub use email::KNOWN_BROWSER_TTL;
pub use lockout::WrongCodeCounter;

/// Lifetimes and limits of signup; each is published in the discovery files.
#[derive(Debug, Clone)]
pub struct IdentitySettings {
    pub site_url: String,
    pub mcp_url: String,
    /// How long a device code and its link stay valid (RFC 8628 `expires_in`).
    pub device_code_ttl: Duration,
    /// The first polling interval (RFC 8628 `interval`).
    pub poll_interval: Duration,
    pub email_code_ttl: Duration,
    pub session_ttl: Duration,
    /// Codes sent to one address per hour, before `rate_limited`.
    pub codes_per_address_per_hour: u32,
    /// Wrong codes (user or email) from one IP address per window, before `locked_out`;
    /// counted in the store, so shared by every instance on it.
    pub wrong_codes_per_ip: u32,
    pub lockout_window: Duration,
    /// How long an authenticated key is remembered: the longest a revocation made through
    /// another instance goes unnoticed (0: every request reads the key from the store).
    pub key_cache: Duration,
    /// Credits an account created by signup gets once, so a new agent can try something at
    /// once (0: none).
    pub free_credits: i64,
    /// How long a rotated key keeps working beside its replacement.
    pub key_rotation_overlap: Duration,
}

impl IdentitySettings {
    pub fn new(site_url: &str, mcp_url: &str) -> Self {
        Self {
            site_url: site_url.to_owned(),
            mcp_url: mcp_url.to_owned(),
            device_code_ttl: Duration::from_secs(15 * 60),
            poll_interval: Duration::from_secs(5),
            email_code_ttl: Duration::from_secs(10 * 60),
            session_ttl: Duration::from_secs(7 * 24 * 3600),
            codes_per_address_per_hour: 5,
            wrong_codes_per_ip: 20,
            lockout_window: Duration::from_secs(15 * 60),
            key_cache: Duration::from_secs(1),
            free_credits: 0,
            key_rotation_overlap: crate::keys::DEFAULT_ROTATION_OVERLAP,
        }
    }
}

pub const MAX_CLIENT_ID_LEN: usize = 128;
pub const MAX_AGENT_NAME_LEN: usize = 80;

/// Why a signup, sign-in or key operation did not go through. Each maps to one failure class.
#[derive(Debug, thiserror::Error)]
pub enum IdentityFailure {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    InvalidScope(String),
    #[error("the human has not approved this device code yet")]
    AuthorizationPending,
    #[error("polling too fast; wait at least {interval} s between polls from now on")]
    SlowDown { interval: u32 },
    #[error("the human denied this request")]
    AccessDenied,
    #[error("this device code expired before it was approved")]
    ExpiredToken,
    #[error("{0}")]
    InvalidGrant(&'static str),
    /// The `deviceId` (challenge id) names no signup or sign-in: nothing exists to verify.
    #[error("no signup has this deviceId")]
    UnknownChallenge,
    #[error("no pending request has this code; check it and type it again")]
    UnknownUserCode,
    #[error("the code is wrong; {tries_left} tries left")]
    WrongCode { tries_left: u32 },
    #[error("{0}")]
    CodeDead(&'static str),
    #[error("too many wrong codes from this address; try again in {}", crate::limits::wait_in_words(*.retry_after))]
    LockedOut { retry_after: Duration },
    /// Too many wrong codes were tried for the e-mail address in the last day, from anywhere.
    #[error(
        "too many wrong codes were tried for this e-mail address today; its codes work again \
         within a day"
    )]
    AddressLocked,
    #[error("too many codes were sent to this address; try again in {}", crate::limits::wait_in_words(*.retry_after))]
    TooManyCodes { retry_after: Duration },
    #[error("the email could not be sent; try again shortly")]
    MailUnavailable,
    #[error("no key of this account has that prefix")]
    KeyNotFound,
    #[error("that key was already revoked")]
    KeyAlreadyRevoked,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<svc_ports::StoreError> for IdentityFailure {
    fn from(e: svc_ports::StoreError) -> Self {
        Self::Internal(anyhow::Error::new(e))
    }
}

/// What RFC 8628's device authorization answer carries.
#[derive(Debug, Clone)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: UserCode,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: u64,
    pub interval: u32,
}

/// A key handed to an agent at the end of a signup, with what to tell the human.
#[derive(Debug)]
pub struct SignupKey {
    pub secret: ApiKeySecret,
    pub record: ApiKeyRecord,
    pub account: Account,
    pub welcome_message: String,
    pub mcp_setup_command: String,
}

/// A signed-in browser: the cookie value (shown once) and its account.
#[derive(Debug)]
pub struct SignedIn {
    pub session_token: String,
    pub account: Account,
    /// After an e-mailed code: the browser's mark as the address's own (a cookie of its own,
    /// for [`KNOWN_BROWSER_TTL`]), which lets it ask for more codes than strangers can.
    pub known_browser: Option<String>,
}

pub struct IdentityService {
    ports: Ports,
    keys: Arc<KeyService>,
    settings: IdentitySettings,
    wrong_codes: WrongCodeCounter,
    funnel: crate::telemetry::Funnel,
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

fn clean_text(
    raw: Option<&str>,
    max: usize,
    what: &str,
) -> Result<Option<String>, IdentityFailure> {
    let Some(sent) = raw else {
        return Ok(None);
    };
    // The limit is on what was sent (as the OpenAPI `maxLength` says), not on what trimming
    // leaves: padding must not stretch it.
    let too_long = sent.chars().count() > max;
    let raw = sent.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    // Shown to the human on the consent page: it must read as it is.
    if too_long || svc_ports::text::misleads(raw) {
        return Err(IdentityFailure::InvalidRequest(format!(
            "{what} must be at most {max} printable characters, without invisible or direction-changing ones"
        )));
    }
    Ok(Some(raw.to_owned()))
}

impl IdentityService {
    pub fn new(ports: Ports, keys: Arc<KeyService>, settings: IdentitySettings) -> Self {
        let wrong_codes = WrongCodeCounter::new(
            ports.limits.clone(),
            ports.clock.clone(),
            settings.wrong_codes_per_ip,
            settings.lockout_window,
        );
        Self {
            ports,
            keys,
            settings,
            wrong_codes,
            funnel: Default::default(),
        }
    }

    /// Records the funnel's setup sessions.
    pub fn with_telemetry(mut self, telemetry: Arc<crate::telemetry::TelemetryService>) -> Self {
        self.funnel = crate::telemetry::Funnel::new(telemetry);
        self
    }

    /// A random base62 token (cookie seeds and the like).
    pub fn random_token(&self, len: usize) -> String {
        self.ports.entropy.pick(BASE62, len)
    }

    pub fn settings(&self) -> &IdentitySettings {
        &self.settings
    }

    fn now(&self) -> DateTime<Utc> {
        self.ports.clock.now()
    }

    /// Scopes a signup may ask for: those of a new key, and through the device flow (where the
    /// human sees the request and may grant it) `execute:consequential`. Omitted means the
    /// default set.
    pub fn signup_scopes(
        &self,
        requested: Option<&str>,
        consequential: bool,
    ) -> Result<Scopes, IdentityFailure> {
        let default = Scopes::default_for_new_key();
        let allowed = if consequential {
            crate::keys::grantable_scopes()
        } else {
            default.clone()
        };
        let Some(raw) = requested.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(default);
        };
        let scopes =
            Scopes::parse_list(raw).map_err(|e| IdentityFailure::InvalidScope(e.to_string()))?;
        if let Some(extra) = scopes.iter().find(|s| !allowed.contains(s.as_str())) {
            return Err(IdentityFailure::InvalidScope(format!(
                "scope `{}` cannot be requested at signup; available: {}",
                extra.as_str(),
                allowed.to_list_string()
            )));
        }
        Ok(scopes)
    }

    // ---- what the agent is told --------------------------------------------------------------

    pub fn mcp_setup_command(&self, secret: &ApiKeySecret) -> String {
        format!(
            "claude mcp add --transport http svc {} --header \"Authorization: Bearer {}\"",
            self.settings.mcp_url,
            secret.expose()
        )
    }

    fn signup_key(
        &self,
        secret: ApiKeySecret,
        record: ApiKeyRecord,
        account: Account,
    ) -> SignupKey {
        let welcome_message = format!(
            "You're set up on svc as {email} (plan: {plan}). This agent now holds its own API key \
             ({prefix}…, scopes: {scopes}): {can} You can see, rotate or revoke the key at {site}/account.",
            email = account.email,
            plan = account.plan,
            prefix = record.prefix,
            scopes = record.scopes.to_list_string(),
            can = what_scopes_allow(&record.scopes),
            site = self.settings.site_url,
        );
        SignupKey {
            mcp_setup_command: self.mcp_setup_command(&secret),
            welcome_message,
            secret,
            record,
            account,
        }
    }

    /// Deletes expired grants, challenges and sessions (a day after expiry, so late polls
    /// still get `expired_token` rather than `invalid_grant`).
    pub async fn purge_expired(&self) -> Result<u64, IdentityFailure> {
        let cutoff = self.now() - chrono::Duration::days(1);
        Ok(self.ports.identity.purge_identity(cutoff).await?)
    }
}

/// What a key with these scopes may do, in one sentence for the human: only what was granted
/// (a `read` key is not told it can run actions).
pub fn what_scopes_allow(scopes: &Scopes) -> String {
    let mut can: Vec<&str> = Vec::new();
    if scopes.contains("read") {
        can.push("read public pages");
    }
    if scopes.contains("discover") {
        can.push("discover a site's mapped actions");
    }
    let execute = scopes.contains(svc_ports::actions::EXECUTE_SCOPE);
    if execute {
        can.push(if scopes.contains("discover") {
            "run them, paying about one credit per completed action (failed actions are refunded)"
        } else {
            "run mapped actions, paying about one credit per completed action (failed actions are refunded)"
        });
    }
    if scopes.contains("execute:consequential") {
        can.push(
            "run consequential actions (place orders, make bookings and payments) as the human approved",
        );
    }
    let cannot: Vec<&str> = [
        (!scopes.contains("read")).then_some("read pages"),
        (!scopes.contains("discover")).then_some("discover actions"),
        (!execute).then_some("run actions"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut out = match can.as_slice() {
        [] => "it can do nothing yet".to_owned(),
        [one] => format!("it can {one}"),
        [first @ .., last] => format!("it can {} and {last}", first.join(", ")),
    };
    if !cannot.is_empty() {
        out.push_str(&format!(
            "; it cannot {} (a key with more scopes is needed for that)",
            cannot.join(" or ")
        ));
    }
    out.push('.');
    out
}

#[cfg(test)]
mod welcome_tests {
    use super::*;

    fn allow(raw: &str) -> String {
        what_scopes_allow(&Scopes::parse_list(raw).unwrap())
    }

    #[test]
    fn a_read_key_is_told_it_can_only_read() {
        let s = allow("read");
        assert!(s.starts_with("it can read public pages;"), "{s}");
        assert!(s.contains("cannot discover actions or run actions"), "{s}");
        assert!(!s.contains("credit"), "{s}");
    }

    #[test]
    fn the_default_key_is_told_everything_it_may_do() {
        let s = allow("read discover execute");
        assert_eq!(
            s,
            "it can read public pages, discover a site's mapped actions and run them, paying about \
             one credit per completed action (failed actions are refunded)."
        );
    }

    #[test]
    fn a_discover_key_cannot_run() {
        let s = allow("discover read");
        assert!(s.contains("discover a site's mapped actions"), "{s}");
        assert!(s.contains("cannot run actions"), "{s}");
    }
}

#[cfg(test)]
mod clean_text_tests {
    use super::clean_text;

    #[test]
    fn the_length_limit_counts_what_was_sent_padding_included() {
        let padded = format!("  \u{2008}{}", "*".repeat(126));
        assert!(clean_text(Some(&padded), 128, "client_id").is_err());
        let fits = format!(" {} ", "*".repeat(126));
        assert_eq!(
            clean_text(Some(&fits), 128, "client_id").unwrap().unwrap(),
            "*".repeat(126)
        );
        assert!(clean_text(Some("   "), 128, "client_id").unwrap().is_none());
        assert!(clean_text(None, 128, "client_id").unwrap().is_none());
    }
}
