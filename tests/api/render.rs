//! Reads with `render`: the real app, Debian's headless Chromium (`/usr/bin/chromium`, or
//! `SVC_CHROMIUM`; a missing browser fails these tests, as the browser tests do), and sites
//! reached under sandbox host names, the guarded fetcher's only way to loopback. Every request
//! a page makes goes through that fetcher: the SPA's own data (served under a name only the
//! guard can resolve) arrives, while loopback and metadata addresses get nothing.

use std::time::Duration;

use serde_json::{Value, json};
use svc_sandbox::{DEMO_HOST, DemoSite};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::{TestApp, TestAppBuilder, bearer, problem};

/// The browser the tests use, with the page limit given (long where a page should finish: a
/// loaded machine is slow, and the tests judge what the page shows).
fn with_browser(builder: TestAppBuilder, seconds: u64) -> TestAppBuilder {
    builder.runtime(|r| {
        if let Some(path) = std::env::var("SVC_CHROMIUM").ok().filter(|p| !p.is_empty()) {
            r.render.chromium = path;
        }
        r.render.render_timeout_seconds = seconds;
    })
}

async fn read(app: &TestApp, body: Value) -> (u16, Value) {
    let resp = app
        .http
        .post(app.url("/api/read"))
        .header("Authorization", bearer(&app.api_key))
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

#[tokio::test]
async fn the_demo_single_page_app_is_rendered_when_auto_judges_it_a_shell_and_cached() {
    let demo = DemoSite::start().await;
    let app = with_browser(TestApp::builder(), 30)
        .sandbox_host(DEMO_HOST, demo.address())
        .spawn()
        .await;
    let url = demo.url("/app/");

    // `never`: the shell as fetched, nothing to read.
    let (status, shell) = read(&app, json!({"url": url, "render": "never"})).await;
    assert_eq!(status, 200, "{shell}");
    assert_eq!(shell["rendered"], false);
    assert!(!shell["text"].as_str().unwrap().contains("Harbour"));

    // `auto` (the default): the bundle ran, fetched its JSON through the guard, built the story.
    let (status, page) = read(&app, json!({"url": url})).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["outcome"], "page");
    assert_eq!(page["rendered"], true, "{page}");
    assert_eq!(page["title"], "Harbour Lights After Dark | Coast News");
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("guided fishing boats home"), "{text}");
    assert!(text.contains("no machine has yet been trusted"), "{text}");
    assert!(
        page["markdown"]
            .as_str()
            .unwrap()
            .contains("## A rhythm for every light")
    );
    assert!(
        page["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["url"] == demo.url("/articles/tides")),
        "links of the built DOM, made absolute: {page}"
    );
    assert_eq!(page["cache"]["state"], "miss");

    // Within max_age the rendered copy answers, with its age.
    let (_, again) = read(&app, json!({"url": url, "max_age": 3600})).await;
    assert_eq!(again["rendered"], true);
    assert_eq!(again["cache"]["state"], "hit");
    assert_eq!(again["content_hash"], page["content_hash"]);

    // A static article is never rendered by `auto`; `always` renders it to the same text.
    let article = demo.url("/articles/tides");
    let (_, plain) = read(&app, json!({"url": article})).await;
    assert_eq!(plain["rendered"], false);
    let (_, always) = read(&app, json!({"url": article, "render": "always"})).await;
    assert_eq!(always["rendered"], true, "{always}");
    assert!(always["text"].as_str().unwrap().contains("two high tides"));
    // Plain text is never rendered; a blocked answer says `rendered: false` too.
    let (_, notes) = read(
        &app,
        json!({"url": demo.url("/notes.txt"), "render": "always"}),
    )
    .await;
    assert_eq!(notes["rendered"], false);
    let (_, wall) = read(
        &app,
        json!({"url": demo.url("/account"), "render": "never"}),
    )
    .await;
    assert_eq!(wall["outcome"], "blocked");
    assert_eq!(wall["rendered"], false);
}

