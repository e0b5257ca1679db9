//! robots.txt is asked once per origin, however many requests to the site start at once.

use std::{collections::HashMap, sync::Arc, time::Duration};

use svc_fetch::{FetcherConfig, GuardedFetcher};
use svc_ports::{FetchRequest, PageFetcher};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

const SANDBOX: &str = "demo.sandbox.test";

#[tokio::test]
async fn requests_that_start_together_share_one_robots_txt_fetch() {
    let server = MockServer::start().await;
    // Slow enough that every request below misses the cache while the first fetch runs.
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string("User-agent: *\nDisallow: /private\n")
                .set_delay(Duration::from_millis(400)),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/html")
                .set_body_string("<p>page</p>"),
        )
        .mount(&server)
        .await;
    let config = FetcherConfig {
        sandbox_hosts: HashMap::from([(SANDBOX.to_owned(), *server.address())]),
        ..FetcherConfig::default()
    };
    let fetcher = Arc::new(GuardedFetcher::new(config).unwrap());
    let base = format!("http://{SANDBOX}:{}", server.address().port());
    let mut reads = tokio::task::JoinSet::new();
    for i in 0..12 {
        let (fetcher, url) = (fetcher.clone(), format!("{base}/page/{i}"));
        reads.spawn(async move {
            fetcher
                .fetch(&FetchRequest {
                    url,
                    respect_robots: true,
                    accept: None,
                })
                .await
        });
    }
    let private = FetchRequest {
        url: format!("{base}/private/x"),
        respect_robots: true,
        accept: None,
    };
    let refused = fetcher.fetch(&private).await;
    while let Some(read) = reads.join_next().await {
        let page = read.unwrap().expect("an allowed page");
        assert!(page.robots.checked && page.robots.allowed);
        assert_eq!(page.robots.basis, "rules");
    }
    assert!(refused.is_err(), "the shared rules apply: {refused:?}");
    let asked = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/robots.txt")
        .count();
    assert_eq!(asked, 1, "robots.txt fetched once for 13 requests at once");
}
