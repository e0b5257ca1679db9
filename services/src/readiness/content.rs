//! The home page as agents read it: Markdown on request, schema.org JSON-LD, and forms an agent
//! could fill.

use serde_json::Value;
use svc_ports::{CheckId, CheckResult, CheckStatus, Extraction};

use super::{Got, excerpt, missing, result};

pub fn judge_markdown(got: &Got) -> CheckResult {
    const ADVICE: &str = "Answer `Accept: text/markdown` on your pages with a Markdown version (Content-Type: text/markdown) and `Vary: Accept`; an `x-markdown-tokens` header with its token count helps agents budget.";
    const ID: CheckId = CheckId::MarkdownNegotiation;
    let content_type = got.media_type();
    if !got.ok() {
        return missing(ID, got, "the page", ADVICE);
    }
    let varies = got.header_values("vary").iter().any(|v| {
        v.split(',')
            .any(|f| f.trim().eq_ignore_ascii_case("accept") || f.trim() == "*")
    });
    let mut evidence = got.evidence();
    if content_type == "text/markdown" || content_type == "text/x-markdown" {
        let tokens = got
            .header("x-markdown-tokens")
            .map(|t| format!(", {t} tokens"))
            .unwrap_or_default();
        evidence.excerpt = format!(
            "Content-Type: {}; Vary: {}; {}",
            got.content_type.as_deref().unwrap_or_default(),
            got.header_values("vary").join(", "),
            evidence.excerpt
        );
        if varies {
            result(
                ID,
                CheckStatus::Pass,
                format!("Markdown served ({content_type}, Vary: Accept{tokens})"),
                vec![evidence],
                None,
            )
        } else {
            result(
                ID,
                CheckStatus::Warn,
                format!(
                    "Markdown served without `Vary: Accept`{tokens}: caches may serve it to browsers"
                ),
                vec![evidence],
                Some(ADVICE),
            )
        }
    } else if !got.is_html() && content_type == "text/plain" {
        result(
            ID,
            CheckStatus::Warn,
            "plain text served, not labelled text/markdown",
            vec![evidence],
            Some(ADVICE),
        )
    } else {
        result(
            ID,
            CheckStatus::Fail,
            format!(
                "asked for Markdown, got {}",
                if content_type.is_empty() {
                    "no content type"
                } else {
                    &content_type
                }
            ),
            vec![evidence],
            Some(ADVICE),
        )
    }
}

fn json_ld_types(items: &[Value]) -> Vec<String> {
    let mut types = Vec::new();
    for item in items {
        let graph = item["@graph"].as_array().cloned().unwrap_or_default();
        for node in std::iter::once(item).chain(graph.iter()) {
            match &node["@type"] {
                Value::String(t) => types.push(t.clone()),
                Value::Array(ts) => {
                    types.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned))
                }
                _ => {}
            }
        }
    }
    types
}

pub fn judge_structured_data(page: &Got, extraction: Option<&Extraction>) -> CheckResult {
    const ADVICE: &str = "Describe the organisation, product or service on the page with schema.org JSON-LD (<script type=\"application/ld+json\"> with @context and @type).";
    let Some(extraction) = extraction else {
        return missing(CheckId::StructuredData, page, "the page", ADVICE);
    };
    let items = &extraction.metadata.json_ld;
    let types = json_ld_types(items);
    if !types.is_empty() {
        let mut ev = page.evidence();
        ev.excerpt = excerpt(&serde_json::to_string(items).unwrap_or_default());
        result(
            CheckId::StructuredData,
            CheckStatus::Pass,
            format!("JSON-LD of type {}", types.join(", ")),
            vec![ev],
            None,
        )
    } else if !items.is_empty() || !extraction.metadata.open_graph.is_empty() {
        result(
            CheckId::StructuredData,
            CheckStatus::Warn,
            "metadata without a typed JSON-LD item (no @type)",
            vec![page.evidence()],
            Some(ADVICE),
        )
    } else {
        result(
            CheckId::StructuredData,
            CheckStatus::Fail,
            "no JSON-LD on the page",
            vec![page.evidence()],
            Some(ADVICE),
        )
    }
}

