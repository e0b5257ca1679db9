//! API tests: the real app on a random port, driven over HTTP.

mod a2a_stream;
mod actions;
mod authority;
mod authority_property;
mod billing;
mod billing_property;
mod connections;
mod device_authorization;
mod discovery;
mod execution_property;
mod helpers;
mod instances;
mod mcp;
mod openapi;
mod operations;
mod read;
mod readiness;
mod shared_limits;
mod signup;
mod store_outage;
mod telemetry;
mod usage;
mod verdicts;
mod webhooks;
mod webhooks_billing;
mod webhooks_listen;
