//! In-memory sealed values (connections' credentials and PKCE verifiers, webhook secrets) for
//! resealing, under the store's one lock.

use async_trait::async_trait;
use svc_ports::{
    SealedField, SealedSecret,
    store::{SealedStore, StoreError},
};

use crate::{MemoryStore, memory::State};

/// The value of `field` in record `id`, where it holds one.
fn slot<'a>(s: &'a mut State, field: SealedField, id: &str) -> Option<&'a mut SealedSecret> {
    match field {
        SealedField::ConnectionCredentials => s
            .connections
            .connections
            .iter_mut()
            .find(|c| c.id.as_str() == id)
            .and_then(|c| c.credentials.as_mut()),
        SealedField::ConnectionPkceVerifier => s
            .connections
            .connections
            .iter_mut()
            .find(|c| c.id.as_str() == id)
            .map(|c| &mut c.pkce_verifier),
        SealedField::WebhookSecret => s
            .hooks
            .endpoints
            .iter_mut()
            .find(|(e, _)| e.id.as_str() == id)
            .map(|(e, _)| &mut e.secret),
    }
}

#[async_trait]
impl SealedStore for MemoryStore {
    async fn sealed_values(
        &self,
        field: SealedField,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<(String, SealedSecret)>, StoreError> {
        let s = self.lock();
        let mut all: Vec<(String, SealedSecret)> = match field {
            SealedField::ConnectionCredentials => s
                .connections
                .connections
                .iter()
                .filter_map(|c| Some((c.id.as_str().to_owned(), c.credentials.clone()?)))
                .collect(),
            SealedField::ConnectionPkceVerifier => s
                .connections
                .connections
                .iter()
                .map(|c| (c.id.as_str().to_owned(), c.pkce_verifier.clone()))
                .collect(),
            SealedField::WebhookSecret => s
                .hooks
                .endpoints
                .iter()
                .map(|(e, _)| (e.id.as_str().to_owned(), e.secret.clone()))
                .collect(),
        };
        all.retain(|(id, _)| after.as_ref().is_none_or(|a| id.as_str() > a.as_str()));
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.truncate(limit as usize);
        Ok(all)
    }

    async fn replace_sealed(
        &self,
        field: SealedField,
        id: &str,
        old: &SealedSecret,
        new: &SealedSecret,
    ) -> Result<bool, StoreError> {
        let mut s = self.lock();
        match slot(&mut s, field, id) {
            Some(value) if value.as_bytes() == old.as_bytes() => {
                *value = new.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
