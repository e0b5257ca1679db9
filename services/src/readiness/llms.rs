//! /llms.txt (its llmstxt.org structure) and /llms-full.txt.

use std::sync::LazyLock;

use svc_ports::{CheckId, CheckResult, CheckStatus};

use super::{Got, excerpt, missing, result};

/// The parts of an llms.txt that llmstxt.org defines.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LlmsShape {
    pub title: Option<String>,
    pub summary: bool,
    /// H2 sections with the number of `- [name](url)` items in each.
    pub sections: Vec<(String, usize)>,
    /// List items inside sections that are not a markdown link.
    pub stray_items: Vec<String>,
}

static LINK_ITEM: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"^[-*+]\s+\[[^\]]+\]\([^)\s]+\)(\s*:.*)?$").expect("static regex")
});

/// Reads the structure llmstxt.org defines: an H1 title first (required), a blockquote
/// summary, free text, then H2 sections of `- [name](url): notes` lists.
pub fn llms_shape(text: &str) -> LlmsShape {
    let mut shape = LlmsShape::default();
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .skip_while(|l| l.trim().is_empty());
    match lines.next() {
        Some(first) if first.starts_with("# ") => {
            shape.title = Some(first[2..].trim().to_owned());
        }
        _ => return shape,
    }
    let mut before_sections = true;
    for line in lines {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix("## ") {
            before_sections = false;
            shape.sections.push((heading.trim().to_owned(), 0));
        } else if before_sections {
            if trimmed.starts_with('>') && !shape.summary {
                shape.summary = true;
            }
        } else if trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.starts_with("+ ")
        {
            if LINK_ITEM.is_match(trimmed) {
                if let Some(last) = shape.sections.last_mut() {
                    last.1 += 1;
                }
            } else {
                shape.stray_items.push(excerpt(trimmed));
            }
        }
    }
    shape
}

pub fn judge_llms_txt(got: &Got) -> CheckResult {
    const ADVICE: &str = "Publish /llms.txt as llmstxt.org describes: an H1 with the site's name, a > summary, then H2 sections listing `- [name](url): notes` links to your docs, API and agent files.";
    if !got.ok() || got.is_html() {
        return missing(CheckId::LlmsTxt, got, "/llms.txt", ADVICE);
    }
    let shape = llms_shape(&got.body);
    let Some(title) = &shape.title else {
        return result(
            CheckId::LlmsTxt,
            CheckStatus::Fail,
            "/llms.txt does not start with an H1 title",
            vec![got.evidence()],
            Some(ADVICE),
        );
    };
    let links: usize = shape.sections.iter().map(|(_, n)| n).sum();
    let mut problems = Vec::new();
    if !shape.summary {
        problems.push("no > summary after the title".to_owned());
    }
    if links == 0 {
        problems.push("no H2 section with a list of links".to_owned());
    }
    if !shape.stray_items.is_empty() {
        problems.push(format!(
            "{} list item(s) in sections are not links, e.g. `{}`",
            shape.stray_items.len(),
            shape.stray_items[0]
        ));
    }
    if problems.is_empty() {
        result(
            CheckId::LlmsTxt,
            CheckStatus::Pass,
            format!(
                "/llms.txt \"{title}\": summary, {} sections, {links} links",
                shape.sections.len()
            ),
            vec![got.evidence()],
            None,
        )
    } else {
        result(
            CheckId::LlmsTxt,
            CheckStatus::Warn,
            format!("/llms.txt \"{title}\": {}", problems.join("; ")),
            vec![got.evidence()],
            Some(ADVICE),
        )
    }
}

pub fn judge_llms_full(got: &Got) -> CheckResult {
    const ADVICE: &str = "Publish /llms-full.txt: the whole documentation an agent needs (endpoints, tools, limits) as one Markdown file.";
    if !got.ok() || got.is_html() {
        return missing(CheckId::LlmsFullTxt, got, "/llms-full.txt", ADVICE);
    }
    let size = got.body.trim().len();
    if size < 200 {
        return result(
            CheckId::LlmsFullTxt,
            CheckStatus::Warn,
            format!("/llms-full.txt holds only {size} characters"),
            vec![got.evidence()],
            Some(ADVICE),
        );
    }
    result(
        CheckId::LlmsFullTxt,
        CheckStatus::Pass,
        format!("/llms-full.txt: {size} characters of text"),
        vec![got.evidence()],
        None,
    )
}

/// Links of /llms.txt fetched to see that they resolve.
pub(super) const MAX_LINKS: usize = 10;

static LINK: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\[[^\]]+\]\(([^)\s]+)\)").expect("static regex"));

