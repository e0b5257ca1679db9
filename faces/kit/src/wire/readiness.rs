//! `POST /api/readiness/scan` (no credentials, its own per-IP limit) and
//! `GET /api/readiness/scans/{scan_id}`.

use poem_openapi::{Enum, Object};
use svc_ports::{CheckId, NextLevel, ReadinessLevel};

/// The site to audit.
#[derive(Debug, Object)]
#[oai(deny_unknown_fields)]
pub struct ScanBody {
    /// The company's URL (`https://example.com`; a bare domain gets `https://`). Its origin's
    /// well-known files are checked and the page itself is read as the home page.
    #[oai(validator(max_length = 2048))]
    pub url: String,
    // Described on the enum: a described `$ref` field would lose its `null` (document.rs).
    pub format: Option<ScanFormat>,
}

/// How the report is answered: `json` (the default) as JSON; `agent` as Markdown an agent
/// can act on (`text/markdown`): the level, what the next level needs, and each missing check
/// with its fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ScanFormat {
    Json,
    Agent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum CheckStatusBody {
    Pass,
    Warn,
    Fail,
    /// Not judged, not scored: an informational check that found nothing, a commerce check
    /// on a site whose home page sells nothing, or `web_mcp` when no browser could run the
    /// page.
    Neutral,
}

/// The level's name, as the public scanners write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
pub enum LevelNameBody {
    #[oai(rename = "Not Ready")]
    NotReady,
    #[oai(rename = "Basic Web Presence")]
    BasicWebPresence,
    #[oai(rename = "Bot-Aware")]
    BotAware,
    #[oai(rename = "Agent-Readable")]
    AgentReadable,
    #[oai(rename = "Agent-Integrated")]
    AgentIntegrated,
    #[oai(rename = "Agent-Native")]
    AgentNative,
}

impl From<ReadinessLevel> for LevelNameBody {
    fn from(l: ReadinessLevel) -> Self {
        match l {
            ReadinessLevel::NotReady => LevelNameBody::NotReady,
            ReadinessLevel::BasicWebPresence => LevelNameBody::BasicWebPresence,
            ReadinessLevel::BotAware => LevelNameBody::BotAware,
            ReadinessLevel::AgentReadable => LevelNameBody::AgentReadable,
            ReadinessLevel::AgentIntegrated => LevelNameBody::AgentIntegrated,
            ReadinessLevel::AgentNative => LevelNameBody::AgentNative,
        }
    }
}

/// One request a check made and what came back.
#[derive(Debug, Object)]
pub struct EvidenceBody {
    pub url: String,
    /// HTTP status; absent when nothing answered (refused, unreachable, timed out).
    #[oai(skip_serializing_if_is_none)]
    pub status: Option<u16>,
    /// The start of the body, or why there was none.
    pub excerpt: String,
}

#[derive(Debug, Object)]
pub struct CheckBody {
    /// One of: `robots_txt`, `sitemap`, `link_headers`, `robots_ai_rules`, `content_signals`,
    /// `web_bot_auth`, `markdown_negotiation`, `markdown_mirror`, `llms_txt`,
    /// `llms_txt_links`, `llms_full_txt`, `structured_data`, `forms`, `api_catalog`,
    /// `openapi`, `mcp_server_card`, `mcp_probe`, `a2a_agent_card`, `agent_skills`,
    /// `oauth_discovery`, `oauth_protected_resource`, `web_mcp`, `commerce_files`, `x402`,
    /// `ucp`, `acp`, `ap2`.
    pub id: String,
    pub title: String,
    pub status: CheckStatusBody,
    /// 1 when the check counts in the score (unless neutral), 0 for the informational one
    /// (`web_bot_auth`).
    pub weight: u32,
    pub summary: String,
    pub evidence: Vec<EvidenceBody>,
    /// What to do about a warn, fail or neutral; absent on a pass.
    #[oai(skip_serializing_if_is_none)]
    pub recommendation: Option<String>,
}

/// The next rung of the ladder and the checks it still needs.
#[derive(Debug, Object)]
pub struct NextLevelBody {
    #[oai(validator(minimum(value = "1"), maximum(value = "5")))]
    pub level: u8,
    pub level_name: LevelNameBody,
    /// Checks that must all pass.
    pub missing: Vec<String>,
    /// Checks of which `one_of_needed` more must pass (empty when none is needed).
    pub one_of: Vec<String>,
    pub one_of_needed: u32,
}

