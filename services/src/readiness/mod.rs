//! The readiness scan: a public audit of a company site for agents. It only reads: GETs
//! through the guarded fetcher, and an MCP `initialize` + `tools/list` through the guarded
//! action transport. No form is submitted, no tool called, no payment made.
//!
//! Each check is a pure judgement of what its fetches returned (unit-tested below); fetches
//! that several checks need (robots.txt, the home page, the MCP files) happen once per scan.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, LazyLock},
    time::Duration,
};

use futures_util::{StreamExt, stream::FuturesUnordered};
use serde_json::{Value, json};
use svc_ports::{
    ActionRequest, ActionTransport, CheckId, CheckResult, CheckStatus, Clock, Entropy, Evidence,
    ExtractOptions, Extraction, FetchError, FetchRequest, PageExtractor, PageFetcher,
    ReadinessLevel, ScanId, ScanReport, ScanStore, UrlRefusal, actions::HttpMethod,
};
use tokio::sync::OnceCell;
use url::Url;

/// A check that has not finished by then fails (each fetch has its own, shorter, limit).
const CHECK_DEADLINE: Duration = Duration::from_secs(40);
/// Characters of a body kept as evidence.
const EXCERPT_CHARS: usize = 200;
/// Scans running at once on this instance; more wait their turn briefly, then get 503. Each
/// scan makes about twenty requests to a third party and parses what comes back.
const MAX_CONCURRENT_SCANS: usize = 4;
const SCAN_QUEUE_WAIT: Duration = Duration::from_secs(5);
/// The MCP revision the probe asks for; servers answer with the one they speak.
const MCP_PROTOCOL: &str = "2025-06-18";

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

const OPENAPI_PATHS: &[&str] = &[
    "/openapi.json",
    "/.well-known/openapi.json",
    "/api/openapi.json",
    "/swagger.json",
    "/v3/api-docs",
];

static OAS_31: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!(
        "../../resources/openapi/oas-3.1-schema-2022-10-07.json"
    ))
    .expect("the OAS 3.1 schema is JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the OAS 3.1 schema compiles")
});

static OAS_30: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!(
        "../../resources/openapi/oas-3.0-schema-2021-09-28.json"
    ))
    .expect("the OAS 3.0 schema is JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .expect("the OAS 3.0 schema compiles")
});

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

    /// One JSON-RPC message to an MCP endpoint; the answer may be JSON or an SSE stream.
    async fn mcp_post(&self, endpoint: &str, body: Value, session: Option<&str>) -> Got {
        let mut headers = vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("mcp-protocol-version".to_owned(), MCP_PROTOCOL.to_owned()),
        ];
        if let Some(s) = session {
            headers.push(("mcp-session-id".to_owned(), s.to_owned()));
        }
        let request = ActionRequest {
            method: HttpMethod::Post,
            url: endpoint.to_owned(),
            headers,
            body: Some(("application/json".into(), body.to_string().into_bytes())),
        };
        match self.transport.send(&request).await {
            Ok(r) => Got {
                url: r.url,
                status: Some(r.status),
                content_type: r.content_type,
                headers: r.headers,
                body: r.body,
                error: None,
            },
            Err(e) => Got {
                url: endpoint.to_owned(),
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

    /// `initialize`, `notifications/initialized` and `tools/list`: nothing else is called.
    async fn mcp_probe(&self) -> CheckResult {
        let declared = mcp_endpoint(
            self.server_card().await,
            self.mcp_catalog().await,
            self.tools_manifest().await,
        );
        let endpoint = declared.clone().unwrap_or_else(|| self.at("/mcp"));
        let initialize = self
            .svc
            .mcp_post(
                &endpoint,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": MCP_PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "svc-readiness-scan", "version": env!("CARGO_PKG_VERSION")}
                }}),
                None,
            )
            .await;
        let init = rpc_result(&initialize, 1);
        let mut listed = None;
        if init.is_some() {
            let session = initialize.header("mcp-session-id").map(str::to_owned);
            let _ = self
                .svc
                .mcp_post(
                    &endpoint,
                    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                    session.as_deref(),
                )
                .await;
            listed = Some(
                self.svc
                    .mcp_post(
                        &endpoint,
                        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
                        session.as_deref(),
                    )
                    .await,
            );
        }
        judge_mcp_probe(
            declared.is_some(),
            &initialize,
            init.as_ref(),
            listed.as_ref(),
        )
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
        let allowed = texting_robots::Robot::new(agent, got.body.as_bytes())
            .map(|r| r.allowed(&path))
            .unwrap_or(true);
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

