//! One page in the browser: a fresh browser context and tab, every request the page makes
//! paused (CDP `Fetch.enable`, all URLs) and either fulfilled with what the guarded fetcher got
//! (`Fetch.fulfillRequest`) or failed (`Fetch.failRequest`); then a wait for the page to settle,
//! the DOM taken, and the context closed so its memory is given back.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering},
    },
    time::Duration,
};

use base64::Engine;
use chromiumoxide::{
    Browser, Page,
    cdp::browser_protocol::{
        browser::BrowserContextId,
        fetch::{
            EnableParams, EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry,
            RequestPattern, RequestStage,
        },
        network::{ErrorReason, ResourceType},
        page::{AddScriptToEvaluateOnNewDocumentParams, NavigateParams},
        target::{CreateBrowserContextParams, CreateTargetParams},
    },
};
use futures_util::StreamExt;
use svc_ports::{FetchError, FetchRequest, PageFetcher, RenderRequest, RenderedPage};
use tokio::{task::JoinSet, time::Instant};

use crate::RenderConfig;

/// How long no request may be in flight, after the load event, for the page to count as
/// settled (a bundle that fetches its data and then draws it).
const QUIET: Duration = Duration::from_millis(400);
/// How long taking the DOM and closing the tab may take beyond the page's own limit.
const GRACE: Duration = Duration::from_secs(2);

/// What a page cannot do, whatever it is: talk peer to peer, or keep a service worker.
const LOCKDOWN: &str = "(() => { for (const k of ['RTCPeerConnection', 'webkitRTCPeerConnection', \
    'RTCDataChannel']) { try { delete window[k]; } catch (_) {} } \
    try { if (navigator.serviceWorker) Object.defineProperty(navigator, 'serviceWorker', \
    { value: undefined }); } catch (_) {} })();";

/// A `navigator.modelContext` that records the tools a page registers (WebMCP), handing each
/// on to the browser's own where there is one.
const WEBMCP_RECORDER: &str = "(() => { const names = []; \
    Object.defineProperty(window, '__svcWebMcpTools', { value: names }); \
    const record = (t) => { try { if (t && typeof t.name === 'string') names.push(t.name); } catch (_) {} }; \
    const own = navigator.modelContext; \
    const pass = (f, self, arg) => { try { if (own && typeof own[f] === 'function') return own[f].call(own, arg); } catch (_) {} }; \
    const ctx = { \
      registerTool(tool) { record(tool); return pass('registerTool', own, tool) || { unregister() {} }; }, \
      unregisterTool(name) { return pass('unregisterTool', own, name); }, \
      provideContext(c) { for (const t of (c && c.tools) || []) record(t); return pass('provideContext', own, c); }, \
      clearContext() { return pass('clearContext', own); } }; \
    try { Object.defineProperty(navigator, 'modelContext', { value: ctx, configurable: true }); } catch (_) {} })();";

/// Why a render ended without a page.
pub(crate) enum Failure {
    /// Of the page: too many navigations, or nothing readable in time.
    Page(FetchError),
    /// Of the browser: it must be replaced.
    Browser(String),
}

/// A page's requests fetched at once, at most, in three lanes: each may hold a body of the
/// fetcher's cap (and its text and base64 copies) until it is handed to the browser, and the
/// page's byte budget is only known to be spent once they are. What the page is built from
/// on its own site (documents, scripts, data) has its own turns, so other sites' trackers
/// and the page's stylesheets never keep it waiting however many stall.
const OWN_SITE_FETCHES: usize = 4;
/// Turns for documents, scripts and data from other sites (CDN bundles, embeds, trackers).
const OTHER_SITE_FETCHES: usize = 2;
/// Turns for the rest (stylesheets, manifests, anything else).
const OTHER_FETCHES: usize = 2;

/// Turns for each lane.
struct Fetching {
    own_site: tokio::sync::Semaphore,
    other_sites: tokio::sync::Semaphore,
    other: tokio::sync::Semaphore,
}

