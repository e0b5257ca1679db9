//! `SealedStore`: every sealed BYTEA (connections' credentials and PKCE verifiers, webhook
//! secrets), read in pages by id and replaced only while unchanged, for resealing.

use async_trait::async_trait;
use svc_ports::{
    SealedField, SealedSecret,
    store::{SealedStore, StoreError},
};

use crate::rows;

use super::{PostgresStore, backend};

#[async_trait]
impl SealedStore for PostgresStore {
    async fn sealed_values(
        &self,
        field: SealedField,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<(String, SealedSecret)>, StoreError> {
        // In the primary key's order (its index); the empty string sorts before every id.
        let query = match field {
            SealedField::ConnectionCredentials => sqlx::query(
                "SELECT id, credentials AS sealed FROM connections \
                 WHERE id > $1 AND credentials IS NOT NULL \
                 ORDER BY id LIMIT $2",
            ),
            SealedField::ConnectionPkceVerifier => sqlx::query(
                "SELECT id, pkce_verifier AS sealed FROM connections \
                 WHERE id > $1 ORDER BY id LIMIT $2",
            ),
            SealedField::WebhookSecret => sqlx::query(
                "SELECT id, secret AS sealed FROM webhook_endpoints \
                 WHERE id > $1 ORDER BY id LIMIT $2",
            ),
        };
        let found = query
            .bind(after.unwrap_or_default())
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend(e, "reading sealed values"))?;
        found.iter().map(rows::sealed_value).collect()
    }

    async fn replace_sealed(
        &self,
        field: SealedField,
        id: &str,
        old: &SealedSecret,
        new: &SealedSecret,
    ) -> Result<bool, StoreError> {
        let query = match field {
            SealedField::ConnectionCredentials => sqlx::query(
                "UPDATE connections SET credentials = $1 WHERE id = $2 AND credentials = $3",
            ),
            SealedField::ConnectionPkceVerifier => sqlx::query(
                "UPDATE connections SET pkce_verifier = $1 WHERE id = $2 AND pkce_verifier = $3",
            ),
            SealedField::WebhookSecret => sqlx::query(
                "UPDATE webhook_endpoints SET secret = $1 WHERE id = $2 AND secret = $3",
            ),
        };
        let done = query
            .bind(new.as_bytes())
            .bind(id)
            .bind(old.as_bytes())
            .execute(&self.pool)
            .await
            .map_err(|e| backend(e, "replacing a sealed value"))?;
        Ok(done.rows_affected() == 1)
    }
}
