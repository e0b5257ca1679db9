//! robots.txt read per group: rules for AI crawlers by name, and the Content-Signal lines
//! (contentsignals.org) that say what the content may be used for.

use svc_ports::{CheckId, CheckResult, CheckStatus};

use super::{Got, missing, result};

/// AI crawlers a robots.txt should decide about by name (the public scanners' list).
pub const AI_CRAWLERS: &[&str] = &[
    "GPTBot",
    "ChatGPT-User",
    "Google-Extended",
    "CCBot",
    "anthropic-ai",
    "ClaudeBot",
    "claude-web",
    "Bytespider",
    "PerplexityBot",
    "cohere-ai",
    "Applebot-Extended",
    "Amazonbot",
    "meta-externalagent",
    "FacebookBot",
    "omgilibot",
    "Diffbot",
];

/// One group of a robots.txt: its user agents and its Content-Signal values.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RobotsGroup {
    pub agents: Vec<String>,
    /// `(name, value)` of each Content-Signal entry, names lower-cased.
    pub signals: Vec<(String, String)>,
    /// Allow/Disallow lines in the group.
    pub rules: usize,
}

/// The groups of a robots.txt (RFC 9309: consecutive `User-agent` lines open a group).
/// Content-Signal lines before any group go to a group without agents.
pub fn robots_groups(text: &str) -> Vec<RobotsGroup> {
    let mut groups: Vec<RobotsGroup> = Vec::new();
    let mut in_agents = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        match key.as_str() {
            "user-agent" => {
                if !in_agents {
                    groups.push(RobotsGroup::default());
                    in_agents = true;
                }
                if let Some(g) = groups.last_mut() {
                    g.agents.push(value.to_owned());
                }
            }
            "content-signal" => {
                in_agents = false;
                if groups.is_empty() {
                    groups.push(RobotsGroup::default());
                }
                if let Some(g) = groups.last_mut() {
                    for entry in value.split(',') {
                        if let Some((n, v)) = entry.split_once('=') {
                            g.signals.push((
                                n.trim().to_ascii_lowercase(),
                                v.trim().to_ascii_lowercase(),
                            ));
                        }
                    }
                }
            }
            "allow" | "disallow" => {
                in_agents = false;
                if let Some(g) = groups.last_mut() {
                    g.rules += 1;
                }
            }
            _ => in_agents = false,
        }
    }
    groups
}

fn robots_file(got: &Got) -> bool {
    got.ok() && !got.is_html()
}

pub fn judge_robots_ai(got: &Got) -> CheckResult {
    const ADVICE: &str = "Add robots.txt groups for the AI crawlers you decide about (User-agent: GPTBot, ClaudeBot, Google-Extended, CCBot, PerplexityBot, ...), each allowing or disallowing what you mean.";
    if !robots_file(got) {
        return missing(CheckId::RobotsAiRules, got, "robots.txt", ADVICE);
    }
    let groups = robots_groups(&got.body);
    let named: Vec<&str> = AI_CRAWLERS
        .iter()
        .copied()
        .filter(|c| {
            groups
                .iter()
                .any(|g| g.agents.iter().any(|a| a.eq_ignore_ascii_case(c)))
        })
        .collect();
    let wildcard = groups.iter().any(|g| g.agents.iter().any(|a| a == "*"));
    if !named.is_empty() {
        result(
            CheckId::RobotsAiRules,
            CheckStatus::Pass,
            format!(
                "groups for {} of {} AI crawlers: {}",
                named.len(),
                AI_CRAWLERS.len(),
                named.join(", ")
            ),
            vec![got.evidence()],
            None,
        )
    } else if wildcard {
        result(
            CheckId::RobotsAiRules,
            CheckStatus::Pass,
            "no AI crawler named; the `User-agent: *` group covers them (name them to decide per crawler)",
            vec![got.evidence()],
            None,
        )
    } else {
        result(
            CheckId::RobotsAiRules,
            CheckStatus::Fail,
            "robots.txt has no group that applies to AI crawlers (none named, no `*`)",
            vec![got.evidence()],
            Some(ADVICE),
        )
    }
}

