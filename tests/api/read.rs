//! `/api/read` and the MCP tool `read_page`, against the sandbox demo site and wiremock sites
//! reached under sandbox host names (the only way the guarded fetcher reaches loopback).

use std::time::Duration;

use serde_json::{Value, json};
use svc::services::CreateKey;
use svc_ports::{Email, Plan, Scopes};
use svc_sandbox::{DEMO_HOST, DemoSite};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::{TestApp, TestClock, bearer, problem};

async fn with_demo() -> (TestApp, DemoSite) {
    let demo = DemoSite::start().await;
    let app = TestApp::builder()
        .sandbox_host(DEMO_HOST, demo.address())
        .spawn()
        .await;
    (app, demo)
}

impl TestApp {
    async fn read_get(&self, query: &[(&str, &str)]) -> reqwest::Response {
        self.http
            .get(self.url("/api/read"))
            .query(query)
            .header("Authorization", bearer(&self.api_key))
            .send()
            .await
            .unwrap()
    }

    async fn read_post(&self, body: Value) -> reqwest::Response {
        self.http
            .post(self.url("/api/read"))
            .header("Authorization", bearer(&self.api_key))
            .json(&body)
            .send()
            .await
            .unwrap()
    }
}

async fn ok_json(resp: reqwest::Response) -> Value {
    let status = resp.status();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn an_article_is_read_as_markdown_with_links_forms_and_metadata() {
    let (app, demo) = with_demo().await;
    let url = demo.url("/articles/tides");
    let page = ok_json(app.read_get(&[("url", &url)]).await).await;

    assert_eq!(page["outcome"], "page");
    assert_eq!(page["status_code"], 200);
    assert_eq!(page["final_url"], url);
    assert_eq!(page["title"], "Tides of the North Sea");
    assert_eq!(page["format"], "markdown");
    let markdown = page["markdown"].as_str().unwrap();
    assert!(markdown.contains("## Spring and neap"), "{markdown}");
    assert!(
        markdown.contains(&format!("[tide tables]({})", demo.url("/tables"))),
        "links in the content are absolute: {markdown}"
    );
    assert!(
        !markdown.contains("Copyright"),
        "footer is not main content"
    );
    assert!(page["text"].as_str().unwrap().contains("two high tides"));
    assert!(page.get("html").is_none(), "html only when asked for");

    let links = page["links"].as_array().unwrap();
    let partner = links
        .iter()
        .find(|l| l["url"] == "https://partner.example.org/")
        .unwrap();
    assert_eq!(partner["same_site"], false);
    assert!(
        links
            .iter()
            .any(|l| l["url"] == demo.url("/contact") && l["same_site"] == true)
    );

    let m = &page["metadata"];
    assert_eq!(m["author"], "Ann Example");
    assert_eq!(m["site_name"], "Coast News");
    assert_eq!(m["language"], "en");
    assert_eq!(m["published_time"], "2026-10-02T08:00:00Z");
    assert_eq!(m["canonical"], url);
    assert_eq!(m["favicon"], demo.url("/favicon.ico"));
    assert_eq!(m["open_graph"]["type"], "article");
    assert_eq!(m["twitter"]["card"], "summary");
    assert_eq!(m["json_ld"][0]["@type"], "NewsArticle");

    let hash = page["content_hash"].as_str().unwrap();
    assert!(
        hash.starts_with("sha256:") && hash.len() == 7 + 64,
        "{hash}"
    );
    assert_eq!(page["robots"]["checked"], true);
    assert_eq!(page["robots"]["allowed"], true);
    assert_eq!(page["cache"]["state"], "miss");
    assert!(
        page["fetched_at"].as_str().unwrap().ends_with('Z')
            || page["fetched_at"].as_str().unwrap().contains('+')
    );
}

#[tokio::test]
async fn forms_come_with_absolute_actions_labels_and_options() {
    let (app, demo) = with_demo().await;
    let page = ok_json(
        app.read_post(
            json!({"url": demo.url("/contact"), "format": "html", "include_selectors": ["form"]}),
        )
        .await,
    )
    .await;
    let form = &page["forms"][0];
    assert_eq!(form["action"], demo.url("/contact/send"));
    assert_eq!(form["method"], "POST");
    assert_eq!(form["enctype"], "application/x-www-form-urlencoded");
    let fields = form["fields"].as_array().unwrap();
    let names: Vec<_> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["name", "email", "topic", "message", "source"]);
    assert_eq!(fields[1]["type"], "email");
    assert_eq!(fields[1]["label"], "Email");
    assert_eq!(fields[1]["required"], true);
    assert_eq!(fields[2]["default_value"], "correction");
    assert_eq!(fields[2]["options"].as_array().unwrap().len(), 3);
    assert_eq!(fields[4]["type"], "hidden");
    // include_selectors chose the form as the content; html was asked for.
    let html = page["html"].as_str().unwrap();
    assert!(html.starts_with("<form"), "{html}");
    assert!(html.contains(&demo.url("/contact/send")), "{html}");
    assert!(!page["text"].as_str().unwrap().contains("working days"));
}

