//! The sandbox's own parts: in-memory stores that are real, selectable implementations of the
//! store ports (not test fakes), used by `svc sandbox` and by the contract suite; and the demo target site the sandbox's reader
//! may fetch.

mod auth_server;
mod demo_site;
mod memory;
mod memory_a2a;
mod memory_actions;
mod memory_activity;
mod memory_authority;
mod memory_billing;
mod memory_connections;
mod memory_hooks;
mod memory_identity;
mod memory_key_set;
mod memory_limits;
mod memory_readiness;
mod memory_sealed;
mod memory_telemetry;
mod outbox;
mod payments;
mod readiness_sites;
mod sites;

pub use auth_server::{
    ACCESS_TOKEN_SECONDS, BOOKING_ACCOUNT, BOOKING_PROVIDER, OTHER_BOOKING_ACCOUNT,
    SANDBOX_CLIENT_ID, SandboxAuthServer, account_of_bearer,
};
pub use demo_site::{DEMO_HOST, DemoSite};
pub use memory::MemoryStore;
pub use outbox::MemoryOutbox;
pub use payments::{Delivery, SANDBOX_PROVIDER_KEY, SandboxPaymentProvider};
pub use readiness_sites::{
    BLOG_HOST, LACKING, NEVER_HOST, READY_HOST, ReadinessSites, lacking_host,
};
pub use sites::{ActionSite, ActionSites, BOOKING_HOST, FLAKY_HOST, SHOP_HOST};
