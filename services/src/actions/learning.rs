//! Learning a map from a live site: fetching its OpenAPI document and pages, then storing the
//! draft `crate::learn` makes of them as a candidate.

use anyhow::Context;
use serde_json::Value;
use svc_ports::{AgentMap, Domain, FetchError};

use super::ActionService;

impl ActionService {
    /// Drafts a candidate map from what the site publishes: an OpenAPI document at one of the
    /// usual places, and the forms of its home page and the same-site pages it links to (at
    /// most 10 pages). Everything is fetched through the guarded client with robots.txt
    /// honoured. The draft is stored as a candidate: nothing learned runs before a person
    /// publishes it.
    pub async fn learn(&self, domain: &str, base_url: &str) -> anyhow::Result<Learned> {
        let domain = Domain::parse(domain)?;
        let base = base_url.trim_end_matches('/');
        let mut notes = Vec::new();
        let fetch = |url: String| {
            let fetcher = self.ports.fetcher.clone();
            async move {
                fetcher
                    .fetch(&svc_ports::FetchRequest {
                        url,
                        respect_robots: true,
                        accept: None,
                    })
                    .await
            }
        };
        let mut openapi = None;
        for path in LEARN_OPENAPI_PATHS {
            let url = format!("{base}{path}");
            match fetch(url.clone()).await {
                Ok(page) if page.status == 200 => match serde_json::from_str::<Value>(&page.body) {
                    Ok(doc) if doc.get("openapi").is_some() || doc.get("swagger").is_some() => {
                        notes.push(format!("OpenAPI document found at {url}"));
                        openapi = Some(doc);
                        break;
                    }
                    _ => notes.push(format!("{url} is not an OpenAPI document")),
                },
                Ok(_) => {}
                Err(e @ FetchError::Refused(_)) => {
                    return Err(anyhow::Error::new(e).context(format!("learning {domain}")));
                }
                Err(e) => notes.push(format!("{url}: {e}")),
            }
        }
        let mut forms = Vec::new();
        let mut queue = vec![format!("{base}/")];
        let mut seen = std::collections::HashSet::new();
        while let Some(url) = queue.pop() {
            if seen.len() >= LEARN_MAX_PAGES || !seen.insert(url.clone()) {
                continue;
            }
            let page = match fetch(url.clone()).await {
                Ok(p) if p.status == 200 => p,
                Ok(p) => {
                    notes.push(format!("{url}: HTTP {}", p.status));
                    continue;
                }
                Err(e) => {
                    notes.push(format!("{url}: {e}"));
                    continue;
                }
            };
            let options = svc_ports::ExtractOptions {
                main_content_only: false,
                ..Default::default()
            };
            let extractor = self.ports.extractor.clone();
            let (body, final_url) = (page.body, page.final_url);
            let extraction =
                tokio::task::spawn_blocking(move || extractor.extract(&body, &final_url, &options))
                    .await
                    .context("extraction task")??;
            forms.extend(extraction.forms);
            if seen.len() == 1 {
                // Same-site links of the home page, nearest first.
                for link in extraction
                    .links
                    .iter()
                    .filter(|l| l.same_site && l.url.starts_with(base))
                    .rev()
                {
                    let url = link.url.split('#').next().unwrap_or_default().to_owned();
                    if !seen.contains(&url) {
                        queue.insert(0, url);
                    }
                }
            }
        }
        notes.push(format!(
            "{} pages read, {} forms found",
            seen.len().min(LEARN_MAX_PAGES),
            forms.len()
        ));
        let draft = crate::learn::draft_map(&crate::learn::LearnInput {
            domain: &domain,
            base_url: base,
            openapi: openapi.as_ref(),
            forms: &forms,
        })?;
        notes.extend(draft.skipped);
        let map = self.import_map(&draft.document, "learned").await?;
        Ok(Learned { map, notes })
    }
}

const LEARN_OPENAPI_PATHS: &[&str] = &[
    "/openapi.json",
    "/.well-known/openapi.json",
    "/api/openapi.json",
    "/swagger.json",
];
const LEARN_MAX_PAGES: usize = 10;

/// A learned candidate map and what the learning saw or skipped.
#[derive(Debug)]
pub struct Learned {
    pub map: AgentMap,
    pub notes: Vec<String>,
}
