//! robots.txt (what it lets AI agents read) and the XML sitemap it names.

use svc_ports::{CheckId, CheckResult, CheckStatus};
use url::Url;

use super::{Got, missing, result};

/// User agents of AI crawlers and assistants whose access robots.txt decides.
pub const AI_AGENTS: &[&str] = &[
    "GPTBot",
    "ChatGPT-User",
    "OAI-SearchBot",
    "ClaudeBot",
    "Claude-User",
    "Claude-SearchBot",
    "PerplexityBot",
    "Google-Extended",
    "Applebot-Extended",
    "CCBot",
    "Meta-ExternalAgent",
];

pub fn judge_robots(got: &Got, home: &str) -> CheckResult {
    const ADVICE: &str = "Publish /robots.txt with explicit rules for AI agents (User-agent: GPTBot, ClaudeBot, PerplexityBot, ...) that allow the pages agents should read, and a Sitemap: line.";
    if !got.ok() || got.is_html() {
        return missing(CheckId::RobotsTxt, got, "robots.txt", ADVICE);
    }
    let path = Url::parse(home)
        .map(|u| u.path().to_owned())
        .unwrap_or_else(|_| "/".into());
    let mut blocked = Vec::new();
    for agent in AI_AGENTS {
        let allowed = robotxt::Robots::parse(got.body.as_bytes(), *agent).is_allowed(&path);
        if !allowed {
            blocked.push(*agent);
        }
    }
    let lower = got.body.to_ascii_lowercase();
    let named: Vec<&str> = AI_AGENTS
        .iter()
        .copied()
        .filter(|a| lower.contains(&format!("user-agent: {}", a.to_ascii_lowercase())))
        .collect();
    if blocked.len() == AI_AGENTS.len() {
        result(
            CheckId::RobotsTxt,
            CheckStatus::Fail,
            format!("robots.txt keeps every AI agent checked out of {path}"),
            vec![got.evidence()],
            Some(
                "Allow the AI agents you want to serve (at least ChatGPT-User, Claude-User, PerplexityBot) to read your public pages.",
            ),
        )
    } else if !blocked.is_empty() {
        result(
            CheckId::RobotsTxt,
            CheckStatus::Warn,
            format!("robots.txt keeps {} out of {path}", blocked.join(", ")),
            vec![got.evidence()],
            Some(
                "Decide per agent: allow the assistants that act for users (ChatGPT-User, Claude-User) even if you block training crawlers.",
            ),
        )
    } else {
        let detail = if named.is_empty() {
            "no agent named; the general rules allow them".to_owned()
        } else {
            format!("rules for {}", named.join(", "))
        };
        result(
            CheckId::RobotsTxt,
            CheckStatus::Pass,
            format!("robots.txt lets AI agents read {path} ({detail})"),
            vec![got.evidence()],
            None,
        )
    }
}

/// `Sitemap:` lines of a robots.txt, in order.
pub fn sitemaps_in(robots: &Got) -> Vec<String> {
    if !robots.ok() {
        return Vec::new();
    }
    robots
        .body
        .lines()
        .filter_map(|l| {
            let (key, value) = l.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case("sitemap")
                .then(|| value.trim().to_owned())
        })
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .collect()
}

/// The root element and the number of `<loc>` elements of a sitemap (or sitemap index).
pub fn sitemap_shape(xml: &str) -> Option<(String, usize)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut root = None;
    let mut locs = 0;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if root.is_none() {
                    root = Some(name.clone());
                }
                if name == "loc" {
                    locs += 1;
                }
            }
            Ok(Event::Empty(e)) if root.is_none() => {
                root = Some(String::from_utf8_lossy(e.local_name().as_ref()).into_owned());
            }
            Ok(Event::Eof) => break,
            Err(_) => return None,
            _ => {}
        }
    }
    root.map(|r| (r, locs))
}

pub fn judge_sitemap(got: &Got, declared: bool) -> CheckResult {
    const ADVICE: &str = "Publish an XML sitemap (/sitemap.xml) listing your public pages and name it in robots.txt with a Sitemap: line.";
    if !got.ok() {
        return missing(CheckId::Sitemap, got, "sitemap", ADVICE);
    }
    let how = if declared {
        "named in robots.txt"
    } else {
        "at /sitemap.xml"
    };
    match sitemap_shape(&got.body) {
        Some((root, locs)) if (root == "urlset" || root == "sitemapindex") && locs > 0 => result(
            CheckId::Sitemap,
            CheckStatus::Pass,
            format!("sitemap {how}: a {root} with {locs} locations"),
            vec![got.evidence()],
            None,
        ),
        Some((root, _)) if root == "urlset" || root == "sitemapindex" => result(
            CheckId::Sitemap,
            CheckStatus::Warn,
            format!("sitemap {how} lists no locations"),
            vec![got.evidence()],
            Some("List your public pages in the sitemap, each in a <loc> element."),
        ),
        _ => missing(CheckId::Sitemap, got, "an XML sitemap", ADVICE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn robots_rules_for_ai_agents_decide() {
        let open = got(
            200,
            "text/plain",
            "User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /admin\nSitemap: https://example.com/sitemap.xml\n",
        );
        let r = judge_robots(&open, "https://example.com/");
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        assert!(r.summary.contains("GPTBot"));
        let some = got(200, "text/plain", "User-agent: CCBot\nDisallow: /\n");
        let r = judge_robots(&some, "https://example.com/");
        assert_eq!(r.status, CheckStatus::Warn);
        assert!(r.summary.contains("CCBot") && !r.summary.contains("GPTBot"));
        let closed = got(200, "text/plain", "User-agent: *\nDisallow: /\n");
        assert_eq!(
            judge_robots(&closed, "https://example.com/").status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_robots(&got(404, "text/plain", ""), "https://example.com/").status,
            CheckStatus::Fail
        );
        let soft_404 = got(200, "text/html", "<html>not found</html>");
        assert_eq!(
            judge_robots(&soft_404, "https://example.com/").status,
            CheckStatus::Fail
        );
        assert_eq!(sitemaps_in(&open), vec!["https://example.com/sitemap.xml"]);
    }

    #[test]
    fn sitemaps_need_locations() {
        let xml = r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://e.com/</loc></url><url><loc>https://e.com/a</loc></url></urlset>"#;
        assert_eq!(sitemap_shape(xml), Some(("urlset".into(), 2)));
        assert_eq!(
            judge_sitemap(&got(200, "application/xml", xml), true).status,
            CheckStatus::Pass
        );
        let empty =
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></sitemapindex>"#;
        assert_eq!(
            judge_sitemap(&got(200, "application/xml", empty), false).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_sitemap(&got(200, "text/html", "<html><body>hi"), false).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_sitemap(&got(404, "text/plain", ""), false).status,
            CheckStatus::Fail
        );
    }
}
