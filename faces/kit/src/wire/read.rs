//! `GET` and `POST /api/read`: a public page as clean Markdown and text, with its links, forms
//! and metadata, or a typed `blocked` outcome. The wire types here are also the JSON of the
//! MCP tool `read_page` and of `svc read --format json`.

use crate::problem::*;
use chrono::{DateTime, Utc};
use poem_openapi::{Enum, Object, Union, types::ToJSON};
use std::collections::BTreeMap;
use svc_ports::{ExtractOptions, RobotsDecision};
use svc_services::{
    Principal, ReadError, ReadOutcome, ReadRequest,
    read::{
        BlockReason, Blocked, CacheInfo, CacheState, ContentFormat, DEFAULT_MAX_AGE_SECONDS,
        PageRead, RenderMode,
    },
};

/// The main content's format: `markdown` (default), `text`, or `html` (which adds the cleaned
/// HTML of the content to the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Default)]
#[oai(rename_all = "lowercase")]
pub enum ReadFormat {
    #[default]
    Markdown,
    Text,
    Html,
}

impl From<ReadFormat> for ContentFormat {
    fn from(f: ReadFormat) -> Self {
        match f {
            ReadFormat::Markdown => ContentFormat::Markdown,
            ReadFormat::Text => ContentFormat::Text,
            ReadFormat::Html => ContentFormat::Html,
        }
    }
}

impl From<ContentFormat> for ReadFormat {
    fn from(f: ContentFormat) -> Self {
        match f {
            ContentFormat::Markdown => ReadFormat::Markdown,
            ContentFormat::Text => ReadFormat::Text,
            ContentFormat::Html => ReadFormat::Html,
        }
    }
}

/// Whether the page is run in a headless browser before it is read: `auto` (default) only
/// when its HTML is a script shell (code, almost no visible text, an app's mount point), `never`
/// reads the HTML as fetched, `always` runs every HTML page. Every request the browser makes
/// goes through the same guarded client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Default)]
#[oai(rename_all = "lowercase")]
pub enum RenderOption {
    #[default]
    Auto,
    Never,
    Always,
}

impl From<RenderOption> for RenderMode {
    fn from(r: RenderOption) -> Self {
        match r {
            RenderOption::Auto => RenderMode::Auto,
            RenderOption::Never => RenderMode::Never,
            RenderOption::Always => RenderMode::Always,
        }
    }
}

/// What to read and how.
#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct ReadBody {
    /// Absolute `http` or `https` URL of a public page.
    #[oai(validator(min_length = 1, max_length = 2048))]
    pub url: String,
    pub format: Option<ReadFormat>,
    /// Keep only the main content (default true); false keeps the whole body.
    pub main_content_only: Option<bool>,
    /// CSS selectors whose matches are the content (main-content detection is then skipped).
    #[oai(validator(max_items = 20, max_length = 256))]
    pub include_selectors: Option<Vec<String>>,
    /// CSS selectors whose matches are removed first.
    #[oai(validator(max_items = 20, max_length = 256))]
    pub exclude_selectors: Option<Vec<String>>,
    /// Oldest cached copy acceptable, in seconds (default 600, at most 604800; a fraction is
    /// dropped); 0 always fetches.
    #[oai(validator(minimum(value = "0"), maximum(value = "604800")))]
    pub max_age: Option<f64>,
    pub render: Option<RenderOption>,
}

impl ReadBody {
    pub fn into_request(self) -> ReadRequest {
        ReadRequest {
            url: self.url,
            format: self.format.unwrap_or_default().into(),
            extract: ExtractOptions {
                main_content_only: self.main_content_only.unwrap_or(true),
                include_selectors: self.include_selectors.unwrap_or_default(),
                exclude_selectors: self.exclude_selectors.unwrap_or_default(),
                ..ExtractOptions::default()
            },
            // Validated to 0..=604800 at the edge; `as` drops the fraction.
            max_age_seconds: self
                .max_age
                .map_or(DEFAULT_MAX_AGE_SECONDS, |s| s.max(0.0) as u64),
            render: self.render.unwrap_or_default().into(),
        }
    }
}

