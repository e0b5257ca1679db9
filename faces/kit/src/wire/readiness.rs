//! `POST /api/readiness/scan` (no credentials, its own per-IP limit) and
//! `GET /api/readiness/scans/{scan_id}`.

use poem_openapi::{Enum, Object};

/// The site to audit.
#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct ScanBody {
    /// The company's URL (`https://example.com`; a bare domain gets `https://`). Its origin's
    /// well-known files are checked and the page itself is read as the home page.
    #[oai(validator(max_length = 2048))]
    pub url: String,
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
    #[oai(skip_serializing_if_is_none)]
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
