//! A scan reads the scanned site's own files as a validator does, but a URL of another origin
//! that those files name (a link of /llms.txt, a skill file, a sitemap) is fetched only as
//! that origin's robots.txt allows: a review found them fetched with no robots.txt asked.

use std::sync::Mutex;

use svc_ports::FetchedPage;

use super::{
    budget_tests::{answered, service_over},
    *,
};

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
        Ok(answered(&request.url, 200, content_type, body))
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
    let service = service_over(site.clone(), None);
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