/// The audit of one site.
#[derive(Debug, Object)]
pub struct ScanReportBody {
    /// `scn_` + ULID; the report reads back at `/api/readiness/scans/{scan_id}`.
    pub scan_id: String,
    pub url: String,
    pub origin: String,
    /// Passes over scored checks, 0 to 100 (informational and neutral checks not counted).
    #[oai(validator(maximum(value = "100")))]
    pub score: u32,
    /// The rung of the ladder, 0 to 5, each needing every rung below: 1 two of robots.txt,
    /// sitemap and Link headers; 2 also AI crawler rules and Content-Signal; 3 also Markdown
    /// negotiation; 4 also one integration document (API catalog, MCP server card, A2A card,
    /// agent skills, OAuth metadata); 5 also the live MCP probe, OpenAPI, llms.txt, the API
    /// catalog, the MCP server card and agent skills.
    #[oai(validator(maximum(value = "5")))]
    pub level: u8,
    pub level_name: LevelNameBody,
    /// What the next level needs; absent at level 5.
    #[oai(skip_serializing_if_is_none)]
    pub next_level: Option<NextLevelBody>,
    pub checks: Vec<CheckBody>,
    /// The report page for people (shareable).
    pub report_url: String,
    /// An SVG badge of the level (`image/svg+xml`).
    pub badge_url: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub completed_at: chrono::DateTime<chrono::Utc>,
}

fn next_level_body(next: NextLevel) -> NextLevelBody {
    NextLevelBody {
        level: next.level.number(),
        level_name: next.level.into(),
        missing: next.missing.iter().map(ToString::to_string).collect(),
        one_of: next.one_of.iter().map(ToString::to_string).collect(),
        one_of_needed: u32::try_from(next.one_of_needed).unwrap_or(u32::MAX),
    }
}

pub fn report_body(report: svc_ports::ScanReport, site_url: &str) -> ScanReportBody {
    use svc_ports::CheckStatus;
    let next_level = report.next_level().map(next_level_body);
    ScanReportBody {
        report_url: format!("{site_url}/readiness/{}", report.scan_id),
        badge_url: format!("{site_url}/readiness/{}/badge.svg", report.scan_id),
        scan_id: report.scan_id.to_string(),
        url: report.url,
        origin: report.origin,
        score: report.score,
        level: report.level.number(),
        level_name: report.level.into(),
        next_level,
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
                    CheckStatus::Neutral => CheckStatusBody::Neutral,
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

/// The report as Markdown an agent can act on: the level, what the next one needs, then each
/// check that is not passing with its evidence and its fix.
pub fn agent_markdown(report: &svc_ports::ScanReport, site_url: &str) -> String {
    use std::fmt::Write;
    use svc_ports::CheckStatus;
    let mut md = String::new();
    let _ = writeln!(md, "# Agent readiness of {}\n", report.origin);
    let _ = writeln!(
        md,
        "Level {} of 5: **{}**. Score {}/100 (passes over scored checks).\n",
        report.level.number(),
        report.level.name(),
        report.score
    );
    // Without a site (the CLI) the report is not served anywhere: its id only.
    let where_ = if site_url.is_empty() {
        format!("Scan {}", report.scan_id)
    } else {
        format!("Report: {site_url}/readiness/{}", report.scan_id)
    };
    let _ = writeln!(
        md,
        "{where_} (scanned {} at {}).\n",
        report.url,
        report
            .completed_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let fix_of = |id: CheckId| {
        report
            .checks
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.recommendation.clone())
            .unwrap_or_default()
    };
    match report.next_level() {
        Some(next) => {
            let _ = writeln!(
                md,
                "## To reach level {} ({})\n",
                next.level.number(),
                next.level.name()
            );
            for id in &next.missing {
                let _ = writeln!(md, "- [ ] `{id}`: {}", fix_of(*id));
            }
            if next.one_of_needed > 0 {
                let _ = writeln!(md, "- [ ] {} of these:", next.one_of_needed);
                for id in &next.one_of {
                    let _ = writeln!(md, "  - `{id}`: {}", fix_of(*id));
                }
            }
            md.push('\n');
        }
        None => md.push_str("The site stands on the top rung.\n\n"),
    }
    let open: Vec<_> = report
        .checks
        .iter()
        .filter(|c| matches!(c.status, CheckStatus::Fail | CheckStatus::Warn))
        .collect();
    if !open.is_empty() {
        md.push_str("## Checks to fix\n\n");
        for c in open {
            let _ = writeln!(md, "### `{}` ({}): {}\n", c.id, c.status.as_str(), c.title);
            let _ = writeln!(md, "Found: {}\n", c.summary);
            for e in &c.evidence {
                let status = e
                    .status
                    .map_or("no answer".to_owned(), |s| format!("HTTP {s}"));
                let _ = writeln!(md, "- {} → {status}", e.url);
            }
            if let Some(fix) = &c.recommendation {
                let _ = writeln!(md, "\nFix: {fix}\n");
            }
        }
    }
    md.push_str("## All checks\n\n| check | status | found |\n|---|---|---|\n");
    for c in &report.checks {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            c.id,
            c.status.as_str(),
            c.summary.replace('|', "\\|").replace('\n', " ")
        );
    }
    md
}