impl Default for Fetching {
    fn default() -> Self {
        Self {
            own_site: tokio::sync::Semaphore::new(OWN_SITE_FETCHES),
            other_sites: tokio::sync::Semaphore::new(OTHER_SITE_FETCHES),
            other: tokio::sync::Semaphore::new(OTHER_FETCHES),
        }
    }
}

impl Fetching {
    /// The turns a request of `kind` for `url` waits for, on a page of site `page_site`.
    fn lane(
        &self,
        kind: &ResourceType,
        url: &str,
        page_site: Option<&str>,
    ) -> &tokio::sync::Semaphore {
        let building = matches!(
            kind,
            ResourceType::Document | ResourceType::Script | ResourceType::Xhr | ResourceType::Fetch
        );
        if !building {
            return &self.other;
        }
        let site = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(svc_ports::fetch::site_of));
        match (site, page_site) {
            (Some(site), Some(page)) if site == page => &self.own_site,
            _ => &self.other_sites,
        }
    }
}

/// How long one request may hold its turn: half the page's time, so that requests that never
/// answer (a stalled tracker, six of them) leave the page's own data the other half.
fn turn_limit(config: &RenderConfig) -> Duration {
    config.page_timeout / 2
}

/// What the interception saw; shared by the handlers of paused requests.
#[derive(Default)]
struct Traffic {
    /// The site of the page being read, worked out once: requests of its own site have
    /// turns of their own.
    page_site: Option<String>,
    fetching: Fetching,
    in_flight: AtomicUsize,
    last_change: Mutex<Option<Instant>>,
    requests: AtomicU32,
    failed: AtomicU32,
    bytes: AtomicUsize,
    navigations: AtomicU32,
    too_many_navigations: AtomicBool,
    document_served: AtomicBool,
}

impl Traffic {
    fn for_page(url: &str) -> Self {
        Self {
            page_site: url::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(svc_ports::fetch::site_of)),
            ..Self::default()
        }
    }

    /// Counts `len` more bytes against the page's budget of `max`, unless they would take it
    /// past: a response refused for its size leaves the budget to the ones that fit.
    fn spend(&self, len: usize, max: usize) -> bool {
        self.bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |spent| {
                spent.checked_add(len).filter(|total| *total <= max)
            })
            .is_ok()
    }

    fn touch(&self) {
        *self.last_change.lock().expect("not poisoned") = Some(Instant::now());
    }

    fn quiet_since(&self) -> Option<Instant> {
        (self.in_flight.load(Ordering::SeqCst) == 0)
            .then(|| *self.last_change.lock().expect("not poisoned"))
            .flatten()
    }
}

