//! Whether the store can serve: the port behind `/health/ready` and the pool gauges of
//! `/metrics`.

use async_trait::async_trait;

use crate::store::StoreError;

/// Connections of a store's pools at one moment (summed over its pools).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolUsage {
    /// Checked out and running a statement or transaction.
    pub in_use: u32,
    /// Open and waiting in the pool.
    pub idle: u32,
}

/// The store's own health. Every method is cheap: a load balancer calls `ping` and
/// `migrations_current` every few seconds on every instance.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait StoreHealth: Send + Sync {
    /// Runs a trivial statement. MUST return an error when the store cannot answer (unreachable,
    /// closed, out of connections); `Ok` means a statement just ran.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Whether every migration this build knows is applied, successfully and unchanged (same
    /// checksum). Migrations newer than this build (a later version rolling out beside it) do
    /// not make it `false`. MUST return `Ok(false)` for a store that was never migrated, and an
    /// error only when the store cannot answer. A store without a schema (memory) is always
    /// current.
    async fn migrations_current(&self) -> Result<bool, StoreError>;

    /// The pools' connections now; `None` for a store without a pool (memory).
    fn pool_usage(&self) -> Option<PoolUsage>;
}
