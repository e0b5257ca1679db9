//! SQLite (the embedded default) and Postgres (for more than one machine) behind the same
//! store ports. Both run the same statements (`$N` placeholders work in both dialects); each has
//! its own migrations under `migrations/`. Money-guarding uniqueness lives in constraints, so
//! several instances on one Postgres cannot apply the same grant twice.

mod actions;
mod authority;
mod billing;
mod common;
mod connections;
mod identity;
mod migrations;
mod postgres;
mod readiness;
mod sqlite;
mod telemetry;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
