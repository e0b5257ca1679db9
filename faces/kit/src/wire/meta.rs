//! `GET /health`: liveness of the process and its store.

use poem_openapi::Object;

#[derive(Debug, Object)]
pub struct Health {
    /// `ok` when the service answers.
    pub status: String,
    pub version: String,
}
