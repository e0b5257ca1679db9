//! Readiness scans: a public audit of a company site for agent discoverability and
//! executability. A scan is a fixed list of checks, each pass, warn, fail or neutral with its
//! evidence; the score is the share of scored checks that pass and the level is the highest
//! rung of the ladder (0-5) whose checks all pass. Stored whole so a report reads back as
//! answered; reports stored before the ladder existed get their level from their checks.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::ScanId;

/// Every check a scan runs, in report order (grouped as the public scanners group them:
/// discoverability, bot rules, content, integration, commerce).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckId {
    RobotsTxt,
    Sitemap,
    LinkHeaders,
    RobotsAiRules,
    ContentSignals,
    WebBotAuth,
    /// Named `markdown` before the ladder; old reports read back under the new name.
    #[serde(alias = "markdown")]
    MarkdownNegotiation,
    MarkdownMirror,
    LlmsTxt,
    LlmsTxtLinks,
    LlmsFullTxt,
    StructuredData,
    Forms,
    ApiCatalog,
    Openapi,
    /// Named `mcp_discovery` before the ladder.
    #[serde(alias = "mcp_discovery")]
    McpServerCard,
    McpProbe,
    A2aAgentCard,
    AgentSkills,
    OauthDiscovery,
    OauthProtectedResource,
    WebMcp,
    CommerceFiles,
    X402,
    Ucp,
    Acp,
    Ap2,
}

impl CheckId {
    pub const ALL: [CheckId; 27] = [
        CheckId::RobotsTxt,
        CheckId::Sitemap,
        CheckId::LinkHeaders,
        CheckId::RobotsAiRules,
        CheckId::ContentSignals,
        CheckId::WebBotAuth,
        CheckId::MarkdownNegotiation,
        CheckId::MarkdownMirror,
        CheckId::LlmsTxt,
        CheckId::LlmsTxtLinks,
        CheckId::LlmsFullTxt,
        CheckId::StructuredData,
        CheckId::Forms,
        CheckId::ApiCatalog,
        CheckId::Openapi,
        CheckId::McpServerCard,
        CheckId::McpProbe,
        CheckId::A2aAgentCard,
        CheckId::AgentSkills,
        CheckId::OauthDiscovery,
        CheckId::OauthProtectedResource,
        CheckId::WebMcp,
        CheckId::CommerceFiles,
        CheckId::X402,
        CheckId::Ucp,
        CheckId::Acp,
        CheckId::Ap2,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::RobotsTxt => "robots_txt",
            CheckId::Sitemap => "sitemap",
            CheckId::LinkHeaders => "link_headers",
            CheckId::RobotsAiRules => "robots_ai_rules",
            CheckId::ContentSignals => "content_signals",
            CheckId::WebBotAuth => "web_bot_auth",
            CheckId::MarkdownNegotiation => "markdown_negotiation",
            CheckId::MarkdownMirror => "markdown_mirror",
            CheckId::LlmsTxt => "llms_txt",
            CheckId::LlmsTxtLinks => "llms_txt_links",
            CheckId::LlmsFullTxt => "llms_full_txt",
            CheckId::StructuredData => "structured_data",
            CheckId::Forms => "forms",
            CheckId::ApiCatalog => "api_catalog",
            CheckId::Openapi => "openapi",
            CheckId::McpServerCard => "mcp_server_card",
            CheckId::McpProbe => "mcp_probe",
            CheckId::A2aAgentCard => "a2a_agent_card",
            CheckId::AgentSkills => "agent_skills",
            CheckId::OauthDiscovery => "oauth_discovery",
            CheckId::OauthProtectedResource => "oauth_protected_resource",
            CheckId::WebMcp => "web_mcp",
            CheckId::CommerceFiles => "commerce_files",
            CheckId::X402 => "x402",
            CheckId::Ucp => "ucp",
            CheckId::Acp => "acp",
            CheckId::Ap2 => "ap2",
        }
    }

    pub fn parse(s: &str) -> Option<CheckId> {
        CheckId::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// What the check looks at, for people.
    pub fn title(self) -> &'static str {
        match self {
            CheckId::RobotsTxt => "robots.txt lets agents read the page",
            CheckId::Sitemap => "Sitemap",
            CheckId::LinkHeaders => "Link headers (RFC 8288) to agent resources",
            CheckId::RobotsAiRules => "robots.txt rules for AI crawlers",
            CheckId::ContentSignals => "Content-Signal in robots.txt",
            CheckId::WebBotAuth => "Web Bot Auth signatures directory",
            CheckId::MarkdownNegotiation => "Markdown on Accept: text/markdown",
            CheckId::MarkdownMirror => "Markdown mirror (/index.md)",
            CheckId::LlmsTxt => "/llms.txt",
            CheckId::LlmsTxtLinks => "/llms.txt links resolve",
            CheckId::LlmsFullTxt => "/llms-full.txt",
            CheckId::StructuredData => "Structured data (JSON-LD)",
            CheckId::Forms => "Forms an agent can fill",
            CheckId::ApiCatalog => "API catalog (RFC 9727)",
            CheckId::Openapi => "OpenAPI document",
            CheckId::McpServerCard => "MCP server card",
            CheckId::McpProbe => "Live MCP server (initialize, tools/list)",
            CheckId::A2aAgentCard => "A2A agent card",
            CheckId::AgentSkills => "Agent skills index",
            CheckId::OauthDiscovery => "OAuth authorization server metadata (RFC 8414)",
            CheckId::OauthProtectedResource => "OAuth protected-resource metadata",
            CheckId::WebMcp => "WebMCP tools on the page",
            CheckId::CommerceFiles => "Agent commerce files",
            CheckId::X402 => "x402 payment requirements",
            CheckId::Ucp => "Universal Commerce Protocol profile",
            CheckId::Acp => "Agentic Commerce Protocol file",
            CheckId::Ap2 => "AP2 extension in the A2A card",
        }
    }

    /// Informational checks never count in the score or the level: they pass or are neutral.
    /// Only Web Bot Auth: a site that sends no bots needs no directory. (`web_mcp` is scored; it
    /// is neutral only when no browser could run the page.)
    pub fn informational(self) -> bool {
        matches!(self, CheckId::WebBotAuth)
    }

    /// Checks that count only when the home page shows commerce (prices, a cart, offers);
    /// otherwise they are neutral.
    pub fn commerce(self) -> bool {
        matches!(
            self,
            CheckId::CommerceFiles | CheckId::X402 | CheckId::Ucp | CheckId::Acp | CheckId::Ap2
        )
    }

    /// 1 for a check that counts in the score when it is not neutral, 0 for an informational
    /// one.
    pub fn weight(self) -> u32 {
        u32::from(!self.informational())
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Pass,
    Warn,
    Fail,
    /// Not judged: an informational check that found nothing, a commerce check on a site
    /// that sells nothing, or `web_mcp` when no browser could run the page. Not counted in the
    /// score.
    Neutral,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "fail",
            CheckStatus::Neutral => "neutral",
        }
    }
}

