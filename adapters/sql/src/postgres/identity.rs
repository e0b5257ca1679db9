//! `IdentityStore`: device grants, emailed-code challenges and web sessions, each secret kept
//! only as its SHA-256 (BYTEA). State changes are single conditional statements (a race has
//! one winner) or one transaction with the key they hand out.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    Account, AccountId, ApiKeyId, ApiKeyRecord, ChallengeId, DeviceDecision, DeviceGrant,
    DeviceGrantId, DeviceGrantStatus, Email, EmailChallenge, KeyHash, KnownBrowser, SessionReach,
    UserCode, WebSession,
    identity::MAX_CODE_ATTEMPTS,
    store::{IdentityError, IdentityStore, StoreError},
};

use super::{
    PostgresStore,
    accounts::{insert_key, key_error},
    backend, col, hash, ms, parsed,
};
use crate::rows::{self, ACCOUNT};
use crate::{
    errors::{refused, refused_as},
    outcomes,
};

impl PostgresStore {
    async fn grant_by_id(&self, id: &DeviceGrantId) -> Result<Option<DeviceGrant>, StoreError> {
        sqlx::query(
            "SELECT id, device_code_hash, user_code, client_id, agent_name, scopes, status, \
             account_id, key_id, interval_secs, created_at, expires_at, last_polled_at \
             FROM device_grants WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading device grant"))?
        .map(|r| rows::device_grant(&r))
        .transpose()
    }

    /// `Ok(false)`: the grant was not approved for the key's account (nothing was stored).
    async fn try_issue_device_key(
        &self,
        id: &DeviceGrantId,
        key: &ApiKeyRecord,
    ) -> Result<bool, IdentityError> {
        let err = |e| IdentityError::Store(backend(e, "issuing device key"));
        let mut tx = self.pool.begin().await.map_err(err)?;
        insert_key(&mut tx, key)
            .await
            .map_err(|e| IdentityError::Key(key_error(e)))?;
        let done = sqlx::query(
            "UPDATE device_grants SET status = 'issued', key_id = $1 \
             WHERE id = $2 AND status = 'approved' AND account_id = $3",
        )
        .bind(key.id.as_str())
        .bind(id.as_str())
        .bind(key.account_id.as_str())
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        if done.rows_affected() == 0 {
            // Dropping the transaction rolls the key back.
            return Ok(false);
        }
        tx.commit().await.map_err(err)?;
        Ok(true)
    }

    /// `Ok(None)`: consumed before, or expired (nothing was stored).
    async fn try_consume(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
        key: Option<&ApiKeyRecord>,
    ) -> Result<Option<EmailChallenge>, IdentityError> {
        let err = |e| IdentityError::Store(backend(e, "consuming challenge"));
        let mut tx = self.pool.begin().await.map_err(err)?;
        let row = sqlx::query(
            "UPDATE email_challenges SET consumed_at = $1 \
             WHERE id = $2 AND consumed_at IS NULL AND expires_at > $1 \
             RETURNING id, purpose, email, code_hash, agent_name, scopes, attempts, created_at, \
             expires_at, consumed_at, known_browser",
        )
        .bind(ms(at))
        .bind(id.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let Some(row) = row else { return Ok(None) };
        let challenge = rows::email_challenge(&row)?;
        if let Some(key) = key {
            insert_key(&mut tx, key)
                .await
                .map_err(|e| IdentityError::Key(key_error(e)))?;
        }
        tx.commit().await.map_err(err)?;
        Ok(Some(challenge))
    }
}

