//! The account's liens (`svc_ports::billing::Liens`): read before a payment event is
//! planned, and replaced by what the plan leaves (migrations 0033, 0034).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use svc_ports::{
    AccountId,
    billing::{Lien, Liens},
};

use super::ms;
use crate::errors::undecodable;
use crate::rows;

/// The account's frozen credits and open liens, oldest first, for an event applied at `at`.
pub(super) async fn read(
    tx: &mut PgConnection,
    account: &AccountId,
    frozen: i64,
    at: DateTime<Utc>,
) -> Result<Liens, sqlx::Error> {
    let open = sqlx::query(
        "SELECT reference, payment_id, kind, credits, since FROM dispute_liens \
         WHERE account_id = $1 ORDER BY since, reference",
    )
    .bind(account.as_str())
    .fetch_all(&mut *tx)
    .await?
    .iter()
    .map(rows::lien)
    .collect::<Result<Vec<_>, _>>()
    .map_err(undecodable)?;
    // What each payment with a lien holds frozen: its liens are covered by the others' only.
    let mut frozen_of = BTreeMap::new();
    for l in &open {
        if frozen_of.contains_key(&l.payment_id) {
            continue;
        }
        let held: i64 = sqlx::query_scalar(
            "SELECT (SELECT COALESCE(SUM(frozen_delta), 0)::BIGINT FROM receipts \
                     WHERE account_id = $1 AND payment_id = $2) \
                  + (SELECT COALESCE(SUM(credits), 0)::BIGINT FROM task_freezes \
                     WHERE account_id = $1 AND payment_id = $2)",
        )
        .bind(account.as_str())
        .bind(&l.payment_id)
        .fetch_one(&mut *tx)
        .await?;
        frozen_of.insert(l.payment_id.clone(), held);
    }
    Ok(Liens {
        frozen,
        open,
        frozen_of,
        at,
    })
}

/// Puts `liens` in place of the account's.
pub(super) async fn keep(
    tx: &mut PgConnection,
    account: &AccountId,
    liens: &[Lien],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM dispute_liens WHERE account_id = $1")
        .bind(account.as_str())
        .execute(&mut *tx)
        .await?;
    for l in liens {
        sqlx::query(
            "INSERT INTO dispute_liens (account_id, reference, payment_id, kind, credits, since) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(account.as_str())
        .bind(&l.reference)
        .bind(&l.payment_id)
        .bind(l.kind.as_str())
        .bind(l.credits)
        .bind(ms(l.since))
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