#[tokio::test]
async fn obstacles_are_blocked_outcomes_without_page_text() {
    let (app, demo) = with_demo().await;
    let cases = [
        ("/account", "login_wall", Some(200_u64), false),
        ("/challenge", "captcha", Some(403), false),
        ("/gone", "http_error", Some(404), false),
        ("/busy", "http_error", Some(503), true),
        ("/private/report", "robots_disallowed", None, false),
        ("/logo.png", "unsupported_content", Some(200), false),
    ];
    for (p, reason, status, retryable) in cases {
        let body = ok_json(app.read_get(&[("url", &demo.url(p))]).await).await;
        assert_eq!(body["outcome"], "blocked", "{p}: {body}");
        assert_eq!(body["reason"], reason, "{p}: {body}");
        assert_eq!(body["status_code"].as_u64(), status, "{p}");
        assert_eq!(body["retryable"], retryable, "{p}");
        assert!(!body["detail"].as_str().unwrap().is_empty());
        for content in ["markdown", "text", "html", "links", "forms"] {
            assert!(body.get(content).is_none(), "{p} leaked {content}");
        }
    }
    let robots = ok_json(app.read_get(&[("url", &demo.url("/private/report"))]).await).await;
    assert_eq!(robots["robots"]["allowed"], false);
    assert_eq!(robots["robots"]["robots_url"], demo.url("/robots.txt"));
}

#[tokio::test]
async fn redirects_and_plain_text_are_followed_and_reported() {
    let (app, demo) = with_demo().await;
    let page = ok_json(app.read_get(&[("url", &demo.url("/latest"))]).await).await;
    assert_eq!(page["final_url"], demo.url("/articles/tides"));
    assert_eq!(page["redirects"], json!([demo.url("/latest")]));

    let text = ok_json(
        app.read_get(&[("url", &demo.url("/notes.txt")), ("format", "text")])
            .await,
    )
    .await;
    assert_eq!(text["outcome"], "page");
    assert_eq!(
        text["text"],
        "Tide notes\n\nHigh water at 06:12 and 18:40.\n"
    );
}

/// A wiremock site whose robots.txt is missing (404: everything allowed).
async fn site_without_robots_txt() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    server
}

/// A site that counts its requests, reachable as `counted.test`.
async fn counted_site(body: &str) -> MockServer {
    let server = site_without_robots_txt().await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/html"),
        )
        .mount(&server)
        .await;
    server
}

async fn page_requests(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/page")
        .count()
}

#[tokio::test]
async fn the_cache_answers_within_max_age_and_max_age_zero_fetches_again() {
    let site = counted_site("<html><body><article><p>Cached words about the weather and the sea, long enough to count as an article body for the reader.</p></article></body></html>").await;
    let app = TestApp::builder()
        .sandbox_host("counted.test", *site.address())
        .spawn()
        .await;
    let url = format!("http://counted.test:{}/page#section", site.address().port());

    let first = ok_json(app.read_get(&[("url", &url)]).await).await;
    assert_eq!(first["cache"]["state"], "miss");
    let second = ok_json(app.read_get(&[("url", &url), ("max_age", "3600")]).await).await;
    assert_eq!(second["cache"]["state"], "hit");
    assert_eq!(second["content_hash"], first["content_hash"]);
    assert_eq!(second["fetched_at"], first["fetched_at"]);
    assert_eq!(page_requests(&site).await, 1, "the hit did not fetch");

    // The fragment is not part of the cache key; max_age 0 always fetches.
    let third = ok_json(
        app.read_post(json!({"url": url.replace("#section", ""), "max_age": 0}))
            .await,
    )
    .await;
    assert_eq!(third["cache"]["state"], "miss");
    assert_eq!(page_requests(&site).await, 2);
}

