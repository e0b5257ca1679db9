//! Target-site connections: an agent starts one for a provider that a published action
//! declares, shows the human the connect link, and polls until it ends. The human signs in here
//! as the same account, goes through the provider's authorization (OAuth 2.0 code + PKCE), and
//! the callback checks who the provider says they are. Credentials are sealed at rest, never
//! returned to an agent and never logged; the executor asks for them with [`credential_for`].
//!
//! [`credential_for`]: ConnectionService::credential_for

use std::{collections::HashSet, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, Clock, ConnectionFinish, ConnectionProvider, ConnectionProviderError,
    ConnectionRecord, ConnectionState, CredentialKind, Entropy, MapStatus, MapStore, ProviderGrant,
    ProviderId, SecretSealer,
    connections::{CONNECT_LINK_TTL_MINUTES, oauth_state_hash},
    ids::ConnectionId,
    store::{ConnectionError, ConnectionStore},
};

/// What a poll suggests as the wait before the next one.
pub const POLL_AFTER_MS: u64 = 2000;
/// Longest a poll may hold the request waiting for a change.
pub const MAX_POLL_WAIT: Duration = Duration::from_secs(10);
/// Credentials this close to expiry are refreshed before use.
const REFRESH_MARGIN_SECONDS: i64 = 30;
const MAX_EXPECTED_ACCOUNT_LEN: usize = 254;

#[derive(Debug, thiserror::Error)]
pub enum ConnectionFailure {
    #[error(
        "`{0}` is not an auth_provider of any published action; use the auth_provider exactly as discover or list_actions gave it"
    )]
    UnknownProvider(String),
    #[error("connections to `{0}` are not available on this service right now")]
    ProviderUnavailable(String),
    #[error("{0}")]
    InvalidInput(String),
    /// The connect link names no connection (or a garbled one).
    #[error("this connect link is not valid")]
    UnknownLink,
    /// The signed-in human is not the account the agent started the connection for.
    #[error("this connect link belongs to another account; sign in as the account your agent uses")]
    OtherAccount,
    #[error("the connect link expired; ask your agent for a new one")]
    LinkExpired,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Why the executor gets no credential.
#[derive(Debug, thiserror::Error)]
pub enum CredentialFailure {
    #[error("this action needs a connection to `{0}`")]
    Required(String),
    #[error("the connection to `{0}` expired and could not be refreshed")]
    Expired(String),
    #[error("the authorization server of `{0}` is unavailable")]
    ProviderUnavailable(String),
    #[error("credentials of `{provider}` are not sent to `{host}`")]
    NotForThisSite { provider: String, host: String },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// A connection as an agent may see it: never a token.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionView {
    pub provider: String,
    /// `None`: never started for this account.
    pub state: Option<ConnectionState>,
    pub connection_id: Option<ConnectionId>,
    pub expected_account: Option<String>,
    pub upstream_account: Option<String>,
    pub link_expires_at: Option<DateTime<Utc>>,
    pub credentials_expire_at: Option<DateTime<Utc>>,
}

impl ConnectionView {
    pub fn connected(&self) -> bool {
        self.state == Some(ConnectionState::Connected)
    }

    /// Expired, refused or wrong account: the agent must stop polling.
    pub fn is_final(&self) -> bool {
        self.state.is_some_and(ConnectionState::is_final)
    }

    fn of(provider: &ProviderId, record: Option<&ConnectionRecord>) -> Self {
        Self {
            provider: provider.to_string(),
            state: record.map(|r| r.state),
            connection_id: record.map(|r| r.id.clone()),
            expected_account: record.and_then(|r| r.expected_account.clone()),
            upstream_account: record.and_then(|r| r.upstream_account.clone()),
            link_expires_at: record
                .filter(|r| r.state == ConnectionState::Pending)
                .map(|r| r.link_expires_at),
            credentials_expire_at: record.and_then(|r| r.credentials_expire_at),
        }
    }
}

/// A started connection: the link to show the human.
#[derive(Debug, Clone)]
pub struct StartedConnection {
    pub view: ConnectionView,
    pub connect_url: String,
    pub expires_at: DateTime<Utc>,
}

/// How the executor presents a connection to the target site.
pub struct Credential {
    pub kind: CredentialKind,
    secret: String,
}