#[tokio::test]
async fn read_page_and_read_pages_take_render_too() {
    let demo = DemoSite::start().await;
    let app = with_browser(TestApp::builder(), 30)
        .sandbox_host(DEMO_HOST, demo.address())
        .spawn()
        .await;
    let key = bearer(&app.api_key);
    let call = |name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": args}})
    };
    let (_, body) = app
        .mcp(
            call(
                "read_page",
                json!({"url": demo.url("/app/"), "render": "always"}),
            ),
            Some(&key),
            "2025-11-25",
        )
        .await;
    let page = &body["result"]["structuredContent"];
    assert_eq!(page["rendered"], true, "{body}");
    assert!(
        page["text"]
            .as_str()
            .unwrap()
            .contains("guided fishing boats")
    );

    let (_, body) = app
        .mcp(
            call(
                "read_pages",
                json!({"urls": [demo.url("/app/"), demo.url("/articles/tides")], "render": "never"}),
            ),
            Some(&key),
            "2025-11-25",
        )
        .await;
    let results = body["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap();
    assert!(results.iter().all(|r| r["rendered"] == false), "{body}");

    // The REST batch shares the option; a bad value is refused like any bad option.
    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", &key)
        .json(&json!({"urls": [demo.url("/app/")], "render": "always"}))
        .send()
        .await
        .unwrap();
    let batch: Value = resp.json().await.unwrap();
    assert_eq!(batch["results"][0]["rendered"], true, "{batch}");
    let resp = app
        .http
        .post(app.url("/api/read"))
        .header("Authorization", &key)
        .json(&json!({"url": demo.url("/app/"), "render": "sometimes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

/// A site (under `name`) whose robots.txt is missing and whose `/page` is `html`.
async fn site(html: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(html.as_bytes().to_vec(), "text/html"),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_script_aiming_at_loopback_or_the_metadata_address_gets_nothing() {
    // The trap is on loopback, where the page's own site is too: the page reaches its site by
    // the name the guard pins, and the trap by no path at all.
    let trap = MockServer::start().await;
    let port = trap.address().port();
    let html = format!(
        "<!doctype html><html><head><title>Probe</title></head><body><div id=\"root\"></div>\
         <p id=\"out\"></p><script>\
         const out = []; const say = t => {{ out.push(t); \
           document.getElementById('out').textContent = out.sort().join(' '); }}; \
         for (const u of ['http://127.0.0.1:{port}/secret', 'http://169.254.169.254/latest/meta-data/', \
                          'http://localhost:{port}/x', 'http://[::1]:{port}/y']) \
           fetch(u).then(r => r.text()).then(t => say('leaked ' + t), () => say('refused')); \
         const img = new Image(); img.src = 'http://127.0.0.1:{port}/pixel.png'; \
         try {{ new WebSocket('ws://127.0.0.1:{port}/'); }} catch (e) {{}} \
         const f = document.createElement('iframe'); f.src = 'http://127.0.0.1:{port}/frame'; \
         document.body.append(f); \
         document.getElementById('root').innerHTML = '<article><h1>Probe</h1><p>' + \
           'This page was built by its script, which also tried four forbidden addresses. '.repeat(4) + \
           '</p></article>';\
         </script></body></html>"
    );
    let page_site = site(&html).await;
    let app = with_browser(TestApp::builder(), 30)
        .sandbox_host("probe.test", *page_site.address())
        .spawn()
        .await;
    let url = format!("http://probe.test:{}/page", page_site.address().port());
    let (status, page) = read(
        &app,
        json!({"url": url, "render": "always", "main_content_only": false}),
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["rendered"], true);
    let text = page["text"].as_str().unwrap();
    assert!(
        text.contains("refused refused refused refused"),
        "each fetch failed: {text}"
    );
    assert!(!text.contains("leaked"), "{text}");
    assert!(
        trap.received_requests().await.unwrap().is_empty(),
        "a request reached loopback"
    );
    // The guard is the one that refused them: the same URLs asked of the API directly.
    for refused in [
        format!("http://127.0.0.1:{port}/secret"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        problem(
            app.http
                .get(app.url("/api/read"))
                .query(&[("url", refused.as_str()), ("render", "always")])
                .header("Authorization", bearer(&app.api_key))
                .send()
                .await
                .unwrap(),
            422,
            "url_refused",
        )
        .await;
    }
}

#[tokio::test]
async fn a_page_that_never_finishes_or_redirects_forever_has_a_clear_outcome() {
    // A script that never arrives: the page is read as it stood at the limit.
    let hanging = site(
        "<html><head><title>Slow</title></head><body><div id=\"root\"></div><script>\
         document.getElementById('root').innerHTML = '<article><p>' + \
         'Drawn at once, while a script that never arrives keeps the page loading. '.repeat(4) + \
         '</p></article>';</script><script src=\"/never.js\"></script></body></html>",
    )
    .await;
    Mock::given(method("GET"))
        .and(path("/never.js"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(60)))
        .mount(&hanging)
        .await;
    // A script that sends the page to itself again and again.
    let looping = site(
        "<html><body><div id=\"root\"></div><script>\
         location.replace('/page?n=' + Math.random());</script></body></html>",
    )
    .await;
    let app = with_browser(TestApp::builder(), 8)
        .sandbox_host("hanging.test", *hanging.address())
        .sandbox_host("looping.test", *looping.address())
        .spawn()
        .await;

    let hanging_url = format!("http://hanging.test:{}/page", hanging.address().port());
    let (status, page) = read(&app, json!({"url": hanging_url, "render": "always"})).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["rendered"], true);
    assert!(page["text"].as_str().unwrap().contains("Drawn at once"));

    let url = format!("http://looping.test:{}/page", looping.address().port());
    let (status, body) = read(&app, json!({"url": url, "render": "always"})).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["failure_class"], "upstream_unreachable");
    assert!(
        body["detail"].as_str().unwrap().contains("redirects"),
        "{body}"
    );
    // The browser is fine afterwards.
    let (status, again) = read(
        &app,
        json!({"url": hanging_url, "render": "always", "max_age": 0}),
    )
    .await;
    assert_eq!(status, 200, "{again}");
}

#[tokio::test]
async fn without_a_browser_auto_reads_the_shell_and_always_is_unavailable() {
    let demo = DemoSite::start().await;
    let app = TestApp::builder()
        .runtime(|r| r.render.chromium = String::new())
        .sandbox_host(DEMO_HOST, demo.address())
        .spawn()
        .await;
    let (status, page) = read(&app, json!({"url": demo.url("/app/")})).await;
    assert_eq!(status, 200);
    assert_eq!(page["rendered"], false);
    let resp = app
        .http
        .post(app.url("/api/read"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"url": demo.url("/app/"), "render": "always", "max_age": 0}))
        .send()
        .await
        .unwrap();
    assert!(resp.headers().contains_key("retry-after"));
    problem(resp, 503, "unavailable").await;
}