/// One request a check made and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub url: String,
    /// The HTTP status; `None` when no answer came (refused, unreachable, timed out).
    pub status: Option<u16>,
    /// The start of the body, or why there was none.
    pub excerpt: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub id: CheckId,
    pub title: String,
    pub status: CheckStatus,
    pub weight: u32,
    /// What was found, in one sentence.
    pub summary: String,
    pub evidence: Vec<Evidence>,
    /// What to do about a warn or fail; `None` on a pass.
    pub recommendation: Option<String>,
}

impl CheckResult {
    /// Counts in the score: not informational and not neutral.
    pub fn scored(&self) -> bool {
        !self.id.informational() && self.status != CheckStatus::Neutral
    }
}

/// The rung of the ladder a site stands on, 0 to 5, each needing every rung below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReadinessLevel {
    NotReady = 0,
    /// Two of robots.txt, a sitemap and Link headers.
    BasicWebPresence = 1,
    /// + rules for AI crawlers and Content-Signal in robots.txt.
    BotAware = 2,
    /// + Markdown on `Accept: text/markdown`.
    AgentReadable = 3,
    /// + at least one integration document (API catalog, MCP card, A2A card, agent skills,
    ///   OAuth metadata).
    AgentIntegrated = 4,
    /// + a live MCP server, a valid OpenAPI document, llms.txt, the API catalog, the MCP
    ///   server card and agent skills all passing: an agent can find, learn and act alone.
    AgentNative = 5,
}

/// What one rung asks beyond the rung below: every check of `all_of` passing, and at least
/// `at_least` of `any_of`.
#[derive(Debug, Clone, Copy)]
pub struct Rung {
    pub level: ReadinessLevel,
    pub all_of: &'static [CheckId],
    pub any_of: &'static [CheckId],
    pub at_least: usize,
}

