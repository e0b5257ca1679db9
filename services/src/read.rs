//! Reading a public page: fetch through the guarded fetcher (or the page cache, when the
//! caller's `max_age` allows), extract, and decide whether the answer is content or an
//! obstacle. `/api/read`, the MCP tool `read_page` and `svc read` all come through here.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use svc_ports::{
    Clock, ExtractError, ExtractOptions, Extraction, FetchError, FetchRequest, FetchedPage, Form,
    Link, PageCache, PageExtractor, PageFetcher, PageMetadata, PdfReader, RobotsDecision,
    UrlRefusal,
};
use url::Url;

mod render;
pub use render::RenderMode;

/// Reads of one batch fetched at once: enough to overlap slow sites, few enough that one
/// caller's batch does not crowd out everyone else's reads.
pub const BATCH_CONCURRENCY: usize = 4;

/// How long a batch reads: a read still running then answers as a site that did not answer in
/// time, so the batch answers within a balancer's patience (its pages, 5 rounds of 4, could
/// otherwise take each the fetch deadline and a render's limit). The reads already done are
/// kept.
pub const BATCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(45);

/// A batch [`ReadService::check_many_for`] accepted, to read.
pub struct CheckedBatch<'a> {
    service: &'a ReadService,
    requests: Vec<ReadRequest>,
}

impl CheckedBatch<'_> {
    /// Each read exactly as a single one (cache, guard, robots), at most [`BATCH_CONCURRENCY`]
    /// at a time, all within [`BATCH_DEADLINE`]; the answers in the order asked. A request
    /// asked twice is read once and its answer given at each place: read at the same time,
    /// both would miss the cache and fetch (or render) the page twice.
    pub async fn read(self) -> Vec<Result<ReadOutcome, ReadError>> {
        use futures_util::StreamExt;
        let service = self.service;
        let deadline = tokio::time::Instant::now() + BATCH_DEADLINE;
        let read_checked = |r: ReadRequest| async move {
            match tokio::time::timeout_at(deadline, service.read_checked(&r)).await {
                Ok(answer) => answer,
                Err(_) => Err(ReadError::Unreachable(FetchError::Timeout {
                    seconds: BATCH_DEADLINE.as_secs(),
                })),
            }
        };
        let mut unique: Vec<&ReadRequest> = Vec::new();
        let places: Vec<usize> = self
            .requests
            .iter()
            .map(|r| {
                unique.iter().position(|u| *u == r).unwrap_or_else(|| {
                    unique.push(r);
                    unique.len() - 1
                })
            })
            .collect();
        // Owned requests: a future over a borrowed one is not `Send` for every lifetime the MCP
        // tool's handler needs.
        let owned: Vec<ReadRequest> = unique.iter().map(|r| (*r).clone()).collect();
        type Answer = Option<Result<ReadOutcome, ReadError>>;
        let mut answers: Vec<Answer> = futures_util::stream::iter(owned)
            .map(read_checked)
            .buffered(BATCH_CONCURRENCY)
            .map(Some)
            .collect()
            .await;
        // The last place of each request takes its answer; the others a copy (a page) or a read
        // of their own (an error, which cannot be copied), those read at once as before.
        let mut out: Vec<Answer> = Vec::with_capacity(places.len());
        let mut again = Vec::new();
        for (at, &u) in places.iter().enumerate() {
            let last = !places[at + 1..].contains(&u);
            out.push(match &answers[u] {
                Some(Ok(outcome)) if !last => Some(Ok(outcome.clone())),
                Some(Err(_)) if !last => {
                    again.push((at, unique[u].clone()));
                    None
                }
                _ => answers[u].take(),
            });
        }
        let reread: Vec<(usize, Result<ReadOutcome, ReadError>)> =
            futures_util::stream::iter(again)
                .map(|(at, r)| async move { (at, read_checked(r).await) })
                .buffered(BATCH_CONCURRENCY)
                .collect()
                .await;
        for (at, answer) in reread {
            out[at] = Some(answer);
        }
        out.into_iter()
            .map(|a| a.expect("every place is answered once"))
            .collect()
    }
}

