//! In-memory accounts, keys and ledger. One mutex guards all state so each port operation is
//! atomic, exactly as one database transaction would be.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    Account, AccountId, ApiKeyId, ApiKeyRecord, Balance, Email, Environment, FetchedPage,
    GrantOutcome, KeyHash, KeyPrefix, LedgerEntry, PageCache,
    ledger::Grant,
    store::{AccountError, AccountStore, KeyError, LedgerError, LedgerStore, StoreError},
};

/// The sandbox keeps at most this many cached pages and bytes of page bodies (the oldest go
/// first): pages can be 10 MiB each, so a count alone would not bound memory.
const MAX_CACHED_PAGES: usize = 1024;
const MAX_CACHED_BYTES: usize = 64 * 1024 * 1024;

#[derive(Default)]
pub(crate) struct State {
    pub(crate) accounts: HashMap<AccountId, Account>,
    pub(crate) balances: HashMap<AccountId, Balance>,
    pub(crate) keys: Vec<ApiKeyRecord>,
    pub(crate) entries: Vec<LedgerEntry>,
    pages: HashMap<String, FetchedPage>,
    pub(crate) identity: crate::memory_identity::IdentityState,
    pub(crate) actions: crate::memory_actions::ActionState,
    pub(crate) telemetry: crate::memory_telemetry::TelemetryState,
    pub(crate) billing: crate::memory_billing::BillingState,
    pub(crate) readiness: crate::memory_readiness::ReadinessState,
    pub(crate) connections: crate::memory_connections::ConnectionsState,
    pub(crate) authority: crate::memory_authority::AuthorityState,
    pub(crate) limits: crate::memory_limits::LimitState,
    pub(crate) a2a: crate::memory_a2a::A2aState,
    pub(crate) key_set: crate::memory_key_set::KeySetState,
    pub(crate) hooks: crate::memory_hooks::HookState,
}

impl State {
    /// What `insert_key` checks, shared by every operation that stores a key.
    pub(crate) fn check_new_key(&self, key: &ApiKeyRecord) -> Result<(), KeyError> {
        if !self.accounts.contains_key(&key.account_id) {
            return Err(KeyError::UnknownAccount);
        }
        if self
            .keys
            .iter()
            .any(|k| k.hash == key.hash || k.prefix == key.prefix || k.id == key.id)
        {
            return Err(KeyError::Duplicate);
        }
        Ok(())
    }
}

#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied operation behind (every
        // operation checks before it mutates), so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Stores a new account, with its opening grant's credits and entry when it has one.
fn open_account(
    s: &mut State,
    account: &Account,
    grant: Option<&Grant>,
) -> Result<(), AccountError> {
    let taken = s
        .accounts
        .values()
        .any(|a| a.environment == account.environment && a.email == account.email);
    if taken || s.accounts.contains_key(&account.id) {
        return Err(AccountError::EmailTaken);
    }
    // As a database's primary key would: the entry is refused, and the account with it.
    if let Some(g) = grant
        && s.entries.iter().any(|e| e.id == g.id)
    {
        return Err(StoreError(anyhow::anyhow!("ledger entry {} exists", g.id)).into());
    }
    s.accounts.insert(account.id.clone(), account.clone());
    let spendable = grant.map_or(0, |g| g.amount.get());
    s.balances.insert(
        account.id.clone(),
        Balance {
            spendable,
            ..Balance::default()
        },
    );
    s.entries.extend(grant.map(|g| g.entry(spendable)));
    Ok(())
}

#[async_trait]
impl AccountStore for MemoryStore {
    async fn create_account(&self, account: &Account) -> Result<(), AccountError> {
        open_account(&mut self.lock(), account, None)
    }

    async fn create_account_with_grant(
        &self,
        account: &Account,
        grant: &Grant,
    ) -> Result<(), AccountError> {
        // One lock for both: no reader sees the account without its credits.
        open_account(&mut self.lock(), account, Some(grant))
    }

    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        Ok(self.lock().accounts.get(id).cloned())
    }

    async fn account_by_email(
        &self,
        environment: Environment,
        email: &Email,
    ) -> Result<Option<Account>, StoreError> {
        Ok(self
            .lock()
            .accounts
            .values()
            .find(|a| a.environment == environment && &a.email == email)
            .cloned())
    }

    async fn insert_key(&self, key: &ApiKeyRecord) -> Result<(), KeyError> {
        let mut s = self.lock();
        s.check_new_key(key)?;
        s.keys.push(key.clone());
        Ok(())
    }

    async fn key_by_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(ApiKeyRecord, Account)>, StoreError> {
        let s = self.lock();
        Ok(s.keys.iter().find(|k| &k.hash == hash).and_then(|k| {
            s.accounts
                .get(&k.account_id)
                .map(|a| (k.clone(), a.clone()))
        }))
    }

    async fn keys(&self, account: Option<AccountId>) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let s = self.lock();
        let mut keys: Vec<_> = s
            .keys
            .iter()
            .filter(|k| account.as_ref().is_none_or(|a| &k.account_id == a))
            .cloned()
            .collect();
        keys.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(keys)
    }

    async fn revoke_key(
        &self,
        prefix: &KeyPrefix,
        at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError> {
        let mut s = self.lock();
        let key = s
            .keys
            .iter_mut()
            .find(|k| &k.prefix == prefix)
            .ok_or(KeyError::NotFound)?;
        if key.revoked_at.is_some() {
            return Err(KeyError::AlreadyRevoked);
        }
        key.revoked_at = Some(at);
        Ok(key.clone())
    }

    async fn touch_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), StoreError> {
        let mut s = self.lock();
        if let Some(k) = s.keys.iter_mut().find(|k| &k.id == id)
            && k.last_used_at.is_none_or(|last| last < at)
        {
            k.last_used_at = Some(at);
        }
        Ok(())
    }

    async fn rotate_key(
        &self,
        prefix: &KeyPrefix,
        replacement: &ApiKeyRecord,
        old_expires_at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError> {
        let mut s = self.lock();
        let index = s
            .keys
            .iter()
            .position(|k| &k.prefix == prefix && k.account_id == replacement.account_id)
            .ok_or(KeyError::NotFound)?;
        if s.keys[index].revoked_at.is_some() {
            return Err(KeyError::AlreadyRevoked);
        }
        if s.keys[index].expires_at.is_some() {
            return Err(KeyError::AlreadyRotated);
        }
        s.check_new_key(replacement)?;
        s.keys[index].expires_at = Some(old_expires_at);
        let old = s.keys[index].clone();
        s.keys.push(replacement.clone());
        Ok(old)
    }
}