/// Many pages, read as one each (the same options for all).
#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct ReadBatchBody {
    /// 1 to 20 absolute `http` or `https` URLs of public pages; answered in this order.
    #[oai(validator(min_items = 1, max_items = 20, min_length = 1, max_length = 2048))]
    pub urls: Vec<String>,
    pub format: Option<ReadFormat>,
    /// Keep only the main content (default true); false keeps the whole body.
    pub main_content_only: Option<bool>,
    /// CSS selectors whose matches are the content (main-content detection is then skipped).
    #[oai(validator(max_items = 20, max_length = 256))]
    pub include_selectors: Option<Vec<String>>,
    /// CSS selectors whose matches are removed first.
    #[oai(validator(max_items = 20, max_length = 256))]
    pub exclude_selectors: Option<Vec<String>>,
    /// Oldest cached copy acceptable, in seconds (default 600, at most 604800); 0 always
    /// fetches.
    #[oai(validator(minimum(value = "0"), maximum(value = "604800")))]
    pub max_age: Option<f64>,
    pub render: Option<RenderOption>,
}

impl ReadBatchBody {
    /// One read request per URL, in order.
    pub fn into_requests(self) -> Vec<ReadRequest> {
        let Self {
            urls,
            format,
            main_content_only,
            include_selectors,
            exclude_selectors,
            max_age,
            render,
        } = self;
        urls.into_iter()
            .map(|url| {
                ReadBody {
                    url,
                    format,
                    main_content_only,
                    include_selectors: include_selectors.clone(),
                    exclude_selectors: exclude_selectors.clone(),
                    max_age,
                    render,
                }
                .into_request()
            })
            .collect()
    }
}

/// A URL of a batch that could not be read at all (refused, unreachable): the problem a single
/// read of it would have answered.
#[derive(Debug, Clone, Object)]
pub struct ReadBatchError {
    pub url: String,
    /// The HTTP status a single read would have had.
    pub status: u16,
    /// One of the published `failure_class` values.
    pub failure_class: String,
    pub detail: String,
    pub retryable: bool,
}

/// One URL's answer in a batch: `outcome` is `page`, `blocked` or `error`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Union)]
#[oai(discriminator_name = "outcome", one_of)]
pub enum ReadBatchItem {
    #[oai(mapping = "page")]
    Page(ReadPage),
    #[oai(mapping = "blocked")]
    Blocked(ReadBlocked),
    #[oai(mapping = "error")]
    Error(ReadBatchError),
}

/// The answers of a batch, in the order of its URLs.
#[derive(Debug, Clone, Object)]
pub struct ReadBatchResult {
    pub results: Vec<ReadBatchItem>,
}

impl ReadBatchResult {
    pub fn of(urls: &[String], answers: Vec<Result<ReadOutcome, ReadError>>) -> Self {
        let results = urls
            .iter()
            .zip(answers)
            .map(|(url, answer)| match answer {
                Ok(ReadOutcome::Page(p)) => ReadBatchItem::Page((*p).into()),
                Ok(ReadOutcome::Blocked(b)) => ReadBatchItem::Blocked((*b).into()),
                Err(e) => {
                    let problem = crate::errors::read_problem(e);
                    ReadBatchItem::Error(ReadBatchError {
                        url: url.clone(),
                        status: problem.class.http_status(),
                        failure_class: problem.class.as_str().to_owned(),
                        retryable: problem.class.retryable(),
                        detail: problem.detail,
                    })
                }
            })
            .collect();
        Self { results }
    }
}

/// A link on the page.
#[derive(Debug, Clone, Object)]
pub struct PageLink {
    /// Absolute URL.
    pub url: String,
    pub text: String,
    /// `rel` tokens, lower-cased.
    pub rel: Vec<String>,
    /// Whether the link stays on the page's site.
    pub same_site: bool,
}