pub fn judge_content_signals(got: &Got) -> CheckResult {
    const ADVICE: &str = "Say what your content may be used for with a Content-Signal line in robots.txt, e.g. `User-agent: *` then `Content-Signal: search=yes, ai-input=yes, ai-train=no` (contentsignals.org).";
    if !robots_file(got) {
        return missing(CheckId::ContentSignals, got, "robots.txt", ADVICE);
    }
    let groups = robots_groups(&got.body);
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for g in groups.iter().filter(|g| !g.signals.is_empty()) {
        let who = if g.agents.is_empty() {
            "(all)".to_owned()
        } else {
            g.agents.join(" ")
        };
        let (good, bad): (Vec<_>, Vec<_>) = g.signals.iter().partition(|(n, v)| {
            matches!(n.as_str(), "search" | "ai-input" | "ai-train")
                && matches!(v.as_str(), "yes" | "no")
        });
        if !good.is_empty() {
            let s: Vec<String> = good.iter().map(|(n, v)| format!("{n}={v}")).collect();
            valid.push(format!("{who}: {}", s.join(" ")));
        }
        invalid.extend(bad.iter().map(|(n, v)| format!("{n}={v}")));
    }
    if !valid.is_empty() && invalid.is_empty() {
        result(
            CheckId::ContentSignals,
            CheckStatus::Pass,
            format!("Content-Signal {}", valid.join("; ")),
            vec![got.evidence()],
            None,
        )
    } else if !valid.is_empty() || !invalid.is_empty() {
        result(
            CheckId::ContentSignals,
            CheckStatus::Warn,
            format!(
                "Content-Signal with entries that are not search/ai-input/ai-train = yes/no: {}",
                invalid.join(", ")
            ),
            vec![got.evidence()],
            Some(ADVICE),
        )
    } else {
        result(
            CheckId::ContentSignals,
            CheckStatus::Fail,
            "no Content-Signal line in robots.txt",
            vec![got.evidence()],
            Some(ADVICE),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    const CLOUDFLARE_STYLE: &str = "# As contentsignals.org shows\nUser-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n\nUser-agent: GPTBot\nUser-agent: ClaudeBot\nDisallow: /private\n";

    #[test]
    fn groups_hold_their_agents_and_signals() {
        let groups = robots_groups(CLOUDFLARE_STYLE);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].agents, vec!["*"]);
        assert_eq!(
            groups[0].signals,
            vec![
                ("search".into(), "yes".into()),
                ("ai-train".into(), "no".into())
            ]
        );
        assert_eq!(groups[1].agents, vec!["GPTBot", "ClaudeBot"]);
        assert_eq!(groups[1].rules, 1);
    }

    #[test]
    fn ai_rules_pass_by_name_or_by_wildcard() {
        let r = judge_robots_ai(&got(200, "text/plain", CLOUDFLARE_STYLE));
        assert_eq!(r.status, CheckStatus::Pass);
        assert!(r.summary.contains("GPTBot, ClaudeBot"), "{}", r.summary);
        let wildcard = judge_robots_ai(&got(200, "text/plain", "User-agent: *\nAllow: /\n"));
        assert_eq!(wildcard.status, CheckStatus::Pass);
        assert!(wildcard.summary.contains("covers"));
        let other = "User-agent: Googlebot\nAllow: /\nSitemap: https://e.com/s.xml\n";
        assert_eq!(
            judge_robots_ai(&got(200, "text/plain", other)).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_robots_ai(&got(404, "text/plain", "")).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn content_signals_are_parsed_per_group() {
        let r = judge_content_signals(&got(200, "text/plain", CLOUDFLARE_STYLE));
        assert_eq!(r.status, CheckStatus::Pass);
        assert_eq!(r.summary, "Content-Signal *: search=yes ai-train=no");
        let odd = "User-agent: *\nContent-Signal: search=maybe\n";
        assert_eq!(
            judge_content_signals(&got(200, "text/plain", odd)).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_content_signals(&got(200, "text/plain", "User-agent: *\nAllow: /\n")).status,
            CheckStatus::Fail
        );
    }
}
