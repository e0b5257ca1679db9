//! The readiness scan: a public audit of a company site for agents. It only reads: GETs
//! through the guarded fetcher, and an MCP `initialize` + `tools/list` through the guarded
//! action transport. No form is submitted, no tool called, no payment made.
//!
//! Each check is a pure judgement of what its fetches returned (unit-tested beside it); fetches
//! that several checks need (robots.txt, the home page, the MCP files) happen once per scan.

#[cfg(test)]
mod budget_tests;
mod commerce;
mod content;
mod discovery;
mod headers;
mod integration;
mod llms;
mod mcp;
mod openapi;
#[cfg(test)]
mod origin_tests;
mod origins;
mod robots_ai;
mod robots_sitemap;
mod site;

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use site::Site;

use futures_util::{StreamExt, stream::FuturesUnordered};
use serde_json::Value;
use svc_ports::{
    ActionTransport, CheckId, CheckResult, CheckStatus, Clock, Entropy, Evidence, FetchError,
    FetchRequest, PageExtractor, PageFetcher, ReadinessLevel, ScanId, ScanReport, ScanStore,
    UrlRefusal,
};
use url::Url;

pub use commerce::{commerce_signals, judge_acp, judge_ap2, judge_ucp, judge_x402};
pub use content::{judge_forms, judge_markdown, judge_structured_data};
pub use discovery::{
    judge_agent_cards, judge_commerce, judge_mcp_server_card, judge_protected_resource,
    mcp_endpoint,
};
pub use headers::{judge_link_headers, judge_markdown_mirror, link_relations};
pub use integration::{
    judge_agent_skills, judge_api_catalog, judge_oauth_discovery, judge_web_bot_auth, judge_web_mcp,
};
pub use llms::{LlmsShape, judge_llms_full, judge_llms_links, judge_llms_txt, llms_shape};
pub use mcp::{judge_mcp_probe, rpc_message};
pub use openapi::{judge_openapi, openapi_errors};
pub use robots_ai::{
    AI_CRAWLERS, RobotsGroup, judge_content_signals, judge_robots_ai, robots_groups,
};
pub use robots_sitemap::{AI_AGENTS, judge_robots, judge_sitemap, sitemap_shape, sitemaps_in};

/// The whole scan, from the moment it is asked for (its wait for a slot included), ends by
/// then: a check still running fails (an informational one is neutral). Under the 10 s a
/// scanner's users wait, with a second left to store and answer.
const SCAN_BUDGET: Duration = Duration::from_secs(9);
/// One request gets no longer than this (the guarded client's own limit is longer).
const PROBE_DEADLINE: Duration = Duration::from_secs(5);
/// Requests in flight at once to one origin, across every scan of this instance: a scan must
/// not hammer the site it audits, nor must several scans of it together.
const PER_ORIGIN_REQUESTS: usize = 6;
/// Characters of a body kept as evidence.
const EXCERPT_CHARS: usize = 200;
/// Scans running at once on this instance; more wait their turn briefly, then get 503. Each
/// scan makes about fifty requests (at most six at a time to one origin) to a third party and
/// parses what comes back.
const MAX_CONCURRENT_SCANS: usize = 4;
/// Part of [`SCAN_BUDGET`], not added to it: a scan that waited this long still has most of
/// the budget for its checks.
const SCAN_QUEUE_WAIT: Duration = Duration::from_secs(3);

