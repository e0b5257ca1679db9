//! The readiness scan: a public audit of a company site for agents. It only reads: GETs
//! through the guarded fetcher, and an MCP `initialize` + `tools/list` through the guarded
//! action transport. No form is submitted, no tool called, no payment made.
//!
//! Each check is a pure judgement of what its fetches returned (unit-tested beside it); fetches
//! that several checks need (robots.txt, the home page, the MCP files) happen once per scan.

mod content;
mod discovery;
mod llms;
mod mcp;
mod openapi;
mod robots_sitemap;

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use futures_util::{StreamExt, stream::FuturesUnordered};
use serde_json::Value;
use svc_ports::{
    ActionTransport, CheckId, CheckResult, CheckStatus, Clock, Entropy, Evidence, ExtractOptions,
    Extraction, FetchError, FetchRequest, PageExtractor, PageFetcher, ReadinessLevel, ScanId,
    ScanReport, ScanStore, UrlRefusal,
};
use tokio::sync::OnceCell;
use url::Url;

pub use content::{judge_forms, judge_markdown, judge_structured_data};
pub use discovery::{
    judge_agent_cards, judge_commerce, judge_mcp_discovery, judge_protected_resource, mcp_endpoint,
};
pub use llms::{LlmsShape, judge_llms_full, judge_llms_txt, llms_shape};
pub use mcp::{judge_mcp_probe, rpc_message};
use openapi::OPENAPI_PATHS;
pub use openapi::{judge_openapi, openapi_errors};
pub use robots_sitemap::{AI_AGENTS, judge_robots, judge_sitemap, sitemap_shape, sitemaps_in};

/// A check that has not finished by then fails (each fetch has its own, shorter, limit).
const CHECK_DEADLINE: Duration = Duration::from_secs(40);
/// Characters of a body kept as evidence.
const EXCERPT_CHARS: usize = 200;
/// Scans running at once on this instance; more wait their turn briefly, then get 503. Each
/// scan makes about twenty requests to a third party and parses what comes back.
const MAX_CONCURRENT_SCANS: usize = 4;
const SCAN_QUEUE_WAIT: Duration = Duration::from_secs(5);

/// Why no scan was made (nothing is stored).
#[derive(Debug, thiserror::Error)]
pub enum ScanFailure {
    #[error("{0}")]
    InvalidUrl(String),
    #[error("URL refused: {0}")]
    Refused(UrlRefusal),
    #[error("the site could not be reached: {0}")]
    Unreachable(String),
    #[error("too many scans are running; retry in a few seconds")]
    Busy,
    #[error(transparent)]
    Store(#[from] svc_ports::StoreError),
}

/// What one request returned, reduced to what checks judge and report.
#[derive(Debug, Clone, Default)]
pub struct Got {
    pub url: String,
    pub status: Option<u16>,
    pub content_type: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Why there was no answer (refused, unreachable, timed out, robots.txt).
    pub error: Option<String>,
}

impl Got {
    fn ok(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    fn is_html(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|c| c.to_ascii_lowercase().contains("html"))
            || self.body.trim_start().starts_with('<')
    }