/// Longest `max_age` honoured; pages older than this are purged from the cache.
pub const MAX_CACHE_AGE_SECONDS: u64 = 7 * 24 * 3600;
/// Limits on CSS selectors, which cost matching time on every element.
pub const MAX_SELECTORS: usize = 20;
pub const MAX_SELECTOR_LENGTH: usize = 256;
/// `max_age` when the caller gives none.
pub const DEFAULT_MAX_AGE_SECONDS: u64 = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContentFormat {
    #[default]
    Markdown,
    Text,
    Html,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub url: String,
    pub format: ContentFormat,
    pub extract: ExtractOptions,
    /// Oldest cached copy acceptable, in seconds; 0 always fetches.
    pub max_age_seconds: u64,
    /// Whether the page is run in a browser before it is read.
    pub render: RenderMode,
}

impl ReadRequest {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            format: ContentFormat::default(),
            extract: ExtractOptions::default(),
            max_age_seconds: DEFAULT_MAX_AGE_SECONDS,
            render: RenderMode::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheState {
    /// Fetched for this request.
    Miss,
    /// Answered from a copy no older than `max_age`.
    Hit,
    /// Not fetched at all (offline extraction of a saved page).
    Bypass,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheInfo {
    pub state: CacheState,
    pub age_seconds: u64,
}

/// A page that was read.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRead {
    pub requested_url: String,
    pub final_url: String,
    pub status_code: u16,
    pub content_type: Option<String>,
    pub title: Option<String>,
    pub format: ContentFormat,
    pub markdown: String,
    pub text: String,
    /// Only when the HTML format was asked for.
    pub html: Option<String>,
    pub links: Vec<Link>,
    pub forms: Vec<Form>,
    pub metadata: PageMetadata,
    /// Pages in the document, for a PDF.
    pub page_count: Option<usize>,
    /// `sha256:` and the hex digest of `text`: equal when the readable content is equal.
    pub content_hash: String,
    /// The body was cut at the size cap.
    pub truncated: bool,
    pub redirects: Vec<String>,
    pub robots: Option<RobotsDecision>,
    pub fetched_at: DateTime<Utc>,
    pub cache: CacheInfo,
    /// Read from the DOM a browser built by running the page's scripts.
    pub rendered: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReason {
    RobotsDisallowed,
    Captcha,
    LoginWall,
    HttpError,
    UnsupportedContent,
    /// A PDF that needs a password.
    EncryptedPdf,
    /// A PDF without a text layer (scanned pages).
    ImageOnlyPdf,
}

impl BlockReason {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockReason::RobotsDisallowed => "robots_disallowed",
            BlockReason::Captcha => "captcha",
            BlockReason::LoginWall => "login_wall",
            BlockReason::HttpError => "http_error",
            BlockReason::UnsupportedContent => "unsupported_content",
            BlockReason::EncryptedPdf => "encrypted_pdf",
            BlockReason::ImageOnlyPdf => "image_only_pdf",
        }
    }
}

/// A page that could not be read as content, and why. Never carries the page's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub requested_url: String,
    pub final_url: Option<String>,
    pub status_code: Option<u16>,
    pub reason: BlockReason,
    pub detail: String,
    /// Trying again later may succeed (429 and 5xx answers).
    pub retryable: bool,
    pub robots: Option<RobotsDecision>,
    pub fetched_at: DateTime<Utc>,
    pub cache: CacheInfo,
    /// Judged from the DOM a browser built by running the page's scripts.
    pub rendered: bool,
}