#[tokio::test]
async fn urls_that_may_not_be_fetched_are_refused_with_url_refused() {
    let (app, _demo) = with_demo().await;
    for url in [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.8/admin",
        "http://localhost:8080/",
        "file:///etc/passwd",
        "ftp://example.com/",
        "http://user:pass@example.com/",
        "not a url",
    ] {
        let body = problem(app.read_get(&[("url", url)]).await, 422, "url_refused").await;
        assert!(!body["detail"].as_str().unwrap().is_empty(), "{url}");
    }
    // Issue 15: a name that does not resolve was refused as final (422); it is a site that
    // cannot be reached now, which is retryable (DESIGN.md: 502 upstream_unreachable).
    let body = problem(
        app.read_get(&[("url", "http://no-such-host.invalid/")])
            .await,
        502,
        "upstream_unreachable",
    )
    .await;
    assert_eq!(body["retryable"], true, "{body}");
}

#[tokio::test]
async fn a_redirect_to_loopback_is_refused_and_never_followed() {
    let trap = MockServer::start().await;
    let site = site_without_robots_txt().await;
    Mock::given(method("GET"))
        .and(path("/go"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", format!("{}/secret", trap.uri())),
        )
        .mount(&site)
        .await;
    let app = TestApp::builder()
        .sandbox_host("redirector.test", *site.address())
        .spawn()
        .await;
    let url = format!("http://redirector.test:{}/go", site.address().port());
    problem(app.read_get(&[("url", &url)]).await, 422, "url_refused").await;
    assert!(trap.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_site_that_does_not_answer_in_time_is_upstream_unreachable() {
    let site = site_without_robots_txt().await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&site)
        .await;
    let app = TestApp::builder()
        .sandbox_host("slow.test", *site.address())
        .fetch_timeout(Duration::from_millis(500))
        .spawn()
        .await;
    let url = format!("http://slow.test:{}/slow", site.address().port());
    let body = problem(
        app.read_get(&[("url", &url)]).await,
        502,
        "upstream_unreachable",
    )
    .await;
    assert_eq!(body["retryable"], true);
    assert_eq!(body["next_action"]["kind"], "retry");
}

#[tokio::test]
async fn bad_input_gets_the_documented_problem() {
    let (app, demo) = with_demo().await;
    let url = demo.url("/articles/tides");
    // Missing url, unknown field, max_age too large, too many selectors: 400.
    problem(app.read_get(&[]).await, 400, "malformed_request").await;
    problem(
        app.read_post(json!({"url": url, "surprise": 1})).await,
        400,
        "malformed_request",
    )
    .await;
    problem(
        app.read_get(&[("url", &url), ("max_age", "604801")]).await,
        400,
        "malformed_request",
    )
    .await;
    let many: Vec<String> = (0..21).map(|i| format!("p{i}")).collect();
    problem(
        app.read_post(json!({"url": url, "exclude_selectors": many}))
            .await,
        400,
        "malformed_request",
    )
    .await;
    // A selector over 256 characters: the same answer by GET and by POST.
    let long = "p".repeat(257);
    problem(
        app.read_get(&[("url", &url), ("include_selectors", &long)])
            .await,
        400,
        "malformed_request",
    )
    .await;
    problem(
        app.read_post(json!({"url": url, "include_selectors": [long]}))
            .await,
        400,
        "malformed_request",
    )
    .await;
    problem(
        app.read_post(json!({"url": url, "format": "pdf"})).await,
        400,
        "malformed_request",
    )
    .await;
    // A selector that does not parse: 422, named.
    let body = problem(
        app.read_get(&[("url", &url), ("include_selectors", "div[")])
            .await,
        422,
        "invalid_request",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("div["));
    // A non-JSON body.
    let resp = app
        .http
        .post(app.url("/api/read"))
        .header("Authorization", bearer(&app.api_key))
        .header("Content-Type", "text/plain")
        .body("url=x")
        .send()
        .await
        .unwrap();
    problem(resp, 415, "unsupported_media_type").await;
}

#[tokio::test]
async fn reading_needs_a_key_with_the_read_scope() {
    let (app, demo) = with_demo().await;
    let url = demo.url("/articles/tides");
    let resp = app
        .http
        .get(app.url("/api/read"))
        .query(&[("url", &url)])
        .send()
        .await
        .unwrap();
    problem(resp, 401, "missing_api_key").await;

    let issued = app
        .services
        .keys
        .create_key(CreateKey {
            email: Email::parse("discoverer@example.com").unwrap(),
            plan: Plan::Sandbox,
            credits: None,
            scopes: Scopes::parse_list("discover").unwrap(),
            label: "no read".into(),
        })
        .await
        .unwrap();
    let resp = app
        .http
        .get(app.url("/api/read"))
        .query(&[("url", &url)])
        .header("Authorization", bearer(issued.secret.expose()))
        .send()
        .await
        .unwrap();
    problem(resp, 403, "insufficient_scope").await;
}

fn tool_call(args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "read_page", "arguments": args}})
}

