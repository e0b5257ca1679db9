//! `AuthorityStore`, and the spend a new task makes under an authority. The spend is checked
//! and stored inside the task's transaction with the authority row locked (`FOR UPDATE`), so
//! concurrent tasks on any number of instances never spend past the limit. A single-use
//! authority's one live spend is also guarded by a partial unique index.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use svc_ports::{
    AccountId, AuthorityId, AuthorityRefusal, AuthoritySpendRecord, AuthorityUsage, NewTask,
    PaymentAuthority,
    authority::{AuthorityInterval, check_spend, window_start},
    store::{AuthorityError, AuthorityStore, StoreError},
};

use super::{PostgresStore, backend, col, corrupt, is_unique_violation, ms};
use crate::errors::{refused, undecodable};
use crate::rows;

/// Checks and stores a new task's spend inside the task's transaction (after the task row,
/// which it references). `Ok(Err(_))`: refused; the caller drops the transaction.
pub(super) async fn spend_authority(
    conn: &mut PgConnection,
    task: &NewTask,
) -> Result<Result<(), AuthorityRefusal>, sqlx::Error> {
    let Some(spend) = &task.authority_spend else {
        return Ok(Ok(()));
    };
    let row = sqlx::query(
        "SELECT id, account_id, principal_type, principal_id, agent_provider, scope, \
         amount_value, amount_interval, currency, expires_at, revocation_url, receipt_required, \
         verification_required, created_by, created_at, revoked_at \
         FROM payment_authorities WHERE id = $1 FOR UPDATE",
    )
    .bind(spend.authority_id.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(Err(AuthorityRefusal::UnknownAuthority));
    };
    let authority = rows::authority(&row).map_err(undecodable)?;
    let start = window_start(&authority, task.created_at);
    // Read with the authority locked: spends committed before the lock are all seen.
    let spent: i64 = sqlx::query_scalar(
        "SELECT COALESCE(SUM(amount), 0)::BIGINT FROM authority_spends \
         WHERE authority_id = $1 AND window_start = $2 AND released_at IS NULL",
    )
    .bind(spend.authority_id.as_str())
    .bind(ms(start))
    .fetch_one(&mut *conn)
    .await?;
    let window = match check_spend(&authority, &task.account_id, spend, spent, task.created_at) {
        Ok(window) => window,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let single_use = authority.amount_limit.interval() == AuthorityInterval::SingleUse;
    let inserted = sqlx::query(
        "INSERT INTO authority_spends (task_id, authority_id, amount, currency, scope, \
         single_use, window_start, spent_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(task.id.as_str())
    .bind(spend.authority_id.as_str())
    .bind(spend.amount)
    .bind(spend.currency.as_str())
    .bind(&spend.scope)
    .bind(single_use)
    .bind(ms(window))
    .bind(ms(task.created_at))
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(_) => Ok(Ok(())),
        // The single-use index: another live spend exists (the lock makes this a backstop).
        Err(e) if single_use && is_unique_violation(&e) => Ok(Err(AuthorityRefusal::Exhausted)),
        Err(e) => Err(e),
    }
}

impl PostgresStore {
    /// The usage of each authority as of `now`, from one query: what each spent (and did not
    /// get back) per window; the window containing `now` is picked here.
    async fn with_usage(
        &self,
        authorities: Vec<PaymentAuthority>,
        now: DateTime<Utc>,
    ) -> Result<Vec<(PaymentAuthority, AuthorityUsage)>, StoreError> {
        if authorities.is_empty() {
            return Ok(Vec::new());
        }
        let err = |e| backend(e, "reading authority usage");
        let ids: Vec<&str> = authorities
            .iter()
            .map(|a| a.authority_id.as_str())
            .collect();
        let windows = sqlx::query(
            "SELECT authority_id, window_start, SUM(amount)::BIGINT AS spent, COUNT(*) AS spends \
             FROM authority_spends WHERE authority_id = ANY($1) AND released_at IS NULL \
             GROUP BY authority_id, window_start",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?
        .iter()
        .map(|r| {
            Ok((
                col::<String>(r, "authority_id")?,
                col::<DateTime<Utc>>(r, "window_start")?,
                col::<i64>(r, "spent")?,
                col::<i64>(r, "spends")?,
            ))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(authorities
            .into_iter()
            .map(|a| {
                let current = ms(window_start(&a, now));
                let (mut spent, mut spends) = (0, 0);
                for (id, start, amount, count) in &windows {
                    if id == a.authority_id.as_str() {
                        spends += count;
                        if *start == current {
                            spent += amount;
                        }
                    }
                }
                let usage = AuthorityUsage::compute(
                    &a,
                    spent,
                    u32::try_from(spends).unwrap_or(u32::MAX),
                    now,
                );
                (a, usage)
            })
            .collect())
    }
}

#[async_trait]
impl AuthorityStore for PostgresStore {
    async fn insert_authority(&self, a: &PaymentAuthority) -> Result<(), AuthorityError> {
        let scope = serde_json::to_string(&a.scope).map_err(corrupt("authority scope"))?;
        sqlx::query(
            "INSERT INTO payment_authorities (id, account_id, principal_type, principal_id, \
             agent_provider, scope, amount_value, amount_interval, currency, expires_at, \
             revocation_url, receipt_required, verification_required, created_by, created_at, \
             revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(a.authority_id.as_str())
        .bind(a.account_id.as_str())
        .bind(&a.principal.kind)
        .bind(&a.principal.id)
        .bind(&a.principal.agent_provider)
        .bind(scope)
        .bind(a.amount_limit.value())
        .bind(a.amount_limit.interval().as_str())
        .bind(a.currency.as_str())
        .bind(ms(a.expires_at))
        .bind(&a.revocation_url)
        .bind(a.receipt_required)
        .bind(a.verification_required)
        .bind(&a.created_by)
        .bind(ms(a.created_at))
        .bind(a.revoked_at.map(ms))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(refused("storing payment authority"))
    }

    async fn authority(
        &self,
        id: &AuthorityId,
        now: DateTime<Utc>,
    ) -> Result<Option<(PaymentAuthority, AuthorityUsage)>, StoreError> {
        let row = sqlx::query(
            "SELECT id, account_id, principal_type, principal_id, agent_provider, scope, \
             amount_value, amount_interval, currency, expires_at, revocation_url, \
             receipt_required, verification_required, created_by, created_at, revoked_at \
             FROM payment_authorities WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading payment authority"))?;
        let Some(row) = row else { return Ok(None) };
        let authority = rows::authority(&row)?;
        Ok(self.with_usage(vec![authority], now).await?.pop())
    }

    async fn authorities(
        &self,
        account: &AccountId,
        now: DateTime<Utc>,
    ) -> Result<Vec<(PaymentAuthority, AuthorityUsage)>, StoreError> {
        let authorities = sqlx::query(
            "SELECT id, account_id, principal_type, principal_id, agent_provider, scope, \
             amount_value, amount_interval, currency, expires_at, revocation_url, \
             receipt_required, verification_required, created_by, created_at, revoked_at \
             FROM payment_authorities WHERE account_id = $1 ORDER BY created_at DESC, id DESC",
        )
        .bind(account.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing payment authorities"))?
        .iter()
        .map(rows::authority)
        .collect::<Result<Vec<_>, _>>()?;
        self.with_usage(authorities, now).await
    }

    async fn authority_spends(
        &self,
        id: &AuthorityId,
    ) -> Result<Vec<AuthoritySpendRecord>, StoreError> {
        sqlx::query(
            "SELECT task_id, authority_id, amount, currency, scope, window_start, spent_at, \
             released_at FROM authority_spends WHERE authority_id = $1 ORDER BY spent_at, task_id",
        )
        .bind(id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing authority spends"))?
        .iter()
        .map(rows::authority_spend)
        .collect()
    }

    async fn task_spend(
        &self,
        task: &svc_ports::TaskId,
    ) -> Result<Option<AuthoritySpendRecord>, StoreError> {
        sqlx::query(
            "SELECT task_id, authority_id, amount, currency, scope, window_start, spent_at, \
             released_at FROM authority_spends WHERE task_id = $1",
        )
        .bind(task.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading a task's authority spend"))?
        .map(|r| rows::authority_spend(&r))
        .transpose()
    }

    async fn revoke_authority(
        &self,
        account: &AccountId,
        id: &AuthorityId,
        at: DateTime<Utc>,
    ) -> Result<PaymentAuthority, AuthorityError> {
        // COALESCE keeps the first revocation time.
        sqlx::query(
            "UPDATE payment_authorities SET revoked_at = COALESCE(revoked_at, $1) \
             WHERE id = $2 AND account_id = $3 \
             RETURNING id, account_id, principal_type, principal_id, agent_provider, scope, \
             amount_value, amount_interval, currency, expires_at, revocation_url, \
             receipt_required, verification_required, created_by, created_at, revoked_at",
        )
        .bind(ms(at))
        .bind(id.as_str())
        .bind(account.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| AuthorityError::Store(backend(e, "revoking payment authority")))?
        .map(|r| rows::authority(&r).map_err(AuthorityError::Store))
        .transpose()?
        .ok_or(AuthorityError::NotFound)
    }
}