impl Blocked {
    /// `page` answered as blocked for `reason`: where it came from, never what it said.
    pub(crate) fn answer(
        page: &FetchedPage,
        cache: &CacheInfo,
        rendered: bool,
        reason: BlockReason,
        detail: String,
        retryable: bool,
    ) -> ReadOutcome {
        ReadOutcome::Blocked(Box::new(Blocked {
            requested_url: page.requested_url.clone(),
            final_url: Some(page.final_url.clone()),
            status_code: Some(page.status),
            reason,
            detail,
            retryable,
            robots: page.robots.checked.then(|| page.robots.clone()),
            fetched_at: page.fetched_at,
            cache: cache.clone(),
            rendered,
        }))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReadOutcome {
    Page(Box<PageRead>),
    Blocked(Box<Blocked>),
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Refused(UrlRefusal),
    #[error("{0}")]
    Unreachable(FetchError),
    #[error("{0}")]
    InvalidSelector(ExtractError),
    #[error(
        "at most {MAX_SELECTORS} include and {MAX_SELECTORS} exclude selectors of at most {MAX_SELECTOR_LENGTH} characters each"
    )]
    SelectorLimits,
    #[error("max_age must be at most {MAX_CACHE_AGE_SECONDS} seconds")]
    MaxAgeTooLarge,
    #[error("this needs a key with the `{0}` scope")]
    MissingScope(&'static str),
    #[error("extraction failed: {0}")]
    Internal(#[source] anyhow::Error),
    /// The page must be rendered and no browser can run it now (none here, or every tab busy).
    #[error("{0}")]
    RenderUnavailable(svc_ports::RenderError),
    /// A PDF that cannot be read now, only later (every parser busy).
    #[error("{0}")]
    PdfBusy(svc_ports::PdfRefusal),
}

pub struct ReadService {
    fetcher: Arc<dyn PageFetcher>,
    cache: Arc<dyn PageCache>,
    extractor: Arc<dyn PageExtractor>,
    pdf: Arc<dyn PdfReader>,
    clock: Arc<dyn Clock>,
    renderer: Arc<dyn svc_ports::PageRenderer>,
}

/// The cache key: the URL as the fetcher will ask for it, without its fragment.
fn cache_key(url: &str) -> String {
    match Url::parse(url.trim()) {
        Ok(mut u) => {
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => url.trim().to_owned(),
    }
}

enum Body {
    Html,
    Text,
    Other,
}

fn body_kind(content_type: Option<&str>, body: &str) -> Body {
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("text/html" | "application/xhtml+xml") => Body::Html,
        Some(t)
            if t.starts_with("text/")
                || t == "application/json"
                || t == "application/xml"
                || t.ends_with("+json")
                || t.ends_with("+xml") =>
        {
            Body::Text
        }
        // No type given: sniff the way browsers do for a leading tag.
        None if body.trim_start().starts_with('<') => Body::Html,
        None => Body::Text,
        Some(_) => Body::Other,
    }
}

pub(crate) fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn content_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

impl ReadService {
    pub fn new(
        fetcher: Arc<dyn PageFetcher>,
        cache: Arc<dyn PageCache>,
        extractor: Arc<dyn PageExtractor>,
        pdf: Arc<dyn PdfReader>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            fetcher,
            cache,
            extractor,
            pdf,
            clock,
            renderer: Arc::new(svc_ports::NoRenderer),
        }
    }

    /// Runs pages that need it (`render`) in this browser; without one, `auto` reads the
    /// static HTML and `always` is refused as unavailable.
    pub fn with_renderer(mut self, renderer: Arc<dyn svc_ports::PageRenderer>) -> Self {
        self.renderer = renderer;
        self
    }

    /// Reads `request.url`: from the cache when a copy is young enough, otherwise through the
    /// fetcher (and the copy is stored). Robots refusals and obstacle pages are
    /// [`ReadOutcome::Blocked`]; URLs that may not be fetched at all are [`ReadError::Refused`].
    /// [`Self::read`] for an API key's holder: the key must carry the `read` scope.
    pub async fn read_for(
        &self,
        principal: &crate::Principal,
        request: &ReadRequest,
    ) -> Result<ReadOutcome, ReadError> {
        if !principal.key.scopes.contains("read") {
            return Err(ReadError::MissingScope("read"));
        }
        self.read(request).await
    }

    /// A batch of reads for an API key's holder, checked whole (scope, selectors, age) before
    /// anything is fetched: a face counts the batch's other URLs against the key's limit only
    /// once this passes, then reads it ([`CheckedBatch::read`]).
    pub fn check_many_for(
        &self,
        principal: &crate::Principal,
        requests: Vec<ReadRequest>,
    ) -> Result<CheckedBatch<'_>, ReadError> {
        if !principal.key.scopes.contains("read") {
            return Err(ReadError::MissingScope("read"));
        }
        // The options every URL shares are the request's: a bad selector or age refuses the
        // batch (422), before anything is fetched, rather than each URL alike.
        for r in &requests {
            self.check_request(r)?;
        }
        Ok(CheckedBatch {
            service: self,
            requests,
        })
    }