/// Whether two URLs name the same document (fragments aside, as parsed: the browser asks for
/// `http://a.example/` when told `http://A.example`).
fn same_document(a: &str, b: &str) -> bool {
    let parse = |u: &str| {
        url::Url::parse(u).ok().map(|mut u| {
            u.set_fragment(None);
            u
        })
    };
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The request's headers as `(lower-cased name, value)`.
fn header(event: &EventRequestPaused, name: &str) -> Option<String> {
    let headers = serde_json::to_value(&event.request.headers).ok()?;
    headers.as_object()?.iter().find_map(|(k, v)| {
        k.eq_ignore_ascii_case(name)
            .then(|| v.as_str().map(str::to_owned))
            .flatten()
    })
}

/// `content_type` with its charset said to be UTF-8, which the body is once decoded.
fn utf8_content_type(content_type: &str) -> String {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.starts_with("text/")
        || essence.contains("javascript")
        || essence.contains("json")
        || essence.contains("xml")
    {
        format!("{essence}; charset=utf-8")
    } else {
        essence.to_owned()
    }
}

/// Headers that let the page read what the guard fetched for it. The guard fetches without
/// cookies or credentials, so the only thing CORS protects (a user's ambient credentials) is
/// not there to protect.
fn cors(origin: Option<&str>) -> Vec<HeaderEntry> {
    match origin {
        Some(origin) => vec![
            HeaderEntry::new("Access-Control-Allow-Origin", origin),
            HeaderEntry::new("Access-Control-Allow-Credentials", "true"),
            HeaderEntry::new("Vary", "Origin"),
        ],
        None => vec![HeaderEntry::new("Access-Control-Allow-Origin", "*")],
    }
}

enum Answer {
    Fulfil {
        status: u16,
        headers: Vec<HeaderEntry>,
        body: Vec<u8>,
    },
    Fail(ErrorReason),
}

fn fail_reason(error: &FetchError) -> ErrorReason {
    match error {
        FetchError::Refused(_) | FetchError::RobotsDisallowed(_) => ErrorReason::AccessDenied,
        FetchError::Timeout { .. } => ErrorReason::TimedOut,
        FetchError::Connect { .. } => ErrorReason::ConnectionFailed,
        FetchError::TooManyRedirects { .. } | FetchError::Protocol { .. } => ErrorReason::Failed,
    }
}

/// What the page gets for one paused request.
async fn answer(
    event: &EventRequestPaused,
    request: &RenderRequest,
    main_frame: &str,
    fetcher: &dyn PageFetcher,
    config: &RenderConfig,
    traffic: &Traffic,
) -> Answer {
    let url = &event.request.url;
    let method = event.request.method.to_ascii_uppercase();
    let origin = header(event, "origin");
    let document = event.resource_type == ResourceType::Document;
    let main = document && event.frame_id.as_ref() == main_frame;
    if main
        && same_document(url, &request.url)
        && !traffic.document_served.swap(true, Ordering::SeqCst)
    {
        // The document was fetched through the guard already (or is a saved page); it is
        // part of what the page takes of its budget.
        traffic
            .bytes
            .fetch_add(request.html.len(), Ordering::SeqCst);
        return Answer::Fulfil {
            status: 200,
            headers: vec![HeaderEntry::new("Content-Type", "text/html; charset=utf-8")],
            body: request.html.clone().into_bytes(),
        };
    }
    if main && traffic.navigations.fetch_add(1, Ordering::SeqCst) >= config.max_navigations {
        traffic.too_many_navigations.store(true, Ordering::SeqCst);
        return Answer::Fail(ErrorReason::BlockedByClient);
    }
    if method == "OPTIONS" || event.resource_type == ResourceType::Preflight {
        // A CORS preflight is answered here (nothing but GET is ever sent) and fetches
        // nothing, so it does not count toward the page's requests.
        let mut headers = cors(origin.as_deref());
        headers.push(HeaderEntry::new("Access-Control-Allow-Methods", "GET"));
        if let Some(asked) = header(event, "access-control-request-headers") {
            headers.push(HeaderEntry::new("Access-Control-Allow-Headers", asked));
        }
        return Answer::Fulfil {
            status: 204,
            headers,
            body: Vec::new(),
        };
    }
    traffic.requests.fetch_add(1, Ordering::SeqCst);
    let never_fetched = matches!(
        event.resource_type,
        ResourceType::Image
            | ResourceType::Media
            | ResourceType::Font
            | ResourceType::WebSocket
            | ResourceType::EventSource
            | ResourceType::Ping
            | ResourceType::CspViolationReport
            | ResourceType::Prefetch
            | ResourceType::SignedExchange
            | ResourceType::FedCm
    );
    // The browser's own look for an icon is not the page's.
    let icon = event.resource_type == ResourceType::Other && url.ends_with("/favicon.ico");
    // A read changes nothing on a site: no POST, PUT, DELETE from its scripts either.
    if method != "GET" || never_fetched || icon || !url.starts_with("http") {
        return Answer::Fail(ErrorReason::BlockedByClient);
    }
    if traffic.requests.load(Ordering::SeqCst) > config.max_requests {
        return Answer::Fail(ErrorReason::BlockedByClient);
    }
    // A page past its byte budget gets nothing more; the rest wait their turn, and look
    // again once it comes.
    let spent = || traffic.bytes.load(Ordering::SeqCst) >= config.max_page_bytes;
    if spent() {
        return Answer::Fail(ErrorReason::BlockedByClient);
    }
    let lane = traffic
        .fetching
        .lane(&event.resource_type, url, traffic.page_site.as_deref());
    let Ok(_turn) = lane.acquire().await else {
        return Answer::Fail(ErrorReason::Failed);
    };
    if spent() {
        return Answer::Fail(ErrorReason::BlockedByClient);
    }
    let asked = FetchRequest {
        url: url.clone(),
        respect_robots: true,
        accept: header(event, "accept"),
    };
    let Ok(fetched) = tokio::time::timeout(turn_limit(config), fetcher.fetch(&asked)).await else {
        return Answer::Fail(ErrorReason::TimedOut);
    };
    match fetched {
        Ok(page) => {
            // A binary document (a PDF) comes back as its bytes, not as text.
            let body = match page.raw {
                Some(bytes) => bytes,
                None => page.body.into_bytes(),
            };
            if !traffic.spend(body.len(), config.max_page_bytes) {
                return Answer::Fail(ErrorReason::BlockedByClient);
            }
            let mut headers = cors(origin.as_deref());
            if let Some(ct) = page.content_type.as_deref() {
                headers.push(HeaderEntry::new("Content-Type", utf8_content_type(ct)));
            }
            Answer::Fulfil {
                status: page.status,
                headers,
                body,
            }
        }
        Err(e) => {
            // Without its query, which may carry a key: no secret in any log, at any level.
            let at = url.split(['?', '#']).next().unwrap_or_default();
            tracing::debug!(url = %at, error = %e, "a page's request was refused or failed");
            Answer::Fail(fail_reason(&e))
        }
    }
}

/// Serves paused requests until the stream ends (the tab closed) or the task is aborted.
async fn intercept(
    page: Page,
    mut paused: chromiumoxide::listeners::EventStream<EventRequestPaused>,
    request: RenderRequest,
    fetcher: Arc<dyn PageFetcher>,
    config: RenderConfig,
    traffic: Arc<Traffic>,
) {
    let main_frame = page.target_id().as_ref().to_owned();
    let mut handlers = JoinSet::new();
    while let Some(event) = paused.next().await {
        traffic.in_flight.fetch_add(1, Ordering::SeqCst);
        traffic.touch();
        let (page, request, fetcher, config, traffic, main_frame) = (
            page.clone(),
            request.clone(),
            fetcher.clone(),
            config.clone(),
            traffic.clone(),
            main_frame.clone(),
        );
        handlers.spawn(async move {
            let answer = answer(&event, &request, &main_frame, &*fetcher, &config, &traffic).await;
            let id = event.request_id.clone();
            let sent = match answer {
                Answer::Fulfil {
                    status,
                    headers,
                    body,
                } => {
                    let mut params = FulfillRequestParams::new(id, i64::from(status));
                    params.response_headers = Some(headers);
                    params.body = Some(
                        base64::engine::general_purpose::STANDARD
                            .encode(body)
                            .into(),
                    );
                    page.execute(params).await.map(|_| ())
                }
                Answer::Fail(reason) => {
                    traffic.failed.fetch_add(1, Ordering::SeqCst);
                    page.execute(FailRequestParams::new(id, reason))
                        .await
                        .map(|_| ())
                }
            };
            if let Err(e) = sent {
                tracing::debug!(error = %e, "answering a paused request");
            }
            traffic.in_flight.fetch_sub(1, Ordering::SeqCst);
            traffic.touch();
        });
        // Finished handlers are collected as we go, so the set stays small.
        while handlers.try_join_next().is_some() {}
    }
}

/// The DOM as it stands, with the page's URL.
async fn snapshot(page: &Page, max_bytes: usize) -> Option<Snapshot> {
    let script = format!(
        "(() => {{ const h = document.documentElement ? document.documentElement.outerHTML : ''; \
         const cut = h.length > {max_bytes}; \
         const tools = Array.from(window.__svcWebMcpTools || []).slice(0, 100).map(String); \
         return {{ url: location.href, cut, html: cut ? h.slice(0, {max_bytes}) : h, tools }}; }})()"
    );
    let value: serde_json::Value = page.evaluate(script).await.ok()?.into_value().ok()?;
    Some(Snapshot {
        html: value["html"].as_str()?.to_owned(),
        url: value["url"].as_str()?.to_owned(),
        cut: value["cut"].as_bool().unwrap_or(false),
        tools: value["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str())
                    .map(|t| t.chars().take(128).collect())
                    .collect()
            })
            .unwrap_or_default(),
    })
}

