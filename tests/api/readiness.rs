//! The readiness scan: the service's own site scores 100; each sandbox site built to lack one
//! thing fails exactly that check; bad input gets the documented problem and stores nothing.

use futures_util::StreamExt;
use serde_json::{Value, json};
use svc::startup::{BLOG_HOST, LACKING, NEVER_HOST, READY_HOST, lacking_host};
use svc_ports::CheckId;

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
async fn the_services_own_site_passes_and_the_report_reads_back() {
    let (builder, origin) = TestApp::builder()
        .readiness_sites()
        .await
        .named_in_sandbox();
    let app = builder.spawn().await;
    let resp = scan(&app, &format!("{origin}/")).await;
    assert_eq!(resp.status(), 200);
    let report: Value = resp.json().await.unwrap();
    let failing: Vec<String> = not_passing(&report)
        .into_iter()
        .filter(|(_, status, _)| status != "neutral")
        .map(|(id, status, summary)| format!("{id} {status}: {summary}"))
        .collect();
    assert_eq!(failing, Vec::<String>::new(), "{report:#}");
    // Neutral is no judgement, so the set is pinned: a check drifting to neutral is caught.
    // The service supports none of x402, UCP, ACP or AP2, and its home page sells nothing,
    // so those four are not scored; everything else is judged.
    let neutral: Vec<(String, String)> = statuses(&report)
        .into_iter()
        .filter(|(_, status, _)| status == "neutral")
        .map(|(id, _, summary)| (id, summary))
        .collect();
    let ids: Vec<&str> = neutral.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["x402", "ucp", "acp", "ap2"], "{report:#}");
    for (id, summary) in &neutral {
        assert!(summary.contains("shows no commerce"), "{id}: {summary}");
    }
    assert_eq!(check_of(&report, "web_bot_auth")["status"], "pass");
    assert_eq!(report["checks"].as_array().unwrap().len(), 27);
    assert_eq!(report["score"], 100, "every scored check passes");
    assert_eq!(report["level"], 5);
    assert_eq!(report["level_name"], "Agent-Native");
    // The landing page, run in headless Chromium (every request through the guard), registers
    // its WebMCP tools.
    let web_mcp = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "web_mcp")
        .unwrap();
    assert_eq!(web_mcp["status"], "pass", "{web_mcp}");
    let excerpt = web_mcp["evidence"][0]["excerpt"].as_str().unwrap();
    assert!(
        excerpt.contains("scan_site") && excerpt.contains("read_page"),
        "{excerpt}"
    );
    for check in report["checks"].as_array().unwrap() {
        let evidence = check["evidence"].as_array().unwrap();
        assert!(!evidence.is_empty(), "{check}");
        assert!(
            evidence[0]["url"].as_str().unwrap().starts_with(&origin),
            "{check}"
        );
    }
    let probe = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "mcp_probe")
        .unwrap();
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
        html.contains(&format!(
            "<span class=\"score\" id=\"score\">{}</span>",
            report["score"]
        )),
        "{html}"
    );
    assert!(html.contains("id=\"check-mcp_probe\""));
}

/// Text as the report page's templates escape it.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn check_of<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
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
    // Every check passes, WebMCP too: the page is run in headless Chromium and registers its
    // tools.
    let open: Vec<_> = not_passing(&ready);
    assert_eq!(open, Vec::new(), "{ready:#}");
    assert_eq!(ready["score"], 100);
    assert_eq!(ready["level"], 5);
    assert_eq!(ready["level_name"], "Agent-Native");
    assert!(
        ready.get("next_level").is_none_or(Value::is_null),
        "{ready:#}"
    );
    assert_eq!(check_of(&ready, "web_bot_auth")["status"], "pass");

    // Four at a time: the service runs at most four scans at once (more wait, then 503), and
    // each now runs its home page in the browser.
    let reports: Vec<(&str, Value)> = futures_util::stream::iter(LACKING.iter().map(|check| {
        let app = &app;
        let url = sites.origin(&lacking_host(check));
        async move { (*check, scan(app, &url).await.json::<Value>().await.unwrap()) }
    }))
    .buffered(4)
    .collect()
    .await;
    let mut failed_somewhere = std::collections::BTreeSet::new();
    for (check, report) in reports {
        let informational = CheckId::parse(check).unwrap().informational();
        // The checks that fail or warn (neutral is no judgement) are exactly the one built
        // to be missing; an informational one is neutral instead. web_mcp is scored: the
        // page, run in headless Chromium, registers no tools, so it fails.
        let failing: Vec<String> = not_passing(&report)
            .into_iter()
            .filter(|(_, status, _)| status != "neutral")
            .map(|(id, _, _)| id)
            .collect();
        failed_somewhere.extend(failing.iter().cloned());
        let lacked = check_of(&report, check);
        if informational {
            assert_eq!(failing, Vec::<String>::new(), "{check}: {report:#}");
            assert_eq!(lacked["status"], "neutral", "{check}: {lacked}");
            assert_eq!(report["score"], 100, "{check}");
        } else {
            assert_eq!(failing, vec![check.to_owned()], "{check}: {report:#}");
            assert_eq!(lacked["status"], "fail", "{check}: {lacked}");
            assert!(
                report["score"].as_u64().unwrap() < 100,
                "{check}: {}",
                report["score"]
            );
        }
        assert!(
            lacked["recommendation"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{lacked}"
        );
    }
    // Every scored check has a fixture site that fails it: a new check cannot skip its site.
    let scored: std::collections::BTreeSet<String> = CheckId::ALL
        .into_iter()
        .filter(|c| !c.informational())
        .map(|c| c.as_str().to_owned())
        .collect();
    assert_eq!(failed_somewhere, scored);
    assert!(scored.contains("web_mcp"));
}

