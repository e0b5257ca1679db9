//! Text is stored as given: random strings, each holding a NUL and any other Unicode, in a
//! cached page's body, in an Agent Map's descriptions and form labels, and in a readiness
//! report's quoted text, read back unchanged. (Postgres TEXT cannot hold a NUL, and a JSON
//! `\u0000` is refused by JSONB: a store must keep such text another way.)

use proptest::{prelude::*, sample::Index, test_runner::TestCaseError};
use serde_json::json;
use svc_ports::{
    CheckId, CheckResult, CheckStatus, Domain, Evidence, FetchedPage, MapDocument, RobotsDecision,
};
use ulid::Ulid;

use crate::{
    Backend,
    scenarios::{BackendFuture, t0},
};

/// Cases per store: 32; `SVC_TEXT_CASES` asks for more.
fn cases() -> u32 {
    std::env::var("SVC_TEXT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

/// Any Unicode (control characters, the BMP's edges, astral planes, quotes and backslashes)
/// with a NUL somewhere in it.
fn text_with_nul() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(any::<char>(), 0..40),
        any::<Index>(),
    )
        .prop_map(|(mut chars, at)| {
            chars.insert(at.index(chars.len() + 1), '\0');
            chars.into_iter().collect()
        })
}

#[derive(Debug, Clone)]
struct Texts {
    body: String,
    description: String,
    action_description: String,
    label: String,
    hint: String,
    summary: String,
    excerpt: String,
}

fn texts() -> impl Strategy<Value = Texts> {
    (
        text_with_nul(),
        text_with_nul(),
        text_with_nul(),
        text_with_nul(),
        text_with_nul(),
        text_with_nul(),
        text_with_nul(),
    )
        .prop_map(
            |(body, description, action_description, label, hint, summary, excerpt)| Texts {
                body,
                description,
                action_description,
                label,
                hint,
                summary,
                excerpt,
            },
        )
}

async fn run_case(b: &Backend, t: Texts) -> Result<(), TestCaseError> {
    let case = Ulid::new().to_string().to_lowercase();

    let page = FetchedPage {
        requested_url: format!("https://example.com/{case}"),
        final_url: format!("https://example.com/{case}"),
        status: 200,
        content_type: Some("text/html; charset=utf-8".into()),
        headers: Vec::new(),
        charset: "utf-8".into(),
        body: t.body.clone(),
        raw: None,
        truncated: false,
        redirects: Vec::new(),
        robots: RobotsDecision::not_checked(),
        fetched_at: t0(),
    };
    b.pages.put_page(&case, &page).await.unwrap();
    let stored = b.pages.fresh_page(&case, t0()).await.unwrap();
    prop_assert_eq!(stored, Some(page), "{}: cached page changed", b.name);

    // A form's field label and hint live in the action's params schema.
    let domain = format!("c{case}.example.com");
    let document: MapDocument = serde_json::from_value(json!({
        "domain": domain,
        "base_url": format!("https://{domain}"),
        "description": t.description,
        "actions": [{
            "name": "contact",
            "description": t.action_description,
            "family": "form_submit",
            "params_schema": {
                "type": "object",
                "properties": {"message": {"type": "string", "title": t.label, "description": t.hint}}
            },
            "consequential": true,
            "request": {"method": "POST", "path": "/contact"},
            "verify": {"status": [200], "css": [{"selector": "p.done", "text_contains": t.label}]},
            "output_schema": {"type": "object"}
        }]
    }))
    .unwrap();
    let inserted = b.maps.insert_map(&document, "learned", t0()).await.unwrap();
    prop_assert_eq!(&inserted.document, &document, "{}: map as inserted", b.name);
    let maps = b
        .maps
        .maps(Some(Domain::parse(&domain).unwrap()))
        .await
        .unwrap();
    prop_assert_eq!(maps.len(), 1);
    prop_assert_eq!(&maps[0].document, &document, "{}: map changed", b.name);

    let checks: Vec<CheckResult> = CheckId::ALL
        .iter()
        .map(|id| CheckResult {
            id: *id,
            title: format!("{} «{}»", id.title(), t.label),
            status: CheckStatus::Warn,
            weight: id.weight(),
            summary: t.summary.clone(),
            evidence: vec![Evidence {
                url: format!("https://example.com/{id}"),
                status: Some(200),
                excerpt: t.excerpt.clone(),
            }],
            recommendation: Some(format!("quote: \"{}\"", t.excerpt)),
        })
        .collect();
    let report = crate::samples::sample_report(checks, 5);
    b.scans.insert_scan(&report).await.unwrap();
    let stored = b.scans.scan(&report.scan_id).await.unwrap();
    prop_assert_eq!(stored, Some(report), "{}: scan report changed", b.name);
    Ok(())
}

/// Runs [`cases`] random texts against one store (one database, fresh keys per case).
pub fn text_property(make: impl Fn() -> BackendFuture) {
    let (runtime, mut runner) = crate::property::runner(ProptestConfig {
        max_shrink_iters: 200,
        ..crate::property::config(cases())
    });
    let backend = runtime.block_on(make());
    runner
        .run(&texts(), |t| runtime.block_on(run_case(&backend, t)))
        .unwrap();
}