struct Snapshot {
    html: String,
    url: String,
    cut: bool,
    tools: Vec<String>,
}

/// Runs `request` in a fresh context of `browser`, within `config.page_timeout`.
pub(crate) async fn render(
    browser: &Browser,
    fetcher: Arc<dyn PageFetcher>,
    config: &RenderConfig,
    request: &RenderRequest,
) -> Result<(RenderedPage, bool), Failure> {
    // Only pages of the web: a `file:` page would read local files into the DOM.
    let scheme = url::Url::parse(&request.url).map(|u| u.scheme().to_owned());
    if !matches!(scheme.as_deref(), Ok("http" | "https")) {
        return Err(Failure::Page(FetchError::Refused(
            svc_ports::UrlRefusal::Scheme {
                scheme: scheme.unwrap_or_default(),
            },
        )));
    }
    let started = Instant::now();
    let deadline = started + config.page_timeout;
    // Setting up is part of the page's time: on a loaded machine a new context or tab can take
    // seconds, and that is no reason to call the browser broken.
    let context = tokio::time::timeout_at(
        deadline,
        browser.create_browser_context(CreateBrowserContextParams::default()),
    )
    .await
    .map_err(|_| Failure::Browser("creating a browser context timed out".into()))?
    .map_err(|e| Failure::Browser(format!("creating a browser context: {e}")))?;
    let outcome = in_context(browser, &context, fetcher, config, request, deadline).await;
    // The context goes, whatever happened in it: its tab, renderer process and memory.
    let disposed = tokio::time::timeout(GRACE, browser.dispose_browser_context(context))
        .await
        .is_ok_and(|r| r.is_ok());
    outcome.map(|page| (page, disposed))
}

