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
use poem_openapi::{
    ApiResponse, OpenApi, ResponseContent,
    param::Path,
    payload::{Json, PlainText},
};
use svc_ports::{FailureClass, ScanId};
use svc_services::telemetry::Face;

/// The report as JSON, or as Markdown for an agent (`format: "agent"`).
// Built once per answer and moved straight into the response: its size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(ResponseContent)]
pub enum ScanAnswer {
    Json(Json<ScanReportBody>),
    #[oai(content_type = "text/markdown; charset=utf-8")]
    Markdown(PlainText<String>),
}

#[derive(ApiResponse)]
pub enum ScanResponse {
    /// The scan ran; the report is stored.
    #[oai(status = 200)]
    Ok(ScanAnswer),
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
    /// No credentials. Audits a company URL for agent discoverability and executability in
    /// five families: discoverability (robots.txt, sitemap, `Link` headers), bot rules (AI
    /// crawler groups, Content-Signal, Web Bot Auth directory), content (Markdown
    /// negotiation and mirrors, `/llms.txt` with its links, `/llms-full.txt`, JSON-LD,
    /// forms), integration (API catalog, OpenAPI valid against the official schema, MCP
    /// server card at every path and a live read-only MCP probe, A2A card, agent skills with
    /// verified digests, OAuth authorization-server and protected-resource metadata, WebMCP)
    /// and commerce (commerce files, x402, UCP, ACP, AP2; scored only when the home page
    /// sells). Only reads: no form is submitted, no tool called, no payment made; every
    /// request goes through the guarded client, a few at a time, and the scan ends within
    /// 10 s however slow the site. Answers per check pass/warn/fail/neutral with evidence
    /// and a fix, a score (passes over scored checks), a level 0-5 with its name and what
    /// the next level needs; `format: "agent"` answers the same report as Markdown. Limited
    /// per client address (429 with `Retry-After`).
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
        let site = &self.ctx.origins.site_url;
        Ok(ScanResponse::Ok(match body.0.format {
            Some(ScanFormat::Agent) => {
                ScanAnswer::Markdown(PlainText(agent_markdown(&report, site)))
            }
            _ => ScanAnswer::Json(Json(report_body(report, site))),
        }))
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