    /// A 2xx JSON object (an HTML soft-404 or a list is not one).
    fn json_object(&self) -> Option<Value> {
        if !self.ok() {
            return None;
        }
        serde_json::from_str::<Value>(self.body.trim_start_matches('\u{feff}'))
            .ok()
            .filter(Value::is_object)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn evidence(&self) -> Evidence {
        let excerpt = match &self.error {
            Some(e) => e.clone(),
            None => excerpt(&self.body),
        };
        Evidence {
            url: self.url.clone(),
            status: self.status,
            excerpt,
        }
    }
}

fn excerpt(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = collapsed.chars().take(EXCERPT_CHARS).collect();
    if collapsed.chars().count() > EXCERPT_CHARS {
        out.push('…');
    }
    out
}

fn result(
    id: CheckId,
    status: CheckStatus,
    summary: impl Into<String>,
    evidence: Vec<Evidence>,
    recommendation: Option<&str>,
) -> CheckResult {
    CheckResult {
        id,
        title: id.title().into(),
        status,
        weight: id.weight(),
        summary: summary.into(),
        evidence,
        recommendation: match status {
            CheckStatus::Pass => None,
            _ => recommendation.map(str::to_owned),
        },
    }
}

pub struct ReadinessService {
    slots: Arc<tokio::sync::Semaphore>,
    fetcher: Arc<dyn PageFetcher>,
    transport: Arc<dyn ActionTransport>,
    extractor: Arc<dyn PageExtractor>,
    store: Arc<dyn ScanStore>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
}

/// A scan in progress: the site and the fetches its checks share.
struct Site<'a> {
    svc: &'a ReadinessService,
    /// `scheme://host[:port]`, no trailing slash.
    origin: String,
    home: String,
    robots: OnceCell<Got>,
    home_page: OnceCell<Got>,
    /// The home page's extraction, made once (off the async workers) for every check.
    extracted: OnceCell<Option<Arc<Extraction>>>,
    server_card: OnceCell<Got>,
    mcp_catalog: OnceCell<Got>,
    tools_manifest: OnceCell<Got>,
}

type CheckFuture<'a> = Pin<Box<dyn Future<Output = CheckResult> + Send + 'a>>;

impl ReadinessService {
    pub fn new(
        fetcher: Arc<dyn PageFetcher>,
        transport: Arc<dyn ActionTransport>,
        extractor: Arc<dyn PageExtractor>,
        store: Arc<dyn ScanStore>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
    ) -> Self {
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_SCANS)),
            fetcher,
            transport,
            extractor,
            store,
            clock,
            entropy,
        }
    }

    /// Scans the site at `raw_url`, stores the report and returns it; `progress` hears of
    /// each check as it finishes. A URL that is refused, or a site that does not answer at
    /// all, is an error and stores nothing.
    pub async fn scan(
        &self,
        raw_url: &str,
        progress: &(dyn Fn(&CheckResult) + Send + Sync),
    ) -> Result<ScanReport, ScanFailure> {
        let url = normalise(raw_url)?;
        let _slot = tokio::time::timeout(SCAN_QUEUE_WAIT, self.slots.acquire())
            .await
            .map_err(|_| ScanFailure::Busy)?
            .map_err(|_| ScanFailure::Busy)?;
        let started_at = self.clock.now();
        let site = Site {
            svc: self,
            origin: url.origin().ascii_serialization(),
            home: url.to_string(),
            robots: OnceCell::new(),
            home_page: OnceCell::new(),
            extracted: OnceCell::new(),
            server_card: OnceCell::new(),
            mcp_catalog: OnceCell::new(),
            tools_manifest: OnceCell::new(),
        };
        // robots.txt first: it tells a refused URL or a dead site apart before anything else.
        let robots = site.robots().await;
        if let Some(e) = robots.error.as_deref()
            && robots.status.is_none()
        {
            return Err(match self.probe_error(&robots.url).await {
                Some(FetchError::Refused(r)) => ScanFailure::Refused(r),
                _ => ScanFailure::Unreachable(e.to_owned()),
            });
        }
        let mut pending: FuturesUnordered<CheckFuture<'_>> = CheckId::ALL
            .iter()
            .map(|id| {
                let id = *id;
                let site = &site;
                Box::pin(async move {
                    match tokio::time::timeout(CHECK_DEADLINE, site.run(id)).await {
                        Ok(r) => r,
                        Err(_) => result(
                            id,
                            CheckStatus::Fail,
                            format!("did not finish within {} s", CHECK_DEADLINE.as_secs()),
                            Vec::new(),
                            Some("Make the files this check reads answer within a few seconds."),
                        ),
                    }
                }) as CheckFuture<'_>
            })
            .collect();
        let mut checks = Vec::with_capacity(CheckId::ALL.len());
        while let Some(check) = pending.next().await {
            progress(&check);
            checks.push(check);
        }
        drop(pending);
        checks.sort_by_key(|c| CheckId::ALL.iter().position(|id| *id == c.id));
        let score = svc_ports::readiness::score(&checks);
        let report = ScanReport {
            scan_id: ScanId::from_ulid(self.entropy.ulid()),
            url: url.to_string(),
            origin: site.origin.clone(),
            score,
            level: ReadinessLevel::of(score),
            checks,
            started_at,
            completed_at: self.clock.now(),
        };
        self.store.insert_scan(&report).await?;
        Ok(report)
    }

    pub async fn report(&self, id: &ScanId) -> Result<Option<ScanReport>, svc_ports::StoreError> {
        self.store.scan(id).await
    }

    /// The fetch error behind a failed request (to tell a refusal from an outage).
    async fn probe_error(&self, url: &str) -> Option<FetchError> {
        self.fetcher
            .fetch(&FetchRequest {
                url: url.to_owned(),
                respect_robots: false,
                accept: None,
            })
            .await
            .err()
    }

    async fn get(&self, url: &str, accept: Option<&str>, respect_robots: bool) -> Got {
        let request = FetchRequest {
            url: url.to_owned(),
            respect_robots,
            accept: accept.map(str::to_owned),
        };
        match self.fetcher.fetch(&request).await {
            Ok(page) => Got {
                url: page.final_url,
                status: Some(page.status),
                content_type: page.content_type,
                headers: Vec::new(),
                body: page.body,
                error: None,
            },
            Err(e) => Got {
                url: url.to_owned(),
                error: Some(e.to_string()),
                ..Got::default()
            },
        }
    }
}