impl Credential {
    /// The header that carries it.
    pub fn header(&self) -> (String, String) {
        match self.kind {
            CredentialKind::Bearer => ("authorization".into(), format!("Bearer {}", self.secret)),
            CredentialKind::Cookie => ("cookie".into(), self.secret.clone()),
        }
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential({:?}, <redacted>)", self.kind)
    }
}

/// How many times, 200 ms apart, a refused refresh looks for the tokens another instance's
/// refresh of the same connection stores, before it ends the connection.
const REFUSED_REFRESH_LOOKS: usize = 15;

/// How long the set of declared providers is reused (maps change only when published).
const PROVIDERS_CACHE: chrono::TimeDelta = chrono::TimeDelta::seconds(1);

/// The declared providers, with when they were read (the `Clock` port's time).
type ProvidersCache = Arc<std::sync::Mutex<Option<(DateTime<Utc>, Arc<HashSet<String>>)>>>;

/// The per-connection locks refreshes take on this instance, shared by the service's clones.
type RefreshTurns =
    Arc<std::sync::Mutex<std::collections::HashMap<ConnectionId, Arc<tokio::sync::Mutex<()>>>>>;

#[derive(Clone)]
pub struct ConnectionService {
    /// The providers published maps declare, read at most once a second per instance.
    declared: ProvidersCache,
    store: Arc<dyn ConnectionStore>,
    maps: Arc<dyn MapStore>,
    provider: Arc<dyn ConnectionProvider>,
    sealer: Arc<dyn SecretSealer>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    site_url: String,
    /// Where `connection.expired` is recorded for the account's webhooks.
    hooks: Option<Arc<crate::hooks::HookService>>,
    /// One refresh at a time per connection on this instance: providers rotate refresh
    /// tokens, so a second refresh with the same token is refused and would end the
    /// connection while the first one stores the new tokens.
    refreshing: RefreshTurns,
}

impl ConnectionService {
    pub fn new(
        store: Arc<dyn ConnectionStore>,
        maps: Arc<dyn MapStore>,
        provider: Arc<dyn ConnectionProvider>,
        sealer: Arc<dyn SecretSealer>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        site_url: &str,
    ) -> Self {
        Self {
            declared: Arc::default(),
            refreshing: Arc::default(),
            store,
            maps,
            provider,
            sealer,
            clock,
            entropy,
            site_url: site_url.trim_end_matches('/').to_owned(),
            hooks: None,
        }
    }