#[tokio::test]
async fn read_page_over_mcp_gives_the_same_answer_as_rest() {
    let (app, demo) = with_demo().await;
    let url = demo.url("/articles/tides");
    let (_, listed) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            None,
            "2025-11-25",
        )
        .await;
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_page")
        .unwrap()
        .clone();
    assert_eq!(tool["inputSchema"]["required"], json!(["url"]));
    assert_eq!(tool["outputSchema"]["type"], "object");
    assert!(tool["outputSchema"]["$defs"]["ReadPage"].is_object());
    assert!(!tool["outputSchema"].to_string().contains("#/components/"));

    let key = bearer(&app.api_key);
    let (status, body) = app
        .mcp(tool_call(json!({"url": url})), Some(&key), "2025-11-25")
        .await;
    assert_eq!(status, 200);
    let result = &body["result"];
    assert_eq!(result["isError"], false, "{body}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["outcome"], "page");
    assert_eq!(structured["title"], "Tides of the North Sea");
    // The second read is a cache hit with the same content as REST's.
    let rest = ok_json(app.read_get(&[("url", &url)]).await).await;
    assert_eq!(rest["content_hash"], structured["content_hash"]);
    assert_eq!(rest["markdown"], structured["markdown"]);

    let (_, blocked) = app
        .mcp(
            tool_call(json!({"url": demo.url("/account")})),
            Some(&key),
            "2025-11-25",
        )
        .await;
    assert_eq!(blocked["result"]["isError"], false);
    assert_eq!(
        blocked["result"]["structuredContent"]["reason"],
        "login_wall"
    );
}

#[tokio::test]
async fn read_page_over_mcp_refuses_without_a_key_and_on_bad_arguments() {
    let (app, demo) = with_demo().await;
    let (_, body) = app
        .mcp(tool_call(json!({"url": demo.url("/")})), None, "2025-11-25")
        .await;
    assert_eq!(body["result"]["isError"], true);
    let problem: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(problem["failure_class"], "missing_api_key");

    let key = bearer(&app.api_key);
    let (_, body) = app
        .mcp(
            tool_call(json!({"url": demo.url("/"), "colour": "blue"})),
            Some(&key),
            "2025-11-25",
        )
        .await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    let problem: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(problem["failure_class"], "invalid_request", "{body}");

    let (_, body) = app
        .mcp(
            tool_call(json!({"url": "http://169.254.169.254/"})),
            Some(&key),
            "2025-11-25",
        )
        .await;
    assert_eq!(body["result"]["isError"], true);
    let problem: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(problem["failure_class"], "url_refused");
}

#[tokio::test]
async fn read_page_over_mcp_counts_against_the_key_rate_limit() {
    let demo = DemoSite::start().await;
    let app = TestApp::builder()
        .sandbox_host(DEMO_HOST, demo.address())
        .clock(TestClock::new())
        .runtime(|r| r.rate_limit_per_key = 2)
        .spawn()
        .await;
    let key = bearer(&app.api_key);
    let mut classes = Vec::new();
    for _ in 0..3 {
        let (_, body) = app
            .mcp(
                tool_call(json!({"url": demo.url("/")})),
                Some(&key),
                "2025-11-25",
            )
            .await;
        let result = &body["result"];
        classes.push(if result["isError"] == true {
            let p: Value =
                serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            p["failure_class"].as_str().unwrap().to_owned()
        } else {
            "ok".to_owned()
        });
    }
    assert_eq!(classes, ["ok", "ok", "rate_limited"]);
}

/// A batch refused whole (a bad selector, a key without read) counts once against the key's
/// limit, not once per URL it named: it read nothing.
#[tokio::test]
async fn a_batch_refused_whole_spends_one_count_of_the_key_limit() {
    let demo = DemoSite::start().await;
    let app = TestApp::builder()
        .sandbox_host(DEMO_HOST, demo.address())
        .clock(TestClock::new())
        .runtime(|r| r.rate_limit_per_key = 5)
        .spawn()
        .await;
    let urls = vec![demo.url("/"); 5];
    for _ in 0..2 {
        let resp = app
            .http
            .post(app.url("/api/read/batch"))
            .header("Authorization", bearer(&app.api_key))
            .json(&json!({"urls": urls, "include_selectors": ["\u{c}"]}))
            .send()
            .await
            .unwrap();
        problem(resp, 422, "invalid_request").await;
    }
    // Two counts spent of five: a batch of three URLs still fits, a sixth count not.
    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"urls": [demo.url("/"), demo.url("/"), demo.url("/")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"urls": [demo.url("/")]}))
        .send()
        .await
        .unwrap();
    problem(resp, 429, "rate_limited").await;
}

