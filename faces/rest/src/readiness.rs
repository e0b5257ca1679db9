//! `POST /api/readiness/scan` (no credentials, its own per-IP limit) and
//! `GET /api/readiness/scans/{scan_id}`.

use crate::Tags;
use kit::JsonBody;
use kit::context::AppContext;
use kit::edge::client_ip_of;
use kit::limits::shared_limit;
use kit::problem::ApiProblem;
use kit::wire::readiness::*;
use poem::Request;
use poem_openapi::{ApiResponse, OpenApi, param::Path, payload::Json};
use svc_ports::{FailureClass, ScanId};
use svc_services::telemetry::Face;

#[derive(ApiResponse)]
pub enum ScanResponse {
    /// The scan ran; the report is stored.
    #[oai(status = 200)]
    Ok(Json<ScanReportBody>),
}

#[derive(ApiResponse)]
pub enum ScanReadResponse {
    #[oai(status = 200)]
    Ok(Json<ScanReportBody>),
}

pub struct ReadinessApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Readiness")]
impl ReadinessApi {
    /// Scan a site for agent readiness
    ///
    /// No credentials. Audits a company URL for agent discoverability and executability:
    /// robots.txt and its rules for AI agents, the sitemap, `/llms.txt` (llmstxt.org
    /// structure) and `/llms-full.txt`, an OpenAPI document (found and valid against the
    /// official schema), MCP discovery (server card, tools manifest) and a live read-only
    /// MCP probe (`initialize`, `tools/list`), the A2A agent card at both paths, OAuth
    /// protected-resource metadata, Markdown on `Accept: text/markdown`, JSON-LD, forms an
    /// agent can fill, and the commerce files. Only reads: no form is submitted, no tool
    /// called, no payment made; every request goes through the guarded client. Answers a
    /// score (0-100), a level, and per check pass/warn/fail with evidence and a
    /// recommendation. Limited per client address (429 with `Retry-After`).
    #[oai(path = "/api/readiness/scan", method = "post")]
    async fn scan(
        &self,
        req: &Request,
        body: JsonBody<ScanBody>,
    ) -> Result<ScanResponse, ApiProblem> {
        let ip = client_ip_of(req, &self.ctx.proxies);
        shared_limit(
            self.ctx.services.scans.hit(ip).await,
            "Too many readiness scans from this address.",
        )?;
        let who = ip.map(|ip| ip.to_string()).unwrap_or_default();
        let report = svc_services::readiness::scan_recorded(
            &self.ctx.services,
            Face::Rest,
            &who,
            body.0.url.as_ref(),
        )
        .await?;
        Ok(ScanResponse::Ok(Json(report_body(
            report,
            &self.ctx.origins.site_url,
        ))))
    }

    /// A stored readiness scan
    #[oai(path = "/api/readiness/scans/:scan_id", method = "get")]
    async fn scan_report(&self, scan_id: Path<String>) -> Result<ScanReadResponse, ApiProblem> {
        let not_found = || ApiProblem::new(FailureClass::NotFound, "No scan has this id.");
        let id = ScanId::parse(&scan_id.0).map_err(|_| not_found())?;
        let report = self
            .ctx
            .services
            .readiness
            .report(&id)
            .await
            .map_err(|e| ApiProblem::failure(&e))?
            .ok_or_else(not_found)?;
        Ok(ScanReadResponse::Ok(Json(report_body(
            report,
            &self.ctx.origins.site_url,
        ))))
    }
}