async fn in_context(
    browser: &Browser,
    context: &BrowserContextId,
    fetcher: Arc<dyn PageFetcher>,
    config: &RenderConfig,
    request: &RenderRequest,
    deadline: Instant,
) -> Result<RenderedPage, Failure> {
    let browser_failure = |what: &str| {
        let what = what.to_owned();
        move |e: chromiumoxide::error::CdpError| Failure::Browser(format!("{what}: {e}"))
    };
    let mut target = CreateTargetParams::new("about:blank");
    target.browser_context_id = Some(context.clone());
    let page = tokio::time::timeout_at(deadline, browser.new_page(target))
        .await
        .map_err(|_| Failure::Browser("opening a tab timed out".into()))?
        .map_err(browser_failure("opening a tab"))?;
    let paused = page
        .event_listener::<EventRequestPaused>()
        .await
        .map_err(browser_failure("listening for requests"))?;
    // Every URL, paused before it is sent.
    let enable = EnableParams {
        patterns: Some(vec![RequestPattern {
            url_pattern: Some("*".into()),
            request_stage: Some(RequestStage::Request),
            ..Default::default()
        }]),
        ..Default::default()
    };
    page.execute(enable)
        .await
        .map_err(browser_failure("intercepting requests"))?;
    for script in [LOCKDOWN, WEBMCP_RECORDER] {
        page.execute(AddScriptToEvaluateOnNewDocumentParams::new(script))
            .await
            .map_err(browser_failure("preparing the page"))?;
    }

    let traffic = Arc::new(Traffic::for_page(&request.url));
    let interception = tokio::spawn(intercept(
        page.clone(),
        paused,
        request.clone(),
        fetcher,
        config.clone(),
        traffic.clone(),
    ));
    let settled = settle(&page, &traffic, request, config, deadline).await;
    let result = match settled {
        Err(failure) => Err(failure),
        Ok(settled) => {
            match tokio::time::timeout(GRACE, snapshot(&page, config.max_dom_bytes)).await {
                Ok(Some(snap)) => Ok(RenderedPage {
                    html: snap.html,
                    final_url: snap.url,
                    truncated: snap.cut,
                    requests: traffic.requests.load(Ordering::SeqCst),
                    failed_requests: traffic.failed.load(Ordering::SeqCst),
                    settled,
                    web_mcp_tools: snap.tools,
                }),
                // A script that never yields keeps the DOM from being read at all.
                _ => Err(Failure::Page(FetchError::Timeout {
                    seconds: config.page_timeout.as_secs(),
                })),
            }
        }
    };
    interception.abort();
    let _ = tokio::time::timeout(GRACE, page.close()).await;
    result
}