/// Issue 21: many pages in one call, each read as a single read would be, answered in order;
/// one bad URL takes no other with it.
#[tokio::test]
async fn a_batch_answers_each_url_in_order_as_a_single_read_would() {
    let (app, demo) = with_demo().await;
    let article = demo.url("/articles/tides");
    let urls = json!([
        article,
        demo.url("/account"),
        "http://127.0.0.1:9/",
        article
    ]);
    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"urls": urls, "format": "text"}))
        .send()
        .await
        .unwrap();
    let body = ok_json(resp).await;
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "{body}");
    assert_eq!(results[0]["outcome"], "page");
    assert_eq!(results[0]["format"], "text");
    let single = ok_json(
        app.read_post(json!({"url": article, "format": "text"}))
            .await,
    )
    .await;
    assert_eq!(results[0]["text"], single["text"]);
    assert_eq!(
        single["cache"]["state"], "hit",
        "the batch's read was cached"
    );
    assert_eq!(results[1]["outcome"], "blocked", "{}", results[1]);
    assert_eq!(results[2]["outcome"], "error");
    assert_eq!(results[2]["failure_class"], "url_refused");
    assert_eq!(results[2]["status"], 422);
    assert_eq!(results[2]["url"], "http://127.0.0.1:9/");
    assert_eq!(results[3]["outcome"], "page");

    // The same over MCP.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read_pages", "arguments": {"urls": [article, "http://127.0.0.1:9/"]}}});
    let (_, tool) = app
        .mcp(call, Some(&bearer(&app.api_key)), "2025-11-25")
        .await;
    let answers = &tool["result"]["structuredContent"]["results"];
    assert_eq!(answers[0]["outcome"], "page", "{tool}");
    assert_eq!(answers[1]["failure_class"], "url_refused", "{tool}");

    // A selector every URL shares is the request's: refused once, not per URL.
    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"urls": [article], "include_selectors": ["\u{c}"]}))
        .send()
        .await
        .unwrap();
    problem(resp, 422, "invalid_request").await;

    // 0 or 21 URLs, or a key without read: refused before anything is fetched.
    for urls in [json!([]), json!(vec![article.clone(); 21])] {
        let resp = app
            .http
            .post(app.url("/api/read/batch"))
            .header("Authorization", bearer(&app.api_key))
            .json(&json!({ "urls": urls }))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_client_error(), "{}", resp.status());
    }
    let discoverer = app
        .services
        .keys
        .create_key(CreateKey {
            email: Email::parse("batch@example.com").unwrap(),
            plan: Plan::Sandbox,
            credits: None,
            scopes: Scopes::parse_list("discover").unwrap(),
            label: "no read".into(),
        })
        .await
        .unwrap();
    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", bearer(discoverer.secret.expose()))
        .json(&json!({ "urls": [article] }))
        .send()
        .await
        .unwrap();
    problem(resp, 403, "insufficient_scope").await;
}

/// A name the operator pinned for a map's actions (`SVC_PINNED_HOSTS`) is no way for a caller
/// into the pinned address: a read of it and a scan of it (its MCP probe included) look the
/// name up as any other, and nothing reaches the address.
/// A review read a partner's internal page through `/api/read` and a scan.
#[tokio::test]
async fn names_pinned_for_actions_are_neither_read_nor_scanned() {
    let partner = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("PARTNER-INTERNAL"))
        .mount(&partner)
        .await;
    let app = TestApp::builder()
        .pinned_host("partner.example", *partner.address())
        .spawn()
        .await;
    let inside = format!("http://partner.example:{}/admin", partner.address().port());
    let read = app.read_get(&[("url", &inside), ("max_age", "0")]).await;
    let answer = read.text().await.unwrap();
    assert!(!answer.contains("PARTNER-INTERNAL"), "{answer}");
    let scan = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({ "url": format!("http://partner.example:{}/", partner.address().port()) }))
        .send()
        .await
        .unwrap();
    let report = scan.text().await.unwrap();
    assert!(!report.contains("PARTNER-INTERNAL"), "{report}");
    assert!(
        partner.received_requests().await.unwrap().is_empty(),
        "a request reached the pinned address"
    );
}