/// The ladder, from level 1 up.
pub const LADDER: [Rung; 5] = [
    Rung {
        level: ReadinessLevel::BasicWebPresence,
        all_of: &[],
        any_of: &[CheckId::RobotsTxt, CheckId::Sitemap, CheckId::LinkHeaders],
        at_least: 2,
    },
    Rung {
        level: ReadinessLevel::BotAware,
        all_of: &[CheckId::RobotsAiRules, CheckId::ContentSignals],
        any_of: &[],
        at_least: 0,
    },
    Rung {
        level: ReadinessLevel::AgentReadable,
        all_of: &[CheckId::MarkdownNegotiation],
        any_of: &[],
        at_least: 0,
    },
    Rung {
        level: ReadinessLevel::AgentIntegrated,
        all_of: &[],
        any_of: &[
            CheckId::ApiCatalog,
            CheckId::McpServerCard,
            CheckId::A2aAgentCard,
            CheckId::AgentSkills,
            CheckId::OauthDiscovery,
            CheckId::OauthProtectedResource,
        ],
        at_least: 1,
    },
    Rung {
        level: ReadinessLevel::AgentNative,
        all_of: &[
            CheckId::McpProbe,
            CheckId::Openapi,
            CheckId::LlmsTxt,
            CheckId::ApiCatalog,
            CheckId::McpServerCard,
            CheckId::AgentSkills,
        ],
        any_of: &[],
        at_least: 0,
    },
];

impl ReadinessLevel {
    pub const ALL: [ReadinessLevel; 6] = [
        ReadinessLevel::NotReady,
        ReadinessLevel::BasicWebPresence,
        ReadinessLevel::BotAware,
        ReadinessLevel::AgentReadable,
        ReadinessLevel::AgentIntegrated,
        ReadinessLevel::AgentNative,
    ];

    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n)).copied()
    }

    /// The name people read, as the public scanners write it.
    pub fn name(self) -> &'static str {
        match self {
            ReadinessLevel::NotReady => "Not Ready",
            ReadinessLevel::BasicWebPresence => "Basic Web Presence",
            ReadinessLevel::BotAware => "Bot-Aware",
            ReadinessLevel::AgentReadable => "Agent-Readable",
            ReadinessLevel::AgentIntegrated => "Agent-Integrated",
            ReadinessLevel::AgentNative => "Agent-Native",
        }
    }

    /// The name as an identifier (the store's `level` column).
    pub fn as_str(self) -> &'static str {
        match self {
            ReadinessLevel::NotReady => "not_ready",
            ReadinessLevel::BasicWebPresence => "basic_web_presence",
            ReadinessLevel::BotAware => "bot_aware",
            ReadinessLevel::AgentReadable => "agent_readable",
            ReadinessLevel::AgentIntegrated => "agent_integrated",
            ReadinessLevel::AgentNative => "agent_native",
        }
    }

    /// The highest rung whose checks (and every rung's below) pass.
    pub fn of(checks: &[CheckResult]) -> Self {
        let mut level = ReadinessLevel::NotReady;
        for rung in LADDER {
            if rung_missing(&rung, checks).is_some() {
                break;
            }
            level = rung.level;
        }
        level
    }
}

impl Serialize for ReadinessLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.number())
    }
}

impl<'de> Deserialize<'de> for ReadinessLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u8::deserialize(d)?;
        ReadinessLevel::from_number(n)
            .ok_or_else(|| serde::de::Error::custom(format!("no readiness level {n}")))
    }
}

fn passed(checks: &[CheckResult], id: CheckId) -> bool {
    checks
        .iter()
        .any(|c| c.id == id && c.status == CheckStatus::Pass)
}

/// What a rung still needs, or `None` when it is reached.
fn rung_missing(rung: &Rung, checks: &[CheckResult]) -> Option<NextLevel> {
    let missing: Vec<CheckId> = rung
        .all_of
        .iter()
        .copied()
        .filter(|id| !passed(checks, *id))
        .collect();
    let have = rung.any_of.iter().filter(|id| passed(checks, **id)).count();
    let more_of = rung.at_least.saturating_sub(have);
    if missing.is_empty() && more_of == 0 {
        return None;
    }
    Some(NextLevel {
        level: rung.level,
        missing,
        one_of: if more_of > 0 {
            rung.any_of
                .iter()
                .copied()
                .filter(|id| !passed(checks, *id))
                .collect()
        } else {
            Vec::new()
        },
        one_of_needed: more_of,
    })
}

