//! The read service over mocked ports.
use super::*;
use svc_ports::{MainContent, PdfRefusal, PdfText};
use svc_ports::{StoreError, fetch::MockPageFetcher, store::MockPageCache, system::MockClock};

pub(super) fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

pub(super) fn fetched(status: u16, content_type: &str, body: &str) -> FetchedPage {
    FetchedPage {
        requested_url: "https://example.com/a".into(),
        final_url: "https://example.com/a".into(),
        status,
        content_type: Some(content_type.into()),
        headers: Vec::new(),
        charset: "utf-8".into(),
        body: body.into(),
        raw: None,
        truncated: false,
        redirects: Vec::new(),
        robots: RobotsDecision {
            checked: true,
            allowed: true,
            robots_url: "https://example.com/robots.txt".into(),
            basis: "rules".into(),
        },
        fetched_at: now(),
    }
}

fn service(fetcher: MockPageFetcher, cache: MockPageCache) -> ReadService {
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    ReadService::new(
        Arc::new(fetcher),
        Arc::new(cache),
        Arc::new(MarkerExtractor),
        Arc::new(svc_ports::document::MockPdfReader::new()),
        Arc::new(clock),
    )
}

fn fetcher_answering(page: FetchedPage) -> MockPageFetcher {
    let mut f = MockPageFetcher::new();
    f.expect_fetch()
        .times(1)
        .returning(move |_| Ok(page.clone()));
    f
}

/// `https://example.com/a` read with the default request.
async fn read_a(svc: &ReadService) -> ReadOutcome {
    svc.read(&ReadRequest::new("https://example.com/a"))
        .await
        .unwrap()
}

fn empty_cache() -> MockPageCache {
    let mut c = MockPageCache::new();
    c.expect_fresh_page().returning(|_, _| Ok(None));
    c.expect_put_page().returning(|_, _| Ok(()));
    c
}

/// A stand-in for the HTML extractor (services see ports only): the body is the content,
/// `CHALLENGE` in it raises the captcha signal, and a selector with `[` does not parse.
pub(super) struct MarkerExtractor;

impl PageExtractor for MarkerExtractor {
    fn select_texts(
        &self,
        _html: &str,
        selectors: &[String],
    ) -> Result<Vec<Option<String>>, ExtractError> {
        Ok(vec![None; selectors.len()])
    }

    fn check_options(&self, options: &ExtractOptions) -> Result<(), ExtractError> {
        match options
            .include_selectors
            .iter()
            .chain(&options.exclude_selectors)
            .find(|s| s.contains('['))
        {
            Some(s) => Err(ExtractError::InvalidSelector {
                selector: s.clone(),
            }),
            None => Ok(()),
        }
    }

    fn extract(
        &self,
        html: &str,
        _page_url: &str,
        options: &ExtractOptions,
    ) -> Result<Extraction, ExtractError> {
        self.check_options(options)?;
        Ok(Extraction {
            content: MainContent {
                markdown: html.to_owned(),
                text: html.to_owned(),
                html: html.to_owned(),
            },
            links: Vec::new(),
            forms: Vec::new(),
            metadata: PageMetadata::default(),
            signals: svc_ports::PageSignals {
                captcha: html.contains("CHALLENGE").then(|| "marker".to_owned()),
                login_wall: None,
                script_shell: html.contains("SHELL").then(|| "marker".to_owned()),
            },
        })
    }
}

const ARTICLE: &str = "Words about tides and the sea.";

#[tokio::test]
async fn a_failing_cache_costs_a_fetch_not_the_read() {
    let mut cache = MockPageCache::new();
    cache
        .expect_fresh_page()
        .returning(|_, _| Err(StoreError::from(anyhow::anyhow!("disk gone"))));
    cache
        .expect_put_page()
        .returning(|_, _| Err(StoreError::from(anyhow::anyhow!("disk gone"))));
    let svc = service(fetcher_answering(fetched(200, "text/html", ARTICLE)), cache);
    let out = read_a(&svc).await;
    let ReadOutcome::Page(page) = out else {
        panic!("{out:?}")
    };
    assert_eq!(page.cache.state, CacheState::Miss);
    assert!(page.text.contains("tides"));
}

