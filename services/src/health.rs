//! Readiness: whether this instance should receive traffic. Ready when the store answers a
//! trivial statement within a short time, every migration this build knows is applied, and
//! the instance is not draining (SIGTERM turns that on at once, before the listener closes).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use svc_ports::StoreHealth;

/// How long the store may take to answer a readiness probe: shorter than the probe timeouts
/// load balancers use (typically 2-5 s), so a slow store reads as not ready, not as a hang.
pub const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// Why an instance is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    #[error("the instance is shutting down")]
    Draining,
    #[error("the store did not answer")]
    StoreUnreachable,
    #[error("the store did not answer within {} ms", READY_TIMEOUT.as_millis())]
    StoreTimeout,
    #[error("the store's migrations are not all applied")]
    MigrationsPending,
}

impl NotReady {
    /// The machine-readable reason (`reason` in the 503 answer).
    pub fn as_str(self) -> &'static str {
        match self {
            NotReady::Draining => "draining",
            NotReady::StoreUnreachable => "store_unreachable",
            NotReady::StoreTimeout => "store_timeout",
            NotReady::MigrationsPending => "migrations_pending",
        }
    }
}

pub struct HealthService {
    store: Arc<dyn StoreHealth>,
    draining: AtomicBool,
    timeout: Duration,
}

impl HealthService {
    pub fn new(store: Arc<dyn StoreHealth>) -> Self {
        Self {
            store,
            draining: AtomicBool::new(false),
            timeout: READY_TIMEOUT,
        }
    }

    /// Another time limit for the store's answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// From now on the instance answers not ready (`draining`); it never becomes ready again.
    pub fn drain(&self) {
        if !self.draining.swap(true, Ordering::SeqCst) {
            tracing::info!("draining: readiness now answers 503");
        }
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Ready, or why not. The store is asked only when the instance is not draining.
    pub async fn ready(&self) -> Result<(), NotReady> {
        if self.is_draining() {
            return Err(NotReady::Draining);
        }
        let checked = tokio::time::timeout(self.timeout, async {
            self.store.ping().await.map_err(|e| {
                tracing::warn!(error = %e, "readiness: the store did not answer");
                NotReady::StoreUnreachable
            })?;
            match self.store.migrations_current().await {
                Ok(true) => Ok(()),
                Ok(false) => Err(NotReady::MigrationsPending),
                Err(e) => {
                    tracing::warn!(error = %e, "readiness: the store did not answer");
                    Err(NotReady::StoreUnreachable)
                }
            }
        })
        .await;
        let verdict = checked.unwrap_or(Err(NotReady::StoreTimeout));
        if let Err(reason) = verdict {
            metrics::counter!(crate::metrics::NOT_READY, "reason" => reason.as_str()).increment(1);
        }
        verdict
    }

    /// The store's pools now, for the gauges.
    pub fn pool_usage(&self) -> Option<svc_ports::PoolUsage> {
        self.store.pool_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::{StoreError, health::MockStoreHealth};

    fn store(ping: bool, current: bool) -> Arc<dyn StoreHealth> {
        let mut m = MockStoreHealth::new();
        m.expect_ping().returning(move || {
            if ping {
                Ok(())
            } else {
                Err(StoreError(anyhow::anyhow!("gone")))
            }
        });
        m.expect_migrations_current().returning(move || Ok(current));
        Arc::new(m)
    }

    #[tokio::test]
    async fn ready_only_with_a_current_answering_store_and_not_draining() {
        assert_eq!(HealthService::new(store(true, true)).ready().await, Ok(()));
        assert_eq!(
            HealthService::new(store(false, true)).ready().await,
            Err(NotReady::StoreUnreachable)
        );
        assert_eq!(
            HealthService::new(store(true, false)).ready().await,
            Err(NotReady::MigrationsPending)
        );
        let draining = HealthService::new(store(true, true));
        draining.drain();
        assert_eq!(draining.ready().await, Err(NotReady::Draining));
    }

    /// A store that never answers is not ready once the timeout passes.
    #[tokio::test]
    async fn a_store_that_hangs_is_not_ready() {
        struct Hangs;
        #[async_trait::async_trait]
        impl StoreHealth for Hangs {
            async fn ping(&self) -> Result<(), StoreError> {
                std::future::pending().await
            }
            async fn migrations_current(&self) -> Result<bool, StoreError> {
                Ok(true)
            }
            fn pool_usage(&self) -> Option<svc_ports::PoolUsage> {
                None
            }
        }
        assert_eq!(
            HealthService::new(Arc::new(Hangs))
                .with_timeout(Duration::from_millis(10))
                .ready()
                .await,
            Err(NotReady::StoreTimeout)
        );
    }
}
