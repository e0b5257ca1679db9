//! Readiness scans: a public audit of a company site for agent discoverability and
//! executability. A scan is a fixed list of checks, each pass, warn or fail with its evidence;
//! the score is their weighted sum. Stored whole so a report reads back exactly as answered.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::ScanId;

/// Every check a scan runs, in report order. The weights sum to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckId {
    RobotsTxt,
    Sitemap,
    LlmsTxt,
    LlmsFullTxt,
    Openapi,
    McpDiscovery,
    McpProbe,
    A2aAgentCard,
    OauthProtectedResource,
    Markdown,
    StructuredData,
    Forms,
    CommerceFiles,
}

impl CheckId {
    pub const ALL: [CheckId; 13] = [
        CheckId::RobotsTxt,
        CheckId::Sitemap,
        CheckId::LlmsTxt,
        CheckId::LlmsFullTxt,
        CheckId::Openapi,
        CheckId::McpDiscovery,
        CheckId::McpProbe,
        CheckId::A2aAgentCard,
        CheckId::OauthProtectedResource,
        CheckId::Markdown,
        CheckId::StructuredData,
        CheckId::Forms,
        CheckId::CommerceFiles,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::RobotsTxt => "robots_txt",
            CheckId::Sitemap => "sitemap",
            CheckId::LlmsTxt => "llms_txt",
            CheckId::LlmsFullTxt => "llms_full_txt",
            CheckId::Openapi => "openapi",
            CheckId::McpDiscovery => "mcp_discovery",
            CheckId::McpProbe => "mcp_probe",
            CheckId::A2aAgentCard => "a2a_agent_card",
            CheckId::OauthProtectedResource => "oauth_protected_resource",
            CheckId::Markdown => "markdown",
            CheckId::StructuredData => "structured_data",
            CheckId::Forms => "forms",
            CheckId::CommerceFiles => "commerce_files",
        }
    }

    /// What the check looks at, for people.
    pub fn title(self) -> &'static str {
        match self {
            CheckId::RobotsTxt => "robots.txt and its rules for AI agents",
            CheckId::Sitemap => "Sitemap",
            CheckId::LlmsTxt => "/llms.txt",
            CheckId::LlmsFullTxt => "/llms-full.txt",
            CheckId::Openapi => "OpenAPI document",
            CheckId::McpDiscovery => "MCP discovery (tools manifest, server card)",
            CheckId::McpProbe => "Live MCP server (initialize, tools/list)",
            CheckId::A2aAgentCard => "A2A agent card",
            CheckId::OauthProtectedResource => "OAuth protected-resource metadata",
            CheckId::Markdown => "Markdown on Accept: text/markdown",
            CheckId::StructuredData => "Structured data (JSON-LD)",
            CheckId::Forms => "Forms an agent can fill",
            CheckId::CommerceFiles => "Agent commerce files",
        }
    }

    /// Its share of the score: discovery of what the site can do weighs most.
    pub fn weight(self) -> u32 {
        match self {
            CheckId::Openapi => 12,
            CheckId::LlmsTxt | CheckId::McpProbe => 10,
            CheckId::RobotsTxt
            | CheckId::McpDiscovery
            | CheckId::A2aAgentCard
            | CheckId::CommerceFiles => 8,
            CheckId::Markdown => 7,
            CheckId::Sitemap
            | CheckId::OauthProtectedResource
            | CheckId::StructuredData
            | CheckId::Forms => 6,
            CheckId::LlmsFullTxt => 5,
        }
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
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "fail",
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

/// How ready a site is, from its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessLevel {
    /// Below 25.
    NotReady,
    /// 25 to 49: some files an agent could use.
    Basic,
    /// 50 to 74: agents can find out what the site offers.
    Discoverable,
    /// 75 to 89: agents can also act through documented interfaces.
    Executable,
    /// 90 and above.
    AgentReady,
}

impl ReadinessLevel {
    pub fn of(score: u32) -> Self {
        match score {
            90.. => ReadinessLevel::AgentReady,
            75..=89 => ReadinessLevel::Executable,
            50..=74 => ReadinessLevel::Discoverable,
            25..=49 => ReadinessLevel::Basic,
            _ => ReadinessLevel::NotReady,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReadinessLevel::NotReady => "not_ready",
            ReadinessLevel::Basic => "basic",
            ReadinessLevel::Discoverable => "discoverable",
            ReadinessLevel::Executable => "executable",
            ReadinessLevel::AgentReady => "agent_ready",
        }
    }
}

/// The score of a set of checks: a pass earns its weight, a warn half of it (rounded down).
/// A check missing from `checks` earns nothing, so the score is out of 100 only for a full scan.
pub fn score(checks: &[CheckResult]) -> u32 {
    let earned: u32 = checks
        .iter()
        .map(|c| match c.status {
            CheckStatus::Pass => c.id.weight() * 2,
            CheckStatus::Warn => c.id.weight(),
            CheckStatus::Fail => 0,
        })
        .sum();
    (earned / 2).min(100)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

    #[test]
    fn weights_sum_to_100_and_a_full_pass_scores_100() {
        assert_eq!(CheckId::ALL.iter().map(|c| c.weight()).sum::<u32>(), 100);
        let all: Vec<_> = CheckId::ALL
            .iter()
            .map(|c| check(*c, CheckStatus::Pass))
            .collect();
        assert_eq!(score(&all), 100);
        assert_eq!(ReadinessLevel::of(score(&all)), ReadinessLevel::AgentReady);
    }

    #[test]
    fn warns_earn_half_and_fails_nothing() {
        let mut all: Vec<_> = CheckId::ALL
            .iter()
            .map(|c| check(*c, CheckStatus::Pass))
            .collect();
        all[4].status = CheckStatus::Fail; // openapi, 12
        assert_eq!(score(&all), 88);
        assert_eq!(ReadinessLevel::of(88), ReadinessLevel::Executable);
        all[4].status = CheckStatus::Warn;
        assert_eq!(score(&all), 94);
        let none: Vec<_> = CheckId::ALL
            .iter()
            .map(|c| check(*c, CheckStatus::Fail))
            .collect();
        assert_eq!(score(&none), 0);
        assert_eq!(ReadinessLevel::of(0), ReadinessLevel::NotReady);
    }

    #[test]
    fn ids_serialise_as_their_names() {
        for id in CheckId::ALL {
            assert_eq!(serde_json::to_value(id).unwrap(), id.as_str());
        }
        assert_eq!(
            serde_json::to_value(ReadinessLevel::AgentReady).unwrap(),
            "agent_ready"
        );
    }
}
