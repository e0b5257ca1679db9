//! What reading a page yields besides its main content: links, forms and metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Absolute URL.
    pub url: String,
    pub text: String,
    /// `rel` tokens, lower-cased.
    pub rel: Vec<String>,
    /// Same registrable site as the page (same host, or one is a subdomain of the other).
    pub same_site: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldOption {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormField {
    pub name: String,
    /// `text`, `email`, `select`, `textarea`, `checkbox`, ...
    pub field_type: String,
    pub label: Option<String>,
    pub required: bool,
    pub default_value: Option<String>,
    pub options: Vec<FieldOption>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Form {
    pub id: Option<String>,
    pub name: Option<String>,
    /// Absolute action URL (the page's URL when the form has none).
    pub action: String,
    /// Upper-case `GET` or `POST`.
    pub method: String,
    pub enctype: String,
    pub fields: Vec<FormField>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageMetadata {
    pub title: Option<String>,
    pub description: Option<String>,
    pub canonical: Option<String>,
    pub language: Option<String>,
    /// `og:*` properties without the prefix.
    pub open_graph: BTreeMap<String, String>,
    /// `twitter:*` names without the prefix.
    pub twitter: BTreeMap<String, String>,
    pub json_ld: Vec<serde_json::Value>,
    pub author: Option<String>,
    /// A short summary: the description, else the content's first paragraph.
    pub excerpt: Option<String>,
    pub published_time: Option<String>,
    pub site_name: Option<String>,
    pub favicon: Option<String>,
}

/// How the main content is chosen from a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Keep only the main content (article body), as Readability finds it. When false the whole
    /// body is kept (after `exclude_selectors`).
    pub main_content_only: bool,
    /// CSS selectors whose matches, in document order, are the content. When any is given,
    /// main-content detection is skipped: the caller said what the content is.
    pub include_selectors: Vec<String>,
    /// CSS selectors whose matches are removed before anything else.
    pub exclude_selectors: Vec<String>,
    /// Whether `MainContent::html` is wanted: serialising it is a walk of its own, which a
    /// reader asking for Markdown or text does not pay. When false it is empty.
    pub html: bool,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        Self {
            main_content_only: true,
            include_selectors: Vec::new(),
            exclude_selectors: Vec::new(),
            html: true,
        }
    }
}

/// The main content of a page in the three forms a reader asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainContent {
    pub markdown: String,
    /// Plain text with paragraph breaks kept.
    pub text: String,
    /// Cleaned HTML of the content (links made absolute).
    pub html: String,
}

/// Evidence that a page is an obstacle rather than content. The reading service turns these
/// into a `blocked` outcome; they are never shown as page text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSignals {
    /// What marks the page as a captcha or bot challenge (e.g. `g-recaptcha widget`).
    pub captcha: Option<String>,
    /// What marks the page as a sign-in wall (e.g. `password form, 120 characters of text`).
    pub login_wall: Option<String>,
    /// What marks the static HTML as a script shell, a single-page app that scripts fill
    /// (e.g. `2 script(s), 0 characters of visible text, an empty #root`): reading it with
    /// `render: auto` runs it in a browser. Not an obstacle.
    #[serde(default)]
    pub script_shell: Option<String>,
}

/// Everything read from one HTML document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub content: MainContent,
    pub links: Vec<Link>,
    pub forms: Vec<Form>,
    pub metadata: PageMetadata,
    pub signals: PageSignals,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("`{selector}` is not a valid CSS selector")]
    InvalidSelector { selector: String },
}

/// Turns a fetched HTML document into content, links, forms and metadata. Pure CPU work: no
/// I/O, deterministic for the same input. Implementations MUST return
/// [`ExtractError::InvalidSelector`] for a selector they cannot parse (and nothing else), and
/// MUST resolve every URL they return against `page_url` (or the page's `<base href>`).
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait PageExtractor: Send + Sync {
    /// Checks the options without extracting anything: the same errors `extract` would give.
    fn check_options(&self, options: &ExtractOptions) -> Result<(), ExtractError>;

    fn extract(
        &self,
        html: &str,
        page_url: &str,
        options: &ExtractOptions,
    ) -> Result<Extraction, ExtractError>;

    /// For each selector, the whitespace-collapsed text of the first element it matches
    /// (`None` when nothing matches): what action verification rules and typed outputs read.
    fn select_texts(
        &self,
        html: &str,
        selectors: &[String],
    ) -> Result<Vec<Option<String>>, ExtractError>;
}
