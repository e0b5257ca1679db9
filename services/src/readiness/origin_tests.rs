//! A scan reads the scanned site's own files as a validator does, but a URL of another origin
//! that those files name (a link of /llms.txt, a skill file, a sitemap) is fetched only as
//! that origin's robots.txt allows: a review found them fetched with no robots.txt asked.

use std::sync::Mutex;

use svc_ports::{
    FetchedPage, RobotsDecision, page::MockPageExtractor, store::MockScanStore, system::*,
};

use super::*;

/// A site that records each request (its URL and whether robots.txt was to be asked).
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(String, bool)>>,
}

#[async_trait::async_trait]
impl PageFetcher for Recorder {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        self.seen
            .lock()
            .unwrap()
            .push((request.url.clone(), request.respect_robots));
        let path = url::Url::parse(&request.url).unwrap().path().to_owned();
        let (content_type, body) = match path.as_str() {
            "/llms.txt" => (
                "text/plain",
                "# Shop\n\n- [Own](https://shop.example/docs.md)\n- [Other](https://other.example/secret.md)\n",
            ),
            _ => ("text/markdown", "# A page\n"),
        };
        Ok(FetchedPage {
            requested_url: request.url.clone(),
            final_url: request.url.clone(),
            status: 200,
            content_type: Some(content_type.into()),
            headers: Vec::new(),
            charset: "utf-8".into(),
            body: body.into(),
            raw: None,
            truncated: false,
            redirects: Vec::new(),
            robots: RobotsDecision::not_checked(),
            fetched_at: chrono::Utc::now(),
        })
    }
}

#[async_trait::async_trait]
impl ActionTransport for Recorder {
    async fn send(
        &self,
        _: &svc_ports::ActionRequest,
    ) -> Result<svc_ports::ActionResponse, FetchError> {
        Err(FetchError::Timeout { seconds: 1 })
    }

    async fn check(&self, _: &str) -> Result<(), FetchError> {
        Ok(())
    }
}

#[tokio::test]
async fn urls_of_other_origins_that_the_sites_files_name_ask_their_robots_txt() {
    let site = Arc::new(Recorder::default());
    let mut store = MockScanStore::new();
    store.expect_insert_scan().returning(|_| Ok(()));
    let mut clock = MockClock::new();
    clock.expect_now().returning(chrono::Utc::now);
    let mut entropy = MockEntropy::new();
    entropy.expect_ulid().returning(ulid::Ulid::new);
    let mut extractor = MockPageExtractor::new();
    extractor.expect_extract().returning(|_, _, _| {
        Err(svc_ports::ExtractError::InvalidSelector {
            selector: String::new(),
        })
    });
    let service = ReadinessService::new(
        site.clone(),
        site.clone(),
        Arc::new(extractor),
        Arc::new(store),
        Arc::new(clock),
        Arc::new(entropy),
    );
    service
        .scan("https://shop.example/", &|_| {})
        .await
        .unwrap();
    let seen = site.seen.lock().unwrap().clone();
    let asked = |url: &str| {
        seen.iter()
            .find(|(u, _)| u == url)
            .map(|(_, robots)| *robots)
            .unwrap_or_else(|| panic!("{url} was not fetched: {seen:?}"))
    };
    assert!(asked("https://other.example/secret.md"), "{seen:?}");
    // The site's own files are read as a validator reads them.
    assert!(!asked("https://shop.example/llms.txt"), "{seen:?}");
    assert!(!asked("https://shop.example/docs.md"), "{seen:?}");
}
