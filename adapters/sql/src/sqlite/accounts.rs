//! `AccountStore`: accounts and their API keys (stored only as the hex SHA-256 of the secret).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, sqlite::SqliteRow};
use svc_ports::{
    Account, AccountId, ApiKeyId, ApiKeyRecord, Email, Environment, KeyHash, KeyPrefix, Scopes,
    store::{AccountError, AccountStore, KeyError, StoreError},
};

use super::{
    SqliteStore, backend, corrupt, from_millis, is_foreign_key_violation, is_unique_violation,
    millis,
};

/// An account from a row holding `email`, `plan` and `environment`, with its id and creation
/// time under the names given (joins rename them).
pub(super) fn account_from_row(
    r: &SqliteRow,
    id: &str,
    created_at: &str,
) -> Result<Account, StoreError> {
    let err = |e| backend(e, "reading account");
    Ok(Account {
        id: AccountId::parse(r.try_get(id).map_err(err)?).map_err(corrupt("account id"))?,
        email: Email::parse(r.try_get("email").map_err(err)?).map_err(corrupt("email"))?,
        plan: r
            .try_get::<&str, _>("plan")
            .map_err(err)?
            .parse()
            .map_err(corrupt("plan"))?,
        environment: r
            .try_get::<&str, _>("environment")
            .map_err(err)?
            .parse()
            .map_err(corrupt("environment"))?,
        created_at: from_millis(r.try_get(created_at).map_err(err)?)?,
    })
}

/// A key from a row holding `id, account_id, prefix, hash, scopes, label, created_at,
/// revoked_at`.
fn key_from_row(r: &SqliteRow) -> Result<ApiKeyRecord, StoreError> {
    let err = |e| backend(e, "reading key");
    let revoked: Option<i64> = r.try_get("revoked_at").map_err(err)?;
    Ok(ApiKeyRecord {
        id: ApiKeyId::parse(r.try_get("id").map_err(err)?).map_err(corrupt("key id"))?,
        account_id: AccountId::parse(r.try_get("account_id").map_err(err)?)
            .map_err(corrupt("account id"))?,
        prefix: KeyPrefix::parse(r.try_get("prefix").map_err(err)?)
            .map_err(corrupt("key prefix"))?,
        hash: KeyHash::from_hex(r.try_get("hash").map_err(err)?)
            .ok_or_else(|| corrupt("key hash")("bad hex"))?,
        scopes: Scopes::parse_list(r.try_get("scopes").map_err(err)?).map_err(corrupt("scopes"))?,
        label: r.try_get("label").map_err(err)?,
        created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
        revoked_at: revoked.map(from_millis).transpose()?,
    })
}

/// Stores a key on the writer or inside a transaction (`&mut *tx`).
pub(super) async fn insert_key(
    db: impl sqlx::SqliteExecutor<'_>,
    key: &ApiKeyRecord,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, prefix, hash, scopes, label, created_at, revoked_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(key.id.as_str())
    .bind(key.account_id.as_str())
    .bind(key.prefix.as_str())
    .bind(key.hash.to_hex())
    .bind(key.scopes.to_list_string())
    .bind(&key.label)
    .bind(millis(key.created_at))
    .bind(key.revoked_at.map(millis))
    .execute(db)
    .await
    .map(|_| ())
}

pub(super) fn key_error(e: sqlx::Error) -> KeyError {
    if is_unique_violation(&e) {
        KeyError::Duplicate
    } else if is_foreign_key_violation(&e) {
        KeyError::UnknownAccount
    } else {
        backend(e, "storing key").into()
    }
}

#[async_trait]
impl AccountStore for SqliteStore {
    async fn create_account(&self, account: &Account) -> Result<(), AccountError> {
        let r = sqlx::query(
            "INSERT INTO accounts (id, email, plan, environment, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(account.id.as_str())
        .bind(account.email.as_str())
        .bind(account.plan.as_str())
        .bind(account.environment.as_str())
        .bind(millis(account.created_at))
        .execute(self.writer())
        .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(AccountError::EmailTaken),
            Err(e) => Err(backend(e, "creating account").into()),
        }
    }

    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        sqlx::query("SELECT id, email, plan, environment, created_at FROM accounts WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend(e, "reading account"))?
            .map(|r| account_from_row(&r, "id", "created_at"))
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
        .map(|r| account_from_row(&r, "id", "created_at"))
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
             k.revoked_at, a.email, a.plan, a.environment, a.created_at AS account_created_at \
             FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = $1",
        )
        .bind(hash.to_hex())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "looking up key"))?;
        row.map(|r| {
            Ok((
                key_from_row(&r)?,
                account_from_row(&r, "account_id", "account_created_at")?,
            ))
        })
        .transpose()
    }

    async fn keys(&self, account: Option<AccountId>) -> Result<Vec<ApiKeyRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, prefix, hash, scopes, label, created_at, revoked_at \
             FROM api_keys WHERE ($1 IS NULL OR account_id = $1) ORDER BY created_at, id",
        )
        .bind(account.as_ref().map(AccountId::as_str))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing keys"))?
        .iter()
        .map(key_from_row)
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
             RETURNING id, account_id, prefix, hash, scopes, label, created_at, revoked_at",
        )
        .bind(millis(at))
        .bind(prefix.as_str())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| backend(e, "revoking key"))?;
        if let Some(r) = row {
            return Ok(key_from_row(&r)?);
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

    async fn rotate_key(
        &self,
        prefix: &KeyPrefix,
        replacement: &ApiKeyRecord,
        at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError> {
        let err = |e| backend(e, "rotating key");
        let mut tx = self.begin_write().await.map_err(err)?;
        let row = sqlx::query(
            "UPDATE api_keys SET revoked_at = $1 \
             WHERE prefix = $2 AND account_id = $3 AND revoked_at IS NULL \
             RETURNING id, account_id, prefix, hash, scopes, label, created_at, revoked_at",
        )
        .bind(millis(at))
        .bind(prefix.as_str())
        .bind(replacement.account_id.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let Some(row) = row else {
            let exists: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM api_keys WHERE prefix = $1 AND account_id = $2)",
            )
            .bind(prefix.as_str())
            .bind(replacement.account_id.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
            return Err(if exists {
                KeyError::AlreadyRevoked
            } else {
                KeyError::NotFound
            });
        };
        let old = key_from_row(&row)?;
        // A duplicate replacement drops the transaction: the old key stays live.
        insert_key(&mut *tx, replacement).await.map_err(key_error)?;
        tx.commit().await.map_err(err)?;
        Ok(old)
    }
}
