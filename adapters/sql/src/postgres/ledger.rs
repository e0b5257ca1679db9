//! `LedgerStore`: grants, balances and entries. A grant is one statement: the reference
//! lookup, the credit and the entry, so two grants with one reference never both apply (the
//! second one's entry breaks the unique reference and the whole statement rolls back).

use async_trait::async_trait;
use sqlx::PgConnection;
use svc_ports::{
    AccountId, Balance, GrantOutcome, LedgerEntry,
    ledger::Grant,
    store::{LedgerError, LedgerStore, StoreError},
};

use super::{PostgresStore, backend, col, is_unique_violation, ms};
use crate::rows;

/// Writes a ledger entry inside the transaction that moved its credits.
pub(super) async fn insert_entry(
    conn: &mut PgConnection,
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
    .bind(ms(entry.created_at))
    .execute(conn)
    .await
    .map(|_| ())
}

impl PostgresStore {
    async fn entry_by_reference(
        &self,
        account: &AccountId,
        reference: &str,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, kind, delta, balance_after, reference, memo, created_at \
             FROM ledger_entries WHERE account_id = $1 AND reference = $2",
        )
        .bind(account.as_str())
        .bind(reference)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "looking up grant reference"))?
        .map(|r| rows::ledger_entry(&r))
        .transpose()
    }
}

#[async_trait]
impl LedgerStore for PostgresStore {
    async fn grant(&self, grant: &Grant) -> Result<GrantOutcome, LedgerError> {
        // `earlier`: the entry of this reference, if any (a NULL reference matches none).
        // `credited` runs only without one; `balance_after` is NULL when nothing was credited.
        let row = sqlx::query(
            r#"
            WITH earlier AS (
                SELECT id, account_id, kind, delta, balance_after, reference, memo, created_at
                FROM ledger_entries
                WHERE account_id = $2 AND reference = $4
            ),
            credited AS (
                UPDATE accounts SET spendable = spendable + $3
                WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM earlier)
                RETURNING spendable
            ),
            entry AS (
                INSERT INTO ledger_entries
                    (id, account_id, kind, delta, balance_after, reference, memo, created_at)
                SELECT $1, $2, 'grant', $3, spendable, $4, $5, $6 FROM credited
            )
            SELECT credited.spendable AS credited_balance,
                earlier.id, earlier.account_id, earlier.kind, earlier.delta,
                earlier.balance_after, earlier.reference, earlier.memo, earlier.created_at
            FROM (SELECT) AS one
            LEFT JOIN credited ON TRUE
            LEFT JOIN earlier ON TRUE
            "#,
        )
        .bind(grant.id.as_str())
        .bind(grant.account_id.as_str())
        .bind(grant.amount.get())
        .bind(grant.reference.as_deref())
        .bind(&grant.memo)
        .bind(ms(grant.at))
        .fetch_one(&self.pool)
        .await;
        let row = match row {
            Ok(row) => row,
            // Lost a race with the same reference on another connection: the winner's entry
            // is the answer, and this statement changed nothing.
            Err(e) if is_unique_violation(&e) && grant.reference.is_some() => {
                let reference = grant.reference.as_deref().unwrap_or_default();
                return match self
                    .entry_by_reference(&grant.account_id, reference)
                    .await?
                {
                    Some(entry) => Ok(GrantOutcome::AlreadyApplied(entry)),
                    None => Err(backend(e, "applying grant").into()),
                };
            }
            Err(e) => return Err(backend(e, "applying grant").into()),
        };
        if col::<Option<String>>(&row, "id")?.is_some() {
            return Ok(GrantOutcome::AlreadyApplied(rows::ledger_entry(&row)?));
        }
        match col::<Option<i64>>(&row, "credited_balance")? {
            Some(balance_after) => Ok(GrantOutcome::Applied(grant.entry(balance_after))),
            None => Err(LedgerError::UnknownAccount),
        }
    }

    async fn balance(&self, account: &AccountId) -> Result<Balance, LedgerError> {
        let row = sqlx::query("SELECT spendable, held, frozen FROM accounts WHERE id = $1")
            .bind(account.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend(e, "reading balance"))?
            .ok_or(LedgerError::UnknownAccount)?;
        Ok(Balance {
            spendable: col(&row, "spendable")?,
            held: col(&row, "held")?,
            frozen: col(&row, "frozen")?,
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