    /// Records `connection.expired` for the account's webhooks.
    pub fn with_hooks(mut self, hooks: Arc<crate::hooks::HookService>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    pub fn callback_url(&self) -> String {
        format!("{}/connect/callback", self.site_url)
    }

    /// The provider ids that published actions declare.
    pub async fn declared_providers(&self) -> anyhow::Result<Arc<HashSet<String>>> {
        if let Some((at, set)) = self
            .declared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            && self.clock.now() - *at < PROVIDERS_CACHE
        {
            return Ok(set.clone());
        }
        let maps = self.maps.maps(None).await?;
        let set: Arc<HashSet<String>> = Arc::new(
            maps.iter()
                .filter(|m| m.status == MapStatus::Published)
                .flat_map(|m| m.document.actions.iter())
                .filter_map(|a| a.auth_provider.clone())
                .collect(),
        );
        *self.declared.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((self.clock.now(), set.clone()));
        Ok(set)
    }

    /// `provider` exactly as a published action declares it, and configured here.
    async fn checked(&self, provider: &str) -> Result<ProviderId, ConnectionFailure> {
        let unknown = || ConnectionFailure::UnknownProvider(provider.chars().take(64).collect());
        let id = ProviderId::parse(provider).map_err(|_| unknown())?;
        if !self.declared_providers().await?.contains(id.as_str()) {
            return Err(unknown());
        }
        if !self.provider.serves(&id) {
            return Err(ConnectionFailure::ProviderUnavailable(id.to_string()));
        }
        Ok(id)
    }

    /// The newest connection, a pending one past its link's expiry ended as `expired` first.
    async fn latest(
        &self,
        account: &AccountId,
        provider: &ProviderId,
    ) -> anyhow::Result<Option<ConnectionRecord>> {
        let latest = self.store.latest_connection(account, provider).await?;
        match latest {
            Some(r)
                if r.state == ConnectionState::Pending && r.link_expires_at <= self.clock.now() =>
            {
                Ok(Some(self.finish(&r.id, ConnectionFinish::Expired).await?))
            }
            other => Ok(other),
        }
    }

    /// Finishes a pending connection; when another finish won the race, its record.
    async fn finish(
        &self,
        id: &ConnectionId,
        finish: ConnectionFinish,
    ) -> anyhow::Result<ConnectionRecord> {
        match self
            .store
            .finish_connection(id, finish, self.clock.now())
            .await
        {
            Ok(r) => Ok(r),
            Err(ConnectionError::NotPending(r)) => Ok(*r),
            Err(e) => Err(anyhow::anyhow!("finishing connection {id}: {e}")),
        }
    }

    pub async fn status(
        &self,
        account: &AccountId,
        provider: &str,
    ) -> Result<ConnectionView, ConnectionFailure> {
        let id = self.checked(provider).await?;
        let latest = self.latest(account, &id).await?;
        Ok(ConnectionView::of(&id, latest.as_ref()))
    }

    /// Starts a connection; the agent shows `connect_url` to the human. `expected_account` is
    /// the upstream account the agent expects the human to connect (checked at the callback).
    pub async fn start(
        &self,
        account: &AccountId,
        provider: &str,
        expected_account: Option<&str>,
    ) -> Result<StartedConnection, ConnectionFailure> {
        let id = self.checked(provider).await?;
        let expected = expected_account.map(str::trim).filter(|s| !s.is_empty());
        if let Some(e) = expected
            && (e.len() > MAX_EXPECTED_ACCOUNT_LEN || svc_ports::text::misleads(e))
        {
            return Err(ConnectionFailure::InvalidInput(format!(
                "`expected_account` is at most {MAX_EXPECTED_ACCOUNT_LEN} printable characters, without invisible or direction-changing ones"
            )));
        }
        // One link at a time: an earlier pending link stops working when a new one starts.
        if let Some(earlier) = self
            .store
            .latest_connection(account, &id)
            .await
            .map_err(anyhow::Error::from)?
            && earlier.state == ConnectionState::Pending
        {
            self.finish(&earlier.id, ConnectionFinish::Expired).await?;
        }
        let now = self.clock.now();
        let state = self.entropy.base62(43);
        let verifier = self.entropy.base62(64);
        let connection_id = ConnectionId::from_ulid(self.entropy.ulid());
        let record = ConnectionRecord {
            pkce_verifier: self
                .sealer
                .seal(verifier.as_bytes(), &pkce_context(&connection_id)),
            id: connection_id,
            account_id: account.clone(),
            provider: id.clone(),
            expected_account: expected.map(str::to_owned),
            upstream_account: None,
            state: ConnectionState::Pending,
            oauth_state_hash: oauth_state_hash(&state),
            credentials: None,
            credentials_expire_at: None,
            link_expires_at: now + chrono::Duration::minutes(CONNECT_LINK_TTL_MINUTES),
            created_at: now,
            updated_at: now,
        };
        self.store
            .insert_connection(&record)
            .await
            .map_err(|e| anyhow::anyhow!("storing a connection: {e}"))?;
        Ok(StartedConnection {
            view: ConnectionView::of(&id, Some(&record)),
            connect_url: format!("{}/connect?c={state}", self.site_url),
            expires_at: record.link_expires_at,
        })
    }

    /// The current state; when it is pending, waits up to `wait` for it to change.
    pub async fn poll(
        &self,
        account: &AccountId,
        provider: &str,
        wait: Duration,
    ) -> Result<ConnectionView, ConnectionFailure> {
        let id = self.checked(provider).await?;
        let deadline = tokio::time::Instant::now() + wait.min(MAX_POLL_WAIT);
        loop {
            let view = ConnectionView::of(&id, self.latest(account, &id).await?.as_ref());
            if view.state != Some(ConnectionState::Pending)
                || tokio::time::Instant::now() >= deadline
            {
                return Ok(view);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The connection a connect link names, for the signed-in `account`.
    pub async fn link(
        &self,
        state: &str,
        account: &AccountId,
    ) -> Result<ConnectionRecord, ConnectionFailure> {
        if state.is_empty() || state.len() > 128 {
            return Err(ConnectionFailure::UnknownLink);
        }
        let record = self
            .store
            .connection_by_state_hash(&oauth_state_hash(state))
            .await
            .map_err(anyhow::Error::from)?
            .ok_or(ConnectionFailure::UnknownLink)?;
        if &record.account_id != account {
            return Err(ConnectionFailure::OtherAccount);
        }
        if record.state == ConnectionState::Pending && record.link_expires_at <= self.clock.now() {
            return Ok(self.finish(&record.id, ConnectionFinish::Expired).await?);
        }
        Ok(record)
    }

    /// Where the human's browser goes next: the provider's authorization page.
    pub async fn authorization_url(
        &self,
        state: &str,
        account: &AccountId,
    ) -> Result<String, ConnectionFailure> {
        let record = self.link(state, account).await?;
        if record.state != ConnectionState::Pending {
            return Err(ConnectionFailure::LinkExpired);
        }
        let verifier = self.open_text(&record.pkce_verifier, &pkce_context(&record.id))?;
        self.provider
            .authorization_url(
                &record.provider,
                state,
                &verifier,
                &self.callback_url(),
                record.expected_account.clone(),
            )
            .map_err(|e| ConnectionFailure::ProviderUnavailable(e.to_string()))
    }

    /// The provider's answer (`code` or `error`) for the link's connection. Ends it:
    /// connected, refused, wrong account or expired. A second answer changes nothing.
    pub async fn complete(
        &self,
        state: &str,
        account: &AccountId,
        code: Option<&str>,
        error: Option<&str>,
    ) -> Result<ConnectionRecord, ConnectionFailure> {
        let record = self.link(state, account).await?;
        if record.state != ConnectionState::Pending {
            return Ok(record);
        }
        match (code, error) {
            // The human said no at the provider.
            (_, Some("access_denied")) => {
                return Ok(self.finish(&record.id, ConnectionFinish::Refused).await?);
            }
            // Any other error is the provider's trouble: the link stays usable until it expires.
            (_, Some(other)) => {
                return Err(ConnectionFailure::ProviderUnavailable(format!(
                    "the provider answered `{}`",
                    other.chars().take(64).collect::<String>()
                )));
            }
            (None, None) => {
                return Err(ConnectionFailure::InvalidInput(
                    "the provider's answer carries neither a code nor an error".into(),
                ));
            }
            (Some(_), None) => {}
        }
        let code = code.unwrap_or_default();
        let verifier = self.open_text(&record.pkce_verifier, &pkce_context(&record.id))?;
        let grant = match self
            .provider
            .exchange_code(&record.provider, code, &verifier, &self.callback_url())
            .await
        {
            Ok(g) => g,
            Err(ConnectionProviderError::Refused(why)) => {
                tracing::info!(connection = %record.id, reason = %why, "provider refused the code");
                return Ok(self.finish(&record.id, ConnectionFinish::Refused).await?);
            }
            Err(e) => return Err(ConnectionFailure::ProviderUnavailable(e.to_string())),
        };
        let finish = match &record.expected_account {
            Some(expected) if !expected.eq_ignore_ascii_case(&grant.upstream_account) => {
                // The tokens of the wrong account are dropped, never stored.
                ConnectionFinish::WrongAccount {
                    upstream_account: grant.upstream_account.clone(),
                }
            }
            _ => ConnectionFinish::Connected {
                upstream_account: grant.upstream_account.clone(),
                credentials: self.seal_grant(&record.id, &grant)?,
                credentials_expire_at: grant.expires_at,
            },
        };
        Ok(self.finish(&record.id, finish).await?)
    }

    /// The credential to act with for `account` at `provider`, refreshed when it is about to
    /// expire. A connection that can no longer be refreshed is ended as `expired`.
    pub async fn credential_for(
        &self,
        account: &AccountId,
        provider: &str,
        host: &str,
    ) -> Result<Credential, CredentialFailure> {
        let required = || CredentialFailure::Required(provider.to_owned());
        let id = ProviderId::parse(provider).map_err(|_| required())?;

        // The newest connected one: a newer attempt that is pending or failed hides nothing.
        let connected = self
            .store
            .latest_connection_in(account, &id, ConnectionState::Connected)
            .await
            .map_err(anyhow::Error::from)?;
        let record = match connected {
            Some(r) => r,
            None => {
                let latest = self.latest(account, &id).await?;
                // The last connection expired (and none is connected): say so, not "required".
                return Err(match latest {
                    Some(r)
                        if r.state == ConnectionState::Expired && r.upstream_account.is_some() =>
                    {
                        CredentialFailure::Expired(provider.to_owned())
                    }
                    _ => required(),
                });
            }
        };
        // Checked before any secret is opened: a map of another site never gets these.
        if !self.provider.may_receive(&id, host) {
            return Err(CredentialFailure::NotForThisSite {
                provider: provider.to_owned(),
                host: host.to_owned(),
            });
        }
        let grant = self.open_grant(&record)?.ok_or_else(required)?;
        let fresh = |grant: &ProviderGrant| {
            let now = self.clock.now();
            grant
                .expires_at
                .is_none_or(|at| at > now + chrono::Duration::seconds(REFRESH_MARGIN_SECONDS))
        };
        if fresh(&grant) {
            return Ok(Credential {
                kind: grant.kind,
                secret: grant.access_token,
            });
        }
        // Behind the refresh another request of this instance may be running: once it is done,
        // what it stored is the answer.
        let turn = self.refresh_turn(&record.id);
        let _turn = turn.lock().await;
        let record = match self
            .store
            .connection(&record.id)
            .await
            .map_err(anyhow::Error::from)?
        {
            Some(r) if r.state == ConnectionState::Connected => r,
            _ => return Err(CredentialFailure::Expired(provider.to_owned())),
        };
        let grant = self.open_grant(&record)?.ok_or_else(required)?;
        if fresh(&grant) {
            return Ok(Credential {
                kind: grant.kind,
                secret: grant.access_token,
            });
        }
        let now = self.clock.now();
        let Some(refresh_token) = grant.refresh_token.as_deref() else {
            return Err(self.expire(&record, provider).await?);
        };
        match self
            .provider
            .refresh(&id, refresh_token, &grant.upstream_account)
            .await
        {
            Ok(new)
                if new
                    .upstream_account
                    .eq_ignore_ascii_case(&grant.upstream_account) =>
            {
                match self
                    .store
                    .refresh_credentials(
                        &record.id,
                        self.seal_grant(&record.id, &new)?,
                        new.expires_at,
                        now,
                    )
                    .await
                {
                    Ok(_) => Ok(Credential {
                        kind: new.kind,
                        secret: new.access_token,
                    }),
                    // It ended meanwhile (expired by another request): it stays ended.
                    Err(ConnectionError::NotConnected(_)) => {
                        Err(CredentialFailure::Expired(provider.to_owned()))
                    }
                    Err(e) => {
                        Err(anyhow::anyhow!("refreshing connection {}: {e}", record.id).into())
                    }
                }
            }
            // The provider refused the refresh token. Providers rotate refresh tokens, so a
            // concurrent request may have refreshed first: use what it stored, if anything.
            Err(ConnectionProviderError::Refused(_)) => {
                // Another instance's refresh may still be asking the provider who the tokens
                // belong to before it stores them: look for about as long as that may take.
                for _ in 0..REFUSED_REFRESH_LOOKS {
                    let current = self
                        .store
                        .connection(&record.id)
                        .await
                        .map_err(anyhow::Error::from)?;
                    match current {
                        Some(c)
                            if c.state == ConnectionState::Connected
                                && c.updated_at != record.updated_at =>
                        {
                            if let Some(newer) = self.open_grant(&c)? {
                                return Ok(Credential {
                                    kind: newer.kind,
                                    secret: newer.access_token,
                                });
                            }
                        }
                        Some(c) if c.state != ConnectionState::Connected => {
                            return Err(CredentialFailure::Expired(provider.to_owned()));
                        }
                        _ => {}
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(self.expire(&record, provider).await?)
            }
            // A refresh that names another account ends it.
            Ok(_) => Err(self.expire(&record, provider).await?),
            Err(e) => {
                tracing::warn!(connection = %record.id, error = %e, "credential refresh failed");
                Err(CredentialFailure::ProviderUnavailable(provider.to_owned()))
            }
        }
    }

    /// The lock whose holder refreshes the connection on this instance.
    fn refresh_turn(&self, id: &ConnectionId) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.refreshing.lock().unwrap_or_else(|p| p.into_inner());
        // Locks no request holds or waits for are dropped as others are handed out.
        turns.retain(|_, turn| Arc::strong_count(turn) > 1);
        turns.entry(id.clone()).or_default().clone()
    }

    /// The grant a connected record holds, opened.
    fn open_grant(&self, record: &ConnectionRecord) -> anyhow::Result<Option<ProviderGrant>> {
        let Some(sealed) = record.credentials.as_ref() else {
            return Ok(None);
        };
        let bytes = self
            .sealer
            .open(sealed, &credentials_context(&record.id))
            .map_err(|e| anyhow::anyhow!("connection {}: {e}", record.id))?;
        Ok(Some(serde_json::from_slice(&bytes).map_err(|e| {
            anyhow::anyhow!("connection {} credentials: {e}", record.id)
        })?))
    }

    /// Ends a connection that can no longer be refreshed.
    async fn expire(
        &self,
        record: &ConnectionRecord,
        provider: &str,
    ) -> Result<CredentialFailure, CredentialFailure> {
        let expired = self
            .store
            .expire_connection(&record.id, self.clock.now())
            .await
            .map_err(|e| anyhow::anyhow!("expiring connection {}: {e}", record.id))?;
        if let Some(hooks) = &self.hooks {
            expired_event(hooks, &expired).await;
        }
        Ok(CredentialFailure::Expired(provider.to_owned()))
    }

    /// Records the `connection.expired` of connections whose process died between ending them
    /// and recording the event (once per connection, so a live process recording it too adds
    /// nothing). Answers how many.
    pub async fn recover_expired_events(&self) -> Result<usize, svc_ports::StoreError> {
        let Some(hooks) = &self.hooks else {
            return Ok(0);
        };
        let run = hooks.sweep("connection_events").await?;
        let missing = hooks
            .connections_missing_events(run.since, crate::hooks::SWEEP_LIMIT)
            .await?;
        for c in &missing {
            expired_event(hooks, c).await;
        }
        hooks.end_sweep(run, &[missing.len()]).await?;
        Ok(missing.len())
    }

    fn seal_grant(
        &self,
        id: &ConnectionId,
        grant: &ProviderGrant,
    ) -> anyhow::Result<svc_ports::SealedSecret> {
        Ok(self
            .sealer
            .seal(&serde_json::to_vec(grant)?, &credentials_context(id)))
    }

    fn open_text(&self, sealed: &svc_ports::SealedSecret, context: &str) -> anyhow::Result<String> {
        let bytes = self.sealer.open(sealed, context)?;
        Ok(String::from_utf8(bytes)?)
    }
}

/// What a connection's sealed grant is bound to.
fn credentials_context(id: &ConnectionId) -> String {
    svc_ports::SealedField::ConnectionCredentials.context(id.as_str())
}

/// What a pending connection's sealed PKCE verifier is bound to.
fn pkce_context(id: &ConnectionId) -> String {
    svc_ports::SealedField::ConnectionPkceVerifier.context(id.as_str())
}

/// `connection.expired` for the connection as its expiry left it: the same from the live path
/// and from the sweep.
async fn expired_event(hooks: &crate::hooks::HookService, expired: &ConnectionRecord) {
    hooks
        .emit(
            &expired.account_id,
            svc_ports::HookEventType::ConnectionExpired,
            format!("connection:{}:expired", expired.id),
            serde_json::json!({
                "connection_id": expired.id.as_str(),
                "provider": expired.provider.as_str(),
                "state": expired.state.as_str(),
                "next_action": {"kind": "connect"},
            }),
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_go_in_their_header_and_never_in_debug_output() {
        let bearer = Credential {
            kind: CredentialKind::Bearer,
            secret: "tok-123".into(),
        };
        assert_eq!(
            bearer.header(),
            ("authorization".to_owned(), "Bearer tok-123".to_owned())
        );
        let cookie = Credential {
            kind: CredentialKind::Cookie,
            secret: "session=abc; csrftoken=def".into(),
        };
        assert_eq!(
            cookie.header(),
            ("cookie".to_owned(), "session=abc; csrftoken=def".to_owned())
        );
        assert!(!format!("{bearer:?}{cookie:?}").contains("tok-123"));
        assert!(!format!("{cookie:?}").contains("session=abc"));
    }
}
