//! `GET /health`: liveness of the process and its store.

use crate::Tags;
use kit::problem::ApiProblem;
use kit::wire::meta::*;
use poem_openapi::{ApiResponse, OpenApi, payload::Json};

#[derive(ApiResponse)]
pub enum HealthResponse {
    #[oai(status = 200)]
    Ok(Json<Health>),
}

pub struct MetaApi;

#[OpenApi(tag = "Tags::Meta")]
impl MetaApi {
    /// Health check (also the MCP origin's health path).
    #[oai(path = "/health", method = "get", operation_id = "getHealth")]
    async fn health(&self) -> Result<HealthResponse, ApiProblem> {
        Ok(HealthResponse::Ok(Json(Health {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        })))
    }
}
