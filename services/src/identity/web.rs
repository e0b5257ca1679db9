//! What the web pages do for a signed-in human: the session cookie, and the account owner's
//! keys (list, create, rotate, revoke).

use svc_ports::{Account, ApiKeyRecord, ApiKeySecret, KeyHash, Scopes, WebSession, keys::BASE62};

use super::{IdentityFailure, IdentityService, SignedIn, chrono_of};
use crate::{Holder, KeyServiceError, RotatedKey};

const SESSION_TOKEN_LEN: usize = 43;

impl IdentityService {
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
