//! The wire types: the JSON bodies of the API, one definition for every face.

pub mod actions;
pub mod activity;
pub mod authority;
pub mod connections;
pub mod discovery;
pub mod hooks;
pub mod keys;
pub mod meta;
pub mod read;
pub mod readiness;
pub mod signup;
pub mod telemetry;
pub mod types;
pub mod usage;
