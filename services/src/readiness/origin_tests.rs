//! A scan reads the scanned site's own files as a validator does, but a URL of another origin
//! that those files name (a link of /llms.txt, a skill file, a sitemap) is fetched only as
//! that origin's robots.txt allows: a review found them fetched with no robots.txt asked.

use std::sync::Mutex;

use svc_ports::FetchedPage;

use super::{
    budget_tests::{answered, service_over},
    *,
};

/// A site that records each request (its URL and whether robots.txt was to be asked) and
/// each POST; its server card names `mcp` as its MCP endpoint, and robots.txt disallows
/// everything on `disallowed`.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(String, bool)>>,
    posted: Mutex<Vec<String>>,
    mcp: Option<&'static str>,
    disallowed: Option<&'static str>,
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
                "# Shop\n\n- [Own](https://shop.example/docs.md)\n- [Other](https://other.example/secret.md)\n"
                    .to_owned(),
            ),
            "/.well-known/mcp/server-card.json" if self.mcp.is_some() => (
                "application/json",
                serde_json::json!({"remotes": [{"url": self.mcp}]}).to_string(),
            ),
            _ => ("text/markdown", "# A page\n".to_owned()),
        };
        Ok(answered(&request.url, 200, content_type, &body))
    }

    async fn robots(&self, url: &str) -> Result<svc_ports::RobotsDecision, FetchError> {
        let host = url::Url::parse(url).unwrap().host_str().unwrap().to_owned();
        Ok(svc_ports::RobotsDecision {
            checked: true,
            allowed: self.disallowed != Some(host.as_str()),
            robots_url: format!("https://{host}/robots.txt"),
            basis: "rules".into(),
        })
    }
}

#[async_trait::async_trait]
impl ActionTransport for Recorder {
    async fn send(
        &self,
        request: &svc_ports::ActionRequest,
    ) -> Result<svc_ports::ActionResponse, FetchError> {
        self.posted.lock().unwrap().push(request.url.clone());
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

/// The MCP probe POSTs to the endpoint the site's server card names. On the scanned host it
/// is the site's own; of another origin, only as that origin's robots.txt allows (a review made a
/// scan POST to, and publish the answer of, a host whose robots.txt disallows everything).
#[tokio::test]
async fn an_mcp_endpoint_on_another_host_is_probed_only_as_its_robots_txt_allows() {
    let probe = async |mcp: &'static str, disallowed: Option<&'static str>| {
        let site = Arc::new(Recorder {
            mcp: Some(mcp),
            disallowed,
            ..Recorder::default()
        });
        let service = service_over(site.clone(), None);
        let report = service
            .scan("https://shop.example/", &|_| {})
            .await
            .unwrap();
        let check = report
            .checks
            .iter()
            .find(|c| c.id == svc_ports::CheckId::McpProbe)
            .unwrap()
            .clone();
        let posted = site.posted.lock().unwrap().clone();
        (check, posted)
    };
    let (check, posted) = probe("https://other.example/mcp", Some("other.example")).await;
    assert!(posted.is_empty(), "{posted:?}");
    assert_eq!(check.status, svc_ports::CheckStatus::Warn, "{check:?}");
    assert!(check.summary.contains("not probed"), "{check:?}");
    assert!(
        check.evidence[0]
            .excerpt
            .contains("https://other.example/robots.txt disallows it"),
        "{check:?}"
    );
    // Allowed there: probed.
    let (_, posted) = probe("https://other.example/mcp", Some("elsewhere.example")).await;
    assert_eq!(posted, ["https://other.example/mcp"]);
    // The scanned origin's own endpoint: probed whatever its robots.txt says, as its files are.
    let (_, posted) = probe("https://shop.example/mcp", Some("shop.example")).await;
    assert_eq!(posted, ["https://shop.example/mcp"]);
    // The same host on another port or scheme is another origin, with a robots.txt of its own.
    for other in ["http://shop.example/mcp", "https://shop.example:8443/mcp"] {
        let (check, posted) = probe(other, Some("shop.example")).await;
        assert!(posted.is_empty(), "{other}: {posted:?}");
        assert_eq!(check.status, svc_ports::CheckStatus::Warn, "{check:?}");
    }
}
