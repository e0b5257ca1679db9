//! What the web pages do for a signed-in human: the session cookie, and the account owner's
//! keys (list, create, rotate, revoke).

use svc_ports::{
    Account, ApiKeyRecord, ApiKeySecret, KeyHash, Scopes, SessionReach, WebSession, keys::BASE62,
};

use super::{IdentityFailure, IdentityService, SignedIn, chrono_of};
use crate::{Holder, KeyServiceError, RotatedKey};

const SESSION_TOKEN_LEN: usize = 43;

/// How long a checkout session lasts: time to pay and come back, not a week of signed-in use.
const CHECKOUT_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

impl IdentityService {
    /// A new web session for `account`, after an e-mailed code: everything the person may do.
    pub async fn start_session(&self, account: Account) -> Result<SignedIn, IdentityFailure> {
        self.open_session(account, SessionReach::Account).await
    }

    /// A new web session for `account` from an agent's checkout handoff link: the checkout and
    /// its return page only ([`SessionReach::Checkout`]), for an hour at most. Any key of the
    /// account can ask for the link, so it must not open more than a key may do.
    pub async fn start_checkout_session(
        &self,
        account: Account,
    ) -> Result<SignedIn, IdentityFailure> {
        self.open_session(account, SessionReach::Checkout).await
    }

    async fn open_session(
        &self,
        account: Account,
        reach: SessionReach,
    ) -> Result<SignedIn, IdentityFailure> {
        let now = self.now();
        let session_token = self.ports.entropy.pick(BASE62, SESSION_TOKEN_LEN);
        let ttl = match reach {
            SessionReach::Account => self.settings.session_ttl,
            SessionReach::Checkout => self.settings.session_ttl.min(CHECKOUT_SESSION_TTL),
        };
        let session = WebSession {
            token_hash: KeyHash::of(&session_token),
            account_id: account.id.clone(),
            reach,
            created_at: now,
            expires_at: now + chrono_of(ttl),
        };
        self.ports
            .identity
            .insert_session(&session)
            .await
            .map_err(|e| anyhow::Error::new(e).context("storing web session"))?;
        tracing::info!(account_id = %account.id, reach = reach.as_str(), "signed in");
        Ok(SignedIn {
            session_token,
            account,
            known_browser: None,
        })
    }

    /// The account behind a session cookie, if it is a live session signed in with an e-mailed
    /// code: what every page and call of the signed-in person asks. A checkout session is not
    /// one (see [`Self::session_reach`]).
    pub async fn session_account(&self, token: &str) -> Result<Option<Account>, IdentityFailure> {
        Ok(self
            .session_reach(token)
            .await?
            .filter(|(_, reach)| *reach == SessionReach::Account)
            .map(|(account, _)| account))
    }

    /// The account behind a session cookie and what the session may do, if it is live.
    pub async fn session_reach(
        &self,
        token: &str,
    ) -> Result<Option<(Account, SessionReach)>, IdentityFailure> {
        if token.is_empty() || token.len() > 128 {
            return Ok(None);
        }
        Ok(self
            .ports
            .identity
            .session(&KeyHash::of(token), self.now())
            .await?
            .map(|(session, account)| (account, session.reach)))
    }

    pub async fn sign_out(&self, token: &str) -> Result<(), IdentityFailure> {
        self.ports
            .identity
            .delete_session(&KeyHash::of(token))
            .await?;
        Ok(())
    }

    // ---- the account owner's keys (the rules are the key service's) ------------------------

    pub async fn account_keys(
        &self,
        account: &Account,
    ) -> Result<Vec<ApiKeyRecord>, IdentityFailure> {
        self.keys
            .account_keys(&account.id)
            .await
            .map_err(web_failure)
    }

    /// A key the human creates on the account page: `scopes` omitted is the default set;
    /// `execute:consequential` only with `consequential_confirmed`.
    pub async fn create_key(
        &self,
        account: &Account,
        label: Option<&str>,
        scopes: Option<Scopes>,
        consequential_confirmed: bool,
    ) -> Result<(ApiKeySecret, ApiKeyRecord), IdentityFailure> {
        let human = Holder::Human {
            consequential_confirmed,
        };
        self.keys
            .create_for(&account.id, &human, label, scopes)
            .await
            .map_err(web_failure)
    }

    /// Replaces a key by a new one with the same scopes and label; the old one keeps working
    /// for the overlap.
    pub async fn rotate_key(
        &self,
        account: &Account,
        prefix: &str,
    ) -> Result<RotatedKey, IdentityFailure> {
        let human = Holder::Human {
            consequential_confirmed: false,
        };
        self.keys
            .rotate_for(&account.id, &human, prefix)
            .await
            .map_err(web_failure)
    }

    pub async fn revoke_key(
        &self,
        account: &Account,
        prefix: &str,
    ) -> Result<ApiKeyRecord, IdentityFailure> {
        let key = self
            .account_keys(account)
            .await?
            .into_iter()
            .find(|k| k.prefix.as_str() == prefix)
            .ok_or(IdentityFailure::KeyNotFound)?;
        self.keys.revoke(&key.prefix).await.map_err(web_failure)
    }
}

/// The key service's refusals as the pages show them.
fn web_failure(e: KeyServiceError) -> IdentityFailure {
    match e {
        KeyServiceError::NotFound(_) => IdentityFailure::KeyNotFound,
        KeyServiceError::AlreadyRevoked(_) => IdentityFailure::KeyAlreadyRevoked,
        KeyServiceError::Internal(e) => IdentityFailure::Internal(e),
        other => IdentityFailure::InvalidRequest(other.to_string()),
    }
}
