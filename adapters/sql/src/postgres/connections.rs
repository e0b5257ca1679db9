//! `ConnectionStore`: target-site connections. Every state change is one
//! `UPDATE ... WHERE state = ...`, so two finishes racing on one connection (on any number of
//! instances) leave exactly one winner. The OAuth state's SHA-256 is BYTEA; the port speaks
//! hex.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, ConnectionFinish, ConnectionId, ConnectionRecord, ConnectionState, KeyHash,
    ProviderId, SealedSecret,
    store::{ConnectionError, ConnectionStore, StoreError},
};

use super::{PostgresStore, backend, ms};
use crate::errors::refused;
use crate::rows;

impl PostgresStore {
    /// The record as it is now (after a compare-and-set that did not match).
    async fn current_connection(
        &self,
        id: &ConnectionId,
    ) -> Result<ConnectionRecord, ConnectionError> {
        self.connection(id).await?.ok_or(ConnectionError::NotFound)
    }
}

#[async_trait]
impl ConnectionStore for PostgresStore {
    async fn insert_connection(&self, c: &ConnectionRecord) -> Result<(), ConnectionError> {
        let state_hash = KeyHash::from_hex(&c.oauth_state_hash).ok_or_else(|| {
            StoreError(anyhow::anyhow!("the OAuth state hash is not a hex SHA-256"))
        })?;
        sqlx::query(
            "INSERT INTO connections (id, account_id, provider, expected_account, \
             upstream_account, state, oauth_state_hash, pkce_verifier, credentials, \
             credentials_expire_at, link_expires_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(c.id.as_str())
        .bind(c.account_id.as_str())
        .bind(c.provider.as_str())
        .bind(c.expected_account.as_deref())
        .bind(c.upstream_account.as_deref())
        .bind(c.state.as_str())
        .bind(state_hash.as_bytes().as_slice())
        .bind(c.pkce_verifier.as_bytes())
        .bind(c.credentials.as_ref().map(SealedSecret::as_bytes))
        .bind(c.credentials_expire_at.map(ms))
        .bind(ms(c.link_expires_at))
        .bind(ms(c.created_at))
        .bind(ms(c.updated_at))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(refused("storing connection"))
    }

    async fn connection(&self, id: &ConnectionId) -> Result<Option<ConnectionRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at FROM connections WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading connection"))?
        .map(|r| rows::connection(&r))
        .transpose()
    }

    async fn connection_by_state_hash(
        &self,
        state_hash: &str,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        // What is not a hex SHA-256 was never stored.
        let Some(state_hash) = KeyHash::from_hex(state_hash) else {
            return Ok(None);
        };
        sqlx::query(
            "SELECT id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at FROM connections \
             WHERE oauth_state_hash = $1",
        )
        .bind(state_hash.as_bytes().as_slice())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading connection"))?
        .map(|r| rows::connection(&r))
        .transpose()
    }

    async fn latest_connection(
        &self,
        account: &AccountId,
        provider: &ProviderId,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at FROM connections \
             WHERE account_id = $1 AND provider = $2 ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind(account.as_str())
        .bind(provider.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading latest connection"))?
        .map(|r| rows::connection(&r))
        .transpose()
    }

    async fn latest_connection_in(
        &self,
        account: &AccountId,
        provider: &ProviderId,
        state: ConnectionState,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at FROM connections \
             WHERE account_id = $1 AND provider = $2 AND state = $3 \
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind(account.as_str())
        .bind(provider.as_str())
        .bind(state.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading a connection by state"))?
        .map(|r| rows::connection(&r))
        .transpose()
    }

    async fn finish_connection(
        &self,
        id: &ConnectionId,
        finish: ConnectionFinish,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError> {
        let (upstream, credentials, expire_at) = match &finish {
            ConnectionFinish::Connected {
                upstream_account,
                credentials,
                credentials_expire_at,
            } => (
                Some(upstream_account.as_str()),
                Some(credentials.as_bytes()),
                credentials_expire_at.map(ms),
            ),
            ConnectionFinish::WrongAccount { upstream_account } => {
                (Some(upstream_account.as_str()), None, None)
            }
            ConnectionFinish::Refused | ConnectionFinish::Expired => (None, None, None),
        };
        // Compare-and-set: only a pending row matches, so one finish wins.
        let row = sqlx::query(
            "UPDATE connections SET state = $1, \
             upstream_account = COALESCE($2, upstream_account), \
             credentials = COALESCE($3, credentials), \
             credentials_expire_at = CASE WHEN $4 THEN $5 ELSE credentials_expire_at END, \
             updated_at = $6 \
             WHERE id = $7 AND state = 'pending' \
             RETURNING id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at",
        )
        .bind(finish.state().as_str())
        .bind(upstream)
        .bind(credentials)
        .bind(matches!(finish, ConnectionFinish::Connected { .. }))
        .bind(expire_at)
        .bind(ms(at))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "finishing connection"))?;
        match row {
            Some(r) => Ok(rows::connection(&r)?),
            None => Err(ConnectionError::NotPending(Box::new(
                self.current_connection(id).await?,
            ))),
        }
    }

    async fn refresh_credentials(
        &self,
        id: &ConnectionId,
        credentials: SealedSecret,
        credentials_expire_at: Option<DateTime<Utc>>,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError> {
        let row = sqlx::query(
            "UPDATE connections SET credentials = $1, credentials_expire_at = $2, \
             updated_at = $3 WHERE id = $4 AND state = 'connected' \
             RETURNING id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at",
        )
        .bind(credentials.as_bytes())
        .bind(credentials_expire_at.map(ms))
        .bind(ms(at))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "refreshing connection credentials"))?;
        match row {
            Some(r) => Ok(rows::connection(&r)?),
            None => Err(ConnectionError::NotConnected(Box::new(
                self.current_connection(id).await?,
            ))),
        }
    }

    async fn expire_connection(
        &self,
        id: &ConnectionId,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError> {
        // Credentials that can no longer be refreshed are not kept.
        let row = sqlx::query(
            "UPDATE connections SET state = 'expired', credentials = NULL, updated_at = $1 \
             WHERE id = $2 AND state IN ('pending', 'connected') \
             RETURNING id, account_id, provider, expected_account, upstream_account, state, \
             oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
             link_expires_at, created_at, updated_at",
        )
        .bind(ms(at))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "expiring connection"))?;
        match row {
            Some(r) => Ok(rows::connection(&r)?),
            None => self.current_connection(id).await,
        }
    }
}