/// Up to three schema errors of an OpenAPI document, or `Err` for a version not validated.
pub fn openapi_errors(doc: &Value) -> Result<Vec<String>, String> {
    let validator: &jsonschema::Validator = match (doc["openapi"].as_str(), doc["swagger"].as_str())
    {
        (Some(v), _) if v.starts_with("3.1.") => &OAS_31,
        (Some(v), _) if v.starts_with("3.0.") => &OAS_30,
        (_, Some(v)) => return Err(format!("Swagger {v} (OpenAPI 2)")),
        (Some(v), _) => return Err(format!("OpenAPI {v}, a version this scan does not know")),
        (None, None) => return Err("no `openapi` version field".into()),
    };
    Ok(validator
        .iter_errors(doc)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/".into() } else { at })
        })
        .collect())
}

pub fn judge_openapi(tries: &[Got]) -> CheckResult {
    const ADVICE: &str = "Publish an OpenAPI 3.1 document of your API at /openapi.json (or /.well-known/openapi.json) that validates against the OpenAPI schema.";
    let found = tries.iter().find_map(|g| {
        g.json_object()
            .filter(|d| d.get("openapi").is_some() || d.get("swagger").is_some())
            .map(|d| (g, d))
    });
    let Some((got, doc)) = found else {
        return result(
            CheckId::Openapi,
            CheckStatus::Fail,
            format!("no OpenAPI document at {}", OPENAPI_PATHS.join(", ")),
            tries.iter().map(Got::evidence).collect(),
            Some(ADVICE),
        );
    };
    let title = doc["info"]["title"]
        .as_str()
        .unwrap_or("untitled")
        .to_owned();
    let paths = doc["paths"].as_object().map_or(0, |p| p.len());
    match openapi_errors(&doc) {
        Ok(errors) if errors.is_empty() => result(
            CheckId::Openapi,
            CheckStatus::Pass,
            format!(
                "valid OpenAPI {} document \"{title}\" with {paths} paths",
                doc["openapi"].as_str().unwrap_or_default()
            ),
            vec![got.evidence()],
            None,
        ),
        Ok(errors) => result(
            CheckId::Openapi,
            CheckStatus::Warn,
            format!(
                "OpenAPI document \"{title}\" does not validate: {}",
                errors.join("; ")
            ),
            vec![got.evidence()],
            Some(
                "Fix the OpenAPI document until it validates (openapi-spec-validator, or the schema at spec.openapis.org).",
            ),
        ),
        Err(why) => result(
            CheckId::Openapi,
            CheckStatus::Warn,
            format!("found {why}; not validated"),
            vec![got.evidence()],
            Some(ADVICE),
        ),
    }
}

/// The MCP endpoint a server card, catalog or tools manifest names.
pub fn mcp_endpoint(card: &Got, catalog: &Got, manifest: &Got) -> Option<String> {
    let url_at = |v: &Value, pointers: &[&str]| {
        pointers.iter().find_map(|p| {
            v.pointer(p)
                .and_then(Value::as_str)
                .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                .map(str::to_owned)
        })
    };
    card.json_object()
        .and_then(|c| {
            url_at(
                &c,
                &[
                    "/transport/url",
                    "/url",
                    "/endpoint",
                    "/remotes/0/url",
                    "/endpoints/0/url",
                ],
            )
        })
        .or_else(|| {
            catalog
                .json_object()
                .and_then(|c| url_at(&c, &["/servers/0/url"]))
        })
        .or_else(|| {
            manifest
                .json_object()
                .and_then(|m| url_at(&m, &["/server/url", "/url", "/endpoint"]))
        })
}

fn card_is_valid(card: &Value) -> bool {
    let named = card
        .pointer("/serverInfo/name")
        .or_else(|| card.get("name"));
    named.and_then(Value::as_str).is_some_and(|n| !n.is_empty())
}