/// The first [`MAX_LINKS`] distinct link targets of an llms.txt, resolved against it; none
/// when there is no llms.txt.
pub fn links_in(llms: &Got) -> Vec<String> {
    if !llms.ok() || llms.is_html() {
        return Vec::new();
    }
    let base = url::Url::parse(&llms.url).ok();
    let mut out: Vec<String> = Vec::new();
    for cap in LINK.captures_iter(&llms.body) {
        let href = &cap[1];
        let Some(url) = base.as_ref().and_then(|b| b.join(href).ok()) else {
            continue;
        };
        if !matches!(url.scheme(), "http" | "https") {
            continue;
        }
        let url = url.to_string();
        if !out.contains(&url) {
            out.push(url);
        }
        if out.len() == MAX_LINKS {
            break;
        }
    }
    out
}

/// `got` are the answers to [`links_in`] of `llms`, in order. Without an llms.txt (or links
/// in it) there is nothing to judge: neutral, the llms_txt check says what is missing.
pub fn judge_llms_links(llms: &Got, got: &[Got]) -> CheckResult {
    const ADVICE: &str =
        "Make every link in /llms.txt answer 200: fix or remove the ones that do not resolve.";
    if got.is_empty() {
        return super::neutral(
            CheckId::LlmsTxtLinks,
            "no llms.txt links to follow",
            vec![llms.evidence()],
            ADVICE,
        );
    }
    // A 405 says the resource is there for another method (an MCP or API endpoint).
    let resolves = |g: &Got| g.ok() || g.status == Some(405);
    let broken: Vec<String> = got
        .iter()
        .filter(|g| !resolves(g))
        .map(|g| match (g.status, &g.error) {
            (Some(s), _) => format!("{} (HTTP {s})", g.url),
            (None, Some(e)) => format!("{} ({e})", g.url),
            (None, None) => g.url.clone(),
        })
        .collect();
    let evidence = got.iter().map(Got::evidence).collect();
    if broken.is_empty() {
        result(
            CheckId::LlmsTxtLinks,
            CheckStatus::Pass,
            format!("all {} links of /llms.txt resolve", got.len()),
            evidence,
            None,
        )
    } else {
        result(
            CheckId::LlmsTxtLinks,
            CheckStatus::Fail,
            format!(
                "{} of {} links of /llms.txt do not resolve: {}",
                broken.len(),
                got.len(),
                broken.join(", ")
            ),
            evidence,
            Some(ADVICE),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn llms_txt_structure_follows_llmstxt_org() {
        let good = "# Example\n\n> What it is.\n\nSome detail.\n\n## Docs\n\n- [API](https://e.com/api): the API\n- [Guide](https://e.com/guide)\n\n## Optional\n\n- [More](https://e.com/more)\n";
        let shape = llms_shape(good);
        assert_eq!(shape.title.as_deref(), Some("Example"));
        assert!(shape.summary);
        assert_eq!(
            shape.sections,
            vec![("Docs".into(), 2), ("Optional".into(), 1)]
        );
        assert_eq!(
            judge_llms_txt(&got(200, "text/plain", good)).status,
            CheckStatus::Pass
        );
        let no_summary = "# Example\n\n## Docs\n\n- [API](https://e.com/api)\n";
        assert_eq!(
            judge_llms_txt(&got(200, "text/plain", no_summary)).status,
            CheckStatus::Warn
        );
        let stray = "# Example\n\n> x\n\n## Docs\n\n- just text\n- [API](https://e.com/api)\n";
        let r = judge_llms_txt(&got(200, "text/plain", stray));
        assert_eq!(r.status, CheckStatus::Warn);
        assert!(r.summary.contains("just text"), "{}", r.summary);
        let no_title = "Example\n\n> x\n";
        assert_eq!(
            judge_llms_txt(&got(200, "text/plain", no_title)).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_llms_txt(&got(200, "text/html", "<!doctype html><h1>x")).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn llms_links_are_followed() {
        let mut llms = got(
            200,
            "text/markdown",
            "# E\n\n> x\n\n## Docs\n\n- [API](/openapi.json)\n- [Again](https://example.com/openapi.json)\n- [Mail](mailto:a@e.com)\n- [Guide](https://other.example/guide)\n",
        );
        llms.url = "https://example.com/llms.txt".into();
        assert_eq!(
            links_in(&llms),
            vec![
                "https://example.com/openapi.json",
                "https://other.example/guide"
            ]
        );
        let ok = got(200, "application/json", "{}");
        let gone = got(404, "text/plain", "");
        assert_eq!(
            judge_llms_links(&llms, &[ok.clone(), ok.clone()]).status,
            CheckStatus::Pass
        );
        let r = judge_llms_links(&llms, &[ok, gone]);
        assert_eq!(r.status, CheckStatus::Fail);
        assert!(r.summary.contains("HTTP 404"));
        assert_eq!(
            judge_llms_links(&got(404, "text/plain", ""), &[]).status,
            CheckStatus::Neutral
        );
    }
}