#[derive(Debug, Clone, Object)]
pub struct FormFieldOption {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

#[derive(Debug, Clone, Object)]
#[oai(skip_serializing_if_is_none)]
pub struct PageFormField {
    pub name: String,
    /// `text`, `email`, `password`, `select`, `textarea`, `checkbox`, `hidden`, ...
    #[oai(rename = "type")]
    pub field_type: String,
    pub label: Option<String>,
    pub required: bool,
    pub default_value: Option<String>,
    /// Choices of a `select` (empty otherwise).
    pub options: Vec<FormFieldOption>,
}

#[derive(Debug, Clone, Object)]
#[oai(skip_serializing_if_is_none)]
pub struct PageForm {
    pub id: Option<String>,
    pub name: Option<String>,
    /// Absolute URL the form submits to.
    pub action: String,
    /// `GET` or `POST`.
    pub method: String,
    pub enctype: String,
    pub fields: Vec<PageFormField>,
}

/// What the page says about itself.
#[derive(Debug, Clone, Object)]
#[oai(skip_serializing_if_is_none)]
pub struct PageMetadataBody {
    pub title: Option<String>,
    pub description: Option<String>,
    /// Absolute canonical URL.
    pub canonical: Option<String>,
    /// Language tag (`en`, `fr-FR`, ...).
    pub language: Option<String>,
    /// OpenGraph properties without the `og:` prefix.
    pub open_graph: BTreeMap<String, String>,
    /// Twitter card names without the `twitter:` prefix.
    pub twitter: BTreeMap<String, String>,
    /// JSON-LD objects, as published.
    pub json_ld: Vec<serde_json::Value>,
    /// Author or byline.
    pub author: Option<String>,
    /// The description, else the content's first paragraph.
    pub excerpt: Option<String>,
    pub published_time: Option<String>,
    pub site_name: Option<String>,
    /// Absolute favicon URL.
    pub favicon: Option<String>,
}

/// What robots.txt said.
#[derive(Debug, Clone, Object)]
pub struct RobotsBody {
    pub checked: bool,
    pub allowed: bool,
    pub robots_url: String,
    /// `rules`, `no_robots_txt` (4xx: all allowed), `unreachable` (5xx or network: all
    /// disallowed, RFC 9309) or `not_checked`.
    pub basis: String,
}

impl From<RobotsDecision> for RobotsBody {
    fn from(r: RobotsDecision) -> Self {
        Self {
            checked: r.checked,
            allowed: r.allowed,
            robots_url: r.robots_url,
            basis: r.basis,
        }
    }
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename_all = "lowercase")]
pub enum CacheStateName {
    /// Fetched for this request.
    Miss,
    /// Answered from a stored copy no older than `max_age`.
    Hit,
    /// Not fetched (offline extraction of a saved page).
    Bypass,
}

#[derive(Debug, Clone, Object)]
pub struct CacheBody {
    pub state: CacheStateName,
    /// Age of the answer's copy, in seconds.
    pub age_seconds: u64,
}

impl From<CacheInfo> for CacheBody {
    fn from(c: CacheInfo) -> Self {
        Self {
            state: match c.state {
                CacheState::Miss => CacheStateName::Miss,
                CacheState::Hit => CacheStateName::Hit,
                CacheState::Bypass => CacheStateName::Bypass,
            },
            age_seconds: c.age_seconds,
        }
    }
}

/// A page read as content.
#[derive(Debug, Clone, Object)]
#[oai(skip_serializing_if_is_none)]
pub struct ReadPage {
    pub requested_url: String,
    /// Where the last redirect led.
    pub final_url: String,
    pub status_code: u16,
    pub content_type: Option<String>,
    pub title: Option<String>,
    pub format: ReadFormat,
    /// The main content as Markdown, links absolute.
    pub markdown: String,
    /// The main content as plain text.
    pub text: String,
    /// The main content's cleaned HTML (only when `format` is `html`).
    pub html: Option<String>,
    /// Every link on the page.
    pub links: Vec<PageLink>,
    /// Every form on the page.
    pub forms: Vec<PageForm>,
    pub metadata: PageMetadataBody,
    /// Pages in the document, for a PDF (absent for HTML and text). A PDF's `text` separates
    /// its pages with a form feed (U+000C) on a line of its own, its `markdown` with a `---`
    /// rule; at most 500 pages are read (`truncated` when there were more).
    pub page_count: Option<u64>,
    /// `sha256:` + hex digest of `text`; equal hashes mean equal readable content.
    pub content_hash: String,
    /// The page was larger than 10 MiB and was cut there.
    pub truncated: bool,
    /// URLs visited before `final_url`, in order.
    pub redirects: Vec<String>,
    pub robots: Option<RobotsBody>,
    pub fetched_at: DateTime<Utc>,
    pub cache: CacheBody,
    /// Read from the DOM a headless browser built by running the page's scripts (`render`);
    /// false when the HTML was read as fetched.
    pub rendered: bool,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename_all = "snake_case")]
pub enum BlockReasonName {
    /// robots.txt does not allow the URL.
    RobotsDisallowed,
    /// The site answered with a captcha or bot challenge.
    Captcha,
    /// The page asks to sign in.
    LoginWall,
    /// The site answered 4xx or 5xx.
    HttpError,
    /// The answer is neither HTML, text nor a readable PDF (a damaged PDF, or one too large).
    UnsupportedContent,
    /// A PDF that needs a password to open.
    EncryptedPdf,
    /// A PDF whose pages hold no text, only images (a scan): it would need OCR.
    ImageOnlyPdf,
}

impl From<BlockReason> for BlockReasonName {
    fn from(r: BlockReason) -> Self {
        match r {
            BlockReason::RobotsDisallowed => BlockReasonName::RobotsDisallowed,
            BlockReason::Captcha => BlockReasonName::Captcha,
            BlockReason::LoginWall => BlockReasonName::LoginWall,
            BlockReason::HttpError => BlockReasonName::HttpError,
            BlockReason::UnsupportedContent => BlockReasonName::UnsupportedContent,
            BlockReason::EncryptedPdf => BlockReasonName::EncryptedPdf,
            BlockReason::ImageOnlyPdf => BlockReasonName::ImageOnlyPdf,
        }
    }
}

