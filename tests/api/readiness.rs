//! The readiness scan: the service's own site scores 100; each sandbox site built to lack one
//! thing fails exactly that check; bad input gets the documented problem and stores nothing.

use futures_util::future::join_all;
use serde_json::{Value, json};
use svc::startup::{LACKING, READY_HOST, lacking_host};

use crate::helpers::{TestApp, problem};

async fn scan(app: &TestApp, url: &str) -> reqwest::Response {
    app.http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({ "url": url }))
        .send()
        .await
        .unwrap()
}

fn statuses(report: &Value) -> Vec<(String, String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
                c["summary"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn not_passing(report: &Value) -> Vec<(String, String, String)> {
    statuses(report)
        .into_iter()
        .filter(|(_, status, _)| status != "pass")
        .collect()
}

#[tokio::test]
async fn the_services_own_site_scores_100_and_the_report_reads_back() {
    let (builder, origin) = TestApp::builder()
        .readiness_sites()
        .await
        .named_in_sandbox();
    let app = builder.spawn().await;
    let resp = scan(&app, &format!("{origin}/")).await;
    assert_eq!(resp.status(), 200);
    let report: Value = resp.json().await.unwrap();
    assert_eq!(not_passing(&report), vec![], "{report:#}");
    assert_eq!(report["score"], 100);
    assert_eq!(report["level"], "agent_ready");
    assert_eq!(report["checks"].as_array().unwrap().len(), 13);
    for check in report["checks"].as_array().unwrap() {
        let evidence = check["evidence"].as_array().unwrap();
        assert!(!evidence.is_empty(), "{check}");
        assert!(
            evidence[0]["url"].as_str().unwrap().starts_with(&origin),
            "{check}"
        );
        assert!(
            check.get("recommendation").is_none_or(Value::is_null),
            "{check}"
        );
    }
    let probe = &report["checks"][6];
    assert_eq!(probe["id"], "mcp_probe");
    assert!(
        probe["evidence"][0]["excerpt"]
            .as_str()
            .unwrap()
            .contains("svc_auth_status"),
        "{probe}"
    );

    let id = report["scan_id"].as_str().unwrap();
    assert!(id.starts_with("scn_"));
    let stored = app.get_json(&format!("/api/readiness/scans/{id}")).await;
    assert_eq!(stored, report);
    let page = app
        .http
        .get(app.url(&format!("/readiness/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<span class=\"score\" id=\"score\">100</span>"),
        "{html}"
    );
    assert!(html.contains("id=\"check-mcp_probe\""));
}

#[tokio::test]
async fn each_site_built_to_lack_one_thing_fails_exactly_that_check() {
    let app = TestApp::builder()
        .readiness_sites()
        .await
        .runtime(|r| r.scan_rate_limit_per_ip = 100)
        .spawn()
        .await;
    let sites = app._readiness.clone().unwrap();
    let ready: Value = scan(&app, &sites.origin(READY_HOST))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(not_passing(&ready), vec![], "{ready:#}");
    assert_eq!(ready["score"], 100);

    let reports = join_all(LACKING.iter().map(|check| {
        let app = &app;
        let url = sites.origin(&lacking_host(check));
        async move { (*check, scan(app, &url).await.json::<Value>().await.unwrap()) }
    }))
    .await;
    for (check, report) in reports {
        let failing = not_passing(&report);
        assert_eq!(failing.len(), 1, "{check}: {failing:?}");
        assert_eq!(failing[0].0, check, "{failing:?}");
        assert_eq!(failing[0].1, "fail", "{check}: {failing:?}");
        let failed = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == check)
            .unwrap();
        assert!(
            failed["recommendation"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{failed}"
        );
        let weight = failed["weight"].as_u64().unwrap();
        assert_eq!(report["score"].as_u64().unwrap(), 100 - weight, "{check}");
    }
}

#[tokio::test]
async fn bad_input_gets_the_documented_problem_and_stores_nothing() {
    let app = TestApp::builder()
        .runtime(|r| r.scan_rate_limit_per_ip = 100)
        .spawn()
        .await;
    problem(scan(&app, "").await, 422, "invalid_request").await;
    problem(scan(&app, "ftp://example.com/").await, 422, "url_refused").await;
    problem(scan(&app, "http://127.0.0.1:9/").await, 422, "url_refused").await;
    problem(
        scan(&app, "http://user@example.com/").await,
        422,
        "url_refused",
    )
    .await;
    problem(
        scan(&app, "http://169.254.169.254/latest/").await,
        422,
        "url_refused",
    )
    .await;
    problem(
        scan(&app, "http://metadata.google.internal/").await,
        422,
        "url_refused",
    )
    .await;
    let long = format!("https://example.com/{}", "a".repeat(3000));
    assert_eq!(scan(&app, &long).await.status(), 400);
    let wrong_type = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({"url": 42}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), 400);
    let extra = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({"url": "https://example.com", "submit_forms": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(extra.status(), 400);
    let huge = app
        .http
        .post(app.url("/api/readiness/scan"))
        .header("content-type", "application/json")
        .body(format!("{{\"url\": \"{}\"}}", "a".repeat(2 * 1024 * 1024)))
        .send()
        .await
        .unwrap();
    assert_eq!(huge.status(), 413);
    for id in [
        "scn_01JZ0000000000000000000000",
        "nonsense",
        "task_01JZ0000000000000000000000",
    ] {
        let resp = app
            .http
            .get(app.url(&format!("/api/readiness/scans/{id}")))
            .send()
            .await
            .unwrap();
        problem(resp, 404, "not_found").await;
    }
}

#[tokio::test]
async fn scans_are_limited_per_address() {
    let app = TestApp::builder()
        .readiness_sites()
        .await
        .runtime(|r| r.scan_rate_limit_per_ip = 2)
        .spawn()
        .await;
    let url = app._readiness.clone().unwrap().origin(READY_HOST);
    assert_eq!(scan(&app, &url).await.status(), 200);
    assert_eq!(scan(&app, &url).await.status(), 200);
    let limited = scan(&app, &url).await;
    assert!(limited.headers().contains_key("retry-after"));
    problem(limited, 429, "rate_limited").await;
    // Other endpoints are not affected.
    assert_eq!(
        app.http
            .get(app.url("/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn people_scan_from_the_landing_page_and_agents_get_markdown() {
    let app = TestApp::builder().readiness_sites().await.spawn().await;
    let home = app.http.get(app.url("/")).send().await.unwrap();
    assert_eq!(home.status(), 200);
    assert_eq!(home.headers()["vary"], "Accept");
    let html = home.text().await.unwrap();
    assert!(html.contains("application/ld+json") && html.contains("\"@type\":\"WebAPI\""));
    assert!(html.contains("<label for=\"scan-url\">") && html.contains("name=\"url\""));

    let md = app
        .http
        .get(app.url("/"))
        .header("accept", "text/markdown, text/html;q=0.5")
        .send()
        .await
        .unwrap();
    assert!(
        md.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    assert!(md.text().await.unwrap().starts_with("# svc\n"));

    let robots = app.get_text("/robots.txt").await;
    assert!(robots.contains("User-agent: ClaudeBot") && robots.contains("/sitemap.xml"));
    let sitemap = app.get_text("/sitemap.xml").await;
    assert!(sitemap.contains("<urlset") && sitemap.contains("<loc>"));

    // The form: a scan, then its report page.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = app._readiness.clone().unwrap().origin(READY_HOST);
    let posted = no_redirects
        .post(app.url("/readiness"))
        .form(&[("url", url.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 303);
    let location = posted.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/readiness/scn_"), "{location}");
    let report = app.get_text(&location).await;
    assert!(report.contains("Agent readiness of") && report.contains(">100</span>"));
    // A refused URL is shown on the form, not stored.
    let refused = no_redirects
        .post(app.url("/readiness"))
        .form(&[("url", "http://10.0.0.1/")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    assert!(refused.text().await.unwrap().contains("class=\"error\""));
}