// Issue 22: a scan finishes within 10 s, even on a busy instance, whatever the site does.
const _: () = assert!(
    SCAN_QUEUE_WAIT.as_millis() < SCAN_BUDGET.as_millis()
        && SCAN_BUDGET.as_millis() <= 10_000
        && PROBE_DEADLINE.as_millis() < SCAN_BUDGET.as_millis()
);

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
    /// The answer came after one or more redirects.
    pub redirected: bool,
    /// No answer came in time.
    pub timed_out: bool,
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

    /// Every value of a header that may repeat (`Link`, `Vary`).
    fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The media type, lower-cased, without parameters.
    fn media_type(&self) -> String {
        self.content_type
            .as_deref()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
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

/// An informational check that found nothing to credit: neutral, never a fail.
fn neutral(
    id: CheckId,
    summary: impl Into<String>,
    evidence: Vec<Evidence>,
    recommendation: &str,
) -> CheckResult {
    result(
        id,
        CheckStatus::Neutral,
        summary,
        evidence,
        Some(recommendation),
    )
}

pub struct ReadinessService {
    slots: Arc<tokio::sync::Semaphore>,
    /// Requests in flight per origin, across scans: every request of a scan takes a slot here.
    origins: origins::OriginLimits,
    fetcher: Arc<dyn PageFetcher>,
    transport: Arc<dyn ActionTransport>,
    extractor: Arc<dyn PageExtractor>,
    store: Arc<dyn ScanStore>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    /// Runs the home page for the `web_mcp` check; [`svc_ports::NoRenderer`] without a browser.
    renderer: Arc<dyn svc_ports::PageRenderer>,
    probe_deadline: Duration,
    scan_budget: Duration,
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
            origins: origins::OriginLimits::new(PER_ORIGIN_REQUESTS),
            fetcher,
            transport,
            extractor,
            store,
            clock,
            entropy,
            renderer: Arc::new(svc_ports::NoRenderer),
            probe_deadline: PROBE_DEADLINE,
            scan_budget: SCAN_BUDGET,
        }
    }

    /// The browser that runs the home page for the `web_mcp` check. Every request it makes goes
    /// through the guarded fetcher (the [`svc_ports::PageRenderer`] contract).
    pub fn with_renderer(mut self, renderer: Arc<dyn svc_ports::PageRenderer>) -> Self {
        self.renderer = renderer;
        self
    }

    /// Other limits than the defaults (each request, the whole scan): tests of sites that
    /// never answer, or of what a scan finds on a loaded machine.
    pub fn with_deadlines(mut self, probe: Duration, budget: Duration) -> Self {
        self.probe_deadline = probe.min(budget);
        self.scan_budget = budget;
        self
    }

    /// Starts the browser that runs home pages, if there is one, so that a scan's budget is
    /// spent on the site and not on the browser's start (`svc scan`, a one-shot process).
    pub async fn warm_up(&self) -> Result<(), svc_ports::RenderError> {
        self.renderer.warm_up().await
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
        // The budget runs from the request, not from the slot: a busy instance answers in time.
        let asked = tokio::time::Instant::now();
        let deadline = asked + self.scan_budget;
        let _slot = tokio::time::timeout_at(
            (asked + SCAN_QUEUE_WAIT).min(deadline),
            self.slots.acquire(),
        )
        .await
        .map_err(|_| ScanFailure::Busy)?
        .map_err(|_| ScanFailure::Busy)?;
        let started_at = self.clock.now();
        let site = Site::new(self, &url);
        // robots.txt first: it tells a refused URL or a dead site apart before anything else.
        // A site that is there but slow is scanned: its checks say what timed out (a budget
        // spent here leaves every check to say it did not finish).
        if let Ok(robots) = tokio::time::timeout_at(deadline, site.robots()).await
            && let Some(e) = robots.error.as_deref()
            && robots.status.is_none()
            && !robots.timed_out
        {
            let probed = tokio::time::timeout_at(deadline, site.probe_error(&robots.url)).await;
            return Err(match probed.ok().flatten() {
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
                    match tokio::time::timeout_at(deadline, site.run(id)).await {
                        Ok(r) => r,
                        Err(_) => result(
                            id,
                            if id.informational() {
                                CheckStatus::Neutral
                            } else {
                                CheckStatus::Fail
                            },
                            format!(
                                "did not finish within the scan's {} ms",
                                self.scan_budget.as_millis()
                            ),
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
            level: ReadinessLevel::of(&checks),
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
        let request = FetchRequest {
            url: url.to_owned(),
            respect_robots: false,
            accept: None,
        };
        tokio::time::timeout(self.probe_deadline, self.fetcher.fetch(&request))
            .await
            .ok()?
            .err()
    }

    /// One GET, given up after the probe deadline (the caller holds the origin's slot).
    async fn get(&self, url: &str, accept: Option<&str>, respect_robots: bool) -> Got {
        let request = FetchRequest {
            url: url.to_owned(),
            respect_robots,
            accept: accept.map(str::to_owned),
        };
        let failed = |error: String, timed_out: bool| Got {
            url: url.to_owned(),
            error: Some(error),
            timed_out,
            ..Got::default()
        };
        match tokio::time::timeout(self.probe_deadline, self.fetcher.fetch(&request)).await {
            Ok(Ok(page)) => Got {
                url: page.final_url,
                status: Some(page.status),
                content_type: page.content_type,
                headers: page.headers,
                body: page.body,
                error: None,
                redirected: !page.redirects.is_empty(),
                timed_out: false,
            },
            Ok(Err(e)) => {
                let timed_out = matches!(e, FetchError::Timeout { .. });
                failed(e.to_string(), timed_out)
            }
            Err(_) => failed(
                format!("no answer within {} ms", self.probe_deadline.as_millis()),
                true,
            ),
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

// ---- judgements: pure functions of what came back ----

fn missing(id: CheckId, got: &Got, what: &str, recommendation: &str) -> CheckResult {
    let summary = match (&got.error, got.status) {
        (Some(e), _) => format!("{what} could not be read: {e}"),
        (None, Some(s)) if !(200..300).contains(&s) => {
            let bare = what
                .strip_prefix("an ")
                .or_else(|| what.strip_prefix("a "))
                .unwrap_or(what);
            format!("no {bare} (HTTP {s})")
        }
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
            body: body.into(),
            ..Got::default()
        }
    }

    /// A site that accepts connections and never answers.
    struct Silent;

    #[async_trait::async_trait]
    impl PageFetcher for Silent {
        async fn fetch(&self, _: &FetchRequest) -> Result<svc_ports::FetchedPage, FetchError> {
            std::future::pending().await
        }

        async fn robots(&self, _: &str) -> Result<svc_ports::RobotsDecision, FetchError> {
            std::future::pending().await
        }
    }

    #[async_trait::async_trait]
    impl ActionTransport for Silent {
        async fn send(
            &self,
            _: &svc_ports::ActionRequest,
        ) -> Result<svc_ports::ActionResponse, FetchError> {
            std::future::pending().await
        }

        async fn check(&self, _: &str) -> Result<(), FetchError> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_site_that_never_answers_is_scanned_to_the_end_within_the_budget() {
        use svc_ports::{page::MockPageExtractor, store::MockScanStore, system::*};
        let mut store = MockScanStore::new();
        store.expect_insert_scan().times(1).returning(|_| Ok(()));
        let mut clock = MockClock::new();
        clock.expect_now().returning(chrono::Utc::now);
        let mut entropy = MockEntropy::new();
        entropy.expect_ulid().returning(ulid::Ulid::new);
        let service = ReadinessService::new(
            Arc::new(Silent),
            Arc::new(Silent),
            Arc::new(MockPageExtractor::new()),
            Arc::new(store),
            Arc::new(clock),
            Arc::new(entropy),
        )
        // Every request gives up after 20 ms; the scan as a whole after 200 ms.
        .with_deadlines(Duration::from_millis(20), Duration::from_millis(200));
        let heard = std::sync::Mutex::new(Vec::new());
        let report = service
            .scan("https://slow.example/", &|c| {
                heard.lock().unwrap().push(c.id)
            })
            .await
            .expect("a slow site is scanned, not refused");
        assert_eq!(heard.lock().unwrap().len(), CheckId::ALL.len());
        assert_eq!(report.checks.len(), CheckId::ALL.len());
        assert_eq!(report.level, ReadinessLevel::NotReady);
        assert_eq!(report.score, 0);
        for c in &report.checks {
            assert_ne!(c.status, CheckStatus::Pass, "{c:?}");
            if c.id.informational() {
                assert_eq!(c.status, CheckStatus::Neutral, "{c:?}");
            }
        }
        let robots = &report.checks[0];
        assert!(
            robots.evidence[0].excerpt.contains("no answer within"),
            "{robots:?}"
        );
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
