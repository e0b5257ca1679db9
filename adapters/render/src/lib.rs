//! Rendering script-built pages in Debian's headless Chromium over the DevTools protocol
//! (chromiumoxide), under the [`PageRenderer`] contract:
//!
//! - one browser per process, started on the first page that needs it and started again if
//!   it dies; a bounded pool of tabs ([`RenderConfig::tabs`]);
//! - each page in a fresh browser context, closed after the page (its renderer process and
//!   memory go with it); the V8 heap of a page is capped (`--js-flags=--max-old-space-size`);
//! - every request the page makes is paused (`Fetch.enable`, all URLs) and fulfilled with what
//!   the guarded [`PageFetcher`] fetched (robots.txt honoured, caps and address checks as for
//!   any read) or failed; only `GET` goes out, images, media and fonts never; the browser's
//!   own proxy is a local black hole, so a request that escaped interception reaches nothing;
//! - a time limit per page: the DOM as it stood then, or a timeout when a script never yields.

mod chromium;
mod session;

use std::{
    path::PathBuf,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use async_trait::async_trait;
use svc_ports::{PageFetcher, PageRenderer, RenderError, RenderRequest, RenderedPage};
use tokio::sync::{Mutex, Semaphore};

/// Tabs open at once: the documented range of `SVC_RENDER_TABS`.
pub const TABS: std::ops::RangeInclusive<usize> = 1..=16;
/// Seconds per page: the documented range of `SVC_RENDER_TIMEOUT_SECONDS`.
pub const TIMEOUT_SECONDS: std::ops::RangeInclusive<u64> = 1..=60;
/// V8 heap per page, in MiB: the documented range of `SVC_RENDER_HEAP_MB`.
pub const HEAP_MEGABYTES: std::ops::RangeInclusive<u32> = 64..=4096;

#[derive(Debug, Clone)]
pub struct RenderConfig {
    /// The Chromium binary (Debian: `/usr/bin/chromium`).
    pub chromium: PathBuf,
    /// Pages rendered at once; more wait for a tab (up to the page time limit).
    pub tabs: usize,
    /// Time from navigation to the DOM being taken.
    pub page_timeout: Duration,
    /// V8 old-space limit of a page's renderer, in MiB.
    pub heap_megabytes: u32,
    /// The DOM is cut at this many characters.
    pub max_dom_bytes: usize,
    /// Bytes all of a page's requests may bring in together.
    pub max_page_bytes: usize,
    /// Requests one page may make; later ones are failed.
    pub max_requests: u32,
    /// Navigations of the page after its document (script redirects); one more is a loop.
    pub max_navigations: u32,
}

impl RenderConfig {
    /// The defaults for a browser at `chromium`: 2 tabs, 10 s a page, 512 MiB of heap.
    pub fn new(chromium: impl Into<PathBuf>) -> Self {
        Self {
            chromium: chromium.into(),
            tabs: 2,
            page_timeout: Duration::from_secs(10),
            heap_megabytes: 512,
            max_dom_bytes: 10 * 1024 * 1024,
            max_page_bytes: 32 * 1024 * 1024,
            max_requests: 300,
            max_navigations: 5,
        }
    }
}

pub struct ChromiumRenderer {
    config: RenderConfig,
    fetcher: Arc<dyn PageFetcher>,
    tabs: Semaphore,
    browser: Mutex<Option<Arc<chromium::Running>>>,
}

impl ChromiumRenderer {
    /// A renderer whose pages fetch everything through `fetcher` (the guarded one). Nothing
    /// starts until the first page.
    pub fn new(config: RenderConfig, fetcher: Arc<dyn PageFetcher>) -> Self {
        Self {
            tabs: Semaphore::new(config.tabs.max(1)),
            config,
            fetcher,
            browser: Mutex::new(None),
        }
    }

    /// The running browser, started (again) when there is none or it is unusable.
    async fn running(&self) -> Result<Arc<chromium::Running>, RenderError> {
        let mut slot = self.browser.lock().await;
        if let Some(running) = slot.as_ref()
            && running.usable()
        {
            return Ok(running.clone());
        }
        // A browser that died or broke goes; pages still in it keep it until they end.
        *slot = None;
        let running = Arc::new(
            chromium::Running::start(&self.config)
                .await
                .map_err(|detail| RenderError::Unavailable { detail })?,
        );
        *slot = Some(running.clone());
        Ok(running)
    }

    /// Connections that escaped interception and reached the black-hole proxy (the browser's
    /// own background calls included): for tests and the logs.
    pub async fn escaped_connections(&self) -> u64 {
        match self.browser.lock().await.as_ref() {
            Some(r) => r.escaped.load(Ordering::Relaxed),
            None => 0,
        }
    }

    /// Whether a usable browser is running now (for tests and the logs).
    pub async fn is_running(&self) -> bool {
        self.browser
            .lock()
            .await
            .as_ref()
            .is_some_and(|r| r.usable())
    }

    /// Stops the browser now (and every process it started); the next page starts another.
    pub async fn shut_down(&self) {
        self.browser.lock().await.take();
    }
}

#[async_trait]
impl PageRenderer for ChromiumRenderer {
    async fn warm_up(&self) -> Result<(), RenderError> {
        self.running().await.map(|_| ())
    }

    async fn render(&self, request: &RenderRequest) -> Result<RenderedPage, RenderError> {
        let _tab = tokio::time::timeout(self.config.page_timeout, self.tabs.acquire())
            .await
            .map_err(|_| RenderError::Busy)?
            .map_err(|_| RenderError::Busy)?;
        let running = self.running().await?;
        match session::render(
            &running.browser,
            self.fetcher.clone(),
            &self.config,
            request,
        )
        .await
        {
            Ok((page, disposed)) => {
                if !disposed {
                    // Its memory may not have been given back: start afresh next time.
                    running.mark_broken();
                }
                Ok(page)
            }
            Err(session::Failure::Page(e)) => Err(RenderError::Page(e)),
            Err(session::Failure::Browser(detail)) => {
                running.mark_broken();
                tracing::warn!(%detail, "the browser failed; it is started again");
                Err(RenderError::Unavailable { detail })
            }
        }
    }
}
