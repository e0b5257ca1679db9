//! The RFC 8628 device flow: an agent starts a grant and polls; the signed-in human approves
//! or denies it by its user code.

use anyhow::Context;
use svc_ports::{
    Account, ClientAddress, DeviceDecision, DeviceGrant, DeviceGrantId, DeviceGrantStatus, KeyHash,
    UserCode,
    actions::CONSEQUENTIAL_SCOPE,
    identity::{USER_CODE_ALPHABET, USER_CODE_LEN},
    keys::BASE62,
    store::IdentityError,
};

use super::{
    DeviceAuthorization, IdentityFailure, IdentityService, MAX_AGENT_NAME_LEN, MAX_CLIENT_ID_LEN,
    SignupKey, chrono_of, clean_text,
};

/// Added to the interval on every `slow_down` (RFC 8628 §3.5).
const SLOW_DOWN_STEP_SECS: u32 = 5;
const DEVICE_CODE_LEN: usize = 43;

impl IdentityService {
    /// Starts a device grant: the agent shows the human `verification_uri_complete` and polls.
    pub async fn start_device(
        &self,
        client_id: &str,
        agent_name: Option<&str>,
        scope: Option<&str>,
        face: crate::telemetry::Face,
    ) -> Result<DeviceAuthorization, IdentityFailure> {
        let client_id = clean_text(Some(client_id), MAX_CLIENT_ID_LEN, "client_id")?
            .ok_or_else(|| IdentityFailure::InvalidRequest("client_id is required".into()))?;
        let agent_name = clean_text(agent_name, MAX_AGENT_NAME_LEN, "agent name")?;
        let scopes = self.signup_scopes(scope, true)?;
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
                    self.funnel.record(
                        crate::telemetry::FunnelStep::new(
                            face,
                            "setup_session_created",
                            "signup",
                            &client_id,
                        )
                        .capability("device_authorization"),
                    );
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
    /// Redeems `device_code`. A `client_id`, when the token request names one, must be the
    /// client the code was issued to (RFC 6749 §5.2 `invalid_grant`; RFC 8628 §3.4).
    pub async fn poll_device(
        &self,
        device_code: &str,
        client_id: Option<&str>,
    ) -> Result<SignupKey, IdentityFailure> {
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
        // Trimmed as the client id was when the grant was stored.
        if client_id
            .is_some_and(|asked| !grant.client_id.is_empty() && asked.trim() != grant.client_id)
        {
            return Err(IdentityFailure::InvalidGrant(
                "this device code was issued to another client_id",
            ));
        }
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
        self.wrong_codes.take(ip).await?;
        let found = match UserCode::parse(user_code) {
            Ok(code) => self.ports.identity.device_grant_by_user_code(&code).await,
            Err(_) => Ok(None),
        };
        let found = match found {
            Ok(Some(g)) => g,
            Ok(None) => return Err(IdentityFailure::UnknownUserCode),
            Err(e) => {
                self.wrong_codes.give_back(ip).await;
                return Err(e.into());
            }
        };
        // The code exists: not a wrong code, whatever its state.
        self.wrong_codes.give_back(ip).await;
        let now = self.now();
        match found {
            g if g.status == DeviceGrantStatus::Pending && !g.is_expired(now) => Ok(g),
            g if g.status == DeviceGrantStatus::Pending => Err(IdentityFailure::CodeDead(
                "this request expired; ask the agent to start again",
            )),
            _ => Err(IdentityFailure::CodeDead(
                "this request was already answered",
            )),
        }
    }

    /// The signed-in human's answer to a pending grant. The key gets what the agent asked for,
    /// except `execute:consequential` unless the human ticked it (`grant_consequential`);
    /// ticking it grants nothing the agent did not ask for.
    pub async fn decide_device(
        &self,
        user_code: &str,
        account: &Account,
        approve: bool,
        grant_consequential: bool,
        ip: Option<ClientAddress>,
    ) -> Result<DeviceGrant, IdentityFailure> {
        let grant = self.pending_device(user_code, ip).await?;
        let decision = if approve {
            let scopes = if grant_consequential {
                grant.scopes.clone()
            } else {
                grant.scopes.without(CONSEQUENTIAL_SCOPE)
            };
            DeviceDecision::Approve {
                account: account.id.clone(),
                scopes,
            }
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
}