    pub async fn read(&self, request: &ReadRequest) -> Result<ReadOutcome, ReadError> {
        self.check_request(request)?;
        self.read_checked(request).await
    }

    /// What refuses a read before anything is fetched: its age or its selectors.
    fn check_request(&self, request: &ReadRequest) -> Result<(), ReadError> {
        if request.max_age_seconds > MAX_CACHE_AGE_SECONDS {
            return Err(ReadError::MaxAgeTooLarge);
        }
        self.check_selectors(&request.extract)
    }

    /// A read [`Self::check_request`] passed; a blocked page is counted.
    async fn read_checked(&self, request: &ReadRequest) -> Result<ReadOutcome, ReadError> {
        let outcome = self.read_uncounted(request).await;
        if let Ok(ReadOutcome::Blocked(b)) = &outcome {
            metrics::counter!(crate::metrics::READS_BLOCKED, "reason" => b.reason.as_str())
                .increment(1);
        }
        outcome
    }

    async fn read_uncounted(&self, request: &ReadRequest) -> Result<ReadOutcome, ReadError> {
        let key = cache_key(&request.url);
        let now = self.clock.now();
        if request.render == RenderMode::Always
            && let Some(outcome) = self.cached_rendering(&key, request).await?
        {
            return Ok(outcome);
        }
        let cached = if request.max_age_seconds == 0 {
            None
        } else {
            let not_before = now - chrono::Duration::seconds(request.max_age_seconds as i64);
            self.cache
                .fresh_page(&key, not_before)
                .await
                .unwrap_or_else(|e| {
                    // A cache that fails only costs a fetch.
                    tracing::warn!(error = %e, "page cache read failed; fetching");
                    None
                })
        };
        // A copy of a "try again later" answer (stored before such answers were kept out of
        // the cache) is no answer for a caller who is trying again.
        let cached = cached.filter(|page| !retry_later(page.status));
        let (page, state) = match cached {
            Some(page) => {
                metrics::counter!(crate::metrics::FETCHES, "outcome" => "cache_hit").increment(1);
                (page, CacheState::Hit)
            }
            None => {
                let fetched = self
                    .fetcher
                    .fetch(&FetchRequest {
                        url: request.url.trim().to_owned(),
                        respect_robots: true,
                        accept: None,
                    })
                    .await;
                let fetch_outcome = match &fetched {
                    Ok(_) => "fetched",
                    Err(FetchError::Refused(_)) => "refused",
                    Err(FetchError::RobotsDisallowed(_)) => "robots_disallowed",
                    Err(FetchError::TooManyRedirects { .. }) => "too_many_redirects",
                    Err(FetchError::Timeout { .. }) => "timeout",
                    Err(FetchError::Connect { .. }) => "connect",
                    Err(FetchError::Protocol { .. }) => "protocol",
                };
                metrics::counter!(crate::metrics::FETCHES, "outcome" => fetch_outcome).increment(1);
                let page = match fetched {
                    Ok(page) => page,
                    Err(FetchError::Refused(r)) => return Err(ReadError::Refused(r)),
                    Err(FetchError::RobotsDisallowed(decision)) => {
                        return Ok(ReadOutcome::Blocked(Box::new(Blocked {
                            requested_url: request.url.clone(),
                            final_url: None,
                            status_code: None,
                            reason: BlockReason::RobotsDisallowed,
                            detail: format!(
                                "{} does not allow this URL for svc-reader ({})",
                                decision.robots_url, decision.basis
                            ),
                            // An unreachable robots.txt (5xx, no answer) disallows for now only.
                            retryable: decision.basis == "unreachable",
                            robots: Some(decision),
                            fetched_at: now,
                            cache: CacheInfo {
                                state: CacheState::Miss,
                                age_seconds: 0,
                            },
                            rendered: false,
                        })));
                    }
                    Err(e) => return Err(ReadError::Unreachable(e)),
                };
                // The page is blocked as retryable: the next read must ask the site again.
                if !retry_later(page.status)
                    && let Err(e) = self.cache.put_page(&key, &page).await
                {
                    tracing::warn!(error = %e, "page cache write failed");
                }
                (page, CacheState::Miss)
            }
        };
        let age_seconds = (now - page.fetched_at).num_seconds().max(0) as u64;
        self.answer(page, request, CacheInfo { state, age_seconds }, Some(&key))
            .await
    }