#[tokio::test]
async fn a_cached_copy_is_used_within_max_age_and_reports_its_age() {
    let mut old = fetched(200, "text/html", ARTICLE);
    old.fetched_at = now() - chrono::Duration::seconds(90);
    let mut cache = MockPageCache::new();
    cache
        .expect_fresh_page()
        .withf(|key, not_before| {
            key == "https://example.com/a" && *not_before == now() - chrono::Duration::seconds(600)
        })
        .returning(move |_, _| Ok(Some(old.clone())));
    let mut fetcher = MockPageFetcher::new();
    fetcher.expect_fetch().never();
    let svc = service(fetcher, cache);
    let out = svc
        .read(&ReadRequest::new("https://example.com/a#top"))
        .await
        .unwrap();
    let ReadOutcome::Page(page) = out else {
        panic!("{out:?}")
    };
    assert_eq!(page.cache.state, CacheState::Hit);
    assert_eq!(page.cache.age_seconds, 90);
}

#[tokio::test]
async fn a_challenge_behind_a_503_is_named_a_captcha_and_a_plain_503_is_retryable() {
    let challenge = "CHALLENGE page";
    let svc = service(
        fetcher_answering(fetched(503, "text/html", challenge)),
        empty_cache(),
    );
    let ReadOutcome::Blocked(b) = read_a(&svc).await else {
        panic!()
    };
    assert_eq!(b.reason, BlockReason::Captcha);
    assert!(!b.retryable);

    let svc = service(
        fetcher_answering(fetched(503, "text/html", ARTICLE)),
        empty_cache(),
    );
    let ReadOutcome::Blocked(b) = read_a(&svc).await else {
        panic!()
    };
    assert_eq!(b.reason, BlockReason::HttpError);
    assert!(b.retryable);
    assert_eq!(b.status_code, Some(503));
}

#[tokio::test]
async fn a_try_again_later_answer_is_not_cached_nor_answered_from_the_cache() {
    // A 503 or a 429 is blocked as retryable; keeping it would answer every retry with it.
    for status in [429, 503] {
        let mut cache = MockPageCache::new();
        cache.expect_fresh_page().returning(|_, _| Ok(None));
        cache.expect_put_page().never();
        let svc = service(
            fetcher_answering(fetched(status, "text/html", ARTICLE)),
            cache,
        );
        let ReadOutcome::Blocked(b) = read_a(&svc).await else {
            panic!()
        };
        assert!(b.retryable);
    }
    // A copy kept before this rule: the site is asked again.
    let mut old = fetched(503, "text/html", ARTICLE);
    old.fetched_at = now() - chrono::Duration::seconds(30);
    let mut cache = MockPageCache::new();
    cache
        .expect_fresh_page()
        .returning(move |_, _| Ok(Some(old.clone())));
    cache.expect_put_page().times(1).returning(|_, _| Ok(()));
    let svc = service(fetcher_answering(fetched(200, "text/html", ARTICLE)), cache);
    let ReadOutcome::Page(page) = read_a(&svc).await else {
        panic!()
    };
    assert_eq!(page.cache.state, CacheState::Miss);
}

#[tokio::test]
async fn truncation_and_json_bodies_are_carried_through() {
    let mut page = fetched(200, "application/json", "{\"a\": 1}");
    page.truncated = true;
    let svc = service(fetcher_answering(page), empty_cache());
    let ReadOutcome::Page(p) = read_a(&svc).await else {
        panic!()
    };
    assert!(p.truncated);
    assert_eq!(p.text, "{\"a\": 1}");
    assert_eq!(p.content_hash, content_hash("{\"a\": 1}"));
}

#[tokio::test]
async fn limits_are_checked_before_anything_is_fetched() {
    let mut fetcher = MockPageFetcher::new();
    fetcher.expect_fetch().never();
    let mut cache = MockPageCache::new();
    cache.expect_fresh_page().never();
    let svc = service(fetcher, cache);
    let mut req = ReadRequest::new("https://example.com/a");
    req.max_age_seconds = MAX_CACHE_AGE_SECONDS + 1;
    assert!(matches!(
        svc.read(&req).await,
        Err(ReadError::MaxAgeTooLarge)
    ));
    let mut req = ReadRequest::new("https://example.com/a");
    req.extract.exclude_selectors = vec!["x".repeat(MAX_SELECTOR_LENGTH + 1)];
    assert!(matches!(
        svc.read(&req).await,
        Err(ReadError::SelectorLimits)
    ));
    let mut req = ReadRequest::new("https://example.com/a");
    req.extract.include_selectors = vec!["a[".into()];
    assert!(matches!(
        svc.read(&req).await,
        Err(ReadError::InvalidSelector(_))
    ));
}

