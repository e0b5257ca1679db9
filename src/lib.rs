//! The agent action and commerce service: the composition root (`startup`), its settings
//! (`config`), logging, the QA scenario player and the CLI. The services live in `svc-services`,
//! the faces in `faces/*`, the adapters in `adapters/*`; only `startup` names adapters.

pub mod config;
pub mod listen;
pub mod qa;
pub mod startup;
pub mod telemetry;

pub use svc_services as services;
pub use {a2a, kit, mcp, rest, web, wellknown};