/// Navigates and waits: `Ok(true)` once the document is complete and no request was in flight
/// for [`QUIET`], `Ok(false)` at the deadline. (The document's readiness is asked of the page
/// itself: a load event might be the blank tab's.)
async fn settle(
    page: &Page,
    traffic: &Traffic,
    request: &RenderRequest,
    config: &RenderConfig,
    deadline: Instant,
) -> Result<bool, Failure> {
    let navigate = page.execute(NavigateParams::new(request.url.clone()));
    match tokio::time::timeout_at(deadline, navigate).await {
        Err(_) => return Ok(false),
        Ok(Err(e)) => return Err(Failure::Browser(format!("navigating: {e}"))),
        Ok(Ok(_)) => {}
    }
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return Ok(false),
            _ = tick.tick() => {}
        }
        if traffic.too_many_navigations.load(Ordering::SeqCst) {
            return Err(Failure::Page(FetchError::TooManyRedirects {
                limit: config.max_navigations as usize,
            }));
        }
        let quiet = traffic.document_served.load(Ordering::SeqCst)
            && traffic.quiet_since().is_some_and(|t| t.elapsed() >= QUIET);
        if quiet {
            let state = tokio::time::timeout(
                Duration::from_millis(500),
                page.evaluate("document.readyState"),
            )
            .await;
            if let Ok(Ok(state)) = state
                && state.into_value::<String>().is_ok_and(|s| s == "complete")
            {
                return Ok(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_declared_utf8_and_binary_types_kept() {
        assert_eq!(
            utf8_content_type("text/javascript; charset=windows-1252"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            utf8_content_type("application/json"),
            "application/json; charset=utf-8"
        );
        assert_eq!(utf8_content_type("image/png"), "image/png");
    }

    #[test]
    fn the_handed_document_is_recognised_as_the_browser_spells_it() {
        assert!(same_document("http://a.example/", "http://A.example#top"));
        assert!(same_document(
            "http://a.example/x?q=1",
            "http://a.example/x?q=1"
        ));
        assert!(!same_document("http://a.example/x", "http://a.example/y"));
        assert!(!same_document("not a url", "not a url"));
    }

    #[test]
    fn refusals_fail_the_request_as_access_denied() {
        let refused = FetchError::Refused(svc_ports::UrlRefusal::Credentials);
        assert!(matches!(fail_reason(&refused), ErrorReason::AccessDenied));
        assert!(matches!(
            fail_reason(&FetchError::Timeout { seconds: 1 }),
            ErrorReason::TimedOut
        ));
    }
}