#[async_trait]
impl LedgerStore for MemoryStore {
    async fn grant(&self, grant: &Grant) -> Result<GrantOutcome, LedgerError> {
        let mut s = self.lock();
        if !s.accounts.contains_key(&grant.account_id) {
            return Err(LedgerError::UnknownAccount);
        }
        if let Some(reference) = &grant.reference {
            let earlier = s.entries.iter().find(|e| {
                e.account_id == grant.account_id && e.reference.as_ref() == Some(reference)
            });
            if let Some(e) = earlier {
                return Ok(GrantOutcome::AlreadyApplied(e.clone()));
            }
        }
        let balance = s.balances.entry(grant.account_id.clone()).or_default();
        balance.spendable += grant.amount.get();
        let entry = grant.entry(balance.spendable);
        s.entries.push(entry.clone());
        Ok(GrantOutcome::Applied(entry))
    }

    async fn balance(&self, account: &AccountId) -> Result<Balance, LedgerError> {
        self.lock()
            .balances
            .get(account)
            .copied()
            .ok_or(LedgerError::UnknownAccount)
    }

    async fn entries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<LedgerEntry>, StoreError> {
        let s = self.lock();
        Ok(s.entries
            .iter()
            .rev()
            .filter(|e| &e.account_id == account)
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn usage_by_day(
        &self,
        account: &AccountId,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<svc_ports::UsageRow>, StoreError> {
        Ok(crate::memory_activity::usage_by_day(
            &self.lock(),
            account,
            from,
            until,
        ))
    }
}

#[async_trait]
impl PageCache for MemoryStore {
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
        let mut s = self.lock();
        s.pages.remove(key);
        let mut bytes: usize = s.pages.values().map(|p| p.body.len()).sum();
        while !s.pages.is_empty()
            && (s.pages.len() >= MAX_CACHED_PAGES || bytes + page.body.len() > MAX_CACHED_BYTES)
        {
            let oldest = s
                .pages
                .iter()
                .min_by_key(|(_, p)| p.fetched_at)
                .map(|(k, _)| k.clone());
            if let Some(p) = oldest.and_then(|k| s.pages.remove(&k)) {
                bytes -= p.body.len();
            }
        }
        s.pages.insert(key.to_owned(), page.clone());
        Ok(())
    }

    async fn fresh_page(
        &self,
        key: &str,
        not_before: DateTime<Utc>,
    ) -> Result<Option<FetchedPage>, StoreError> {
        Ok(self
            .lock()
            .pages
            .get(key)
            .filter(|p| p.fetched_at >= not_before)
            .cloned())
    }

    async fn purge_pages(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut s = self.lock();
        let n = s.pages.len();
        s.pages.retain(|_, p| p.fetched_at >= before);
        Ok((n - s.pages.len()) as u64)
    }
}

/// Memory always answers, has no schema to migrate and no pool.
#[async_trait]
impl svc_ports::StoreHealth for MemoryStore {
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn migrations_current(&self) -> Result<bool, StoreError> {
        Ok(true)
    }

    fn pool_usage(&self) -> Option<svc_ports::PoolUsage> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::RobotsDecision;

    fn page(url: &str, bytes: usize, at: i64) -> FetchedPage {
        FetchedPage {
            requested_url: url.into(),
            final_url: url.into(),
            status: 200,
            content_type: Some("text/html".into()),
            headers: Vec::new(),
            charset: "utf-8".into(),
            body: "x".repeat(bytes),
            raw: None,
            truncated: false,
            redirects: Vec::new(),
            robots: RobotsDecision::not_checked(),
            fetched_at: DateTime::from_timestamp(at, 0).unwrap(),
        }
    }

    #[tokio::test]
    async fn the_page_cache_is_bounded_by_bytes_and_drops_the_oldest() {
        let store = MemoryStore::new();
        let ten_mib = 10 * 1024 * 1024;
        for i in 0..8 {
            store
                .put_page(&format!("k{i}"), &page("http://a.example/", ten_mib, i))
                .await
                .unwrap();
        }
        let epoch = DateTime::from_timestamp(0, 0).unwrap();
        let kept: Vec<_> = {
            let s = store.lock();
            let mut k: Vec<_> = s.pages.keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(kept, ["k2", "k3", "k4", "k5", "k6", "k7"]);
        assert!(store.fresh_page("k7", epoch).await.unwrap().is_some());
        assert!(store.fresh_page("k0", epoch).await.unwrap().is_none());
    }
}