#[tokio::test]
async fn a_site_that_sells_nothing_is_not_scored_on_commerce() {
    let app = TestApp::builder().readiness_sites().await.spawn().await;
    let sites = app._readiness.clone().unwrap();
    let blog: Value = scan(&app, &sites.origin(BLOG_HOST))
        .await
        .json()
        .await
        .unwrap();
    // The blog serves no commerce file, x402 answer, UCP, ACP or AP2: neutral, not failing,
    // because its home page shows nothing for sale. Everything else passes.
    let open: Vec<(String, String)> = not_passing(&blog)
        .into_iter()
        .map(|(id, status, _)| (id, status))
        .collect();
    let neutral = |id: &str| (id.to_owned(), "neutral".to_owned());
    assert_eq!(
        open,
        ["commerce_files", "x402", "ucp", "acp", "ap2"].map(neutral),
        "{blog:#}"
    );
    for id in ["commerce_files", "x402", "ucp", "acp", "ap2"] {
        let c = check_of(&blog, id);
        assert!(
            c["summary"].as_str().unwrap().contains("shows no commerce"),
            "{c}"
        );
    }
    assert_eq!(blog["score"], 100);
    assert_eq!(blog["level"], 5);
}

#[tokio::test]
async fn without_a_browser_web_mcp_is_neutral_and_not_scored() {
    let app = TestApp::builder()
        .readiness_sites()
        .await
        .runtime(|r| r.render.chromium = String::new())
        .spawn()
        .await;
    let sites = app._readiness.clone().unwrap();
    // The site whose page registers no tools: without a browser nothing can tell, so the
    // check is neutral and the site loses nothing for it.
    let report: Value = scan(&app, &sites.origin(&lacking_host("web_mcp")))
        .await
        .json()
        .await
        .unwrap();
    let web_mcp = check_of(&report, "web_mcp");
    assert_eq!(web_mcp["status"], "neutral", "{web_mcp}");
    assert!(
        web_mcp["summary"]
            .as_str()
            .unwrap()
            .contains("browser is unavailable"),
        "{web_mcp}"
    );
    assert_eq!(report["score"], 100, "{report:#}");
    assert_eq!(not_passing(&report).len(), 1, "{report:#}");
}

#[tokio::test]
async fn the_level_is_the_highest_rung_whose_checks_all_pass() {
    let app = TestApp::builder()
        .readiness_sites()
        .await
        .runtime(|r| r.scan_rate_limit_per_ip = 100)
        .spawn()
        .await;
    let sites = app._readiness.clone().unwrap();
    // What each lacking site's level stops at, and what the next level then asks.
    for (check, level, name, missing) in [
        (
            "robots_ai_rules",
            1,
            "Basic Web Presence",
            vec!["robots_ai_rules"],
        ),
        (
            "content_signals",
            1,
            "Basic Web Presence",
            vec!["content_signals"],
        ),
        (
            "markdown_negotiation",
            2,
            "Bot-Aware",
            vec!["markdown_negotiation"],
        ),
        ("mcp_probe", 4, "Agent-Integrated", vec!["mcp_probe"]),
        ("agent_skills", 4, "Agent-Integrated", vec!["agent_skills"]),
        // One of robots.txt, sitemap and Link headers may be missing.
        ("link_headers", 5, "Agent-Native", vec![]),
        ("forms", 5, "Agent-Native", vec![]),
    ] {
        let report: Value = scan(&app, &sites.origin(&lacking_host(check)))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(report["level"], level, "{check}: {report:#}");
        assert_eq!(report["level_name"], name, "{check}");
        if level < 5 {
            assert_eq!(report["next_level"]["level"], level + 1, "{check}");
            assert_eq!(report["next_level"]["missing"], json!(missing), "{check}");
        }
    }
}

