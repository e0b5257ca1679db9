//! Signup and sign-in: the RFC 8628 device flow, the email-code fallback, the human's web
//! session, and the account owner's key management. Written against ports only.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context;
use chrono::{DateTime, Utc};
use svc_ports::{
    Account, ApiKeyRecord, ApiKeySecret, ChallengeId, ChallengePurpose, ClientAddress,
    DeviceDecision, DeviceGrant, DeviceGrantId, DeviceGrantStatus, Email, EmailChallenge, KeyHash,
    KeyPrefix, MailError, MailMessage, Scopes, UserCode, WebSession,
    identity::{EMAIL_CODE_LEN, MAX_CODE_ATTEMPTS, USER_CODE_ALPHABET, USER_CODE_LEN},
    keys::BASE62,
    store::{IdentityError, KeyError},
};

use super::{KeyService, Ports};

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
    /// Wrong codes (user or email) from one IP address per window, before `locked_out`.
    pub wrong_codes_per_ip: u32,
    pub lockout_window: Duration,
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
        }
    }
}

/// Added to the interval on every `slow_down` (RFC 8628 §3.5).
const SLOW_DOWN_STEP_SECS: u32 = 5;
const DEVICE_CODE_LEN: usize = 43;
const SESSION_TOKEN_LEN: usize = 43;
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
    #[error("no pending request has this code; check it and type it again")]
    UnknownUserCode,
    #[error("the code is wrong; {tries_left} tries left")]
    WrongCode { tries_left: u32 },
    #[error("{0}")]
    CodeDead(&'static str),
    #[error("too many wrong codes from this address; try again in {} s", .retry_after.as_secs())]
    LockedOut { retry_after: Duration },
    #[error("too many codes were sent to this address; try again in {} s", .retry_after.as_secs())]
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
}

/// Counts wrong codes per client IP in a fixed window and locks the address out past the limit.
/// In process: each instance counts its own share (the per-code limits are in the store).
#[derive(Debug)]
pub struct WrongCodeCounter {
    limit: u32,
    window: Duration,
    by_ip: Mutex<HashMap<ClientAddress, (u32, Instant)>>,
}

