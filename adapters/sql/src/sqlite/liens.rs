//! The account's write-off liens (`svc_ports::billing::Liens`): read before a payment event is
//! planned, and replaced by what the plan leaves (migration 0033).

use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;
use svc_ports::{
    AccountId,
    billing::{Lien, Liens},
};

use super::{millis, undecodable};
use crate::rows;

/// The account's frozen credits and open liens, oldest first, for an event applied at `at`.
pub(super) async fn read(
    tx: &mut SqliteConnection,
    account: &AccountId,
    frozen: i64,
    at: DateTime<Utc>,
) -> Result<Liens, sqlx::Error> {
    let open = open(tx, account).await?;
    Ok(Liens { frozen, open, at })
}

/// The account's open liens, oldest first.
pub(super) async fn open(
    tx: &mut SqliteConnection,
    account: &AccountId,
) -> Result<Vec<Lien>, sqlx::Error> {
    sqlx::query(
        "SELECT reference, payment_id, kind, credits, since FROM write_off_liens \
         WHERE account_id = $1 ORDER BY since, reference",
    )
    .bind(account.as_str())
    .fetch_all(&mut *tx)
    .await?
    .iter()
    .map(rows::lien)
    .collect::<Result<Vec<_>, _>>()
    .map_err(undecodable)
}

/// Puts `liens` in place of the account's.
pub(super) async fn keep(
    tx: &mut SqliteConnection,
    account: &AccountId,
    liens: &[Lien],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM write_off_liens WHERE account_id = $1")
        .bind(account.as_str())
        .execute(&mut *tx)
        .await?;
    for l in liens {
        sqlx::query(
            "INSERT INTO write_off_liens (account_id, reference, payment_id, kind, credits, since) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(account.as_str())
        .bind(&l.reference)
        .bind(&l.payment_id)
        .bind(l.kind.as_str())
        .bind(l.credits)
        .bind(millis(l.since))
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
