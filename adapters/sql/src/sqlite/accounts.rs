//! `AccountStore`: accounts and their API keys (stored only as the hex SHA-256 of the secret).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    Account, AccountId, ApiKeyId, ApiKeyRecord, Email, Environment, Grant, KeyHash, KeyPrefix,
    store::{AccountError, AccountStore, KeyError, StoreError},
};

use super::ledger::insert_entry;
use super::{SqliteStore, backend, millis};
use crate::errors::refused;
use crate::rows::{self, ACCOUNT, AccountColumns};

/// Stores a key on the writer or inside a transaction (`&mut *tx`).
pub(super) async fn insert_key(
    db: impl sqlx::SqliteExecutor<'_>,
    key: &ApiKeyRecord,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, prefix, hash, scopes, label, created_at, revoked_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(key.id.as_str())
    .bind(key.account_id.as_str())
    .bind(key.prefix.as_str())
    .bind(key.hash.to_hex())
    .bind(key.scopes.to_list_string())
    .bind(&key.label)
    .bind(millis(key.created_at))
    .bind(key.revoked_at.map(millis))
    .bind(key.expires_at.map(millis))
    .execute(db)
    .await
    .map(|_| ())
}

/// Stores a new account holding `spendable` credits (those of its opening grant, if any).
async fn insert_account(
    db: impl sqlx::SqliteExecutor<'_>,
    account: &Account,
    spendable: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO accounts (id, email, plan, environment, created_at, spendable) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(account.id.as_str())
    .bind(account.email.as_str())
    .bind(account.plan.as_str())
    .bind(account.environment.as_str())
    .bind(millis(account.created_at))
    .bind(spendable)
    .execute(db)
    .await
    .map(|_| ())
}

pub(super) fn key_error(e: sqlx::Error) -> KeyError {
    refused("storing key")(e)
}

/// An account's columns renamed beside a key's or a session's.
pub(super) const JOINED_ACCOUNT: AccountColumns = [
    "account_id",
    "email",
    "plan",
    "environment",
    "account_created_at",
];

#[async_trait]
impl AccountStore for SqliteStore {
    async fn create_account(&self, account: &Account) -> Result<(), AccountError> {
        insert_account(self.writer(), account, 0)
            .await
            .map_err(refused("creating account"))
    }

    async fn create_account_with_grant(
        &self,
        account: &Account,
        grant: &Grant,
    ) -> Result<(), AccountError> {
        let opened = async {
            let mut tx = self.begin_write().await?;
            let spendable = grant.amount.get();
            insert_account(&mut *tx, account, spendable).await?;
            insert_entry(&mut tx, &grant.entry(spendable)).await?;
            tx.commit().await
        };
        opened.await.map_err(refused("creating account"))
    }

    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        sqlx::query("SELECT id, email, plan, environment, created_at FROM accounts WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend(e, "reading account"))?
            .map(|r| rows::account(&r, ACCOUNT))
            .transpose()
    }

    async fn account_by_email(
        &self,
        environment: Environment,
        email: &Email,
    ) -> Result<Option<Account>, StoreError> {
        sqlx::query(
            "SELECT id, email, plan, environment, created_at FROM accounts \
             WHERE environment = $1 AND email = $2",
        )
        .bind(environment.as_str())
        .bind(email.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading account by email"))?
        .map(|r| rows::account(&r, ACCOUNT))
        .transpose()
    }

    async fn insert_key(&self, key: &ApiKeyRecord) -> Result<(), KeyError> {
        insert_key(self.writer(), key).await.map_err(key_error)
    }

    /// Every request with a key starts here: one indexed read of the key and its account.
    async fn key_by_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(ApiKeyRecord, Account)>, StoreError> {
        let row = sqlx::query(
            "SELECT k.id, k.account_id, k.prefix, k.hash, k.scopes, k.label, k.created_at, \
             k.revoked_at, k.expires_at, k.last_used_at, a.email, a.plan, a.environment, a.created_at AS account_created_at \
             FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = $1",
        )
        .bind(hash.to_hex())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "looking up key"))?;
        row.map(|r| Ok((rows::api_key(&r)?, rows::account(&r, JOINED_ACCOUNT)?)))
            .transpose()
    }

    async fn keys(&self, account: Option<AccountId>) -> Result<Vec<ApiKeyRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, prefix, hash, scopes, label, created_at, revoked_at, \
             expires_at, last_used_at FROM api_keys WHERE ($1 IS NULL OR account_id = $1) ORDER BY created_at, id",
        )
        .bind(account.as_ref().map(AccountId::as_str))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing keys"))?
        .iter()
        .map(rows::api_key)
        .collect()
    }

    async fn revoke_key(
        &self,
        prefix: &KeyPrefix,
        at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError> {
        // One statement: only the first revocation matches `revoked_at IS NULL`.
        let row = sqlx::query(
            "UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND revoked_at IS NULL \
             RETURNING id, account_id, prefix, hash, scopes, label, created_at, revoked_at, \
             expires_at, last_used_at",
        )
        .bind(millis(at))
        .bind(prefix.as_str())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| backend(e, "revoking key"))?;
        if let Some(r) = row {
            return Ok(rows::api_key(&r)?);
        }
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM api_keys WHERE prefix = $1)")
                .bind(prefix.as_str())
                .fetch_one(&self.pool)
                .await
                .map_err(|e| backend(e, "revoking key"))?;
        Err(if exists {
            KeyError::AlreadyRevoked
        } else {
            KeyError::NotFound
        })
    }

    async fn touch_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE api_keys SET last_used_at = $1 \
             WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)",
        )
        .bind(millis(at))
        .bind(id.as_str())
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "recording key use"))?;
        Ok(())
    }

    async fn rotate_key(
        &self,
        prefix: &KeyPrefix,
        replacement: &ApiKeyRecord,
        old_expires_at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError> {
        let err = |e| backend(e, "rotating key");
        let mut tx = self.begin_write().await.map_err(err)?;
        let row = sqlx::query(
            "UPDATE api_keys SET expires_at = $1 \
             WHERE prefix = $2 AND account_id = $3 AND revoked_at IS NULL AND expires_at IS NULL \
             RETURNING id, account_id, prefix, hash, scopes, label, created_at, revoked_at, \
             expires_at, last_used_at",
        )
        .bind(millis(old_expires_at))
        .bind(prefix.as_str())
        .bind(replacement.account_id.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let Some(row) = row else {
            let revoked: Option<bool> = sqlx::query_scalar(
                "SELECT revoked_at IS NOT NULL FROM api_keys WHERE prefix = $1 AND account_id = $2",
            )
            .bind(prefix.as_str())
            .bind(replacement.account_id.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
            return Err(match revoked {
                None => KeyError::NotFound,
                Some(true) => KeyError::AlreadyRevoked,
                Some(false) => KeyError::AlreadyRotated,
            });
        };
        let old = rows::api_key(&row)?;
        // A duplicate replacement drops the transaction: the old key stays live.
        insert_key(&mut *tx, replacement).await.map_err(key_error)?;
        tx.commit().await.map_err(err)?;
        Ok(old)
    }
}
