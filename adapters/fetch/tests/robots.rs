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

/// A site's own files may be read without its robots.txt (as a validator reads them), but a
/// redirect from one of them to another origin asks that origin's: the exemption is the site's,
/// not a way around another's rules.
#[tokio::test]
async fn an_exempt_sites_redirect_to_another_origin_asks_its_robots_txt() {
    let site = MockServer::start().await;
    let other = MockServer::start().await;
    let other_base = format!("http://other.sandbox.test:{}", other.address().port());
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(200).set_body_string("User-agent: *\nDisallow: /\n"))
        .mount(&site)
        .await;
    Mock::given(method("GET"))
        .and(path("/llms.txt"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", format!("{other_base}/private")),
        )
        .mount(&site)
        .await;
    Mock::given(method("GET"))
        .and(path("/own"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/llms-full.txt"))
        .mount(&site)
        .await;
    Mock::given(method("GET"))
        .and(path("/llms-full.txt"))
        .respond_with(ResponseTemplate::new(200).set_body_string("# the site's own"))
        .mount(&site)
        .await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(200).set_body_string("User-agent: *\nDisallow: /\n"))
        .mount(&other)
        .await;
    Mock::given(method("GET"))
        .and(path("/private"))
        .respond_with(ResponseTemplate::new(200).set_body_string("not for crawlers"))
        .mount(&other)
        .await;
    let config = FetcherConfig {
        sandbox_hosts: HashMap::from([
            (SANDBOX.to_owned(), *site.address()),
            ("other.sandbox.test".to_owned(), *other.address()),
        ]),
        ..FetcherConfig::default()
    };
    let fetcher = GuardedFetcher::new(config).unwrap();
    let base = format!("http://{SANDBOX}:{}", site.address().port());
    let exempt = |url: String| FetchRequest {
        url,
        respect_robots: false,
        accept: None,
    };
    // Within the site (a redirect too): read although its robots.txt disallows everything.
    let own = fetcher.fetch(&exempt(format!("{base}/own"))).await.unwrap();
    assert_eq!(own.body, "# the site's own");
    assert!(!own.robots.checked);
    // To another origin: its robots.txt is asked, and it says no.
    let refused = fetcher.fetch(&exempt(format!("{base}/llms.txt"))).await;
    assert!(
        matches!(refused, Err(svc_ports::FetchError::RobotsDisallowed(_))),
        "{refused:?}"
    );
    let private = other.received_requests().await.unwrap();
    assert!(
        private.iter().all(|r| r.url.path() == "/robots.txt"),
        "only robots.txt was asked of the other origin"
    );
    assert!(
        site.received_requests()
            .await
            .unwrap()
            .iter()
            .all(|r| r.url.path() != "/robots.txt"),
        "the exempt site's robots.txt was never asked"
    );
}
