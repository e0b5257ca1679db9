//! `MapStore`: Agent Maps, versioned per domain, at most one published (a partial unique
//! index). The document stays TEXT: a learned map quotes a site's labels, which may hold a
//! NUL that JSONB refuses.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AgentMap, Domain, MapDocument, MapStatus,
    store::{MapStore, MapStoreError, StoreError},
};

use super::{PostgresStore, backend, corrupt, ms};
use crate::rows;

#[async_trait]
impl MapStore for PostgresStore {
    async fn insert_map(
        &self,
        document: &MapDocument,
        origin: &str,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, StoreError> {
        let json = serde_json::to_string(document).map_err(corrupt("map document"))?;
        // The next version in the same statement; two inserts racing for one domain collide
        // on the primary key and the later one fails (as it did in a transaction).
        let version: i64 = sqlx::query_scalar(
            r#"
            INSERT INTO agent_maps (domain, version, status, origin, document, created_at,
                updated_at)
            SELECT $1, COALESCE(MAX(version), 0) + 1, 'candidate', $2, $3, $4, $4
            FROM agent_maps WHERE domain = $1
            RETURNING version
            "#,
        )
        .bind(document.domain.as_str())
        .bind(origin)
        .bind(&json)
        .bind(ms(at))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| backend(e, "storing agent map"))?;
        Ok(AgentMap {
            document: document.clone(),
            version: u32::try_from(version).map_err(corrupt("map version"))?,
            status: MapStatus::Candidate,
            origin: origin.to_owned(),
            created_at: at,
            updated_at: at,
        })
    }

    async fn maps(&self, domain: Option<Domain>) -> Result<Vec<AgentMap>, StoreError> {
        sqlx::query(
            "SELECT domain, version, status, origin, document, created_at, updated_at \
             FROM agent_maps WHERE ($1::TEXT IS NULL OR domain = $1) \
             ORDER BY domain, version DESC",
        )
        .bind(domain.as_ref().map(Domain::as_str))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing agent maps"))?
        .iter()
        .map(rows::agent_map)
        .collect()
    }

    async fn published_map(&self, domain: &Domain) -> Result<Option<AgentMap>, StoreError> {
        sqlx::query(
            "SELECT domain, version, status, origin, document, created_at, updated_at \
             FROM agent_maps WHERE domain = $1 AND status = 'published'",
        )
        .bind(domain.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading published map"))?
        .map(|r| rows::agent_map(&r))
        .transpose()
    }

    async fn publish_map(
        &self,
        domain: &Domain,
        version: Option<u32>,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError> {
        let err = |e| MapStoreError::Store(backend(e, "publishing agent map"));
        // Two statements in one transaction: the old version is retired before the new one
        // is published, or the one-published index would refuse the new one.
        let mut tx = self.pool.begin().await.map_err(err)?;
        let target: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(version) FROM agent_maps \
             WHERE domain = $1 AND ($2::BIGINT IS NULL OR version = $2)",
        )
        .bind(domain.as_str())
        .bind(version.map(i64::from))
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
        // The newest version, or the one asked for; NULL when there is none.
        let Some(target) = target else {
            return Err(MapStoreError::NotFound);
        };
        sqlx::query(
            "UPDATE agent_maps SET status = 'retired', updated_at = $1 \
             WHERE domain = $2 AND status = 'published' AND version <> $3",
        )
        .bind(ms(at))
        .bind(domain.as_str())
        .bind(target)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let row = sqlx::query(
            "UPDATE agent_maps SET status = 'published', updated_at = $1 \
             WHERE domain = $2 AND version = $3 \
             RETURNING domain, version, status, origin, document, created_at, updated_at",
        )
        .bind(ms(at))
        .bind(domain.as_str())
        .bind(target)
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
        let map = rows::agent_map(&row)?;
        tx.commit().await.map_err(err)?;
        Ok(map)
    }

    async fn retire_map(
        &self,
        domain: &Domain,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError> {
        sqlx::query(
            "UPDATE agent_maps SET status = 'retired', updated_at = $1 \
             WHERE domain = $2 AND status = 'published' \
             RETURNING domain, version, status, origin, document, created_at, updated_at",
        )
        .bind(ms(at))
        .bind(domain.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| MapStoreError::Store(backend(e, "retiring agent map")))?
        .map(|r| rows::agent_map(&r).map_err(MapStoreError::Store))
        .transpose()?
        .ok_or(MapStoreError::NotFound)
    }
}