#[test]
fn content_hash_is_sha256_hex() {
    assert_eq!(
        content_hash(""),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

fn pdf_page(status: u16) -> FetchedPage {
    let mut page = fetched(status, "application/pdf", "");
    page.charset = "binary".into();
    page.raw = Some(b"%PDF-1.7 ...".to_vec());
    page
}

fn service_reading_pdfs(
    page: FetchedPage,
    reader: svc_ports::document::MockPdfReader,
) -> ReadService {
    let mut s = service(fetcher_answering(page), empty_cache());
    s.pdf = Arc::new(reader);
    s
}

#[tokio::test]
async fn a_pdf_is_read_into_pages_with_its_information() {
    let mut reader = svc_ports::document::MockPdfReader::new();
    reader
        .expect_read_pdf()
        .withf(|bytes| bytes.starts_with(b"%PDF-"))
        .times(1)
        .returning(|_| {
            Ok(PdfText {
                pages: vec!["Annual\nreport".into(), "Page two".into()],
                page_count: 3,
                title: Some("Annual report".into()),
                author: Some("Ada".into()),
                created: DateTime::from_timestamp(1_700_000_000, 0),
            })
        });
    let s = service_reading_pdfs(pdf_page(200), reader);
    let ReadOutcome::Page(page) = s
        .read(&ReadRequest::new("https://example.com/a"))
        .await
        .unwrap()
    else {
        panic!("not a page");
    };
    assert_eq!(page.text, "Annual\nreport\n\u{c}\nPage two");
    assert_eq!(page.markdown, "Annual report\n\n---\n\nPage two");
    assert_eq!(page.page_count, Some(3));
    assert!(page.truncated, "two of three pages read");
    assert_eq!(page.title.as_deref(), Some("Annual report"));
    assert_eq!(page.metadata.author.as_deref(), Some("Ada"));
    assert_eq!(
        page.metadata.published_time.as_deref(),
        Some("2023-11-14T22:13:20+00:00")
    );
    assert_eq!(page.content_hash, content_hash(&page.text));
}

#[tokio::test]
async fn an_encrypted_or_image_only_pdf_is_blocked_with_its_own_reason() {
    for (answer, reason) in [
        (Err(PdfRefusal::Encrypted), BlockReason::EncryptedPdf),
        (
            Ok(PdfText {
                pages: vec![String::new()],
                page_count: 1,
                ..PdfText::default()
            }),
            BlockReason::ImageOnlyPdf,
        ),
        (
            Err(PdfRefusal::Damaged("no xref".into())),
            BlockReason::UnsupportedContent,
        ),
    ] {
        let mut reader = svc_ports::document::MockPdfReader::new();
        reader.expect_read_pdf().times(1).return_const(answer);
        let s = service_reading_pdfs(pdf_page(200), reader);
        match s
            .read(&ReadRequest::new("https://example.com/a"))
            .await
            .unwrap()
        {
            ReadOutcome::Blocked(b) => assert_eq!(b.reason, reason, "{}", b.detail),
            ReadOutcome::Page(p) => panic!("read as a page: {:?}", p.text),
        }
    }
}

#[tokio::test]
async fn an_error_answer_typed_as_pdf_is_an_http_error_and_is_not_parsed() {
    // The reader has no expectation: parsing the body would fail the test.
    let s = service_reading_pdfs(pdf_page(404), svc_ports::document::MockPdfReader::new());
    match s
        .read(&ReadRequest::new("https://example.com/a"))
        .await
        .unwrap()
    {
        ReadOutcome::Blocked(b) => assert_eq!(b.reason, BlockReason::HttpError),
        ReadOutcome::Page(_) => panic!("read as a page"),
    }
}

/// A URL asked twice in one batch is fetched once and answered at both places; an error is
/// answered at both places too.
#[tokio::test]
async fn a_request_asked_twice_in_a_batch_is_read_once() {
    let mut fetcher = MockPageFetcher::new();
    fetcher
        .expect_fetch()
        .withf(|r| r.url == "https://example.com/a")
        .times(1)
        .returning(|_| Ok(fetched(200, "text/html", "<p>Alpha</p>")));
    fetcher
        .expect_fetch()
        .withf(|r| r.url == "https://example.com/down")
        .times(2)
        .returning(|_| {
            Err(FetchError::Connect {
                detail: "refused".into(),
            })
        });
    let svc = service(fetcher, empty_cache());
    let a = ReadRequest::new("https://example.com/a");
    let down = ReadRequest::new("https://example.com/down");
    let batch = CheckedBatch {
        service: &svc,
        requests: vec![a.clone(), down.clone(), a, down],
    };
    let answers = batch.read().await;
    assert_eq!(answers.len(), 4);
    let page = |i: usize| match &answers[i] {
        Ok(ReadOutcome::Page(p)) => p.text.clone(),
        other => panic!("{i}: {other:?}"),
    };
    assert_eq!(page(0), page(2));
    assert!(matches!(answers[1], Err(ReadError::Unreachable(_))));
    assert!(matches!(answers[3], Err(ReadError::Unreachable(_))));
}

/// A robots.txt that disallows is final; one that could not be read (5xx, no answer) only
/// disallows for now, so the answer says to try again.
#[tokio::test]
async fn a_robots_refusal_is_retryable_only_when_robots_txt_was_unreachable() {
    for (basis, retryable) in [("rules", false), ("unreachable", true)] {
        let mut fetcher = MockPageFetcher::new();
        fetcher.expect_fetch().times(1).returning(move |_| {
            Err(FetchError::RobotsDisallowed(RobotsDecision {
                checked: true,
                allowed: false,
                robots_url: "https://example.com/robots.txt".into(),
                basis: basis.into(),
            }))
        });
        let svc = service(fetcher, empty_cache());
        match read_a(&svc).await {
            ReadOutcome::Blocked(b) => {
                assert_eq!(b.reason, BlockReason::RobotsDisallowed);
                assert_eq!(b.retryable, retryable, "{basis}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Every PDF parser busy is not a verdict on the file: an error to retry, not a blocked page.
#[tokio::test]
async fn a_pdf_read_while_every_parser_is_busy_is_an_error_to_retry() {
    let mut reader = svc_ports::document::MockPdfReader::new();
    reader
        .expect_read_pdf()
        .times(1)
        .return_const(Err(PdfRefusal::Busy(10)));
    let s = service_reading_pdfs(pdf_page(200), reader);
    assert!(matches!(
        s.read(&ReadRequest::new("https://example.com/a")).await,
        Err(ReadError::PdfBusy(PdfRefusal::Busy(10)))
    ));
}

/// A site that answers `/slow…` only after `delay` (on tokio's clock) and the rest at once.
struct SlowSite {
    delay: std::time::Duration,
}

#[async_trait::async_trait]
impl PageFetcher for SlowSite {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        if request.url.contains("/slow") {
            tokio::time::sleep(self.delay).await;
        }
        Ok(fetched(
            200,
            "text/html",
            &format!("<p>{}</p>", request.url),
        ))
    }
    async fn robots(&self, _url: &str) -> Result<RobotsDecision, FetchError> {
        unreachable!("a read asks robots.txt through fetch")
    }
}

/// A batch answers within its deadline however slow its sites: what was read is kept, and a
/// read still running answers as a site that did not answer in time.
#[tokio::test(start_paused = true)]
async fn a_batch_answers_within_its_deadline_keeping_what_was_read() {
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    let svc = ReadService::new(
        Arc::new(SlowSite {
            delay: BATCH_DEADLINE * 10,
        }),
        Arc::new(empty_cache()),
        Arc::new(MarkerExtractor),
        Arc::new(svc_ports::document::MockPdfReader::new()),
        Arc::new(clock),
    );
    let mut requests: Vec<ReadRequest> = (0..BATCH_CONCURRENCY)
        .map(|n| ReadRequest::new(format!("https://example.com/slow{n}")))
        .collect();
    requests.insert(1, ReadRequest::new("https://example.com/quick"));
    let started = tokio::time::Instant::now();
    let answers = CheckedBatch {
        service: &svc,
        requests,
    }
    .read()
    .await;
    assert_eq!(
        started.elapsed(),
        BATCH_DEADLINE,
        "answered at the deadline"
    );
    let texts: Vec<String> = answers
        .iter()
        .map(|a| match a {
            Ok(ReadOutcome::Page(p)) => p.text.clone(),
            Err(ReadError::Unreachable(FetchError::Timeout { seconds })) => {
                format!("timeout {seconds}")
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let timeout = format!("timeout {}", BATCH_DEADLINE.as_secs());
    assert_eq!(texts[1], "<p>https://example.com/quick</p>");
    for at in [0, 2, 3, 4] {
        assert_eq!(texts[at], timeout, "{at}");
    }

    // Sites that answer within the deadline are all read, however many rounds it takes.
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    let svc = ReadService::new(
        Arc::new(SlowSite {
            delay: BATCH_DEADLINE / 10,
        }),
        Arc::new(empty_cache()),
        Arc::new(MarkerExtractor),
        Arc::new(svc_ports::document::MockPdfReader::new()),
        Arc::new(clock),
    );
    let requests: Vec<ReadRequest> = (0..8)
        .map(|n| ReadRequest::new(format!("https://example.com/slow{n}")))
        .collect();
    let answers = CheckedBatch {
        service: &svc,
        requests,
    }
    .read()
    .await;
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Ok(ReadOutcome::Page(_))))
    );
}