/// A scan with its funnel steps: `scan_requested`, then `scan_completed` or `failed`.
pub async fn scan_recorded(
    services: &super::Services,
    face: super::telemetry::Face,
    who: &str,
    url: &str,
) -> Result<ScanReport, ScanFailure> {
    use super::telemetry::FunnelStep;
    let telemetry = &services.telemetry;
    telemetry.record(
        FunnelStep::new(face, "scan_requested", "readiness_scan", who).capability("readiness_scan"),
    );
    let scanned = services.readiness.scan(url, &|_| {}).await;
    let step = match &scanned {
        Ok(_) => FunnelStep::new(face, "scan_completed", "readiness_scan", who),
        Err(e) => FunnelStep::new(face, "failed", "readiness_scan", who).failure(match e {
            ScanFailure::InvalidUrl(_) => "invalid_request",
            ScanFailure::Refused(_) => "url_refused",
            ScanFailure::Unreachable(_) => "upstream_unreachable",
            ScanFailure::Busy => "unavailable",
            ScanFailure::Store(_) => "internal",
        }),
    };
    telemetry.record(step.capability("readiness_scan"));
    scanned
}

/// Adds `https://` to a bare domain, keeps http(s) only, drops the fragment.
pub fn normalise(raw: &str) -> Result<Url, ScanFailure> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(ScanFailure::InvalidUrl("`url` is empty".into()));
    }
    if raw.len() > 2048 {
        return Err(ScanFailure::InvalidUrl(
            "`url` is longer than 2048 characters".into(),
        ));
    }
    let with_scheme = if raw.contains("://") {
        raw.to_owned()
    } else {
        format!("https://{raw}")
    };
    let mut url = Url::parse(&with_scheme)
        .map_err(|e| ScanFailure::InvalidUrl(format!("`{raw}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ScanFailure::Refused(UrlRefusal::Scheme {
            scheme: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ScanFailure::InvalidUrl(format!("`{raw}` has no host")));
    }
    // As `/api/read` does: credentials in a URL are refused, not silently dropped.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ScanFailure::Refused(UrlRefusal::Credentials));
    }
    url.set_fragment(None);
    Ok(url)
}