#[tokio::test]
async fn a_site_that_never_answers_is_scanned_to_the_end_with_every_probe_timed_out() {
    let app = TestApp::builder()
        .readiness_sites()
        .await
        // Each probe gives up quickly; the scan's own budget bounds the rest.
        .fetch_timeout(std::time::Duration::from_millis(300))
        .spawn()
        .await;
    let sites = app._readiness.clone().unwrap();
    let resp = scan(&app, &sites.origin(NEVER_HOST)).await;
    assert_eq!(resp.status(), 200);
    let report: Value = resp.json().await.unwrap();
    assert_eq!(report["level"], 0, "{report:#}");
    assert_eq!(report["score"], 0);
    assert_eq!(report["checks"].as_array().unwrap().len(), 27);
    for c in report["checks"].as_array().unwrap() {
        assert_ne!(c["status"], "pass", "{c}");
    }
    let robots = check_of(&report, "robots_txt");
    assert!(
        robots["evidence"][0]["excerpt"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{robots}"
    );
    // Nothing answered, so no status: the field is absent, as the schema says, never null
    // (schemathesis found `"status": null` against `type: integer`).
    assert!(robots["evidence"][0].get("status").is_none(), "{robots}");
    assert_no_nulls(&report, "report");
}

/// The document declares no nullable field in a report: an absent value is omitted.
fn assert_no_nulls(value: &Value, at: &str) {
    match value {
        Value::Null => panic!("null at {at}"),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                assert_no_nulls(v, &format!("{at}[{i}]"));
            }
        }
        Value::Object(fields) => {
            for (k, v) in fields {
                assert_no_nulls(v, &format!("{at}.{k}"));
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn agents_get_the_report_as_markdown_and_people_a_badge() {
    let app = TestApp::builder().readiness_sites().await.spawn().await;
    let sites = app._readiness.clone().unwrap();
    let resp = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({"url": sites.origin(&lacking_host("content_signals")), "format": "agent"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    let md = resp.text().await.unwrap();
    assert!(md.contains("Level 1 of 5: **Basic Web Presence**"), "{md}");
    assert!(md.contains("## To reach level 2 (Bot-Aware)"), "{md}");
    assert!(
        md.contains("- [ ] `content_signals`: Say what your content may be used for"),
        "{md}"
    );
    assert!(md.contains("### `content_signals` (fail)"), "{md}");
    let id = md
        .split("/readiness/")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_owned();

    // `format: "json"` (and no format) answer JSON, with the badge's URL.
    let report: Value = app.get_json(&format!("/api/readiness/scans/{id}")).await;
    assert_eq!(report["level"], 1);
    let badge_url = report["badge_url"].as_str().unwrap();
    assert!(
        badge_url.ends_with(&format!("/readiness/{id}/badge.svg")),
        "{badge_url}"
    );
    let badge = app
        .http
        .get(app.url(&format!("/readiness/{id}/badge.svg")))
        .send()
        .await
        .unwrap();
    assert_eq!(badge.status(), 200);
    assert_eq!(badge.headers()["content-type"], "image/svg+xml");
    let svg = badge.text().await.unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("1 Basic Web Presence"),
        "{svg}"
    );
    let missing = app
        .http
        .get(app.url("/readiness/scn_01JZ0000000000000000000000/badge.svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // The page: the ladder, what the next rung needs, the share URL and the badge.
    let html = app.get_text(&format!("/readiness/{id}")).await;
    assert!(
        html.contains("<li class=\"current\" id=\"rung-1\">"),
        "{html}"
    );
    assert!(html.contains("<li class=\"next\" id=\"rung-2\">"), "{html}");
    assert!(html.contains("href=\"#check-content_signals\""), "{html}");
    // The failing check's row shows its fix and the URL it read (HTML-escaped as the page
    // writes text).
    let failing = check_of(&report, "content_signals");
    assert_eq!(failing["status"], "fail");
    let row = html
        .split("<tr id=\"check-content_signals\">")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .unwrap_or_else(|| panic!("no content_signals row: {html}"));
    let fix = failing["recommendation"].as_str().unwrap();
    assert!(
        row.contains(&format!("<strong>Fix:</strong> {}", escape(fix))),
        "{row}"
    );
    let evidence_url = failing["evidence"][0]["url"].as_str().unwrap();
    assert!(evidence_url.ends_with("/robots.txt"), "{evidence_url}");
    assert!(
        row.contains(&format!("<div class=\"evidence\">{}", escape(evidence_url))),
        "{row}"
    );
    assert!(html.contains(&format!("/readiness/{id}\"")), "{html}");
    assert!(html.contains(&format!("src=\"/readiness/{id}/badge.svg\"")));

    let bad_format = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({"url": "https://example.com", "format": "yaml"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_format.status(), 400);
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
    assert!(
        report.contains("id=\"level-name\">Agent-Native<"),
        "{report}"
    );
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
