//! When a read runs the page in a browser, and how a rendered read is cached.
//!
//! `never` reads the HTML as fetched. `always` runs every HTML page (status below 400) in the
//! browser. `auto` (the default) runs it only when the extractor judged the static HTML a
//! script shell (`PageSignals::script_shell`: code, almost no visible text, an app's mount
//! point); an article page is never run. A bot challenge is never run either: its challenge is
//! the answer. The document the browser is handed is the one already fetched through the guard
//! (or the saved page); everything else it asks for goes through the guard too (the renderer's
//! contract).
//!
//! A rendered read is cached like a static one, under its own key (`render:` + the URL), so a
//! later read within `max_age` is answered from it; both copies keep their own age.

use svc_ports::{FetchError, FetchedPage, RenderError, RenderRequest};

use super::{Body, CacheInfo, CacheState, ReadError, ReadOutcome, ReadRequest, ReadService};

/// Whether a read runs the page in a browser first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenderMode {
    /// Only when the static HTML is a script shell.
    #[default]
    Auto,
    /// Never: the HTML as fetched.
    Never,
    /// Every HTML page.
    Always,
}

fn render_key(key: &str) -> String {
    format!("render:{key}")
}

fn count(outcome: &'static str) {
    metrics::counter!(crate::metrics::RENDERS, "outcome" => outcome).increment(1);
}