#[async_trait]
impl IdentityStore for PostgresStore {
    async fn insert_device_grant(&self, g: &DeviceGrant) -> Result<(), IdentityError> {
        sqlx::query(
            "INSERT INTO device_grants (id, device_code_hash, user_code, client_id, agent_name, \
             scopes, status, account_id, key_id, interval_secs, created_at, expires_at, \
             last_polled_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(g.id.as_str())
        .bind(g.device_code_hash.as_bytes().as_slice())
        .bind(g.user_code.as_str())
        .bind(&g.client_id)
        .bind(g.agent_name.as_deref())
        .bind(g.scopes.to_list_string())
        .bind(g.status.as_str())
        .bind(g.account_id.as_ref().map(AccountId::as_str))
        .bind(g.key_id.as_ref().map(ApiKeyId::as_str))
        .bind(i64::from(g.interval_secs))
        .bind(ms(g.created_at))
        .bind(ms(g.expires_at))
        .bind(g.last_polled_at.map(ms))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(refused("storing device grant"))
    }

    async fn device_grant_by_code(
        &self,
        device_code_hash: &KeyHash,
    ) -> Result<Option<DeviceGrant>, StoreError> {
        sqlx::query(
            "SELECT id, device_code_hash, user_code, client_id, agent_name, scopes, status, \
             account_id, key_id, interval_secs, created_at, expires_at, last_polled_at \
             FROM device_grants WHERE device_code_hash = $1",
        )
        .bind(device_code_hash.as_bytes().as_slice())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading device grant"))?
        .map(|r| rows::device_grant(&r))
        .transpose()
    }

    async fn device_grant_by_user_code(
        &self,
        user_code: &UserCode,
    ) -> Result<Option<DeviceGrant>, StoreError> {
        sqlx::query(
            "SELECT id, device_code_hash, user_code, client_id, agent_name, scopes, status, \
             account_id, key_id, interval_secs, created_at, expires_at, last_polled_at \
             FROM device_grants WHERE user_code = $1",
        )
        .bind(user_code.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading device grant"))?
        .map(|r| rows::device_grant(&r))
        .transpose()
    }

    async fn record_device_poll(
        &self,
        id: &DeviceGrantId,
        at: DateTime<Utc>,
        interval_secs: u32,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE device_grants SET last_polled_at = $1, interval_secs = $2 WHERE id = $3",
        )
        .bind(ms(at))
        .bind(i64::from(interval_secs))
        .bind(id.as_str())
        .execute(&self.pool)
        .await
        .map_err(|e| backend(e, "recording device poll"))?;
        Ok(())
    }

    async fn decide_device_grant(
        &self,
        id: &DeviceGrantId,
        decision: &DeviceDecision,
        at: DateTime<Utc>,
    ) -> Result<DeviceGrant, IdentityError> {
        // Approving writes the scopes the human granted; denying keeps what was asked.
        let (status, account, scopes) = match decision {
            DeviceDecision::Approve { account, scopes } => (
                DeviceGrantStatus::Approved,
                Some(account.as_str()),
                Some(scopes.to_list_string()),
            ),
            DeviceDecision::Deny => (DeviceGrantStatus::Denied, None, None),
        };
        let row = sqlx::query(
            "UPDATE device_grants SET status = $1, account_id = $2, scopes = COALESCE($5, scopes) \
             WHERE id = $3 AND status = 'pending' AND expires_at > $4 \
             RETURNING id, device_code_hash, user_code, client_id, agent_name, scopes, status, \
             account_id, key_id, interval_secs, created_at, expires_at, last_polled_at",
        )
        .bind(status.as_str())
        .bind(account)
        .bind(id.as_str())
        .bind(ms(at))
        .bind(scopes)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "deciding device grant"))?;
        if let Some(r) = row {
            return Ok(rows::device_grant(&r)?);
        }
        Err(outcomes::undecided_grant(self.grant_by_id(id).await?))
    }

    async fn issue_device_key(
        &self,
        id: &DeviceGrantId,
        key: &ApiKeyRecord,
    ) -> Result<(), IdentityError> {
        if self.try_issue_device_key(id, key).await? {
            return Ok(());
        }
        Err(outcomes::unissued_key(self.grant_by_id(id).await?))
    }

    async fn insert_challenge_within(
        &self,
        c: &EmailChallenge,
        since: DateTime<Utc>,
        cap: u32,
    ) -> Result<bool, IdentityError> {
        let err = |e| IdentityError::Store(backend(e, "storing email challenge"));
        let mut tx = self.pool.begin().await.map_err(err)?;
        // Requests for one address and purpose take turns (on every instance): under READ
        // COMMITTED two of them would otherwise both count under the cap.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!(
                "email_challenges:{}:{}",
                c.purpose.as_str(),
                c.email.as_str()
            ))
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let stored = sqlx::query(
            "INSERT INTO email_challenges (id, purpose, email, code_hash, agent_name, scopes, \
             attempts, created_at, expires_at, consumed_at, known_browser) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $13 \
             WHERE (SELECT COUNT(*) FROM email_challenges \
                    WHERE email = $3 AND purpose = $2 AND created_at >= $11) < $12",
        )
        .bind(c.id.as_str())
        .bind(c.purpose.as_str())
        .bind(c.email.as_str())
        .bind(c.code_hash.as_bytes().as_slice())
        .bind(c.agent_name.as_deref())
        .bind(c.scopes.to_list_string())
        .bind(i64::from(c.attempts))
        .bind(ms(c.created_at))
        .bind(ms(c.expires_at))
        .bind(c.consumed_at.map(ms))
        .bind(ms(since))
        .bind(i64::from(cap))
        .bind(c.known_browser)
        .execute(&mut *tx)
        .await
        .map_err(refused::<IdentityError>("storing email challenge"))?
        .rows_affected()
            == 1;
        tx.commit().await.map_err(err)?;
        Ok(stored)
    }

    async fn challenge(&self, id: &ChallengeId) -> Result<Option<EmailChallenge>, StoreError> {
        sqlx::query(
            "SELECT id, purpose, email, code_hash, agent_name, scopes, attempts, created_at, \
             expires_at, consumed_at, known_browser FROM email_challenges WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading email challenge"))?
        .map(|r| rows::email_challenge(&r))
        .transpose()
    }

    async fn wrong_code_tries(
        &self,
        email: &Email,
        since: DateTime<Utc>,
        known_browser: bool,
    ) -> Result<u32, StoreError> {
        let wrong: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(CASE WHEN consumed_at IS NULL THEN attempts \
             WHEN attempts > 0 THEN attempts - 1 ELSE 0 END), 0)::BIGINT \
             FROM email_challenges WHERE email = $1 AND created_at >= $2 AND known_browser = $3",
        )
        .bind(email.as_str())
        .bind(ms(since))
        .bind(known_browser)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| backend(e, "counting wrong codes"))?;
        Ok(u32::try_from(wrong.max(0)).unwrap_or(u32::MAX))
    }

    async fn attempt_challenge(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
    ) -> Result<EmailChallenge, IdentityError> {
        let row = sqlx::query(
            "UPDATE email_challenges SET attempts = attempts + 1 \
             WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2 AND attempts < $3 \
             RETURNING id, purpose, email, code_hash, agent_name, scopes, attempts, created_at, \
             expires_at, consumed_at, known_browser",
        )
        .bind(id.as_str())
        .bind(ms(at))
        .bind(i64::from(MAX_CODE_ATTEMPTS))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "counting a code try"))?;
        if let Some(r) = row {
            return Ok(rows::email_challenge(&r)?);
        }
        Err(outcomes::untried_challenge(self.challenge(id).await?, at))
    }

    async fn consume_challenge<'a>(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
        key: Option<&'a ApiKeyRecord>,
    ) -> Result<EmailChallenge, IdentityError> {
        if let Some(c) = self.try_consume(id, at, key).await? {
            return Ok(c);
        }
        Err(outcomes::unconsumed_challenge(self.challenge(id).await?))
    }

    async fn insert_session(&self, w: &WebSession) -> Result<(), IdentityError> {
        sqlx::query(
            "INSERT INTO web_sessions (token_hash, account_id, reach, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(w.token_hash.as_bytes().as_slice())
        .bind(w.account_id.as_str())
        .bind(w.reach.as_str())
        .bind(ms(w.created_at))
        .bind(ms(w.expires_at))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(refused_as(
            "storing web session",
            Some(IdentityError::Duplicate),
            Some(IdentityError::NotFound),
        ))
    }

    async fn session(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<(WebSession, Account)>, StoreError> {
        let row = sqlx::query(
            "SELECT s.token_hash, s.account_id AS s_account_id, s.reach, \
             s.created_at AS s_created_at, s.expires_at AS s_expires_at, a.id, a.email, a.plan, a.environment, a.created_at \
             FROM web_sessions s JOIN accounts a ON a.id = s.account_id \
             WHERE s.token_hash = $1 AND s.expires_at > $2",
        )
        .bind(token_hash.as_bytes().as_slice())
        .bind(ms(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading web session"))?;
        let Some(r) = row else { return Ok(None) };
        let session = WebSession {
            token_hash: hash(&r, "token_hash")?,
            account_id: parsed(&r, "s_account_id", AccountId::parse)?,
            reach: parsed(&r, "reach", SessionReach::parse)?,
            created_at: col(&r, "s_created_at")?,
            expires_at: col(&r, "s_expires_at")?,
        };
        Ok(Some((session, rows::account(&r, ACCOUNT)?)))
    }

    async fn delete_session(&self, token_hash: &KeyHash) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM web_sessions WHERE token_hash = $1")
            .bind(token_hash.as_bytes().as_slice())
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "deleting web session"))?;
        Ok(())
    }

    async fn insert_known_browser(&self, b: &KnownBrowser) -> Result<(), IdentityError> {
        sqlx::query(
            "INSERT INTO known_browsers (token_hash, email, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(b.token_hash.as_bytes().as_slice())
        .bind(b.email.as_str())
        .bind(ms(b.created_at))
        .bind(ms(b.expires_at))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(refused("storing known browser"))
    }

    async fn known_browser(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<KnownBrowser>, StoreError> {
        let row = sqlx::query(
            "SELECT token_hash, email, created_at, expires_at FROM known_browsers \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash.as_bytes().as_slice())
        .bind(ms(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading known browser"))?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(KnownBrowser {
            token_hash: hash(&r, "token_hash")?,
            email: parsed(&r, "email", Email::parse)?,
            created_at: col(&r, "created_at")?,
            expires_at: col(&r, "expires_at")?,
        }))
    }

    async fn purge_identity(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar(
            r#"
            WITH grants AS (DELETE FROM device_grants WHERE expires_at < $1 RETURNING 1),
            challenges AS (DELETE FROM email_challenges WHERE expires_at < $1 RETURNING 1),
            sessions AS (DELETE FROM web_sessions WHERE expires_at < $1 RETURNING 1),
            browsers AS (DELETE FROM known_browsers WHERE expires_at < $1 RETURNING 1)
            SELECT (SELECT COUNT(*) FROM grants) + (SELECT COUNT(*) FROM challenges)
                + (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM browsers)
            "#,
        )
        .bind(ms(before))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| backend(e, "purging identity records"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