pub fn judge_mcp_discovery(card: &Got, catalog: &Got, manifest: &Got) -> CheckResult {
    const ADVICE: &str = "Publish an MCP server card at /.well-known/mcp/server-card.json (name, transport URL) and a tools manifest at /.well-known/mcp/tools.json.";
    let card_ok = card.json_object().is_some_and(|c| card_is_valid(&c))
        || catalog
            .json_object()
            .and_then(|c| c["servers"].as_array().map(|s| !s.is_empty()))
            .unwrap_or(false);
    let tools = manifest
        .json_object()
        .and_then(|m| m["tools"].as_array().map(Vec::len))
        .unwrap_or(0);
    let evidence = vec![card.evidence(), catalog.evidence(), manifest.evidence()];
    match (card_ok, tools > 0) {
        (true, true) => result(
            CheckId::McpDiscovery,
            CheckStatus::Pass,
            format!("MCP server card and a tools manifest of {tools} tools"),
            evidence,
            None,
        ),
        (true, false) => result(
            CheckId::McpDiscovery,
            CheckStatus::Warn,
            "MCP server card, but no tools manifest listing tools",
            evidence,
            Some(ADVICE),
        ),
        (false, true) => result(
            CheckId::McpDiscovery,
            CheckStatus::Warn,
            format!("tools manifest of {tools} tools, but no MCP server card"),
            evidence,
            Some(ADVICE),
        ),
        (false, false) => result(
            CheckId::McpDiscovery,
            CheckStatus::Fail,
            "no MCP server card, catalog or tools manifest",
            evidence,
            Some(ADVICE),
        ),
    }
}

/// The JSON-RPC message with `id` in an answer that is JSON or an SSE stream.
pub fn rpc_message(got: &Got, id: u64) -> Option<Value> {
    if !got.ok() {
        return None;
    }
    let matches = |v: &Value| v.get("id").and_then(Value::as_u64) == Some(id);
    let sse = got
        .content_type
        .as_deref()
        .is_some_and(|c| c.contains("text/event-stream"));
    if sse {
        got.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(matches)
    } else {
        serde_json::from_str::<Value>(&got.body)
            .ok()
            .filter(matches)
    }
}

fn rpc_result(got: &Got, id: u64) -> Option<Value> {
    rpc_message(got, id).and_then(|m| m.get("result").cloned())
}

pub fn judge_mcp_probe(
    declared: bool,
    initialize: &Got,
    init: Option<&Value>,
    listed: Option<&Got>,
) -> CheckResult {
    const ADVICE: &str = "Serve MCP over Streamable HTTP at the URL your server card names, answering initialize and tools/list without credentials so agents can see what you offer before signing up.";
    let mut evidence = vec![initialize.evidence()];
    let guessed = if declared {
        ""
    } else {
        " (no endpoint declared; tried /mcp)"
    };
    let Some(init) = init else {
        let status = if initialize.status == Some(401) || initialize.status == Some(403) {
            CheckStatus::Warn
        } else {
            CheckStatus::Fail
        };
        return result(
            CheckId::McpProbe,
            status,
            format!("MCP initialize failed{guessed}"),
            evidence,
            Some(ADVICE),
        );
    };
    let server = format!(
        "{} {} (protocol {})",
        init.pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("unnamed server"),
        init.pointer("/serverInfo/version")
            .and_then(Value::as_str)
            .unwrap_or(""),
        init["protocolVersion"].as_str().unwrap_or("?")
    );
    let tools: Vec<String> = listed
        .and_then(|l| {
            evidence.push(l.evidence());
            rpc_result(l, 2)
        })
        .and_then(|r| {
            r["tools"].as_array().map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    if tools.is_empty() {
        return result(
            CheckId::McpProbe,
            CheckStatus::Warn,
            format!("{server} initialized{guessed}, but tools/list gave no tools"),
            evidence,
            Some(ADVICE),
        );
    }
    if let Some(first) = evidence.get_mut(0) {
        first.excerpt = format!("{server}; tools: {}", tools.join(", "));
    }
    result(
        CheckId::McpProbe,
        CheckStatus::Pass,
        format!(
            "{server} answered initialize and listed {} tools{guessed}",
            tools.len()
        ),
        evidence,
        None,
    )
}

fn agent_card_is_valid(card: &Value) -> bool {
    card["name"].as_str().is_some_and(|n| !n.is_empty())
        && (card["url"].is_string() || card["supportedInterfaces"].is_array())
        && card["skills"].is_array()
}

pub fn judge_agent_cards(card: &Got, legacy: &Got) -> CheckResult {
    const ADVICE: &str = "Publish an A2A agent card (name, url, skills) at /.well-known/agent-card.json, and the same at /.well-known/agent.json for older clients.";
    let valid = |g: &Got| g.json_object().is_some_and(|c| agent_card_is_valid(&c));
    let evidence = vec![card.evidence(), legacy.evidence()];
    match (valid(card), valid(legacy)) {
        (true, true) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Pass,
            "A2A agent card at /.well-known/agent-card.json and /.well-known/agent.json",
            evidence,
            None,
        ),
        (true, false) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Warn,
            "A2A agent card at /.well-known/agent-card.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, true) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Warn,
            "A2A agent card at the older /.well-known/agent.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, false) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Fail,
            "no valid A2A agent card at either path",
            evidence,
            Some(ADVICE),
        ),
    }
}

