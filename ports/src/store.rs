//! Store ports. Each operation is atomic: it either happens whole or not at all. The contract
//! suite in `contract-tests/` runs the same scenarios against every implementation.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{
    account::{Account, Email, Environment},
    fetch::FetchedPage,
    ids::AccountId,
    keys::{ApiKeyRecord, KeyHash, KeyPrefix},
    ledger::{Balance, Grant, GrantOutcome, LedgerEntry},
};

/// A failure of the store itself (connection lost, disk full, corrupt row). Callers treat it
/// as an internal error; it never means "not found" or "conflict".
#[derive(Debug, thiserror::Error)]
#[error("store unavailable: {0:#}")]
pub struct StoreError(#[from] pub anyhow::Error);

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("an account with this email already exists in this environment")]
    EmailTaken,
    #[error("account not found")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key's hash or prefix is already stored (regenerate and try again).
    #[error("a key with this prefix or hash already exists")]
    Duplicate,
    #[error("no key has this prefix")]
    NotFound,
    #[error("the key was already revoked")]
    AlreadyRevoked,
    #[error("the key's account does not exist")]
    UnknownAccount,
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("account not found")]
    UnknownAccount,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Accounts and their API keys.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Stores a new account with a zero balance.
    /// MUST return [`AccountError::EmailTaken`] when an account with the same email exists in
    /// the same environment (the same address may have one live and one test account).
    async fn create_account(&self, account: &Account) -> Result<(), AccountError>;

    /// `Ok(None)` when no account has this id.
    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError>;

    /// `Ok(None)` when no account in `environment` has this email.
    async fn account_by_email(
        &self,
        environment: Environment,
        email: &Email,
    ) -> Result<Option<Account>, StoreError>;

    /// Stores a key record.
    /// MUST return [`KeyError::Duplicate`] when a key with the same hash or prefix exists, and
    /// [`KeyError::UnknownAccount`] when its account does not exist.
    async fn insert_key(&self, key: &ApiKeyRecord) -> Result<(), KeyError>;

    /// The key with this hash and its account, revoked or not (the caller decides what a
    /// revoked key means); `Ok(None)` when no key has this hash.
    async fn key_by_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(ApiKeyRecord, Account)>, StoreError>;

    /// Keys of one account, or of all accounts when `account` is `None`, oldest first.
    async fn keys(&self, account: Option<AccountId>) -> Result<Vec<ApiKeyRecord>, StoreError>;

    /// Marks the key revoked at `at` and returns the updated record.
    /// MUST return [`KeyError::NotFound`] when no key has this prefix and
    /// [`KeyError::AlreadyRevoked`] when it was revoked before (the first revocation time stays).
    async fn revoke_key(
        &self,
        prefix: &KeyPrefix,
        at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError>;
}

/// The credit ledger.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Adds `grant.amount` to the account's spendable balance and records the entry, in one
    /// transaction. When `grant.reference` is set and an entry with the same reference exists
    /// for the account, MUST change nothing and return [`GrantOutcome::AlreadyApplied`] with the
    /// original entry, also when two such grants race.
    /// MUST return [`LedgerError::UnknownAccount`] when the account does not exist.
    async fn grant(&self, grant: &Grant) -> Result<GrantOutcome, LedgerError>;

    /// The account's balance. MUST return [`LedgerError::UnknownAccount`] when it does not exist.
    async fn balance(&self, account: &AccountId) -> Result<Balance, LedgerError>;

    /// The account's entries, newest first, at most `limit`. An unknown account has none.
    async fn entries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<LedgerEntry>, StoreError>;
}

/// Fetched pages, kept so a read can be answered from the store when the caller's `max_age`
/// allows.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait PageCache: Send + Sync {
    /// Stores `page` under `key`, replacing what was there.
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError>;

    /// The page under `key` if it was fetched at or after `not_before`; `Ok(None)` when there
    /// is none or it is older.
    async fn fresh_page(
        &self,
        key: &str,
        not_before: DateTime<Utc>,
    ) -> Result<Option<FetchedPage>, StoreError>;

    /// Deletes every page fetched before `before` and returns how many went.
    async fn purge_pages(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
}
