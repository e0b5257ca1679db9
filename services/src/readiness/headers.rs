//! What the home page's answer headers tell agents: `Link` relations (RFC 8288) to the API
//! catalog and service descriptions, and the Markdown mirror of the page (`/index.md`).

use svc_ports::{CheckId, CheckResult, CheckStatus};

use super::{Got, missing, result};

/// Link relations that lead an agent to what the site offers.
const AGENT_RELATIONS: &[&str] = &["api-catalog", "service-desc", "service-doc", "describedby"];

/// `(target, relation)` of every link in `Link` header values (RFC 8288 §3): a relation
/// list (`rel="a b"`) gives one pair per relation, lower-cased.
pub fn link_relations(values: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for value in values {
        let mut rest = *value;
        while let Some(open) = rest.find('<') {
            let Some(close) = rest[open..].find('>') else {
                break;
            };
            let target = rest[open + 1..open + close].trim().to_owned();
            rest = &rest[open + close + 1..];
            // Parameters run to the next link: a comma outside quotes.
            let mut end = rest.len();
            let mut quoted = false;
            for (i, c) in rest.char_indices() {
                match c {
                    '"' => quoted = !quoted,
                    ',' if !quoted => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let params = &rest[..end];
            rest = &rest[end..];
            for param in params.split(';') {
                let Some((key, val)) = param.split_once('=') else {
                    continue;
                };
                if key.trim().eq_ignore_ascii_case("rel") {
                    for rel in val.trim().trim_matches('"').split_whitespace() {
                        out.push((target.clone(), rel.to_ascii_lowercase()));
                    }
                }
            }
        }
    }
    out
}

pub fn judge_link_headers(home: &Got) -> CheckResult {
    const ADVICE: &str = "Answer GET / with a Link header pointing agents at your resources, e.g. `Link: </.well-known/api-catalog>; rel=\"api-catalog\", </openapi.json>; rel=\"service-desc\", </llms.txt>; rel=\"describedby\"`.";
    if home.status.is_none() {
        return missing(CheckId::LinkHeaders, home, "the home page", ADVICE);
    }
    let links = link_relations(&home.header_values("link"));
    let mut evidence = home.evidence();
    if !links.is_empty() {
        evidence.excerpt = home.header_values("link").join(", ");
    }
    let useful: Vec<String> = links
        .iter()
        .filter(|(_, rel)| AGENT_RELATIONS.contains(&rel.as_str()))
        .map(|(target, rel)| format!("{rel} → {target}"))
        .collect();
    if !useful.is_empty() {
        result(
            CheckId::LinkHeaders,
            CheckStatus::Pass,
            format!("Link header with {}", useful.join(", ")),
            vec![evidence],
            None,
        )
    } else if !links.is_empty() {
        let rels: Vec<&str> = links.iter().map(|(_, r)| r.as_str()).collect();
        result(
            CheckId::LinkHeaders,
            CheckStatus::Warn,
            format!(
                "Link header with {} only; none of api-catalog, service-desc, service-doc, describedby",
                rels.join(", ")
            ),
            vec![evidence],
            Some(ADVICE),
        )
    } else {
        result(
            CheckId::LinkHeaders,
            CheckStatus::Fail,
            "no Link header on the home page",
            vec![evidence],
            Some(ADVICE),
        )
    }
}

pub fn judge_markdown_mirror(got: &Got) -> CheckResult {
    const ADVICE: &str = "Serve a Markdown copy of each page at its path with .md (the home page at /index.md), Content-Type: text/markdown.";
    if !got.ok() || got.is_html() || got.body.trim().is_empty() {
        return missing(CheckId::MarkdownMirror, got, "a Markdown mirror", ADVICE);
    }
    match got.media_type().as_str() {
        "text/markdown" | "text/x-markdown" => result(
            CheckId::MarkdownMirror,
            CheckStatus::Pass,
            format!("Markdown mirror of {} characters", got.body.trim().len()),
            vec![got.evidence()],
            None,
        ),
        other => result(
            CheckId::MarkdownMirror,
            CheckStatus::Warn,
            format!(
                "a mirror is served, as {}",
                if other.is_empty() {
                    "no content type"
                } else {
                    other
                }
            ),
            vec![got.evidence()],
            Some(ADVICE),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    fn with_links(links: &[&str]) -> Got {
        let mut g = got(200, "text/html", "<html>");
        g.headers = links
            .iter()
            .map(|l| ("link".to_owned(), (*l).to_owned()))
            .collect();
        g
    }

    #[test]
    fn link_headers_are_parsed_per_rfc_8288() {
        let rels = link_relations(&[
            r#"</.well-known/api-catalog>; rel="api-catalog", <https://e.com/o.json>; rel="service-desc alternate"; type="application/json""#,
            "</a,b>; title=\"x, y\"; rel=Describedby",
        ]);
        assert_eq!(
            rels,
            vec![
                ("/.well-known/api-catalog".into(), "api-catalog".into()),
                ("https://e.com/o.json".into(), "service-desc".into()),
                ("https://e.com/o.json".into(), "alternate".into()),
                ("/a,b".into(), "describedby".into()),
            ]
        );
        let pass = judge_link_headers(&with_links(&[r#"</openapi.json>; rel="service-desc""#]));
        assert_eq!(pass.status, CheckStatus::Pass, "{pass:?}");
        assert!(pass.evidence[0].excerpt.contains("service-desc"));
        assert_eq!(
            judge_link_headers(&with_links(&["</style.css>; rel=preload"])).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_link_headers(&with_links(&[])).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn markdown_mirrors_must_be_markdown() {
        assert_eq!(
            judge_markdown_mirror(&got(200, "text/markdown; charset=utf-8", "# Hi")).status,
            CheckStatus::Pass
        );
        assert_eq!(
            judge_markdown_mirror(&got(200, "text/plain", "# Hi")).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_markdown_mirror(&got(200, "text/html", "<!doctype html>")).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_markdown_mirror(&got(404, "text/plain", "no")).status,
            CheckStatus::Fail
        );
    }
}
