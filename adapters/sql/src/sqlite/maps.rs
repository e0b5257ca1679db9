//! `MapStore`: Agent Maps, versioned per domain, with at most one published. The published
//! map is read on every execution (the service caches it).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AgentMap, Domain, MapDocument, MapStatus,
    store::{MapStore, MapStoreError, StoreError},
};

use super::{SqliteStore, backend, corrupt, millis};
use crate::rows;

#[async_trait]
impl MapStore for SqliteStore {
    async fn insert_map(
        &self,
        document: &MapDocument,
        origin: &str,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, StoreError> {
        let json = serde_json::to_string(document).map_err(corrupt("map document"))?;
        // One statement picks the next version and stores it: no transaction needed.
        let version: i64 = sqlx::query_scalar(
            "INSERT INTO agent_maps (domain, version, status, origin, document, created_at, \
             updated_at) \
             SELECT $1, COALESCE(MAX(version), 0) + 1, 'candidate', $2, $3, $4, $4 \
             FROM agent_maps WHERE domain = $1 \
             RETURNING version",
        )
        .bind(document.domain.as_str())
        .bind(origin)
        .bind(&json)
        .bind(millis(at))
        .fetch_one(self.writer())
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
             FROM agent_maps WHERE ($1 IS NULL OR domain = $1) ORDER BY domain, version DESC",
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
        // The partial unique index on published maps answers this.
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
        // The target is the version asked for, or the newest. Retire first (one published
        // version at a time), then publish; no target rolls the retirement back.
        let version = version.map(i64::from);
        let mut tx = self.begin_write().await.map_err(err)?;
        sqlx::query(
            "UPDATE agent_maps SET status = 'retired', updated_at = $1 \
             WHERE domain = $2 AND status = 'published' \
             AND version <> COALESCE($3, (SELECT MAX(version) FROM agent_maps WHERE domain = $2))",
        )
        .bind(millis(at))
        .bind(domain.as_str())
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let row = sqlx::query(
            "UPDATE agent_maps SET status = 'published', updated_at = $1 \
             WHERE domain = $2 \
             AND version = COALESCE($3, (SELECT MAX(version) FROM agent_maps WHERE domain = $2)) \
             RETURNING domain, version, status, origin, document, created_at, updated_at",
        )
        .bind(millis(at))
        .bind(domain.as_str())
        .bind(version)
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let Some(row) = row else {
            return Err(MapStoreError::NotFound);
        };
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
        .bind(millis(at))
        .bind(domain.as_str())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| MapStoreError::Store(backend(e, "retiring agent map")))?
        .map(|r| rows::agent_map(&r).map_err(MapStoreError::Store))
        .transpose()?
        .ok_or(MapStoreError::NotFound)
    }
}
