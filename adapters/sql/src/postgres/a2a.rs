//! `A2aTaskStore`: finished A2A tasks, one row each under the SHA-256 of the task id. The
//! document stays JSON in TEXT: it quotes the caller's message, which may hold a NUL that
//! JSONB refuses (migration 0013).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{A2aTask, A2aTaskStore, KeyHash, StoreError};

use super::{PostgresStore, backend, col, hash, ms};

#[async_trait]
impl A2aTaskStore for PostgresStore {
    async fn insert_a2a_task(&self, task: &A2aTask) -> Result<(), StoreError> {
        // A taken id hash fails the primary key: nothing is replaced.
        sqlx::query(
            "INSERT INTO a2a_tasks (id_hash, document, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(task.id_hash.as_bytes().as_slice())
        .bind(&task.document)
        .bind(ms(task.created_at))
        .bind(ms(task.expires_at))
        .execute(&self.pool)
        .await
        .map_err(|e| backend(e, "storing an A2A task"))?;
        Ok(())
    }

    async fn a2a_task(
        &self,
        id_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<A2aTask>, StoreError> {
        let row = sqlx::query(
            "SELECT id_hash, document, created_at, expires_at FROM a2a_tasks \
             WHERE id_hash = $1 AND expires_at > $2",
        )
        .bind(id_hash.as_bytes().as_slice())
        .bind(ms(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading an A2A task"))?;
        row.map(|r| {
            Ok(A2aTask {
                id_hash: hash(&r, "id_hash")?,
                document: col(&r, "document")?,
                created_at: col(&r, "created_at")?,
                expires_at: col(&r, "expires_at")?,
            })
        })
        .transpose()
    }

    async fn purge_a2a_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM a2a_tasks WHERE expires_at <= $1")
            .bind(ms(before))
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "purging A2A tasks"))?;
        Ok(done.rows_affected())
    }
}
