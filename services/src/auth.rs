//! Who is calling: a presented `Authorization` value becomes a principal or a precise refusal.

use std::sync::Arc;

use svc_ports::{Account, AccountStore, ApiKeyRecord, ApiKeySecret, Environment, StoreError};

/// An authenticated caller: the key it presented and the account behind it.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account: Account,
    pub key: ApiKeyRecord,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no API key was presented")]
    Missing,
    #[error("the API key is malformed")]
    Malformed,
    #[error("the API key is not known")]
    Unknown,
    #[error("the API key was revoked")]
    Revoked,
    #[error("a {presented} key was presented to the {server} service")]
    WrongEnvironment {
        presented: &'static str,
        server: &'static str,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Authenticator {
    accounts: Arc<dyn AccountStore>,
    environment: Environment,
}

impl Authenticator {
    pub fn new(accounts: Arc<dyn AccountStore>, environment: Environment) -> Self {
        Self {
            accounts,
            environment,
        }
    }

    /// Checks a bearer token (the part after `Bearer `).
    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        let secret = ApiKeySecret::parse(token).map_err(|_| AuthError::Malformed)?;
        if secret.environment() != self.environment {
            return Err(AuthError::WrongEnvironment {
                presented: secret.environment().as_str(),
                server: self.environment.as_str(),
            });
        }
        // Looked up by SHA-256: the store never sees the secret, and a timing difference in
        // the index lookup reveals nothing about any stored key's preimage.
        let (key, account) = self
            .accounts
            .key_by_hash(&secret.hash())
            .await?
            .ok_or(AuthError::Unknown)?;
        if key.is_revoked() {
            return Err(AuthError::Revoked);
        }
        if account.environment != self.environment {
            return Err(AuthError::WrongEnvironment {
                presented: account.environment.as_str(),
                server: self.environment.as_str(),
            });
        }
        Ok(Principal { account, key })
    }

    /// Checks a whole `Authorization` header value.
    pub async fn authenticate_header(&self, header: Option<&str>) -> Result<Principal, AuthError> {
        let value = header
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or(AuthError::Missing)?;
        let (scheme, token) = value.split_once(' ').ok_or(AuthError::Malformed)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Malformed);
        }
        self.authenticate(token).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use svc_ports::{AccountId, ApiKeyId, Email, Plan, Scopes, store::MockAccountStore};
    use ulid::Ulid;

    const LIVE: &str = "svc_live_0123456789abcdefghijABCDEFGHIJKL";

    fn record(secret: &ApiKeySecret, revoked: bool, env: Environment) -> (ApiKeyRecord, Account) {
        let account = Account {
            id: AccountId::from_ulid(Ulid::nil()),
            email: Email::parse("a@example.com").unwrap(),
            plan: Plan::Free,
            environment: env,
            created_at: Utc::now(),
        };
        let key = ApiKeyRecord {
            id: ApiKeyId::from_ulid(Ulid::nil()),
            account_id: account.id.clone(),
            prefix: secret.prefix(),
            hash: secret.hash(),
            scopes: Scopes::default_for_new_key(),
            label: "test".into(),
            created_at: Utc::now(),
            revoked_at: revoked.then(Utc::now),
        };
        (key, account)
    }

    fn store_with(found: Option<(ApiKeyRecord, Account)>) -> Arc<dyn AccountStore> {
        let mut store = MockAccountStore::new();
        store
            .expect_key_by_hash()
            .returning(move |_| Ok(found.clone()));
        Arc::new(store)
    }

    #[tokio::test]
    async fn accepts_a_live_key_on_the_live_service() {
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let auth = Authenticator::new(
            store_with(Some(record(&secret, false, Environment::Live))),
            Environment::Live,
        );
        let p = auth
            .authenticate_header(Some(&format!("Bearer {LIVE}")))
            .await
            .unwrap();
        assert_eq!(p.key.prefix, secret.prefix());
    }

    #[tokio::test]
    async fn refuses_each_bad_presentation_precisely() {
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let never_called: Arc<dyn AccountStore> = Arc::new(MockAccountStore::new());
        let auth = Authenticator::new(never_called, Environment::Live);
        assert!(matches!(
            auth.authenticate_header(None).await,
            Err(AuthError::Missing)
        ));
        assert!(matches!(
            auth.authenticate_header(Some("  ")).await,
            Err(AuthError::Missing)
        ));
        assert!(matches!(
            auth.authenticate_header(Some(LIVE)).await,
            Err(AuthError::Malformed)
        ));
        assert!(matches!(
            auth.authenticate_header(Some(&format!("Basic {LIVE}")))
                .await,
            Err(AuthError::Malformed)
        ));
        assert!(matches!(
            auth.authenticate("svc_live_nope").await,
            Err(AuthError::Malformed)
        ));
        let test_key = LIVE.replace("live", "test");
        assert!(matches!(
            auth.authenticate(&test_key).await,
            Err(AuthError::WrongEnvironment { .. })
        ));

        let unknown = Authenticator::new(store_with(None), Environment::Live);
        assert!(matches!(
            unknown.authenticate(LIVE).await,
            Err(AuthError::Unknown)
        ));

        let revoked = Authenticator::new(
            store_with(Some(record(&secret, true, Environment::Live))),
            Environment::Live,
        );
        assert!(matches!(
            revoked.authenticate(LIVE).await,
            Err(AuthError::Revoked)
        ));
    }
}
