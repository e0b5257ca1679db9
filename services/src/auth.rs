//! Who is calling: a presented `Authorization` value becomes a principal or a precise refusal.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use chrono::{DateTime, TimeDelta, Utc};
use svc_ports::{
    Account, AccountStore, ApiKeyRecord, ApiKeySecret, Clock, Environment, KeyHash, KeyPrefix,
    StoreError,
};

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
    /// Rotated, and its overlap has ended: its replacement works instead.
    #[error("the API key was rotated and its overlap ended")]
    Expired,
    #[error("a {presented} key was presented to the {server} service")]
    WrongEnvironment {
        presented: &'static str,
        server: &'static str,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Keys that authenticated recently, so a busy agent's every request does not read its key from
/// the store. An entry lives at most [`KeyCache::TTL`]: that is the longest a revocation made
/// through another instance (or the CLI) goes unnoticed here; a revocation or rotation through
/// this instance drops the key at once ([`KeyCache::forget`]). Only keys that authenticated are
/// kept (unknown or revoked ones always go to the store), and the map never outgrows
/// [`KeyCache::MAX_ENTRIES`].
pub struct KeyCache {
    clock: Arc<dyn Clock>,
    ttl: TimeDelta,
    entries: Mutex<HashMap<KeyHash, (Principal, DateTime<Utc>)>>,
}

impl KeyCache {
    /// The default and the longest allowed: a revocation lands everywhere within a second.
    pub const TTL: std::time::Duration = std::time::Duration::from_secs(1);
    pub const MAX_ENTRIES: usize = 10_000;

    /// Keys kept for `ttl`, at most [`KeyCache::TTL`]; zero keeps none.
    pub fn new(clock: Arc<dyn Clock>, ttl: std::time::Duration) -> Self {
        Self {
            clock,
            ttl: TimeDelta::from_std(ttl.min(Self::TTL)).unwrap_or_default(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, hash: &KeyHash) -> Option<Principal> {
        let now = self.clock.now();
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        // A rotated key's overlap ends on the clock, on every instance at once, cached or not.
        entries
            .get(hash)
            .filter(|(p, at)| now - *at < self.ttl && now >= *at && !p.key.is_expired(now))
            .map(|(p, _)| p.clone())
    }

    fn put(&self, hash: KeyHash, principal: &Principal) {
        if self.ttl.is_zero() {
            return;
        }
        let now = self.clock.now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= Self::MAX_ENTRIES {
            entries.retain(|_, (_, at)| now - *at < self.ttl);
            if entries.len() >= Self::MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(hash, (principal.clone(), now));
    }

    /// Drops the key with this prefix: called after this instance revoked or rotated it.
    pub fn forget(&self, prefix: &KeyPrefix) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, (p, _)| p.key.prefix != *prefix);
    }
}

pub struct Authenticator {
    accounts: Arc<dyn AccountStore>,
    environment: Environment,
    cache: Arc<KeyCache>,
}

impl Authenticator {
    pub fn new(
        accounts: Arc<dyn AccountStore>,
        environment: Environment,
        cache: Arc<KeyCache>,
    ) -> Self {
        Self {
            accounts,
            environment,
            cache,
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
        let hash = secret.hash();
        if let Some(principal) = self.cache.get(&hash) {
            return Ok(principal);
        }
        let (key, account) = self
            .accounts
            .key_by_hash(&hash)
            .await?
            .ok_or(AuthError::Unknown)?;
        if key.is_revoked() {
            return Err(AuthError::Revoked);
        }
        let now = self.cache.clock.now();
        if key.is_expired(now) {
            return Err(AuthError::Expired);
        }
        // Remember the use, at most once a minute per key (and only on a store read, at most
        // once a second): the key list shows when a key last worked.
        if key
            .last_used_at
            .is_none_or(|last| now - last >= svc_ports::keys::LAST_USED_GRANULARITY)
            && let Err(e) = self.accounts.touch_key(&key.id, now).await
        {
            tracing::warn!(key_prefix = %key.prefix, error = %e, "could not record the key's use");
        }
        if account.environment != self.environment {
            return Err(AuthError::WrongEnvironment {
                presented: account.environment.as_str(),
                server: self.environment.as_str(),
            });
        }
        let principal = Principal { account, key };
        self.cache.put(hash, &principal);
        Ok(principal)
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
    use svc_ports::{
        AccountId, ApiKeyId, Email, Plan, Scopes, store::MockAccountStore, system::ManualClock,
    };
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
            expires_at: None,
            last_used_at: None,
        };
        (key, account)
    }

    fn store_with(found: Option<(ApiKeyRecord, Account)>) -> Arc<dyn AccountStore> {
        let mut store = MockAccountStore::new();
        store
            .expect_key_by_hash()
            .returning(move |_| Ok(found.clone()));
        store.expect_touch_key().returning(|_, _| Ok(()));
        Arc::new(store)
    }

    fn cache() -> Arc<KeyCache> {
        Arc::new(KeyCache::new(
            Arc::new(ManualClock::at(Utc::now())),
            KeyCache::TTL,
        ))
    }

    /// A store that answers the key lookup from a shared slot and counts the lookups.
    fn counting_store(
        slot: Arc<Mutex<Option<(ApiKeyRecord, Account)>>>,
        lookups: Arc<std::sync::atomic::AtomicUsize>,
    ) -> Arc<dyn AccountStore> {
        let mut store = MockAccountStore::new();
        store.expect_touch_key().returning(|_, _| Ok(()));
        store.expect_key_by_hash().returning(move |_| {
            lookups.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(slot.lock().unwrap().clone())
        });
        Arc::new(store)
    }

    #[tokio::test]
    async fn a_cached_key_is_read_once_a_second_and_a_revocation_lands_within_one() {
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let slot = Arc::new(Mutex::new(Some(record(&secret, false, Environment::Live))));
        let lookups = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let clock = Arc::new(ManualClock::at(Utc::now()));
        let auth = Authenticator::new(
            counting_store(slot.clone(), lookups.clone()),
            Environment::Live,
            Arc::new(KeyCache::new(clock.clone(), KeyCache::TTL)),
        );
        let count = || lookups.load(std::sync::atomic::Ordering::SeqCst);
        for _ in 0..5 {
            auth.authenticate(LIVE).await.unwrap();
        }
        assert_eq!(
            count(),
            1,
            "one store read for five requests within a second"
        );
        // Another instance revokes the key: honoured once the entry is a second old.
        *slot.lock().unwrap() = Some(record(&secret, true, Environment::Live));
        clock.advance(TimeDelta::milliseconds(999));
        assert!(auth.authenticate(LIVE).await.is_ok());
        clock.advance(TimeDelta::milliseconds(1));
        assert!(matches!(
            auth.authenticate(LIVE).await,
            Err(AuthError::Revoked)
        ));
        assert_eq!(count(), 2);
        // A revoked key is never cached: every attempt asks the store.
        assert!(auth.authenticate(LIVE).await.is_err());
        assert_eq!(count(), 3);
    }

    #[tokio::test]
    async fn forgetting_a_prefix_drops_the_key_at_once() {
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let slot = Arc::new(Mutex::new(Some(record(&secret, false, Environment::Live))));
        let lookups = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let cache = cache();
        let auth = Authenticator::new(
            counting_store(slot.clone(), lookups.clone()),
            Environment::Live,
            cache.clone(),
        );
        auth.authenticate(LIVE).await.unwrap();
        *slot.lock().unwrap() = Some(record(&secret, true, Environment::Live));
        cache.forget(&secret.prefix());
        assert!(matches!(
            auth.authenticate(LIVE).await,
            Err(AuthError::Revoked)
        ));
    }

    #[tokio::test]
    async fn a_rotated_key_stops_when_its_overlap_ends_even_when_cached() {
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let clock = Arc::new(ManualClock::at(Utc::now()));
        let (mut key, account) = record(&secret, false, Environment::Live);
        key.expires_at = Some(clock.now() + TimeDelta::milliseconds(500));
        let slot = Arc::new(Mutex::new(Some((key, account))));
        let lookups = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let auth = Authenticator::new(
            counting_store(slot, lookups),
            Environment::Live,
            Arc::new(KeyCache::new(clock.clone(), KeyCache::TTL)),
        );
        assert!(auth.authenticate(LIVE).await.is_ok());
        clock.advance(TimeDelta::milliseconds(499));
        assert!(auth.authenticate(LIVE).await.is_ok(), "within the overlap");
        clock.advance(TimeDelta::milliseconds(1));
        assert!(matches!(
            auth.authenticate(LIVE).await,
            Err(AuthError::Expired)
        ));
    }

    #[test]
    fn the_cache_never_outgrows_its_bound() {
        let clock = Arc::new(ManualClock::at(Utc::now()));
        let cache = KeyCache::new(clock, KeyCache::TTL);
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let (key, account) = record(&secret, false, Environment::Live);
        let principal = Principal { account, key };
        for i in 0..(KeyCache::MAX_ENTRIES + 10) {
            let hash = KeyHash::of(&i.to_string());
            cache.put(hash, &principal);
        }
        assert!(cache.entries.lock().unwrap().len() <= KeyCache::MAX_ENTRIES);
    }

    #[tokio::test]
    async fn accepts_a_live_key_on_the_live_service() {
        let secret = ApiKeySecret::parse(LIVE).unwrap();
        let auth = Authenticator::new(
            store_with(Some(record(&secret, false, Environment::Live))),
            Environment::Live,
            cache(),
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
        let auth = Authenticator::new(never_called, Environment::Live, cache());
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

        let unknown = Authenticator::new(store_with(None), Environment::Live, cache());
        assert!(matches!(
            unknown.authenticate(LIVE).await,
            Err(AuthError::Unknown)
        ));

        let revoked = Authenticator::new(
            store_with(Some(record(&secret, true, Environment::Live))),
            Environment::Live,
            cache(),
        );
        assert!(matches!(
            revoked.authenticate(LIVE).await,
            Err(AuthError::Revoked)
        ));
    }
}
