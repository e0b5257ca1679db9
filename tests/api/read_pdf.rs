//! PDFs answered to `/api/read`, `read_page` and the batch: pages, information, the cache (on
//! SQLite and Postgres, which keep the bytes), and the outcomes of PDFs that cannot be read.

use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::{
    StoresFactory, TestApp, bearer, memory_stores, postgres_stores, sqlite_stores,
};

const REPORT: &[u8] = include_bytes!("../fixtures/pdf/report.pdf");
const ENCRYPTED: &[u8] = include_bytes!("../fixtures/pdf/encrypted.pdf");
const SCANNED: &[u8] = include_bytes!("../fixtures/pdf/scanned.pdf");

/// A site serving the fixtures, reachable as `papers.test`; `/octet` serves the report as
/// `application/octet-stream`, as many servers do.
async fn papers_site() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    for (at, bytes, kind) in [
        ("/report.pdf", REPORT, "application/pdf"),
        ("/octet", REPORT, "application/octet-stream"),
        ("/encrypted.pdf", ENCRYPTED, "application/pdf"),
        ("/scanned.pdf", SCANNED, "application/pdf"),
        ("/cut.pdf", &REPORT[..REPORT.len() / 2], "application/pdf"),
    ] {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(ResponseTemplate::new(200).set_body_raw(bytes.to_vec(), kind))
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/gone.pdf"))
        .respond_with(ResponseTemplate::new(410).set_body_raw(REPORT.to_vec(), "application/pdf"))
        .mount(&server)
        .await;
    server
}

async fn app_with(stores: StoresFactory) -> (TestApp, MockServer, impl Fn(&str) -> String) {
    let site = papers_site().await;
    let app = TestApp::builder()
        .stores(stores().await)
        .sandbox_host("papers.test", *site.address())
        .spawn()
        .await;
    let port = site.address().port();
    (app, site, move |p: &str| {
        format!("http://papers.test:{port}{p}")
    })
}

async fn read(app: &TestApp, body: Value) -> Value {
    let resp = app
        .http
        .post(app.url("/api/read"))
        .header("Authorization", bearer(&app.api_key))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

async fn a_pdf_is_read_and_cached_whole(stores: StoresFactory) {
    let (app, site, url) = app_with(stores).await;
    let page = read(&app, json!({"url": url("/report.pdf"), "format": "text"})).await;
    assert_eq!(page["outcome"], "page", "{page}");
    assert_eq!(page["content_type"], "application/pdf");
    assert_eq!(page["page_count"], 2);
    assert_eq!(page["title"], "Field notes");
    assert_eq!(page["metadata"]["author"], "Ada Lovelace");
    assert_eq!(
        page["metadata"]["published_time"],
        "2024-03-15T08:30:00+00:00"
    );
    assert_eq!(
        page["text"],
        "Field notes on agent reading\nAgents meet PDFs constantly: papers, manuals, invoices and\nfilings. This report is two pages long.\n\u{c}\nSecond page\nThe end of the report."
    );
    assert!(
        page["markdown"]
            .as_str()
            .unwrap()
            .starts_with("Field notes on agent reading\n\nAgents meet PDFs constantly: papers, manuals, invoices and filings."),
        "{}",
        page["markdown"]
    );
    assert!(
        page["markdown"]
            .as_str()
            .unwrap()
            .contains("\n\n---\n\nSecond page")
    );
    assert_eq!(page["truncated"], false);

    // The cache keeps the PDF's bytes: the hit reads the same document without fetching.
    let again = read(
        &app,
        json!({"url": url("/report.pdf"), "format": "text", "max_age": 3600}),
    )
    .await;
    assert_eq!(again["cache"]["state"], "hit");
    assert_eq!(again["content_hash"], page["content_hash"]);
    assert_eq!(again["page_count"], 2);
    let fetched = site
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/report.pdf")
        .count();
    assert_eq!(fetched, 1);
}

#[tokio::test]
async fn a_pdf_is_read_and_cached_whole_in_memory() {
    a_pdf_is_read_and_cached_whole(memory_stores()).await;
}

#[tokio::test]
async fn a_pdf_is_read_and_cached_whole_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_pdf_is_read_and_cached_whole(sqlite_stores(dir.path())).await;
}

#[tokio::test]
async fn a_pdf_is_read_and_cached_whole_on_postgres() {
    a_pdf_is_read_and_cached_whole(postgres_stores()).await;
}

#[tokio::test]
async fn pdfs_that_cannot_be_read_are_blocked_with_their_reason() {
    let (app, _site, url) = app_with(memory_stores()).await;
    for (at, reason, retryable) in [
        ("/encrypted.pdf", "encrypted_pdf", false),
        ("/scanned.pdf", "image_only_pdf", false),
        ("/cut.pdf", "unsupported_content", false),
        ("/gone.pdf", "http_error", false),
    ] {
        let answer = read(&app, json!({"url": url(at)})).await;
        assert_eq!(answer["outcome"], "blocked", "{at}: {answer}");
        assert_eq!(answer["reason"], reason, "{at}: {answer}");
        assert_eq!(answer["retryable"], retryable, "{at}");
        assert!(
            answer.get("text").is_none(),
            "a blocked answer carries no text"
        );
    }
    // Sent as application/octet-stream, a PDF is still known by its first bytes.
    let octet = read(&app, json!({"url": url("/octet")})).await;
    assert_eq!(octet["outcome"], "page", "{octet}");
    assert_eq!(octet["page_count"], 2);
}

#[tokio::test]
async fn read_page_and_the_batch_read_pdfs_as_rest_does() {
    let (app, _site, url) = app_with(memory_stores()).await;
    let rest = read(&app, json!({"url": url("/report.pdf")})).await;
    let key = bearer(&app.api_key);
    let (_, body) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "read_page", "arguments": {"url": url("/report.pdf")}}}),
            Some(&key),
            "2025-11-25",
        )
        .await;
    let structured = &body["result"]["structuredContent"];
    assert_eq!(structured["page_count"], 2, "{body}");
    assert_eq!(structured["markdown"], rest["markdown"]);

    let resp = app
        .http
        .post(app.url("/api/read/batch"))
        .header("Authorization", &key)
        .json(&json!({"urls": [url("/report.pdf"), url("/encrypted.pdf")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let batch: Value = resp.json().await.unwrap();
    assert_eq!(batch["results"][0]["page_count"], 2, "{batch}");
    assert_eq!(batch["results"][1]["reason"], "encrypted_pdf");
}
