//! A domain's Agent Maps: import (checked, stored as a candidate), list, publish, retire, and
//! the published map executions and discovery read (cached for a second).

use std::sync::Arc;

use svc_ports::{AgentMap, Domain, MapDocument, store::MapStoreError};

use super::{ActionService, ExecuteRefusal, compile};

/// Published maps are read on every execution; they change only when a person publishes or
/// retires one, so each instance keeps what it read for a second.
const MAP_CACHE_TTL: chrono::TimeDelta = chrono::TimeDelta::seconds(1);

impl ActionService {
    /// Checks a map document fully (its rules and that every schema compiles) and stores it as
    /// the domain's next candidate version.
    pub async fn import_map(
        &self,
        document: &MapDocument,
        origin: &str,
    ) -> anyhow::Result<AgentMap> {
        document.check()?;
        for action in &document.actions {
            compile(&action.params_schema)
                .map_err(|e| anyhow::anyhow!("action `{}`: params_schema: {e}", action.name))?;
            compile(&action.output_schema)
                .map_err(|e| anyhow::anyhow!("action `{}`: output_schema: {e}", action.name))?;
        }
        let map = self
            .ports
            .maps
            .insert_map(document, origin, self.now())
            .await?;
        tracing::info!(domain = %map.document.domain, version = map.version, origin, "agent map stored as candidate");
        Ok(map)
    }

    pub async fn maps(&self, domain: Option<&str>) -> anyhow::Result<Vec<AgentMap>> {
        let domain = domain.map(Domain::parse).transpose()?;
        Ok(self.ports.maps.maps(domain).await?)
    }

    pub async fn publish(&self, domain: &str, version: Option<u32>) -> anyhow::Result<AgentMap> {
        let domain = Domain::parse(domain)?;
        let published = self
            .ports
            .maps
            .publish_map(&domain, version, self.now())
            .await;
        self.forget_published(&domain);
        match published {
            Ok(m) => {
                tracing::info!(domain = %domain, version = m.version, "agent map published");
                Ok(m)
            }
            Err(MapStoreError::NotFound) => anyhow::bail!("no map version to publish for {domain}"),
            Err(MapStoreError::Store(e)) => Err(anyhow::Error::new(e)),
        }
    }

    pub async fn retire(&self, domain: &str) -> anyhow::Result<AgentMap> {
        let domain = Domain::parse(domain)?;
        let retired = self.ports.maps.retire_map(&domain, self.now()).await;
        self.forget_published(&domain);
        match retired {
            Ok(m) => {
                tracing::info!(domain = %domain, version = m.version, "agent map retired");
                Ok(m)
            }
            Err(MapStoreError::NotFound) => anyhow::bail!("nothing is published for {domain}"),
            Err(MapStoreError::Store(e)) => Err(anyhow::Error::new(e)),
        }
    }

    /// The published map of a domain (read through a one-second cache).
    /// The published map of `domain` for an API key's holder: the key must carry the
    /// `discover` scope. Counted in the funnel as a capability read through `face`.
    pub async fn discover(
        &self,
        principal: &crate::Principal,
        domain: &str,
        face: crate::telemetry::Face,
    ) -> Result<Arc<AgentMap>, ExecuteRefusal> {
        if !principal.key.scopes.contains("discover") {
            return Err(ExecuteRefusal::MissingScopes {
                missing: vec!["discover".into()],
                consequential: false,
            });
        }
        let map = self.published(domain).await?;
        self.funnel.record(
            crate::telemetry::FunnelStep::of_account(
                face,
                "capability_read",
                "discover",
                &principal.account.id,
            )
            .capability("discover"),
        );
        Ok(map)
    }

    /// Every domain with a published map, by name: what `discover` accepts, for a key holding
    /// the `discover` scope (the answer an `unknown_domain` points to).
    pub async fn supported_domains(
        &self,
        principal: &crate::Principal,
    ) -> Result<Vec<AgentMap>, ExecuteRefusal> {
        if !principal.key.scopes.contains("discover") {
            return Err(ExecuteRefusal::MissingScopes {
                missing: vec!["discover".into()],
                consequential: false,
            });
        }
        let mut published: Vec<AgentMap> = self
            .ports
            .maps
            .maps(None)
            .await?
            .into_iter()
            .filter(|m| m.status == svc_ports::MapStatus::Published)
            .collect();
        published.sort_by(|a, b| a.document.domain.as_str().cmp(b.document.domain.as_str()));
        Ok(published)
    }

    pub async fn published(&self, domain: &str) -> Result<Arc<AgentMap>, ExecuteRefusal> {
        let parsed =
            Domain::parse(domain).map_err(|_| ExecuteRefusal::UnknownDomain(domain.to_owned()))?;
        let cached = {
            let cache = self.published.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .get(parsed.as_str())
                .filter(|(at, _)| self.now() - *at < MAP_CACHE_TTL)
                .map(|(_, m)| m.clone())
        };
        let map = match cached {
            Some(m) => m,
            None => {
                let m = self.ports.maps.published_map(&parsed).await?.map(Arc::new);
                let mut cache = self.published.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() > 10_000 {
                    cache.clear();
                }
                cache.insert(parsed.to_string(), (self.now(), m.clone()));
                m
            }
        };
        map.ok_or_else(|| ExecuteRefusal::UnknownDomain(parsed.to_string()))
    }

    fn forget_published(&self, domain: &Domain) {
        self.published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(domain.as_str());
    }
}
