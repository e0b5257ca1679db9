//! The activity statements of `TaskStore::list_tasks` and `LedgerStore::usage_by_day`: a
//! keyset page of an account's tasks, and its credits per UTC day (days since the epoch, as
//! the SQLite store counts them). Ids compare byte by byte (`COLLATE "C"`), as in the other
//! stores, whatever the database's collation.

use chrono::{DateTime, Utc};
use svc_ports::{AccountId, StoreError, TaskQuery, TaskRecord, UsageRow};

use super::{PostgresStore, backend};
use crate::{activity::usage_row, rows};

impl PostgresStore {
    pub(super) async fn select_tasks(
        &self,
        account: &AccountId,
        query: &TaskQuery,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let (after_at, after_id) = match &query.after {
            Some(c) => (Some(c.created_at), Some(c.id.as_str())),
            None => (None, None),
        };
        sqlx::query(
            "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             status, response_status, response_body, artifact_id, artifact, created_at, \
             settled_at, verified_artifact, verified_at \
             FROM tasks \
             WHERE account_id = $1 \
               AND ($2::TEXT IS NULL OR status = $2) \
               AND ($3::TEXT IS NULL OR domain = $3) \
               AND ($4::TIMESTAMPTZ IS NULL OR created_at >= $4) \
               AND ($5::TIMESTAMPTZ IS NULL OR created_at < $5) \
               AND ($6::TIMESTAMPTZ IS NULL OR created_at < $6 \
                    OR (created_at = $6 AND id COLLATE \"C\" < $7::TEXT)) \
             ORDER BY created_at DESC, id COLLATE \"C\" DESC \
             LIMIT $8",
        )
        .bind(account.as_str())
        .bind(query.status.map(|s| s.as_str()))
        .bind(query.domain.as_deref())
        .bind(query.since)
        .bind(query.until)
        .bind(after_at)
        .bind(after_id)
        .bind(i64::from(query.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing tasks"))?
        .iter()
        .map(rows::task)
        .collect()
    }

    pub(super) async fn select_usage(
        &self,
        account: &AccountId,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        // Charges and refunds from the settled tasks (their capture and refund entries are
        // written with them, at `settled_at`, for their cost); the rest from the entries.
        sqlx::query(
            "SELECT FLOOR(EXTRACT(EPOCH FROM settled_at) / 86400)::BIGINT AS day, \
                CASE status WHEN 'completed' THEN 'charged' ELSE 'refunded' END AS usage, \
                key_id, SUM(cost)::BIGINT AS credits, COUNT(*) AS entries \
             FROM tasks \
             WHERE account_id = $1 AND cost > 0 AND status IN ('completed', 'failed') \
               AND settled_at >= $2 AND settled_at < $3 \
             GROUP BY 1, 2, 3 \
             UNION ALL \
             SELECT FLOOR(EXTRACT(EPOCH FROM created_at) / 86400)::BIGINT AS day, \
                CASE WHEN kind = 'purchase' THEN 'bought' WHEN kind = 'grant' THEN 'granted' \
                    WHEN delta < 0 THEN 'taken_back' ELSE 'released' END AS usage, \
                NULL::TEXT AS key_id, \
                SUM(CASE WHEN kind IN ('purchase', 'grant') THEN delta ELSE ABS(delta) END)::BIGINT \
                    AS credits, \
                COUNT(*) AS entries \
             FROM ledger_entries \
             WHERE account_id = $1 \
               AND (kind IN ('purchase', 'grant') \
                    OR (kind IN ('clawback', 'freeze', 'release', 'forfeit') AND delta <> 0)) \
               AND created_at >= $2 AND created_at < $3 \
             GROUP BY 1, 2",
        )
        .bind(account.as_str())
        .bind(from)
        .bind(until)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "summing usage"))?
        .iter()
        .map(usage_row)
        .collect()
    }
}
