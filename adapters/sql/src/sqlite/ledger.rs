//! `LedgerStore`: balances kept on the account row, changed only in the transaction that writes
//! the ledger entry recording the change.

use async_trait::async_trait;
use sqlx::Row;
use svc_ports::{
    AccountId, Balance, GrantOutcome, LedgerEntry,
    ledger::{EntryKind, Grant},
    store::{LedgerError, LedgerStore, StoreError},
};

use super::{SqliteStore, backend, millis, undecodable};
use crate::rows;

/// Writes a ledger entry inside the transaction that moved its credits.
pub(super) async fn insert_entry(
    tx: &mut sqlx::SqliteConnection,
    entry: &LedgerEntry,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO ledger_entries \
         (id, account_id, kind, delta, balance_after, reference, memo, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(entry.id.as_str())
    .bind(entry.account_id.as_str())
    .bind(entry.kind.as_str())
    .bind(entry.delta)
    .bind(entry.balance_after)
    .bind(entry.reference.as_deref())
    .bind(&entry.memo)
    .bind(millis(entry.created_at))
    .execute(tx)
    .await
    .map(|_| ())
}

impl SqliteStore {
    /// `Err(RowNotFound)`: the account does not exist.
    async fn try_grant(&self, grant: &Grant) -> Result<GrantOutcome, sqlx::Error> {
        let mut tx = self.begin_write().await?;
        // The entry first, its balance read from the account: a reference applied before
        // inserts nothing (and then the balance is left alone), as does an unknown account.
        let balance_after: Option<i64> = sqlx::query_scalar(
            "INSERT INTO ledger_entries \
             (id, account_id, kind, delta, balance_after, reference, memo, created_at) \
             SELECT $1, id, $3, $4, spendable + $4, $5, $6, $7 FROM accounts WHERE id = $2 \
             ON CONFLICT (account_id, reference) DO NOTHING \
             RETURNING balance_after",
        )
        .bind(grant.id.as_str())
        .bind(grant.account_id.as_str())
        .bind(EntryKind::Grant.as_str())
        .bind(grant.amount.get())
        .bind(grant.reference.as_deref())
        .bind(&grant.memo)
        .bind(millis(grant.at))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(balance_after) = balance_after else {
            let Some(reference) = &grant.reference else {
                return Err(sqlx::Error::RowNotFound);
            };
            let earlier = sqlx::query(
                "SELECT id, account_id, kind, delta, balance_after, reference, memo, created_at \
                 FROM ledger_entries WHERE account_id = $1 AND reference = $2",
            )
            .bind(grant.account_id.as_str())
            .bind(reference)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
            let entry = rows::ledger_entry(&earlier).map_err(undecodable)?;
            return Ok(GrantOutcome::AlreadyApplied(entry));
        };
        sqlx::query("UPDATE accounts SET spendable = spendable + $1 WHERE id = $2")
            .bind(grant.amount.get())
            .bind(grant.account_id.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(GrantOutcome::Applied(grant.entry(balance_after)))
    }
}

#[async_trait]
impl LedgerStore for SqliteStore {
    async fn grant(&self, grant: &Grant) -> Result<GrantOutcome, LedgerError> {
        // Grants with one reference never race here: the one writer runs them in turn.
        match self.try_grant(grant).await {
            Ok(outcome) => Ok(outcome),
            Err(sqlx::Error::RowNotFound) => Err(LedgerError::UnknownAccount),
            Err(e) => Err(backend(e, "applying grant").into()),
        }
    }

    async fn balance(&self, account: &AccountId) -> Result<Balance, LedgerError> {
        let err = |e| backend(e, "reading balance");
        let row = sqlx::query("SELECT spendable, held, frozen FROM accounts WHERE id = $1")
            .bind(account.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?
            .ok_or(LedgerError::UnknownAccount)?;
        Ok(Balance {
            spendable: row.try_get("spendable").map_err(err)?,
            held: row.try_get("held").map_err(err)?,
            frozen: row.try_get("frozen").map_err(err)?,
        })
    }

    async fn entries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<LedgerEntry>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, kind, delta, balance_after, reference, memo, created_at \
             FROM ledger_entries WHERE account_id = $1 ORDER BY seq DESC LIMIT $2",
        )
        .bind(account.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing ledger entries"))?
        .iter()
        .map(rows::ledger_entry)
        .collect()
    }

    async fn usage_by_day(
        &self,
        account: &AccountId,
        from: chrono::DateTime<chrono::Utc>,
        until: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<svc_ports::UsageRow>, StoreError> {
        self.select_usage(account, from, until).await
    }
}
