//! `A2aTaskStore`: finished A2A tasks, one row each under the hex SHA-256 of the task id, the
//! document as JSON text.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::Row;
use svc_ports::{A2aTask, A2aTaskStore, KeyHash, StoreError};

use super::{SqliteStore, backend, corrupt, from_millis, millis};

#[async_trait]
impl A2aTaskStore for SqliteStore {
    async fn insert_a2a_task(&self, task: &A2aTask) -> Result<(), StoreError> {
        // A taken id hash fails the primary key: nothing is replaced.
        sqlx::query(
            "INSERT INTO a2a_tasks (id_hash, document, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(task.id_hash.to_hex())
        .bind(&task.document)
        .bind(millis(task.created_at))
        .bind(millis(task.expires_at))
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "storing an A2A task"))?;
        Ok(())
    }

    async fn a2a_task(
        &self,
        id_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<A2aTask>, StoreError> {
        let err = |e| backend(e, "reading an A2A task");
        let row = sqlx::query(
            "SELECT id_hash, document, created_at, expires_at FROM a2a_tasks \
             WHERE id_hash = $1 AND expires_at > $2",
        )
        .bind(id_hash.to_hex())
        .bind(millis(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(err)?;
        let Some(r) = row else { return Ok(None) };
        let hex: String = r.try_get("id_hash").map_err(err)?;
        Ok(Some(A2aTask {
            id_hash: KeyHash::from_hex(&hex)
                .ok_or_else(|| corrupt("A2A task id hash")("bad hex"))?,
            document: r.try_get("document").map_err(err)?,
            created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
            expires_at: from_millis(r.try_get("expires_at").map_err(err)?)?,
        }))
    }

    async fn purge_a2a_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM a2a_tasks WHERE expires_at <= $1")
            .bind(millis(before))
            .execute(self.writer())
            .await
            .map_err(|e| backend(e, "purging A2A tasks"))?;
        Ok(done.rows_affected())
    }
}