    /// Extracts a saved page as if it had been fetched from `base_url` with status 200: the
    /// same answer `read` gives, without any network (`svc read --file`, the benchmarks).
    /// `truncated`: the file was longer than a fetched page may be and was cut there, as the
    /// fetcher cuts one.
    pub async fn read_document(
        &self,
        html: String,
        truncated: bool,
        base_url: &str,
        request: &ReadRequest,
    ) -> Result<ReadOutcome, ReadError> {
        let mut page = self.saved(base_url, "text/html", "utf-8", html, None);
        page.truncated = truncated;
        self.read_saved(page, request).await
    }

    /// [`Self::read_document`] for a saved PDF (`svc read --file X.pdf`).
    pub async fn read_pdf_document(
        &self,
        bytes: Vec<u8>,
        truncated: bool,
        base_url: &str,
        request: &ReadRequest,
    ) -> Result<ReadOutcome, ReadError> {
        let mut page = self.saved(
            base_url,
            "application/pdf",
            "binary",
            String::new(),
            Some(bytes),
        );
        page.truncated = truncated;
        self.read_saved(page, request).await
    }

    /// A saved file as the fetcher would have answered it from `base_url`.
    fn saved(
        &self,
        base_url: &str,
        content_type: &str,
        charset: &str,
        body: String,
        raw: Option<Vec<u8>>,
    ) -> FetchedPage {
        FetchedPage {
            requested_url: base_url.to_owned(),
            final_url: base_url.to_owned(),
            status: 200,
            content_type: Some(content_type.into()),
            headers: Vec::new(),
            charset: charset.into(),
            body,
            raw,
            truncated: false,
            redirects: Vec::new(),
            robots: RobotsDecision::not_checked(),
            fetched_at: self.clock.now(),
        }
    }

    async fn read_saved(
        &self,
        page: FetchedPage,
        request: &ReadRequest,
    ) -> Result<ReadOutcome, ReadError> {
        self.check_selectors(&request.extract)?;
        let cache = CacheInfo {
            state: CacheState::Bypass,
            age_seconds: 0,
        };
        self.answer(page, request, cache, None).await
    }

    fn check_selectors(&self, options: &ExtractOptions) -> Result<(), ReadError> {
        let all = || {
            options
                .include_selectors
                .iter()
                .chain(&options.exclude_selectors)
        };
        if options.include_selectors.len() > MAX_SELECTORS
            || options.exclude_selectors.len() > MAX_SELECTORS
            || all().any(|s| s.chars().count() > MAX_SELECTOR_LENGTH)
        {
            return Err(ReadError::SelectorLimits);
        }
        self.extractor
            .check_options(options)
            .map_err(ReadError::InvalidSelector)
    }

