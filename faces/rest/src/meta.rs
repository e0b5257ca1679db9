//! `GET /health` (in the OpenAPI document), and the probes of load balancers and orchestrators:
//! `GET /health/live` and `GET /health/ready` (plain routes, not in the document).

use crate::Tags;
use kit::problem::ApiProblem;
use kit::wire::meta::*;
use poem_openapi::{ApiResponse, OpenApi, payload::Json, types::ToJSON};

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

/// `GET /health/live`: the process is up and serving (200), whatever its store does. For a
/// load balancer's or orchestrator's liveness probe; not in the OpenAPI document.
#[poem::handler]
pub fn live() -> poem::Response {
    probe_answer(
        poem::http::StatusCode::OK,
        serde_json::json!({"status": "live"}),
    )
}

/// `GET /health/ready`: 200 when the store answers within a short time, its migrations are
/// current and the instance is not draining; else 503 problem+json (`unavailable`) with the
/// `reason`: `draining`, `store_unreachable`, `store_timeout` or `migrations_pending`. For a
/// load balancer's readiness probe; not in the OpenAPI document.
#[poem::handler]
pub async fn ready(ctx: poem::web::Data<&kit::context::AppContext>) -> poem::Response {
    match ctx.services.health.ready().await {
        Ok(()) => probe_answer(
            poem::http::StatusCode::OK,
            serde_json::json!({"status": "ready"}),
        ),
        Err(reason) => {
            let problem = ApiProblem::new(
                svc_ports::FailureClass::Unavailable,
                format!("This instance is not ready: {reason}."),
            )
            .retry_after(std::time::Duration::from_secs(1));
            let mut body = problem.body().to_json().unwrap_or_default();
            if let Some(map) = body.as_object_mut() {
                map.insert("reason".into(), reason.as_str().into());
            }
            let mut resp = probe_answer(poem::http::StatusCode::SERVICE_UNAVAILABLE, body);
            let headers = resp.headers_mut();
            headers.insert(
                poem::http::header::CONTENT_TYPE,
                poem::http::HeaderValue::from_static(kit::problem::PROBLEM_JSON),
            );
            headers.insert(
                poem::http::header::RETRY_AFTER,
                poem::http::HeaderValue::from_static("1"),
            );
            resp
        }
    }
}

fn probe_answer(status: poem::http::StatusCode, body: serde_json::Value) -> poem::Response {
    poem::Response::builder()
        .status(status)
        .content_type("application/json")
        .header(poem::http::header::CACHE_CONTROL, "no-store")
        .body(body.to_string())
}