pub fn judge_protected_resource(got: &Got) -> CheckResult {
    const ADVICE: &str = "Publish OAuth protected-resource metadata (RFC 9728) at /.well-known/oauth-protected-resource naming `resource` and its `authorization_servers`.";
    let Some(doc) = got.json_object() else {
        return missing(
            CheckId::OauthProtectedResource,
            got,
            "OAuth protected-resource metadata",
            ADVICE,
        );
    };
    match doc["resource"].as_str() {
        Some(resource) if Url::parse(resource).is_ok() => result(
            CheckId::OauthProtectedResource,
            CheckStatus::Pass,
            format!("protected resource {resource}"),
            vec![got.evidence()],
            None,
        ),
        _ => result(
            CheckId::OauthProtectedResource,
            CheckStatus::Warn,
            "metadata without a `resource` URL (required by RFC 9728)",
            vec![got.evidence()],
            Some(ADVICE),
        ),
    }
}

pub fn judge_markdown(got: &Got) -> CheckResult {
    const ADVICE: &str = "Answer `Accept: text/markdown` on your pages with a Markdown version (Content-Type: text/markdown) and `Vary: Accept`.";
    let content_type = got
        .content_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    if !got.ok() {
        return missing(CheckId::Markdown, got, "the page", ADVICE);
    }
    if content_type.starts_with("text/markdown") || content_type.starts_with("text/x-markdown") {
        result(
            CheckId::Markdown,
            CheckStatus::Pass,
            format!("Markdown served ({content_type})"),
            vec![got.evidence()],
            None,
        )
    } else if !got.is_html() && content_type.starts_with("text/plain") {
        result(
            CheckId::Markdown,
            CheckStatus::Warn,
            "plain text served, not labelled text/markdown",
            vec![got.evidence()],
            Some(ADVICE),
        )
    } else {
        result(
            CheckId::Markdown,
            CheckStatus::Fail,
            format!(
                "asked for Markdown, got {}",
                if content_type.is_empty() {
                    "no content type"
                } else {
                    &content_type
                }
            ),
            vec![got.evidence()],
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

pub fn judge_commerce(commerce: &Got, protocols: &Got) -> CheckResult {
    const ADVICE: &str = "Publish /.well-known/agent-commerce.json (plans, prices, how an agent starts a purchase) and /.well-known/payment-protocols.json (the payment protocols you accept).";
    let evidence = vec![commerce.evidence(), protocols.evidence()];
    match (
        commerce.json_object().is_some(),
        protocols.json_object().is_some(),
    ) {
        (true, true) => result(
            CheckId::CommerceFiles,
            CheckStatus::Pass,
            "agent-commerce.json and payment-protocols.json",
            evidence,
            None,
        ),
        (true, false) => result(
            CheckId::CommerceFiles,
            CheckStatus::Warn,
            "agent-commerce.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, true) => result(
            CheckId::CommerceFiles,
            CheckStatus::Warn,
            "payment-protocols.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, false) => result(
            CheckId::CommerceFiles,
            CheckStatus::Fail,
            "no agent commerce files",
            evidence,
            Some(ADVICE),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn got(status: u16, content_type: &str, body: &str) -> Got {
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
    fn openapi_documents_are_validated_against_the_official_schemas() {
        let valid = json!({"openapi": "3.1.0", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}});
        assert_eq!(openapi_errors(&valid), Ok(vec![]));
        let invalid = json!({"openapi": "3.1.0", "info": {"title": "T"}, "paths": {}});
        let errors = openapi_errors(&invalid).unwrap();
        assert!(
            !errors.is_empty() && errors[0].contains("version"),
            "{errors:?}"
        );
        let v30 = json!({"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}});
        assert_eq!(openapi_errors(&v30), Ok(vec![]));
        let v30_bad = json!({"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {}}}});
        assert!(!openapi_errors(&v30_bad).unwrap().is_empty());
        assert!(openapi_errors(&json!({"swagger": "2.0"})).is_err());

        let found = got(200, "application/json", &valid.to_string());
        let none = got(404, "text/plain", "");
        assert_eq!(
            judge_openapi(&[none.clone(), found]).status,
            CheckStatus::Pass
        );
        assert_eq!(
            judge_openapi(&[
                none.clone(),
                got(200, "application/json", &invalid.to_string())
            ])
            .status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_openapi(&[none.clone(), none]).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn mcp_answers_are_read_as_json_or_sse() {
        let json_answer = got(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#,
        );
        assert!(rpc_result(&json_answer, 1).is_some());
        assert!(rpc_result(&json_answer, 2).is_none());
        let sse = got(
            200,
            "text/event-stream",
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"a\"}]}}\n\n",
        );
        assert_eq!(rpc_result(&sse, 2).unwrap()["tools"][0]["name"], "a");
        let init =
            json!({"protocolVersion": "2025-06-18", "serverInfo": {"name": "s", "version": "1"}});
        assert_eq!(
            judge_mcp_probe(true, &json_answer, Some(&init), Some(&sse)).status,
            CheckStatus::Pass
        );
        let empty = got(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#,
        );
        assert_eq!(
            judge_mcp_probe(true, &json_answer, Some(&init), Some(&empty)).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_mcp_probe(false, &got(404, "text/plain", ""), None, None).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_mcp_probe(true, &got(401, "application/json", "{}"), None, None).status,
            CheckStatus::Warn
        );
    }

    #[test]
    fn discovery_files_are_judged_by_what_they_hold() {
        let card = got(
            200,
            "application/json",
            r#"{"serverInfo":{"name":"s"},"transport":{"url":"https://e.com/mcp"}}"#,
        );
        let manifest = got(200, "application/json", r#"{"tools":[{"name":"a"}]}"#);
        let none = got(404, "text/plain", "");
        assert_eq!(
            mcp_endpoint(&card, &none, &manifest).as_deref(),
            Some("https://e.com/mcp")
        );
        assert_eq!(
            judge_mcp_discovery(&card, &none, &manifest).status,
            CheckStatus::Pass
        );
        assert_eq!(
            judge_mcp_discovery(&card, &none, &none).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_mcp_discovery(&none, &none, &none).status,
            CheckStatus::Fail
        );

        let a2a = got(
            200,
            "application/json",
            r#"{"name":"a","url":"https://e.com/a2a","skills":[]}"#,
        );
        assert_eq!(judge_agent_cards(&a2a, &a2a).status, CheckStatus::Pass);
        assert_eq!(judge_agent_cards(&a2a, &none).status, CheckStatus::Warn);
        let nameless = got(
            200,
            "application/json",
            r#"{"url":"https://e.com/a2a","skills":[]}"#,
        );
        assert_eq!(
            judge_agent_cards(&nameless, &none).status,
            CheckStatus::Fail
        );

        let prm = got(
            200,
            "application/json",
            r#"{"resource":"https://e.com","authorization_servers":["https://e.com"]}"#,
        );
        assert_eq!(judge_protected_resource(&prm).status, CheckStatus::Pass);
        assert_eq!(
            judge_protected_resource(&got(200, "application/json", "{}")).status,
            CheckStatus::Warn
        );
        assert_eq!(judge_protected_resource(&none).status, CheckStatus::Fail);

        let obj = got(200, "application/json", "{}");
        assert_eq!(judge_commerce(&obj, &obj).status, CheckStatus::Pass);
        assert_eq!(judge_commerce(&none, &obj).status, CheckStatus::Warn);
        assert_eq!(
            judge_commerce(&got(200, "text/html", "<html>"), &none).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn markdown_needs_its_content_type() {
        assert_eq!(
            judge_markdown(&got(200, "text/markdown; charset=utf-8", "# Hi")).status,
            CheckStatus::Pass
        );
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
