//! Rendering a page in a real browser: for single-page apps whose HTML is a shell that a script
//! bundle fills. The reading service decides when to render; a renderer only runs the page.
//!
//! The browser is the most exposed thing the service runs: it executes any script a page ships.
//! So the contract below holds it to the same outbound rules as everything else: every request
//! the page makes goes through the guarded [`PageFetcher`](crate::PageFetcher), or is failed.

use async_trait::async_trait;

use crate::fetch::FetchError;

/// A document to run. The document itself is not fetched again: it was fetched through the
/// guard already (or is a saved page), and the browser is handed these bytes at `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderRequest {
    /// The URL the document is shown at: its origin is the scripts' origin, and relative
    /// URLs resolve against it.
    pub url: String,
    /// The document's HTML, already decoded.
    pub html: String,
}

/// The document after its scripts ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPage {
    /// The DOM serialised as HTML (`document.documentElement.outerHTML`).
    pub html: String,
    /// Where the page ended (a script may have navigated it).
    pub final_url: String,
    /// The DOM was larger than the renderer's cap and was cut there.
    pub truncated: bool,
    /// Requests the page made (the document excluded), and how many of them were failed
    /// (refused by the guard, over a cap, a kind that is never fetched).
    pub requests: u32,
    pub failed_requests: u32,
    /// The page settled (loaded, then no request in flight for a short while) before the time
    /// limit; `false` when the DOM was taken as it stood at the limit.
    pub settled: bool,
    /// The tools the page registered through WebMCP (`navigator.modelContext.registerTool`, or
    /// the `tools` of `provideContext`), by name in the order registered: what an agent in
    /// the browser could call. The readiness scan's `web_mcp` check reads it.
    pub web_mcp_tools: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The page could not be rendered for a reason of the page: it navigated more times than
    /// allowed ([`FetchError::TooManyRedirects`]), or nothing could be read from it within the
    /// time limit (a script that never yields: [`FetchError::Timeout`]).
    #[error(transparent)]
    Page(FetchError),
    /// Every tab was busy for as long as the page's time limit: retry shortly.
    #[error("every browser tab is busy; retry shortly")]
    Busy,
    /// No browser here: none configured, it could not be started, or it died.
    #[error("the browser is unavailable: {detail}")]
    Unavailable { detail: String },
}

/// Runs pages in a browser.
///
/// Implementations MUST:
/// - send every request the page makes (scripts, styles, `fetch`/XHR, frames, navigations;
///   everything but the handed document) through a guarded [`PageFetcher`](crate::PageFetcher)
///   with robots.txt honoured, or fail it; nothing the page asks for may reach the network by
///   any other path (so a script aiming at a loopback, private or metadata address gets
///   nothing), and only `GET` is ever sent (a read changes nothing on a site);
/// - give up within their time limit per page: [`RenderError::Page`] with
///   [`FetchError::Timeout`] when no DOM could be had, otherwise the DOM as it stood then
///   (`settled: false`);
/// - answer [`RenderError::Page`] with [`FetchError::TooManyRedirects`] for a page that keeps
///   navigating (a script redirect loop);
/// - offer the page a `navigator.modelContext` whose `registerTool` and `provideContext` record
///   the tools' names (passing them on to the browser's own, if it has one), and report them;
/// - run each page in a fresh browser context (no cookie, storage or cache shared with another
///   page) and close it afterwards, so memory is given back after each page;
/// - bound the pages run at once, answering [`RenderError::Busy`] when no tab frees up within
///   the time limit, and [`RenderError::Unavailable`] when there is no browser.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait PageRenderer: Send + Sync {
    async fn render(&self, request: &RenderRequest) -> Result<RenderedPage, RenderError>;

    /// Starts the browser now if it is not running, so that the next page's time limit is the
    /// page's alone; [`RenderError::Unavailable`] when it cannot start. Renderers with nothing
    /// to start answer `Ok`.
    async fn warm_up(&self) -> Result<(), RenderError> {
        Ok(())
    }
}

/// The renderer of a process that has no browser: every render is [`RenderError::Unavailable`].
pub struct NoRenderer;

#[async_trait]
impl PageRenderer for NoRenderer {
    async fn render(&self, _request: &RenderRequest) -> Result<RenderedPage, RenderError> {
        Err(RenderError::Unavailable {
            detail: "no browser is configured in this process".into(),
        })
    }
}
