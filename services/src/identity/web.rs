//! What the web pages do for a signed-in human: the session cookie, and the account owner's
//! keys (list, create, rotate, revoke).

use svc_ports::{
    Account, ApiKeyRecord, ApiKeySecret, KeyHash, KeyPrefix, Scopes, WebSession, keys::BASE62,
    store::KeyError,
};

use super::{
    IdentityFailure, IdentityService, MAX_AGENT_NAME_LEN, SignedIn, chrono_of, clean_text,
};

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
                self.keys.forget(&old.prefix);
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
            crate::KeyServiceError::AlreadyRevoked(_) => IdentityFailure::KeyAlreadyRevoked,
            crate::KeyServiceError::NotFound(_) => IdentityFailure::KeyNotFound,
            crate::KeyServiceError::Internal(e) => IdentityFailure::Internal(e),
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
}