/// The next rung and what it still needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextLevel {
    pub level: ReadinessLevel,
    /// Checks that must all pass.
    pub missing: Vec<CheckId>,
    /// Checks of which `one_of_needed` more must pass (empty when none is needed).
    pub one_of: Vec<CheckId>,
    pub one_of_needed: usize,
}

impl NextLevel {
    /// The rung above `level`, or `None` at the top.
    pub fn after(level: ReadinessLevel, checks: &[CheckResult]) -> Option<Self> {
        let rung = LADDER
            .iter()
            .find(|r| r.level.number() == level.number() + 1)?;
        rung_missing(rung, checks)
    }
}

/// The score: passes over scored checks (informational and neutral ones not counted), as a
/// percentage rounded down; 0 when nothing was scored.
pub fn score(checks: &[CheckResult]) -> u32 {
    let scored = checks.iter().filter(|c| c.scored()).count();
    let passes = checks
        .iter()
        .filter(|c| c.scored() && c.status == CheckStatus::Pass)
        .count();
    if scored == 0 {
        return 0;
    }
    u32::try_from(passes * 100 / scored).unwrap_or(100)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredScan")]
pub struct ScanReport {
    pub scan_id: ScanId,
    /// The URL as asked, normalised (scheme added, fragment dropped).
    pub url: String,
    /// The origin whose well-known files were checked.
    pub origin: String,
    pub score: u32,
    pub level: ReadinessLevel,
    /// In [`CheckId::ALL`] order.
    pub checks: Vec<CheckResult>,
    pub started_at: DateTime<Utc>,
    pub completed_at: DateTime<Utc>,
}

impl ScanReport {
    pub fn next_level(&self) -> Option<NextLevel> {
        NextLevel::after(self.level, &self.checks)
    }
}

/// A report as stored: reports from before the ladder hold a level name (`basic`,
/// `agent_ready`, ...) on another scale; theirs is worked out again from their checks.
#[derive(Deserialize)]
struct StoredScan {
    scan_id: ScanId,
    url: String,
    origin: String,
    score: u32,
    level: serde_json::Value,
    checks: Vec<CheckResult>,
    started_at: DateTime<Utc>,
    completed_at: DateTime<Utc>,
}

impl From<StoredScan> for ScanReport {
    fn from(s: StoredScan) -> Self {
        let level = s
            .level
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .and_then(ReadinessLevel::from_number)
            .unwrap_or_else(|| ReadinessLevel::of(&s.checks));
        ScanReport {
            scan_id: s.scan_id,
            url: s.url,
            origin: s.origin,
            score: s.score,
            level,
            checks: s.checks,
            started_at: s.started_at,
            completed_at: s.completed_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: CheckId, status: CheckStatus) -> CheckResult {
        CheckResult {
            id,
            title: id.title().into(),
            status,
            weight: id.weight(),
            summary: String::new(),
            evidence: Vec::new(),
            recommendation: None,
        }
    }

    fn all(status: CheckStatus) -> Vec<CheckResult> {
        CheckId::ALL.iter().map(|c| check(*c, status)).collect()
    }

    fn set(checks: &mut [CheckResult], id: CheckId, status: CheckStatus) {
        checks.iter_mut().find(|c| c.id == id).unwrap().status = status;
    }

    #[test]
    fn the_score_is_passes_over_scored_checks() {
        let mut checks = all(CheckStatus::Pass);
        assert_eq!(score(&checks), 100);
        assert_eq!(ReadinessLevel::of(&checks), ReadinessLevel::AgentNative);
        assert_eq!(NextLevel::after(ReadinessLevel::AgentNative, &checks), None);
        // Neutral and informational checks count neither way.
        set(&mut checks, CheckId::X402, CheckStatus::Neutral);
        set(&mut checks, CheckId::WebMcp, CheckStatus::Neutral);
        assert_eq!(score(&checks), 100);
        set(&mut checks, CheckId::Forms, CheckStatus::Fail);
        set(&mut checks, CheckId::Sitemap, CheckStatus::Warn);
        // 26 scored (27 less web_bot_auth; x402 and web_mcp neutral: 24), 22 pass.
        assert_eq!(score(&checks), 22 * 100 / 24);
        // web_mcp is scored: run in a browser and failing, it counts against the site.
        set(&mut checks, CheckId::WebMcp, CheckStatus::Fail);
        assert_eq!(score(&checks), 22 * 100 / 25);
        assert_eq!(CheckId::WebMcp.weight(), 1);
        // web_bot_auth never counts, whatever its status.
        set(&mut checks, CheckId::WebBotAuth, CheckStatus::Fail);
        assert_eq!(score(&checks), 22 * 100 / 25);
        assert_eq!(score(&all(CheckStatus::Fail)), 0);
        assert_eq!(score(&all(CheckStatus::Neutral)), 0);
    }

    #[test]
    fn the_ladder_needs_every_rung_below() {
        let mut checks = all(CheckStatus::Fail);
        assert_eq!(ReadinessLevel::of(&checks), ReadinessLevel::NotReady);
        let next = NextLevel::after(ReadinessLevel::NotReady, &checks).unwrap();
        assert_eq!(next.level, ReadinessLevel::BasicWebPresence);
        assert_eq!(next.one_of_needed, 2);
        assert_eq!(next.one_of.len(), 3);
        set(&mut checks, CheckId::RobotsTxt, CheckStatus::Pass);
        set(&mut checks, CheckId::LinkHeaders, CheckStatus::Pass);
        assert_eq!(
            ReadinessLevel::of(&checks),
            ReadinessLevel::BasicWebPresence
        );
        // Markdown alone does not skip Bot-Aware.
        set(&mut checks, CheckId::MarkdownNegotiation, CheckStatus::Pass);
        set(&mut checks, CheckId::ApiCatalog, CheckStatus::Pass);
        assert_eq!(
            ReadinessLevel::of(&checks),
            ReadinessLevel::BasicWebPresence
        );
        let next = NextLevel::after(ReadinessLevel::BasicWebPresence, &checks).unwrap();
        assert_eq!(
            next.missing,
            vec![CheckId::RobotsAiRules, CheckId::ContentSignals]
        );
        set(&mut checks, CheckId::RobotsAiRules, CheckStatus::Pass);
        set(&mut checks, CheckId::ContentSignals, CheckStatus::Pass);
        assert_eq!(ReadinessLevel::of(&checks), ReadinessLevel::AgentIntegrated);
        let next = NextLevel::after(ReadinessLevel::AgentIntegrated, &checks).unwrap();
        assert_eq!(next.level, ReadinessLevel::AgentNative);
        assert!(next.missing.contains(&CheckId::McpProbe));
        assert!(!next.missing.contains(&CheckId::ApiCatalog));
        // A warn is not a pass.
        set(&mut checks, CheckId::MarkdownNegotiation, CheckStatus::Warn);
        assert_eq!(ReadinessLevel::of(&checks), ReadinessLevel::BotAware);
    }

    #[test]
    fn ids_and_levels_serialise_and_old_reports_read_back() {
        for id in CheckId::ALL {
            assert_eq!(serde_json::to_value(id).unwrap(), id.as_str());
            assert_eq!(CheckId::parse(id.as_str()), Some(id));
        }
        assert_eq!(
            serde_json::to_value(ReadinessLevel::AgentNative).unwrap(),
            5
        );
        // A report stored before the ladder: old ids, the old level scale, no neutral.
        let old = serde_json::json!({
            "scan_id": "scn_01JZ0000000000000000000000",
            "url": "https://e.com/", "origin": "https://e.com", "score": 56,
            "level": "discoverable",
            "checks": [
                {"id": "robots_txt", "title": "r", "status": "pass", "weight": 8,
                 "summary": "", "evidence": [], "recommendation": null},
                {"id": "sitemap", "title": "s", "status": "pass", "weight": 6,
                 "summary": "", "evidence": [], "recommendation": null},
                {"id": "markdown", "title": "m", "status": "pass", "weight": 7,
                 "summary": "", "evidence": [], "recommendation": null},
                {"id": "mcp_discovery", "title": "d", "status": "warn", "weight": 8,
                 "summary": "", "evidence": [], "recommendation": "x"}
            ],
            "started_at": "2026-01-01T00:00:00Z", "completed_at": "2026-01-01T00:00:01Z"
        });
        let report: ScanReport = serde_json::from_value(old).unwrap();
        assert_eq!(report.level, ReadinessLevel::BasicWebPresence);
        assert_eq!(report.score, 56);
        assert_eq!(report.checks[2].id, CheckId::MarkdownNegotiation);
        assert_eq!(report.checks[3].id, CheckId::McpServerCard);
        let again: ScanReport =
            serde_json::from_value(serde_json::to_value(&report).unwrap()).unwrap();
        assert_eq!(again, report);
    }
}
