//! `AuthorityStore`, and the spend a new task makes under a delegated payment authority. The
//! spend is checked and stored inside the task's transaction; SQLite's one writer runs those
//! transactions in turn, so concurrent tasks never spend past the limit. A single-use
//! authority's one live spend is also guarded by a partial unique index.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, SqliteConnection, sqlite::SqliteRow};
use svc_ports::{
    AccountId, AuthorityId, AuthorityRefusal, AuthoritySpendRecord, AuthorityUsage, NewTask,
    PaymentAuthority,
    authority::{AuthorityInterval, check_spend, window_start},
    store::{AuthorityError, AuthorityStore, StoreError},
};

use super::{SqliteStore, backend, corrupt, is_unique_violation, millis, undecodable};
use crate::errors::refused;
use crate::rows;

/// Live (not given back) spending of one authority per window: `(window_start, spent, spends)`.
type Windows = Vec<(i64, i64, i64)>;

/// The usage at `now` from the authority's live spending per window.
fn usage(a: &PaymentAuthority, windows: &[(i64, i64, i64)], now: DateTime<Utc>) -> AuthorityUsage {
    let current = millis(window_start(a, now));
    let spent = windows
        .iter()
        .filter(|w| w.0 == current)
        .fold(0i64, |sum, w| sum.saturating_add(w.1));
    let spends = windows.iter().fold(0i64, |n, w| n.saturating_add(w.2));
    AuthorityUsage::compute(a, spent, u32::try_from(spends).unwrap_or(u32::MAX), now)
}

fn window_from_row(r: &SqliteRow) -> Result<(i64, i64, i64), StoreError> {
    let err = |e| backend(e, "reading authority usage");
    Ok((
        r.try_get("window_start").map_err(err)?,
        r.try_get("spent").map_err(err)?,
        r.try_get("spends").map_err(err)?,
    ))
}

/// Checks and stores a new task's spend inside the task's transaction (after the task row,
/// which it references). `Ok(Err(_))`: refused; the caller drops the transaction.
pub(super) async fn spend_authority(
    tx: &mut SqliteConnection,
    task: &NewTask,
) -> Result<Result<(), AuthorityRefusal>, sqlx::Error> {
    let Some(spend) = &task.authority_spend else {
        return Ok(Ok(()));
    };
    let row = sqlx::query(
        "SELECT id, account_id, principal_type, principal_id, agent_provider, scope, \
         amount_value, amount_interval, currency, expires_at, revocation_url, receipt_required, \
         verification_required, created_by, created_at, revoked_at \
         FROM payment_authorities WHERE id = $1",
    )
    .bind(spend.authority_id.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        return Ok(Err(AuthorityRefusal::UnknownAuthority));
    };
    let authority = rows::authority(&row).map_err(undecodable)?;
    let start = window_start(&authority, task.created_at);
    // Inside the write transaction: every spend committed before is seen.
    let spent: i64 = sqlx::query_scalar(
        "SELECT COALESCE(SUM(amount), 0) FROM authority_spends \
         WHERE authority_id = $1 AND window_start = $2 AND released_at IS NULL",
    )
    .bind(spend.authority_id.as_str())
    .bind(millis(start))
    .fetch_one(&mut *tx)
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
    .bind(millis(window))
    .bind(millis(task.created_at))
    .execute(&mut *tx)
    .await;
    match inserted {
        Ok(_) => Ok(Ok(())),
        // The single-use index: another live spend exists (a backstop to the check above).
        Err(e) if single_use && is_unique_violation(&e) => Ok(Err(AuthorityRefusal::Exhausted)),
        Err(e) => Err(e),
    }
}

#[async_trait]
impl AuthorityStore for SqliteStore {
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
        .bind(millis(a.expires_at))
        .bind(&a.revocation_url)
        .bind(a.receipt_required)
        .bind(a.verification_required)
        .bind(&a.created_by)
        .bind(millis(a.created_at))
        .bind(a.revoked_at.map(millis))
        .execute(self.writer())
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
        let a = rows::authority(&row)?;
        let windows = sqlx::query(
            "SELECT window_start, SUM(amount) AS spent, COUNT(*) AS spends FROM authority_spends \
             WHERE authority_id = $1 AND released_at IS NULL GROUP BY window_start",
        )
        .bind(id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "reading authority usage"))?
        .iter()
        .map(window_from_row)
        .collect::<Result<Windows, _>>()?;
        let usage = usage(&a, &windows, now);
        Ok(Some((a, usage)))
    }

    async fn authorities(
        &self,
        account: &AccountId,
        now: DateTime<Utc>,
    ) -> Result<Vec<(PaymentAuthority, AuthorityUsage)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, account_id, principal_type, principal_id, agent_provider, scope, \
             amount_value, amount_interval, currency, expires_at, revocation_url, \
             receipt_required, verification_required, created_by, created_at, revoked_at \
             FROM payment_authorities WHERE account_id = $1 ORDER BY created_at DESC, id DESC",
        )
        .bind(account.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing payment authorities"))?;
        // The live spending of all of them in one read, per authority and window.
        let mut windows: HashMap<String, Windows> = HashMap::new();
        for r in sqlx::query(
            "SELECT s.authority_id, s.window_start, SUM(s.amount) AS spent, COUNT(*) AS spends \
             FROM authority_spends s JOIN payment_authorities a ON a.id = s.authority_id \
             WHERE a.account_id = $1 AND s.released_at IS NULL \
             GROUP BY s.authority_id, s.window_start",
        )
        .bind(account.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "reading authority usage"))?
        {
            let id: String = r
                .try_get("authority_id")
                .map_err(|e| backend(e, "reading authority usage"))?;
            windows.entry(id).or_default().push(window_from_row(&r)?);
        }
        rows.iter()
            .map(|row| {
                let a = rows::authority(row)?;
                let live = windows
                    .get(a.authority_id.as_str())
                    .map_or(&[][..], Vec::as_slice);
                let usage = usage(&a, live, now);
                Ok((a, usage))
            })
            .collect()
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
        .bind(millis(at))
        .bind(id.as_str())
        .bind(account.as_str())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| AuthorityError::Store(backend(e, "revoking payment authority")))?
        .map(|r| rows::authority(&r).map_err(AuthorityError::Store))
        .transpose()?
        .ok_or(AuthorityError::NotFound)
    }
}
