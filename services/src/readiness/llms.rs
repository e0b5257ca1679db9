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
}