pub fn judge_forms(page: &Got, extraction: Option<&Extraction>) -> CheckResult {
    const ADVICE: &str = "Give every form an explicit method and action, and every field a name and a <label> (or aria-label) so an agent knows what to put where.";
    let Some(extraction) = extraction else {
        return missing(CheckId::Forms, page, "the page", ADVICE);
    };
    if extraction.forms.is_empty() {
        return result(
            CheckId::Forms,
            CheckStatus::Warn,
            "no forms on the page to assess",
            vec![page.evidence()],
            Some(
                "If people or agents should contact you, order or search, offer a form with named, labelled fields (or an API for it).",
            ),
        );
    }
    let mut fillable = 0;
    let mut problems = Vec::new();
    for (i, form) in extraction.forms.iter().enumerate() {
        let label = form
            .id
            .clone()
            .or_else(|| form.name.clone())
            .unwrap_or_else(|| format!("#{}", i + 1));
        let visible: Vec<_> = form
            .fields
            .iter()
            .filter(|f| {
                !matches!(
                    f.field_type.as_str(),
                    "hidden" | "submit" | "button" | "reset" | "image"
                )
            })
            .collect();
        let unlabelled: Vec<&str> = visible
            .iter()
            .filter(|f| f.label.as_deref().is_none_or(|l| l.trim().is_empty()))
            .map(|f| f.name.as_str())
            .collect();
        if visible.is_empty() {
            problems.push(format!("form {label} has no named fields"));
        } else if !unlabelled.is_empty() {
            problems.push(format!(
                "form {label}: no label for {}",
                unlabelled.join(", ")
            ));
        } else {
            fillable += 1;
        }
    }
    let total = extraction.forms.len();
    let mut ev = page.evidence();
    ev.excerpt = extraction
        .forms
        .iter()
        .map(|f| {
            format!(
                "{} {} ({})",
                f.method,
                f.action,
                f.fields
                    .iter()
                    .map(|x| x.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    if problems.is_empty() {
        result(
            CheckId::Forms,
            CheckStatus::Pass,
            format!("{total} form(s), every field named and labelled"),
            vec![ev],
            None,
        )
    } else if fillable > 0 {
        result(
            CheckId::Forms,
            CheckStatus::Warn,
            format!(
                "{fillable} of {total} forms fillable; {}",
                problems.join("; ")
            ),
            vec![ev],
            Some(ADVICE),
        )
    } else {
        result(
            CheckId::Forms,
            CheckStatus::Fail,
            format!("no form an agent could fill: {}", problems.join("; ")),
            vec![ev],
            Some(ADVICE),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;
    use serde_json::json;

    #[test]
    fn markdown_needs_its_content_type_and_vary() {
        let mut md = got(200, "text/markdown; charset=utf-8", "# Hi");
        assert_eq!(judge_markdown(&md).status, CheckStatus::Warn);
        md.headers = vec![
            ("vary".into(), "Accept-Encoding, Accept".into()),
            ("x-markdown-tokens".into(), "12".into()),
        ];
        let r = judge_markdown(&md);
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        assert!(r.summary.contains("12 tokens"));
        assert_eq!(
            judge_markdown(&got(200, "text/plain", "# Hi")).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_markdown(&got(200, "text/html", "<html>")).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn forms_and_json_ld_are_judged_from_the_extraction() {
        // Extractions as the extractor port yields them (the real extractor on real pages is
        // exercised by the sandbox sites in tests/api/readiness.rs).
        use svc_ports::{Form, FormField, MainContent, PageMetadata, PageSignals};
        let field = |name: &str, kind: &str, label: Option<&str>| FormField {
            name: name.into(),
            field_type: kind.into(),
            label: label.map(str::to_owned),
            required: false,
            default_value: None,
            options: Vec::new(),
        };
        let form = |fields: Vec<FormField>| Form {
            id: None,
            name: None,
            action: "https://e.com/contact".into(),
            method: "POST".into(),
            enctype: "application/x-www-form-urlencoded".into(),
            fields,
        };
        let extraction = |forms: Vec<Form>, json_ld: Vec<Value>| Extraction {
            content: MainContent::default(),
            links: Vec::new(),
            forms,
            metadata: PageMetadata {
                json_ld,
                ..PageMetadata::default()
            },
            signals: PageSignals::default(),
        };
        let page = got(200, "text/html", "");
        let good = extraction(
            vec![form(vec![
                field("email", "email", Some("Email")),
                field("csrf", "hidden", None),
            ])],
            vec![json!({"@context": "https://schema.org", "@type": "Organization", "name": "E"})],
        );
        assert_eq!(
            judge_structured_data(&page, Some(&good)).status,
            CheckStatus::Pass
        );
        assert_eq!(judge_forms(&page, Some(&good)).status, CheckStatus::Pass);
        // Inputs without names are dropped by the extractor: a form with nothing left.
        let bad = extraction(vec![form(vec![field("csrf", "hidden", None)])], Vec::new());
        assert_eq!(
            judge_structured_data(&page, Some(&bad)).status,
            CheckStatus::Fail
        );
        assert_eq!(judge_forms(&page, Some(&bad)).status, CheckStatus::Fail);
        let untyped = extraction(Vec::new(), vec![json!({"name": "E"})]);
        assert_eq!(
            judge_structured_data(&page, Some(&untyped)).status,
            CheckStatus::Warn
        );
        let graph = extraction(
            Vec::new(),
            vec![json!({"@graph": [{"@type": ["Store", "Place"]}]})],
        );
        assert!(
            judge_structured_data(&page, Some(&graph))
                .summary
                .contains("Store, Place")
        );
        let unlabelled = extraction(
            vec![
                form(vec![field("q", "text", None)]),
                form(vec![field("n", "text", Some("Name"))]),
            ],
            Vec::new(),
        );
        assert_eq!(
            judge_forms(&page, Some(&unlabelled)).status,
            CheckStatus::Warn
        );
        let none = extraction(Vec::new(), Vec::new());
        assert_eq!(judge_forms(&page, Some(&none)).status, CheckStatus::Warn);
    }
}
