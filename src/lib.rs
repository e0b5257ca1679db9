//! The agent action and commerce service: domain services written against ports, and the
//! faces (REST, MCP, A2A, web pages, discovery files) that drive them. Only `startup` names adapters.

pub mod a2a;
pub mod config;
pub mod context;
pub mod http;
pub mod mcp;
pub mod qa;
pub use svc_services as services;
pub mod startup;
pub mod telemetry;
pub mod web;
pub mod wellknown;