impl Site<'_> {
    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// A file of the origin, fetched once per scan.
    async fn once<'c>(&self, cell: &'c OnceCell<Got>, path: &str, accept: &str) -> &'c Got {
        cell.get_or_init(|| async { self.svc.get(&self.at(path), Some(accept), false).await })
            .await
    }

    async fn robots(&self) -> &Got {
        self.once(&self.robots, "/robots.txt", "text/plain").await
    }

    /// The page as a browser would get it; robots.txt is honoured (agents honour it too).
    async fn home_page(&self) -> &Got {
        self.home_page
            .get_or_init(|| self.svc.get(&self.home, None, true))
            .await
    }

    async fn server_card(&self) -> &Got {
        self.once(
            &self.server_card,
            "/.well-known/mcp/server-card.json",
            "application/json",
        )
        .await
    }

    async fn mcp_catalog(&self) -> &Got {
        self.once(
            &self.mcp_catalog,
            "/.well-known/mcp/catalog.json",
            "application/json",
        )
        .await
    }

    async fn tools_manifest(&self) -> &Got {
        self.once(
            &self.tools_manifest,
            "/.well-known/mcp/tools.json",
            "application/json",
        )
        .await
    }

    async fn json_file(&self, path: &str) -> Got {
        self.svc
            .get(&self.at(path), Some("application/json"), false)
            .await
    }

    /// The home page's extraction: parsing is CPU work, so it runs on the blocking pool.
    async fn extraction(&self) -> Option<Arc<Extraction>> {
        self.extracted
            .get_or_init(|| async {
                let page = self.home_page().await;
                if !page.ok() {
                    return None;
                }
                let (extractor, body, url) = (
                    self.svc.extractor.clone(),
                    page.body.clone(),
                    page.url.clone(),
                );
                tokio::task::spawn_blocking(move || {
                    extractor
                        .extract(&body, &url, &ExtractOptions::default())
                        .ok()
                })
                .await
                .ok()
                .flatten()
                .map(Arc::new)
            })
            .await
            .clone()
    }

    async fn run(&self, id: CheckId) -> CheckResult {
        match id {
            CheckId::RobotsTxt => judge_robots(self.robots().await, &self.home),
            CheckId::Sitemap => {
                let robots = self.robots().await;
                let declared = sitemaps_in(robots);
                let url = declared
                    .first()
                    .cloned()
                    .unwrap_or_else(|| self.at("/sitemap.xml"));
                let got = self
                    .svc
                    .get(&url, Some("application/xml, text/xml;q=0.9"), false)
                    .await;
                judge_sitemap(&got, !declared.is_empty())
            }
            CheckId::LlmsTxt => judge_llms_txt(
                &self
                    .svc
                    .get(
                        &self.at("/llms.txt"),
                        Some("text/markdown, text/plain"),
                        false,
                    )
                    .await,
            ),
            CheckId::LlmsFullTxt => judge_llms_full(
                &self
                    .svc
                    .get(
                        &self.at("/llms-full.txt"),
                        Some("text/markdown, text/plain"),
                        false,
                    )
                    .await,
            ),
            CheckId::Openapi => {
                let tries =
                    futures_util::future::join_all(OPENAPI_PATHS.iter().map(|p| self.json_file(p)))
                        .await;
                // Schema validation of a large document is CPU work: off the async workers.
                tokio::task::spawn_blocking(move || judge_openapi(&tries))
                    .await
                    .unwrap_or_else(|_| {
                        result(
                            CheckId::Openapi,
                            CheckStatus::Fail,
                            "the OpenAPI document could not be checked",
                            Vec::new(),
                            None,
                        )
                    })
            }
            CheckId::McpDiscovery => judge_mcp_discovery(
                self.server_card().await,
                self.mcp_catalog().await,
                self.tools_manifest().await,
            ),
            CheckId::McpProbe => self.mcp_probe().await,
            CheckId::A2aAgentCard => {
                let (card, legacy) = tokio::join!(
                    self.json_file("/.well-known/agent-card.json"),
                    self.json_file("/.well-known/agent.json")
                );
                judge_agent_cards(&card, &legacy)
            }
            CheckId::OauthProtectedResource => judge_protected_resource(
                &self
                    .json_file("/.well-known/oauth-protected-resource")
                    .await,
            ),
            CheckId::Markdown => {
                judge_markdown(&self.svc.get(&self.home, Some("text/markdown"), true).await)
            }
            CheckId::StructuredData => {
                let extraction = self.extraction().await;
                judge_structured_data(self.home_page().await, extraction.as_deref())
            }
            CheckId::Forms => {
                let extraction = self.extraction().await;
                judge_forms(self.home_page().await, extraction.as_deref())
            }
            CheckId::CommerceFiles => {
                let (commerce, protocols) = tokio::join!(
                    self.json_file("/.well-known/agent-commerce.json"),
                    self.json_file("/.well-known/payment-protocols.json")
                );
                judge_commerce(&commerce, &protocols)
            }
        }
    }
}

// ---- judgements: pure functions of what came back ----

fn missing(id: CheckId, got: &Got, what: &str, recommendation: &str) -> CheckResult {
    let summary = match (&got.error, got.status) {
        (Some(e), _) => format!("{what} could not be read: {e}"),
        (None, Some(s)) if !(200..300).contains(&s) => format!("no {what} (HTTP {s})"),
        _ => format!("{what} is not what it should be"),
    };
    result(
        id,
        CheckStatus::Fail,
        summary,
        vec![got.evidence()],
        Some(recommendation),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn got(status: u16, content_type: &str, body: &str) -> Got {
        Got {
            url: "https://example.com/x".into(),
            status: Some(status),
            content_type: Some(content_type.into()),
            headers: Vec::new(),
            body: body.into(),
            error: None,
        }
    }

    #[test]
    fn urls_are_normalised_and_bad_ones_refused() {
        assert_eq!(
            normalise("example.com").unwrap().as_str(),
            "https://example.com/"
        );
        assert_eq!(
            normalise(" http://example.com/a#top ").unwrap().as_str(),
            "http://example.com/a"
        );
        assert!(matches!(normalise(""), Err(ScanFailure::InvalidUrl(_))));
        assert!(matches!(
            normalise("ftp://example.com"),
            Err(ScanFailure::Refused(_))
        ));
        assert!(matches!(
            normalise("http://"),
            Err(ScanFailure::InvalidUrl(_))
        ));
        // Issue 15: userinfo was dropped and the host scanned; `/api/read` refuses it.
        for with_credentials in ["http://user@example.com/", "https://u:p@example.com/"] {
            assert!(matches!(
                normalise(with_credentials),
                Err(ScanFailure::Refused(UrlRefusal::Credentials))
            ));
        }
    }
}