/// A page that could not be read as content. Never carries the page's text.
#[derive(Debug, Clone, Object)]
#[oai(skip_serializing_if_is_none)]
pub struct ReadBlocked {
    pub requested_url: String,
    pub final_url: Option<String>,
    pub status_code: Option<u16>,
    pub reason: BlockReasonName,
    pub detail: String,
    /// Trying again later may succeed (429 and 5xx answers).
    pub retryable: bool,
    pub robots: Option<RobotsBody>,
    pub fetched_at: DateTime<Utc>,
    pub cache: CacheBody,
    /// Read from the DOM a headless browser built by running the page's scripts (`render`);
    /// false when the HTML was read as fetched.
    pub rendered: bool,
}

/// The result of a read: `outcome` is `page` or `blocked`.
// poem-openapi's Union cannot hold a Box; one answer per request is moved once, so the size
// difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Union)]
#[oai(discriminator_name = "outcome", one_of)]
pub enum ReadResult {
    #[oai(mapping = "page")]
    Page(ReadPage),
    #[oai(mapping = "blocked")]
    Blocked(ReadBlocked),
}

impl From<PageRead> for ReadPage {
    fn from(p: PageRead) -> Self {
        let m = p.metadata;
        Self {
            requested_url: p.requested_url,
            final_url: p.final_url,
            status_code: p.status_code,
            content_type: p.content_type,
            title: p.title,
            format: p.format.into(),
            markdown: p.markdown,
            text: p.text,
            html: p.html,
            links: p
                .links
                .into_iter()
                .map(|l| PageLink {
                    url: l.url,
                    text: l.text,
                    rel: l.rel,
                    same_site: l.same_site,
                })
                .collect(),
            forms: p
                .forms
                .into_iter()
                .map(|f| PageForm {
                    id: f.id,
                    name: f.name,
                    action: f.action,
                    method: f.method,
                    enctype: f.enctype,
                    fields: f
                        .fields
                        .into_iter()
                        .map(|x| PageFormField {
                            name: x.name,
                            field_type: x.field_type,
                            label: x.label,
                            required: x.required,
                            default_value: x.default_value,
                            options: x
                                .options
                                .into_iter()
                                .map(|o| FormFieldOption {
                                    value: o.value,
                                    label: o.label,
                                    selected: o.selected,
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
            metadata: PageMetadataBody {
                title: m.title,
                description: m.description,
                canonical: m.canonical,
                language: m.language,
                open_graph: m.open_graph,
                twitter: m.twitter,
                json_ld: m.json_ld,
                author: m.author,
                excerpt: m.excerpt,
                published_time: m.published_time,
                site_name: m.site_name,
                favicon: m.favicon,
            },
            page_count: p.page_count.map(|n| n as u64),
            content_hash: p.content_hash,
            truncated: p.truncated,
            redirects: p.redirects,
            robots: p.robots.map(Into::into),
            fetched_at: p.fetched_at,
            cache: p.cache.into(),
            rendered: p.rendered,
        }
    }
}

impl From<Blocked> for ReadBlocked {
    fn from(b: Blocked) -> Self {
        Self {
            requested_url: b.requested_url,
            final_url: b.final_url,
            status_code: b.status_code,
            reason: b.reason.into(),
            detail: b.detail,
            retryable: b.retryable,
            robots: b.robots.map(Into::into),
            fetched_at: b.fetched_at,
            cache: b.cache.into(),
            rendered: b.rendered,
        }
    }
}

impl From<ReadOutcome> for ReadResult {
    fn from(o: ReadOutcome) -> Self {
        match o {
            ReadOutcome::Page(p) => ReadResult::Page((*p).into()),
            ReadOutcome::Blocked(b) => ReadResult::Blocked((*b).into()),
        }
    }
}

impl ReadResult {
    /// The answer as JSON, exactly as `/api/read` sends it.
    pub fn to_json_value(&self) -> serde_json::Value {
        self.to_json().unwrap_or_default()
    }

    /// JSON Schema (2020-12) of the answer, self-contained: the MCP tool's `outputSchema`.
    pub fn json_schema() -> serde_json::Value {
        crate::schema::json_schema_of::<Self>()
    }
}

/// The key must carry the `read` scope.
pub fn require_read_scope(principal: &Principal) -> Result<(), ApiProblem> {
    super::actions::require_scope(principal, "read")
}
