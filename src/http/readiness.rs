//! `POST /api/readiness/scan` (no credentials, its own per-IP limit) and
//! `GET /api/readiness/scans/{scan_id}`.

use poem::Request;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi, param::Path, payload::Json};
use svc_ports::{FailureClass, ScanId};

use super::{
    Tags, limits::RateLimits, middleware::client_ip_of, problem::ApiProblem, types::StrictString,
};
use crate::{
    context::AppContext,
    services::{readiness::ScanFailure, telemetry::Face},
};

/// The site to audit.
#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct ScanBody {
    /// The company's URL (`https://example.com`; a bare domain gets `https://`). Its origin's
    /// well-known files are checked and the page itself is read as the home page.
    #[oai(validator(max_length = 2048))]
    pub url: StrictString,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum CheckStatusBody {
    Pass,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ReadinessLevelBody {
    NotReady,
    Basic,
    Discoverable,
    Executable,
    AgentReady,
}

/// One request a check made and what came back.
#[derive(Debug, Object)]
pub struct EvidenceBody {
    pub url: String,
    /// HTTP status; absent when nothing answered (refused, unreachable, timed out).
    pub status: Option<u16>,
    /// The start of the body, or why there was none.
    pub excerpt: String,
}

#[derive(Debug, Object)]
pub struct CheckBody {
    /// `robots_txt`, `sitemap`, `llms_txt`, `llms_full_txt`, `openapi`, `mcp_discovery`,
    /// `mcp_probe`, `a2a_agent_card`, `oauth_protected_resource`, `markdown`,
    /// `structured_data`, `forms` or `commerce_files`.
    pub id: String,
    pub title: String,
    pub status: CheckStatusBody,
    /// Points of the score (out of 100 across all checks): a pass earns all, a warn half.
    pub weight: u32,
    pub summary: String,
    pub evidence: Vec<EvidenceBody>,
    /// What to do about a warn or fail; absent on a pass.
    pub recommendation: Option<String>,
}

/// The audit of one site.
#[derive(Debug, Object)]
pub struct ScanReportBody {
    /// `scn_` + ULID; the report reads back at `/api/readiness/scans/{scan_id}`.
    pub scan_id: String,
    pub url: String,
    pub origin: String,
    /// 0 to 100.
    pub score: u32,
    /// `agent_ready` from 90, `executable` from 75, `discoverable` from 50, `basic` from 25.
    pub level: ReadinessLevelBody,
    pub checks: Vec<CheckBody>,
    /// The report page for people.
    pub report_url: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub completed_at: chrono::DateTime<chrono::Utc>,
}

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

pub fn report_body(report: svc_ports::ScanReport, site_url: &str) -> ScanReportBody {
    use svc_ports::{CheckStatus, ReadinessLevel};
    ScanReportBody {
        report_url: format!("{site_url}/readiness/{}", report.scan_id),
        scan_id: report.scan_id.to_string(),
        url: report.url,
        origin: report.origin,
        score: report.score,
        level: match report.level {
            ReadinessLevel::NotReady => ReadinessLevelBody::NotReady,
            ReadinessLevel::Basic => ReadinessLevelBody::Basic,
            ReadinessLevel::Discoverable => ReadinessLevelBody::Discoverable,
            ReadinessLevel::Executable => ReadinessLevelBody::Executable,
            ReadinessLevel::AgentReady => ReadinessLevelBody::AgentReady,
        },
        checks: report
            .checks
            .into_iter()
            .map(|c| CheckBody {
                id: c.id.to_string(),
                title: c.title,
                status: match c.status {
                    CheckStatus::Pass => CheckStatusBody::Pass,
                    CheckStatus::Warn => CheckStatusBody::Warn,
                    CheckStatus::Fail => CheckStatusBody::Fail,
                },
                weight: c.weight,
                summary: c.summary,
                evidence: c
                    .evidence
                    .into_iter()
                    .map(|e| EvidenceBody {
                        url: e.url,
                        status: e.status,
                        excerpt: e.excerpt,
                    })
                    .collect(),
                recommendation: c.recommendation,
            })
            .collect(),
        started_at: report.started_at,
        completed_at: report.completed_at,
    }
}

impl From<ScanFailure> for ApiProblem {
    fn from(e: ScanFailure) -> Self {
        match e {
            ScanFailure::InvalidUrl(_) => {
                ApiProblem::new(FailureClass::InvalidRequest, e.to_string())
            }
            ScanFailure::Refused(r) => ApiProblem::new(FailureClass::UrlRefused, r.to_string()),
            ScanFailure::Unreachable(_) => {
                ApiProblem::new(FailureClass::UpstreamUnreachable, e.to_string())
            }
            ScanFailure::Busy => ApiProblem::new(FailureClass::Unavailable, e.to_string())
                .retry_after(std::time::Duration::from_secs(5)),
            ScanFailure::Store(e) => ApiProblem::internal(format!("{e:#}")),
        }
    }
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
        limits: poem::web::Data<&RateLimits>,
        body: Json<ScanBody>,
    ) -> Result<ScanResponse, ApiProblem> {
        let ip = client_ip_of(req, self.ctx.limits.trust_forwarded_for);
        limits.check_scan(ip)?;
        let who = ip.map(|ip| ip.to_string()).unwrap_or_default();
        let report = crate::services::readiness::scan_recorded(
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
            .map_err(|e| ApiProblem::internal(format!("{e:#}")))?
            .ok_or_else(not_found)?;
        Ok(ScanReadResponse::Ok(Json(report_body(
            report,
            &self.ctx.origins.site_url,
        ))))
    }
}