impl WrongCodeCounter {
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            by_ip: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<ClientAddress, (u32, Instant)>> {
        self.by_ip.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(wait)` while the address is locked out.
    pub fn check(&self, ip: Option<ClientAddress>) -> Result<(), Duration> {
        let Some(ip) = ip else { return Ok(()) };
        let mut map = self.entries();
        match map.get(&ip) {
            Some((_, start)) if start.elapsed() >= self.window => {
                map.remove(&ip);
                Ok(())
            }
            Some((n, start)) if *n >= self.limit => {
                Err(self.window.saturating_sub(start.elapsed()))
            }
            _ => Ok(()),
        }
    }

    pub fn record_failure(&self, ip: Option<ClientAddress>) {
        let Some(ip) = ip else { return };
        let mut map = self.entries();
        // Bound memory under a flood of addresses: forget finished windows first.
        if map.len() > 100_000 {
            let window = self.window;
            map.retain(|_, (_, start)| start.elapsed() < window);
        }
        let entry = map.entry(ip).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= self.window {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
        if entry.0 == self.limit {
            tracing::warn!(client_ip = %ip, "address locked out after too many wrong codes");
        }
    }
}

pub struct IdentityService {
    ports: Ports,
    keys: Arc<KeyService>,
    settings: IdentitySettings,
    wrong_codes: WrongCodeCounter,
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

fn clean_text(
    raw: Option<&str>,
    max: usize,
    what: &str,
) -> Result<Option<String>, IdentityFailure> {
    let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if raw.chars().count() > max || raw.chars().any(char::is_control) {
        return Err(IdentityFailure::InvalidRequest(format!(
            "{what} must be at most {max} printable characters"
        )));
    }
    Ok(Some(raw.to_owned()))
}

impl IdentityService {
    pub fn new(ports: Ports, keys: Arc<KeyService>, settings: IdentitySettings) -> Self {
        let wrong_codes =
            WrongCodeCounter::new(settings.wrong_codes_per_ip, settings.lockout_window);
        Self {
            ports,
            keys,
            settings,
            wrong_codes,
        }
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

    /// Scopes a signup may ask for: those of a new key. Omitted means all of them.
    pub fn signup_scopes(&self, requested: Option<&str>) -> Result<Scopes, IdentityFailure> {
        let allowed = Scopes::default_for_new_key();
        let Some(raw) = requested.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(allowed);
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

    // ---- RFC 8628 device flow -------------------------------------------------------------

    /// Starts a device grant: the agent shows the human `verification_uri_complete` and polls.
    pub async fn start_device(
        &self,
        client_id: &str,
        agent_name: Option<&str>,
        scope: Option<&str>,
    ) -> Result<DeviceAuthorization, IdentityFailure> {
        let client_id = clean_text(Some(client_id), MAX_CLIENT_ID_LEN, "client_id")?
            .ok_or_else(|| IdentityFailure::InvalidRequest("client_id is required".into()))?;
        let agent_name = clean_text(agent_name, MAX_AGENT_NAME_LEN, "agent name")?;
        let scopes = self.signup_scopes(scope)?;
        let now = self.now();
        let interval = u32::try_from(self.settings.poll_interval.as_secs().max(1)).unwrap_or(5);
        // A user-code collision among live grants is rare (20^8 codes); draw again if it happens.
        for _ in 0..5 {
            let device_code = self.ports.entropy.pick(BASE62, DEVICE_CODE_LEN);
            let user_code =
                UserCode::parse(&self.ports.entropy.pick(USER_CODE_ALPHABET, USER_CODE_LEN))
                    .context("entropy produced an invalid user code")?;
            let grant = DeviceGrant {
                id: DeviceGrantId::from_ulid(self.ports.entropy.ulid()),
                device_code_hash: KeyHash::of(&device_code),
                user_code: user_code.clone(),
                client_id: client_id.clone(),
                agent_name: agent_name.clone(),
                scopes: scopes.clone(),
                status: DeviceGrantStatus::Pending,
                account_id: None,
                key_id: None,
                interval_secs: interval,
                created_at: now,
                expires_at: now + chrono_of(self.settings.device_code_ttl),
                last_polled_at: None,
            };
            match self.ports.identity.insert_device_grant(&grant).await {
                Ok(()) => {
                    tracing::info!(grant_id = %grant.id, client_id = %client_id, "device grant started");
                    let verification_uri = format!("{}/device", self.settings.site_url);
                    return Ok(DeviceAuthorization {
                        verification_uri_complete: format!(
                            "{verification_uri}?user_code={}",
                            user_code.display()
                        ),
                        verification_uri,
                        device_code,
                        user_code,
                        expires_in: self.settings.device_code_ttl.as_secs(),
                        interval,
                    });
                }
                Err(IdentityError::Duplicate) => continue,
                Err(e) => return Err(anyhow::Error::new(e).context("storing device grant").into()),
            }
        }
        Err(anyhow::anyhow!("could not draw a unique user code").into())
    }

    /// One poll of the token endpoint (RFC 8628 §3.4/3.5): pending, slow down, denied,
    /// expired, or the key (once).
    pub async fn poll_device(&self, device_code: &str) -> Result<SignupKey, IdentityFailure> {
        let unknown = IdentityFailure::InvalidGrant("this device code is not known");
        if device_code.is_empty() || device_code.len() > 256 {
            return Err(unknown);
        }
        let Some(grant) = self
            .ports
            .identity
            .device_grant_by_code(&KeyHash::of(device_code))
            .await?
        else {
            return Err(unknown);
        };
        let now = self.now();
        match grant.status {
            DeviceGrantStatus::Issued => {
                return Err(IdentityFailure::InvalidGrant(
                    "this device code already yielded its key; a key is issued once",
                ));
            }
            DeviceGrantStatus::Denied => return Err(IdentityFailure::AccessDenied),
            DeviceGrantStatus::Pending if grant.is_expired(now) => {
                return Err(IdentityFailure::ExpiredToken);
            }
            DeviceGrantStatus::Pending => {
                let too_fast = grant.last_polled_at.is_some_and(|last| {
                    now - last < chrono::Duration::seconds(i64::from(grant.interval_secs))
                });
                let interval = if too_fast {
                    grant.interval_secs + SLOW_DOWN_STEP_SECS
                } else {
                    grant.interval_secs
                };
                self.ports
                    .identity
                    .record_device_poll(&grant.id, now, interval)
                    .await?;
                return Err(if too_fast {
                    IdentityFailure::SlowDown { interval }
                } else {
                    IdentityFailure::AuthorizationPending
                });
            }
            // Approved: hand out the key even past expiry; the human approved in time.
            DeviceGrantStatus::Approved => {}
        }
        let account_id = grant
            .account_id
            .clone()
            .context("approved grant without account")?;
        let account = self
            .ports
            .accounts
            .account(&account_id)
            .await?
            .context("approving account vanished")?;
        let label = grant
            .agent_name
            .clone()
            .unwrap_or_else(|| grant.client_id.clone());
        let (secret, record) = self.keys.draft_key(
            &account.id,
            grant.scopes.clone(),
            format!("device: {label}"),
        )?;
        match self
            .ports
            .identity
            .issue_device_key(&grant.id, &record)
            .await
        {
            Ok(()) => {
                tracing::info!(grant_id = %grant.id, account_id = %account.id, key_prefix = %record.prefix, "api key issued by device grant");
                Ok(self.signup_key(secret, record, account))
            }
            Err(IdentityError::AlreadyUsed) => Err(IdentityFailure::InvalidGrant(
                "this device code already yielded its key; a key is issued once",
            )),
            Err(e) => Err(anyhow::Error::new(e).context("issuing device key").into()),
        }
    }

    /// The pending grant a human is about to approve. Wrong codes count against the IP.
    pub async fn pending_device(
        &self,
        user_code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<DeviceGrant, IdentityFailure> {
        self.wrong_codes
            .check(ip)
            .map_err(|retry_after| IdentityFailure::LockedOut { retry_after })?;
        let found = match UserCode::parse(user_code) {
            Ok(code) => self.ports.identity.device_grant_by_user_code(&code).await?,
            Err(_) => None,
        };
        let now = self.now();
        match found {
            Some(g) if g.status == DeviceGrantStatus::Pending && !g.is_expired(now) => Ok(g),
            Some(g) if g.status == DeviceGrantStatus::Pending => Err(IdentityFailure::CodeDead(
                "this request expired; ask the agent to start again",
            )),
            Some(_) => Err(IdentityFailure::CodeDead(
                "this request was already answered",
            )),
            None => {
                self.wrong_codes.record_failure(ip);
                Err(IdentityFailure::UnknownUserCode)
            }
        }
    }

    /// The signed-in human's answer to a pending grant.
    pub async fn decide_device(
        &self,
        user_code: &str,
        account: &Account,
        approve: bool,
        ip: Option<ClientAddress>,
    ) -> Result<DeviceGrant, IdentityFailure> {
        let grant = self.pending_device(user_code, ip).await?;
        let decision = if approve {
            DeviceDecision::Approve(account.id.clone())
        } else {
            DeviceDecision::Deny
        };
        match self
            .ports
            .identity
            .decide_device_grant(&grant.id, &decision, self.now())
            .await
        {
            Ok(g) => {
                tracing::info!(grant_id = %g.id, account_id = %account.id, approved = approve, "device grant decided");
                Ok(g)
            }
            Err(IdentityError::Expired) => Err(IdentityFailure::CodeDead(
                "this request expired; ask the agent to start again",
            )),
            Err(IdentityError::NotPending) => Err(IdentityFailure::CodeDead(
                "this request was already answered",
            )),
            Err(e) => Err(anyhow::Error::new(e)
                .context("deciding device grant")
                .into()),
        }
    }

    // ---- emailed codes ---------------------------------------------------------------------

    /// Sends a 6-digit code to `email` and returns the challenge id (`deviceId`).
    pub async fn start_email(
        &self,
        purpose: ChallengePurpose,
        email: &str,
        agent_name: Option<&str>,
        scope: Option<&str>,
    ) -> Result<ChallengeId, IdentityFailure> {
        let email = Email::parse(email.trim())
            .map_err(|e| IdentityFailure::InvalidRequest(format!("email: {e}")))?;
        let agent_name = clean_text(agent_name, MAX_AGENT_NAME_LEN, "agent name")?;
        let scopes = self.signup_scopes(scope)?;
        let now = self.now();
        let hour_ago = now - chrono::Duration::hours(1);
        let sent = self
            .ports
            .identity
            .challenges_sent_since(&email, hour_ago)
            .await?;
        if sent >= self.settings.codes_per_address_per_hour {
            return Err(IdentityFailure::TooManyCodes {
                retry_after: Duration::from_secs(3600),
            });
        }
        let id = ChallengeId::from_ulid(self.ports.entropy.ulid());
        let code = self.ports.entropy.pick(b"0123456789", EMAIL_CODE_LEN);
        let challenge = EmailChallenge {
            code_hash: EmailChallenge::code_hash_of(&id, &code),
            id: id.clone(),
            purpose,
            email: email.clone(),
            agent_name: agent_name.clone(),
            scopes,
            attempts: 0,
            created_at: now,
            expires_at: now + chrono_of(self.settings.email_code_ttl),
            consumed_at: None,
        };
        self.ports
            .identity
            .insert_challenge(&challenge)
            .await
            .map_err(|e| anyhow::Error::new(e).context("storing email challenge"))?;
        let minutes = self.settings.email_code_ttl.as_secs() / 60;
        let (subject, text) = match purpose {
            ChallengePurpose::SignIn => (
                "Your svc sign-in code".to_owned(),
                format!(
                    "Your svc sign-in code is {code}\n\nEnter it on the sign-in page. It expires in {minutes} minutes.\n\
                     If you did not try to sign in, ignore this email.\n"
                ),
            ),
            ChallengePurpose::ApiKey => (
                "Your svc verification code".to_owned(),
                format!(
                    "An AI agent{} asked for an svc API key for this address.\n\n\
                     Verification code: {code}\n\nGive the code to the agent only if you asked it to sign you up. \
                     It expires in {minutes} minutes. Terms: {site}/terms  Privacy: {site}/privacy\n",
                    agent_name
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default(),
                    site = self.settings.site_url,
                ),
            ),
        };
        let message = MailMessage {
            to: email,
            subject,
            text,
        };
        match self.ports.mailer.send(&message).await {
            Ok(()) => {
                tracing::info!(challenge_id = %id, purpose = purpose.as_str(), "email code sent");
                Ok(id)
            }
            Err(MailError::Rejected(reason)) => Err(IdentityFailure::InvalidRequest(format!(
                "the address does not accept mail: {reason}"
            ))),
            Err(MailError::Unavailable(reason)) => {
                tracing::error!(challenge_id = %id, error = %reason, "mail relay unavailable");
                Err(IdentityFailure::MailUnavailable)
            }
        }
    }

    /// Takes one try and compares the code in constant time. Wrong codes count per challenge
    /// (in the store) and per IP.
    async fn check_code(
        &self,
        purpose: ChallengePurpose,
        challenge_id: &str,
        code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<EmailChallenge, IdentityFailure> {
        self.wrong_codes
            .check(ip)
            .map_err(|retry_after| IdentityFailure::LockedOut { retry_after })?;
        let unknown = || IdentityFailure::InvalidRequest("no signup has this deviceId".into());
        let id = ChallengeId::parse(challenge_id.trim()).map_err(|_| unknown())?;
        let now = self.now();
        let challenge = match self.ports.identity.attempt_challenge(&id, now).await {
            Ok(c) if c.purpose == purpose => c,
            Ok(_) | Err(IdentityError::NotFound) => return Err(unknown()),
            Err(IdentityError::Expired) => {
                return Err(IdentityFailure::CodeDead(
                    "the code expired; start again to get a new one",
                ));
            }
            Err(IdentityError::Exhausted) => {
                return Err(IdentityFailure::CodeDead(
                    "too many wrong codes; this code is dead, start again to get a new one",
                ));
            }
            Err(IdentityError::AlreadyUsed) => {
                return Err(IdentityFailure::CodeDead("this code was already used"));
            }
            Err(e) => return Err(anyhow::Error::new(e).context("taking a code try").into()),
        };
        let presented = EmailChallenge::code_hash_of(&id, code.trim());
        if presented.ct_eq(&challenge.code_hash) {
            return Ok(challenge);
        }
        self.wrong_codes.record_failure(ip);
        let tries_left = MAX_CODE_ATTEMPTS.saturating_sub(challenge.attempts);
        if tries_left == 0 {
            return Err(IdentityFailure::CodeDead(
                "too many wrong codes; this code is dead, start again to get a new one",
            ));
        }
        Err(IdentityFailure::WrongCode { tries_left })
    }

    /// `/api/verify`: the right code proves the address, so the account is found or created
    /// now (never from the address alone) and the key is stored with the code's consumption.
    pub async fn verify_api_key_code(
        &self,
        device_id: &str,
        code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<SignupKey, IdentityFailure> {
        let challenge = self
            .check_code(ChallengePurpose::ApiKey, device_id, code, ip)
            .await?;
        let account = self
            .keys
            .ensure_account(&challenge.email, self.keys.signup_plan())
            .await?;
        let label = challenge
            .agent_name
            .clone()
            .unwrap_or_else(|| "email signup".into());
        let (secret, record) = self.keys.draft_key(
            &account.id,
            challenge.scopes.clone(),
            format!("email: {label}"),
        )?;
        match self
            .ports
            .identity
            .consume_challenge(&challenge.id, self.now(), Some(&record))
            .await
        {
            Ok(_) => {
                tracing::info!(challenge_id = %challenge.id, account_id = %account.id, key_prefix = %record.prefix, "api key issued by email code");
                Ok(self.signup_key(secret, record, account))
            }
            Err(IdentityError::AlreadyUsed) => {
                Err(IdentityFailure::CodeDead("this code was already used"))
            }
            Err(IdentityError::Expired) => Err(IdentityFailure::CodeDead(
                "the code expired; start again to get a new one",
            )),
            Err(e) => Err(anyhow::Error::new(e)
                .context("issuing key for email code")
                .into()),
        }
    }

    /// Web sign-in: the right code proves the address; the session token goes in a cookie.
    pub async fn verify_sign_in_code(
        &self,
        challenge_id: &str,
        code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<SignedIn, IdentityFailure> {
        let challenge = self
            .check_code(ChallengePurpose::SignIn, challenge_id, code, ip)
            .await?;
        let now = self.now();
        match self
            .ports
            .identity
            .consume_challenge(&challenge.id, now, None)
            .await
        {
            Ok(_) => {}
            Err(IdentityError::AlreadyUsed) => {
                return Err(IdentityFailure::CodeDead("this code was already used"));
            }
            Err(IdentityError::Expired) => {
                return Err(IdentityFailure::CodeDead(
                    "the code expired; start again to get a new one",
                ));
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context("consuming sign-in code")
                    .into());
            }
        }
        let account = self
            .keys
            .ensure_account(&challenge.email, self.keys.signup_plan())
            .await?;
        self.start_session(account).await
    }

    /// A new web session for `account`: after an emailed code, or a checkout handoff link.
    pub async fn start_session(&self, account: Account) -> Result<SignedIn, IdentityFailure> {
        let now = self.now();
        let session_token = self.ports.entropy.pick(BASE62, SESSION_TOKEN_LEN);
        let session = WebSession {
            token_hash: KeyHash::of(&session_token),
            account_id: account.id.clone(),
            created_at: now,
            expires_at: now + chrono_of(self.settings.session_ttl),
        };
        self.ports
            .identity
            .insert_session(&session)
            .await
            .map_err(|e| anyhow::Error::new(e).context("storing web session"))?;
        tracing::info!(account_id = %account.id, "signed in");
        Ok(SignedIn {
            session_token,
            account,
        })
    }

    /// The account behind a session cookie, if it is a live session.
    pub async fn session_account(&self, token: &str) -> Result<Option<Account>, IdentityFailure> {
        if token.is_empty() || token.len() > 128 {
            return Ok(None);
        }
        Ok(self
            .ports
            .identity
            .session(&KeyHash::of(token), self.now())
            .await?
            .map(|(_, account)| account))
    }

    pub async fn sign_out(&self, token: &str) -> Result<(), IdentityFailure> {
        self.ports
            .identity
            .delete_session(&KeyHash::of(token))
            .await?;
        Ok(())
    }

    // ---- the account owner's keys ----------------------------------------------------------

    pub async fn account_keys(
        &self,
        account: &Account,
    ) -> Result<Vec<ApiKeyRecord>, IdentityFailure> {
        Ok(self.ports.accounts.keys(Some(account.id.clone())).await?)
    }

    pub async fn create_key(
        &self,
        account: &Account,
        label: Option<&str>,
    ) -> Result<(ApiKeySecret, ApiKeyRecord), IdentityFailure> {
        let label = clean_text(label, MAX_AGENT_NAME_LEN, "label")?.unwrap_or_else(|| "web".into());
        Ok(self
            .keys
            .issue_key(&account.id, Scopes::default_for_new_key(), label)
            .await?)
    }

    /// Replaces a key by a new one with the same scopes and label, in one store transaction.
    pub async fn rotate_key(
        &self,
        account: &Account,
        prefix: &str,
    ) -> Result<(ApiKeySecret, ApiKeyRecord), IdentityFailure> {
        let old = self.own_key(account, prefix).await?;
        let (secret, record) =
            self.keys
                .draft_key(&account.id, old.scopes.clone(), old.label.clone())?;
        match self
            .ports
            .accounts
            .rotate_key(&old.prefix, &record, self.now())
            .await
        {
            Ok(_) => {
                tracing::info!(account_id = %account.id, old_prefix = %old.prefix, key_prefix = %record.prefix, "api key rotated");
                Ok((secret, record))
            }
            Err(KeyError::AlreadyRevoked) => Err(IdentityFailure::KeyAlreadyRevoked),
            Err(KeyError::NotFound) => Err(IdentityFailure::KeyNotFound),
            Err(e) => Err(anyhow::Error::new(e).context("rotating key").into()),
        }
    }

    pub async fn revoke_key(
        &self,
        account: &Account,
        prefix: &str,
    ) -> Result<ApiKeyRecord, IdentityFailure> {
        let key = self.own_key(account, prefix).await?;
        self.keys.revoke(&key.prefix).await.map_err(|e| match e {
            super::KeyServiceError::AlreadyRevoked(_) => IdentityFailure::KeyAlreadyRevoked,
            super::KeyServiceError::NotFound(_) => IdentityFailure::KeyNotFound,
            super::KeyServiceError::Internal(e) => IdentityFailure::Internal(e),
        })
    }

    /// A key of this account by prefix; another account's key reads as not found.
    async fn own_key(
        &self,
        account: &Account,
        prefix: &str,
    ) -> Result<ApiKeyRecord, IdentityFailure> {
        let prefix = KeyPrefix::parse(prefix).map_err(|_| IdentityFailure::KeyNotFound)?;
        self.account_keys(account)
            .await?
            .into_iter()
            .find(|k| k.prefix == prefix)
            .ok_or(IdentityFailure::KeyNotFound)
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
             ({prefix}…, scopes: {scopes}): it can read public pages, discover a site's mapped actions and run \
             them, paying about one credit per completed action; failed actions are refunded. You can see, rotate \
             or revoke the key at {site}/account.",
            email = account.email,
            plan = account.plan,
            prefix = record.prefix,
            scopes = record.scopes.to_list_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_codes_lock_an_address_out_and_the_window_ends() {
        let counter = WrongCodeCounter::new(3, Duration::from_millis(200));
        let ip: Option<ClientAddress> = Some("203.0.113.7".parse().unwrap());
        let other: Option<ClientAddress> = Some("203.0.113.8".parse().unwrap());
        // Another host of the same IPv6 /64 is the same client (issue 15).
        let v6: Option<ClientAddress> = Some("2001:db8:5:6::1".parse().unwrap());
        let v6_other_host: Option<ClientAddress> = Some("2001:db8:5:6:abcd::9".parse().unwrap());
        for _ in 0..3 {
            counter.record_failure(v6);
        }
        assert!(counter.check(v6_other_host).is_err());
        for _ in 0..2 {
            counter.record_failure(ip);
            assert!(counter.check(ip).is_ok());
        }
        counter.record_failure(ip);
        let wait = counter.check(ip).unwrap_err();
        assert!(wait <= Duration::from_millis(200));
        assert!(
            counter.check(other).is_ok(),
            "other addresses are not affected"
        );
        assert!(counter.check(None).is_ok());
        std::thread::sleep(Duration::from_millis(220));
        assert!(
            counter.check(ip).is_ok(),
            "the lockout ends with the window"
        );
    }
}