impl ReadService {
    /// A rendered copy of `key` young enough for `request`, read: the answer of a rendered read
    /// within `max_age`.
    pub(super) async fn cached_rendering(
        &self,
        key: &str,
        request: &ReadRequest,
    ) -> Result<Option<ReadOutcome>, ReadError> {
        if request.max_age_seconds == 0 {
            return Ok(None);
        }
        let now = self.clock.now();
        let not_before = now - chrono::Duration::seconds(request.max_age_seconds as i64);
        let page = match self.cache.fresh_page(&render_key(key), not_before).await {
            Ok(Some(page)) => page,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!(error = %e, "page cache read failed; rendering");
                return Ok(None);
            }
        };
        count("cache_hit");
        let cache = CacheInfo {
            state: CacheState::Hit,
            age_seconds: (now - page.fetched_at).num_seconds().max(0) as u64,
        };
        let extraction = self.extract(&page, request).await?;
        self.interpret(page, extraction, request, cache, true)
            .map(Some)
    }

    /// The answer for a fetched (or saved) page: read as it is, or run in the browser first
    /// when `request.render` asks for it. `key` is the page's cache key (`None` for a saved
    /// page, which is not cached).
    pub(super) async fn answer(
        &self,
        page: FetchedPage,
        request: &ReadRequest,
        cache: CacheInfo,
        key: Option<&str>,
    ) -> Result<ReadOutcome, ReadError> {
        // A document read from its bytes (a PDF) is never run in a browser.
        if page.raw.is_some() {
            return self.read_pdf_page(page, request, cache).await;
        }
        let extraction = self.extract(&page, request).await?;
        let html = matches!(
            super::body_kind(page.content_type.as_deref(), &page.body),
            Body::Html
        );
        let signals = extraction.as_ref().map(|e| &e.signals);
        // Only a page of the web runs: a saved page read at its `file:` URL would read local
        // files into the DOM.
        let web = page.final_url.starts_with("http://") || page.final_url.starts_with("https://");
        let runnable =
            html && web && page.status < 400 && signals.is_some_and(|s| s.captcha.is_none());
        let wanted = runnable
            && match request.render {
                RenderMode::Never => false,
                RenderMode::Always => true,
                RenderMode::Auto => signals.is_some_and(|s| s.script_shell.is_some()),
            };
        if !wanted {
            return self.interpret(page, extraction, request, cache, false);
        }
        // `always` looked for a rendered copy before fetching; `auto` learns only now that it
        // wants one.
        if request.render == RenderMode::Auto
            && let Some(key) = key
            && let Some(outcome) = self.cached_rendering(key, request).await?
        {
            return Ok(outcome);
        }
        let rendered = self
            .renderer
            .render(&RenderRequest {
                url: page.final_url.clone(),
                html: page.body.clone(),
            })
            .await;
        let rendered = match rendered {
            Ok(r) => r,
            Err(RenderError::Unavailable { detail }) if request.render == RenderMode::Auto => {
                // A process without a browser reads as it did before rendering existed.
                count("unavailable");
                tracing::warn!(%detail, "a script shell read statically: no browser");
                return self.interpret(page, extraction, request, cache, false);
            }
            Err(e) => {
                count(match &e {
                    RenderError::Busy => "busy",
                    RenderError::Unavailable { .. } => "unavailable",
                    RenderError::Page(FetchError::Timeout { .. }) => "timeout",
                    RenderError::Page(FetchError::TooManyRedirects { .. }) => "too_many_redirects",
                    RenderError::Page(_) => "failed",
                });
                return Err(match e {
                    RenderError::Page(f) => ReadError::Unreachable(f),
                    other => ReadError::RenderUnavailable(other),
                });
            }
        };
        count("rendered");
        tracing::info!(
            requests = rendered.requests,
            failed_requests = rendered.failed_requests,
            settled = rendered.settled,
            "page rendered"
        );
        let page = FetchedPage {
            final_url: rendered.final_url,
            content_type: Some("text/html; charset=utf-8".into()),
            charset: "utf-8".into(),
            body: rendered.html,
            truncated: page.truncated || rendered.truncated,
            fetched_at: self.clock.now(),
            ..page
        };
        let cache = match key {
            Some(key) => {
                if let Err(e) = self.cache.put_page(&render_key(key), &page).await {
                    tracing::warn!(error = %e, "page cache write failed");
                }
                CacheInfo {
                    state: CacheState::Miss,
                    age_seconds: 0,
                }
            }
            None => cache,
        };
        let extraction = self.extract(&page, request).await?;
        self.interpret(page, extraction, request, cache, true)
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::HashMap,
        sync::{Arc, Mutex},
    };

    use async_trait::async_trait;
    use chrono::{DateTime, Utc};
    use svc_ports::{
        PageCache, RenderedPage, StoreError, fetch::MockPageFetcher, render::MockPageRenderer,
        system::MockClock,
    };

    use super::super::tests::{MarkerExtractor, fetched, now};
    use super::*;

    /// A page cache in memory: what was stored is what is found.
    #[derive(Default)]
    struct Pages(Mutex<HashMap<String, FetchedPage>>);

    #[async_trait]
    impl PageCache for Pages {
        async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
            self.0.lock().unwrap().insert(key.into(), page.clone());
            Ok(())
        }
        async fn fresh_page(
            &self,
            key: &str,
            not_before: DateTime<Utc>,
        ) -> Result<Option<FetchedPage>, StoreError> {
            Ok(self
                .0
                .lock()
                .unwrap()
                .get(key)
                .filter(|p| p.fetched_at >= not_before)
                .cloned())
        }
        async fn purge_pages(&self, _before: DateTime<Utc>) -> Result<u64, StoreError> {
            Ok(0)
        }
    }

    const SHELL: &str = "<div id=root></div> SHELL";
    const BUILT: &str = "<article>Words about tides, built by a script.</article>";

    fn fetcher_of(body: &'static str, times: usize) -> MockPageFetcher {
        let mut f = MockPageFetcher::new();
        f.expect_fetch()
            .times(times)
            .returning(move |_| Ok(fetched(200, "text/html", body)));
        f
    }

    fn renderer_building(times: usize) -> MockPageRenderer {
        let mut r = MockPageRenderer::new();
        r.expect_render()
            .times(times)
            .withf(|req| req.url == "https://example.com/a" && req.html == SHELL)
            .returning(|_| {
                Ok(RenderedPage {
                    html: BUILT.into(),
                    final_url: "https://example.com/a#/story".into(),
                    truncated: false,
                    requests: 2,
                    failed_requests: 0,
                    settled: true,
                    web_mcp_tools: Vec::new(),
                })
            });
        r
    }

    fn service(
        fetcher: MockPageFetcher,
        cache: Arc<Pages>,
        renderer: Option<MockPageRenderer>,
    ) -> ReadService {
        let mut clock = MockClock::new();
        clock.expect_now().returning(now);
        let svc = ReadService::new(
            Arc::new(fetcher),
            cache,
            Arc::new(MarkerExtractor),
            Arc::new(svc_ports::document::MockPdfReader::new()),
            Arc::new(clock),
        );
        match renderer {
            Some(r) => svc.with_renderer(Arc::new(r)),
            None => svc,
        }
    }

    fn request(render: RenderMode) -> ReadRequest {
        ReadRequest {
            render,
            ..ReadRequest::new("https://example.com/a")
        }
    }

    fn page(outcome: ReadOutcome) -> Box<super::super::PageRead> {
        match outcome {
            ReadOutcome::Page(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn auto_renders_a_script_shell_once_and_then_answers_from_the_cache() {
        let cache = Arc::new(Pages::default());
        let svc = service(
            fetcher_of(SHELL, 1),
            cache.clone(),
            Some(renderer_building(1)),
        );
        let first = page(svc.read(&request(RenderMode::Auto)).await.unwrap());
        assert!(first.rendered);
        assert_eq!(first.text, BUILT);
        assert_eq!(first.final_url, "https://example.com/a#/story");
        assert_eq!(first.cache.state, CacheState::Miss);
        assert!(
            cache
                .0
                .lock()
                .unwrap()
                .contains_key("render:https://example.com/a")
        );
        // The static copy answers the fetch, the rendered copy the read: neither is redone.
        let again = page(svc.read(&request(RenderMode::Auto)).await.unwrap());
        assert!(again.rendered);
        assert_eq!(again.cache.state, CacheState::Hit);
        assert_eq!(again.text, BUILT);
    }

    #[tokio::test]
    async fn auto_never_renders_a_page_with_content_and_never_renders_nothing() {
        let mut renderer = MockPageRenderer::new();
        renderer.expect_render().never();
        let article = "<p>Words about tides and the sea.</p>";
        let svc = service(fetcher_of(article, 1), Arc::default(), Some(renderer));
        let read = page(svc.read(&request(RenderMode::Auto)).await.unwrap());
        assert!(!read.rendered);
        assert_eq!(read.text, article);

        let mut renderer = MockPageRenderer::new();
        renderer.expect_render().never();
        let svc = service(fetcher_of(SHELL, 1), Arc::default(), Some(renderer));
        let read = page(svc.read(&request(RenderMode::Never)).await.unwrap());
        assert!(!read.rendered);
        assert_eq!(read.text, SHELL);
    }

    #[tokio::test]
    async fn always_looks_for_a_rendered_copy_before_fetching() {
        let cache = Arc::new(Pages::default());
        let svc = service(
            fetcher_of(SHELL, 1),
            cache.clone(),
            Some(renderer_building(1)),
        );
        assert!(page(svc.read(&request(RenderMode::Always)).await.unwrap()).rendered);
        // Second read: no fetch (the mock allows one), no render (likewise).
        let again = page(svc.read(&request(RenderMode::Always)).await.unwrap());
        assert_eq!(again.cache.state, CacheState::Hit);
        // max_age 0 asks for a new copy of both.
        let svc = service(fetcher_of(SHELL, 1), cache, Some(renderer_building(1)));
        let fresh = ReadRequest {
            max_age_seconds: 0,
            ..request(RenderMode::Always)
        };
        assert_eq!(
            page(svc.read(&fresh).await.unwrap()).cache.state,
            CacheState::Miss
        );
    }

    #[tokio::test]
    async fn without_a_browser_auto_reads_statically_and_always_is_refused() {
        let svc = service(fetcher_of(SHELL, 1), Arc::default(), None);
        let read = page(svc.read(&request(RenderMode::Auto)).await.unwrap());
        assert!(!read.rendered);
        let svc = service(fetcher_of(SHELL, 1), Arc::default(), None);
        assert!(matches!(
            svc.read(&request(RenderMode::Always)).await,
            Err(ReadError::RenderUnavailable(
                RenderError::Unavailable { .. }
            ))
        ));
    }

    #[tokio::test]
    async fn a_page_that_does_not_render_in_time_is_unreachable_and_a_challenge_is_not_run() {
        let mut renderer = MockPageRenderer::new();
        renderer
            .expect_render()
            .times(1)
            .returning(|_| Err(RenderError::Page(FetchError::Timeout { seconds: 10 })));
        let svc = service(fetcher_of(SHELL, 1), Arc::default(), Some(renderer));
        assert!(matches!(
            svc.read(&request(RenderMode::Auto)).await,
            Err(ReadError::Unreachable(FetchError::Timeout { seconds: 10 }))
        ));

        let mut renderer = MockPageRenderer::new();
        renderer.expect_render().never();
        let svc = service(
            fetcher_of("<div id=root></div> SHELL CHALLENGE", 1),
            Arc::default(),
            Some(renderer),
        );
        let ReadOutcome::Blocked(b) = svc.read(&request(RenderMode::Always)).await.unwrap() else {
            panic!()
        };
        assert_eq!(b.reason, super::super::BlockReason::Captcha);
        assert!(!b.rendered);
    }

    #[tokio::test]
    async fn a_saved_page_at_a_file_url_is_never_run() {
        let mut renderer = MockPageRenderer::new();
        renderer.expect_render().never();
        let svc = service(MockPageFetcher::new(), Arc::default(), Some(renderer));
        let read = page(
            svc.read_document(
                SHELL.into(),
                false,
                "file:///home/me/app.html",
                &request(RenderMode::Always),
            )
            .await
            .unwrap(),
        );
        assert!(!read.rendered);
    }

    #[tokio::test]
    async fn a_saved_page_is_rendered_without_the_cache() {
        let mut fetcher = MockPageFetcher::new();
        fetcher.expect_fetch().never();
        let cache = Arc::new(Pages::default());
        let svc = service(fetcher, cache.clone(), Some(renderer_building(1)));
        let read = page(
            svc.read_document(
                SHELL.into(),
                false,
                "https://example.com/a",
                &request(RenderMode::Always),
            )
            .await
            .unwrap(),
        );
        assert!(read.rendered);
        assert_eq!(read.cache.state, CacheState::Bypass);
        assert!(cache.0.lock().unwrap().is_empty());
    }
}