    /// What is read from `page`: `None` when its content type is not read at all.
    async fn extract(
        &self,
        page: &FetchedPage,
        request: &ReadRequest,
    ) -> Result<Option<Extraction>, ReadError> {
        Ok(Some(
            match body_kind(page.content_type.as_deref(), &page.body) {
                Body::Html => {
                    let extractor = self.extractor.clone();
                    let options = ExtractOptions {
                        html: request.format == ContentFormat::Html,
                        ..request.extract.clone()
                    };
                    let (body, url) = (page.body.clone(), page.final_url.clone());
                    // Parsing a 10 MiB page takes milliseconds of CPU: keep it off the runtime.
                    tokio::task::spawn_blocking({
                        // The request's span (and its id) follows the work to the blocking pool.
                        let span = tracing::Span::current();
                        move || span.in_scope(|| extractor.extract(&body, &url, &options))
                    })
                    .await
                    .map_err(|e| ReadError::Internal(anyhow::anyhow!("extraction task: {e}")))?
                    .map_err(ReadError::InvalidSelector)?
                }
                Body::Text => plain_text_extraction(&page.body),
                Body::Other => return Ok(None),
            },
        ))
    }

    /// The answer for `page` given what was read from it.
    fn interpret(
        &self,
        page: FetchedPage,
        extraction: Option<Extraction>,
        request: &ReadRequest,
        cache: CacheInfo,
        rendered: bool,
    ) -> Result<ReadOutcome, ReadError> {
        let robots = page.robots.checked.then(|| page.robots.clone());
        let blocked = |reason: BlockReason, detail: String, retryable: bool| {
            Ok(Blocked::answer(
                &page, &cache, rendered, reason, detail, retryable,
            ))
        };
        let http_error = page.status >= 400;
        let retryable = retry_later(page.status);
        let extraction = match extraction {
            Some(extraction) => extraction,
            None => {
                return blocked(
                    BlockReason::UnsupportedContent,
                    format!(
                        "the answer is {}, which is not read; HTML and text are",
                        page.content_type.as_deref().unwrap_or("untyped")
                    ),
                    false,
                );
            }
        };
        // A challenge page is named as such even when it came with a 403 or 503.
        if let Some(evidence) = &extraction.signals.captcha {
            return blocked(
                BlockReason::Captcha,
                format!("the site answered with a bot challenge: {evidence}"),
                false,
            );
        }
        if http_error {
            return blocked(
                BlockReason::HttpError,
                format!("the site answered HTTP {}", page.status),
                retryable,
            );
        }
        if let Some(evidence) = &extraction.signals.login_wall {
            return blocked(
                BlockReason::LoginWall,
                format!("the page asks to sign in: {evidence}"),
                false,
            );
        }
        let Extraction {
            content,
            links,
            forms,
            metadata,
            ..
        } = extraction;
        Ok(ReadOutcome::Page(Box::new(PageRead {
            requested_url: page.requested_url,
            final_url: page.final_url,
            status_code: page.status,
            content_type: page.content_type,
            title: metadata.title.clone(),
            format: request.format,
            content_hash: content_hash(&content.text),
            html: (request.format == ContentFormat::Html).then_some(content.html),
            markdown: content.markdown,
            text: content.text,
            links,
            forms,
            metadata,
            page_count: None,
            truncated: page.truncated,
            redirects: page.redirects,
            robots,
            fetched_at: page.fetched_at,
            cache,
            rendered,
        })))
    }
}

mod pdf;

fn plain_text_extraction(body: &str) -> Extraction {
    Extraction {
        content: svc_ports::MainContent {
            markdown: body.to_owned(),
            text: body.to_owned(),
            html: format!("<pre>{}</pre>", escape_html(body)),
        },
        links: Vec::new(),
        forms: Vec::new(),
        metadata: PageMetadata::default(),
        signals: Default::default(),
    }
}

/// An answer that says to try again later (429, 5xx): blocked as retryable, never cached.
fn retry_later(status: u16) -> bool {
    status == 429 || status >= 500
}

#[cfg(test)]
mod tests;
