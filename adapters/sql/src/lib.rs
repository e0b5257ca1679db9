//! SQLite (the embedded default) and Postgres (for more than one machine) behind the same
//! store ports, one plain module per store (`sqlite/`, `postgres/`), each a file per port
//! family with its statements written out beside the Rust that runs them (on Postgres the
//! execution path's are the body of two functions, migration 0019), and its own
//! migrations under `migrations/`. Both pass one contract suite (`contract-tests/`); every
//! statement is prepared against its migrated schema by a test (`statements.rs`).
//! Money-guarding uniqueness lives in constraints, so several instances on one Postgres cannot
//! apply the same grant twice.

mod activity;
mod errors;
mod group;
#[cfg(test)]
mod group_tests;
mod hook_rows;
mod migrations;
mod outcomes;
mod postgres;
#[cfg(test)]
mod postgres_schema_tests;
mod rows;
mod sqlite;
#[cfg(test)]
mod statements;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
