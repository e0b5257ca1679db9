//! Running it in production: the load balancer's probes (`/health/live`, `/health/ready`),
//! `/metrics` in the Prometheus text format (its access rules, bounded route labels, the
//! business counters, `promtool check metrics`), and the request id on every log line.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};

use crate::helpers::{TestApp, bearer, problem};

const TOKEN: &str = "ops-token-0123456789";

async fn get(url: String, token: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

/// The scrape, checked to be the Prometheus text format.
async fn scrape(url: String, token: Option<&str>) -> String {
    let resp = get(url, token).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    resp.text().await.unwrap()
}

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test]
async fn probes_answer_live_and_ready_then_draining() {
    let app = TestApp::spawn().await;
    let live = get(app.url("/health/live"), None).await;
    assert_eq!(live.status(), 200);
    assert_eq!(live.headers()["cache-control"], "no-store");
    assert_eq!(live.json::<Value>().await.unwrap()["status"], "live");
    let ready = get(app.url("/health/ready"), None).await;
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.json::<Value>().await.unwrap()["status"], "ready");

    // What SIGTERM does first: readiness turns 503 while everything else is still served.
    app.services.health.drain();
    let draining = get(app.url("/health/ready"), None).await;
    assert_eq!(draining.headers()["retry-after"], "1");
    let body = problem(draining, 503, "unavailable").await;
    assert_eq!(body["reason"], "draining", "{body}");
    assert_eq!(get(app.url("/health/live"), None).await.status(), 200);
    assert_eq!(
        app.get_usage(Some(&bearer(&app.api_key))).await.status(),
        200
    );
    // `/health` is unchanged.
    assert_eq!(app.get_json("/health").await["status"], "ok");
}

/// A store that stops answering makes the instance unready (the balancer sends its traffic
/// elsewhere); liveness does not depend on it.
#[tokio::test]
async fn a_store_that_does_not_answer_is_not_ready() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ready.db").display());
    let store = svc_sql::SqliteStore::open(&url).await.unwrap();
    let stores = svc::startup::Stores::all_in(Arc::new(store.clone()), "sqlite");
    let app = TestApp::builder().stores(stores).spawn().await;
    assert_eq!(get(app.url("/health/ready"), None).await.status(), 200);
    store.close().await;
    let body = problem(
        get(app.url("/health/ready"), None).await,
        503,
        "unavailable",
    )
    .await;
    assert_eq!(body["reason"], "store_unreachable", "{body}");
    assert_eq!(get(app.url("/health/live"), None).await.status(), 200);
}

#[tokio::test]
async fn metrics_on_the_main_address_answer_only_the_internal_token() {
    // No token, no metrics address: there is no `/metrics`.
    let closed = TestApp::spawn().await;
    problem(get(closed.url("/metrics"), None).await, 404, "not_found").await;

    let app = TestApp::builder()
        .runtime(|r| r.internal_token = Some(TOKEN.into()))
        .spawn()
        .await;
    for token in [None, Some("wrong"), Some(&app.api_key[..])] {
        problem(get(app.url("/metrics"), token).await, 404, "not_found").await;
    }
    let text = scrape(app.url("/metrics"), Some(TOKEN)).await;
    assert!(text.contains("# TYPE svc_build_info gauge"), "{text}");
    let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        sample(&text, "svc_build_info", &[&version]),
        Some(1.0),
        "{text}"
    );
    assert!(text.contains("# HELP svc_http_requests_total"), "{text}");
    assert_eq!(sample(&text, "svc_draining", &[]), Some(0.0), "{text}");
    assert!(
        sample(&text, "svc_telemetry_queue_depth", &[]).is_some(),
        "{text}"
    );
    for state in ["state=\"running\"", "state=\"overdue\""] {
        assert_eq!(
            sample(&text, "svc_pdf_parser_threads", &[state]),
            Some(0.0),
            "{text}"
        );
    }
    // Neither the metrics nor the probes are in the public OpenAPI document.
    let doc: Value = app.get_json("/openapi.json").await;
    for path in ["/metrics", "/health/live", "/health/ready"] {
        assert!(doc["paths"][path].is_null(), "{path} is in the document");
    }
}

#[tokio::test]
async fn metrics_on_their_own_address_leave_the_main_one_closed() {
    let app = TestApp::builder()
        .runtime(|r| {
            r.internal_token = Some(TOKEN.into());
            r.metrics_bind = Some("127.0.0.1:0".into());
        })
        .spawn()
        .await;
    let metrics = app.metrics_url.clone().expect("the metrics address");
    problem(
        get(app.url("/metrics"), Some(TOKEN)).await,
        404,
        "not_found",
    )
    .await;
    let text = scrape(format!("{metrics}/metrics"), None).await;
    assert!(text.contains("svc_build_info"), "{text}");
}

/// Routes are labelled by their template, unknown paths by one label: the raw path (an id, a
/// probe for `/wp-admin`) never becomes a series.
#[tokio::test]
async fn requests_are_counted_by_route_template_and_status() {
    let app = TestApp::builder()
        .runtime(|r| r.internal_token = Some(TOKEN.into()))
        .spawn()
        .await;
    let key = Some(&app.api_key[..]);
    let task = get(app.url("/api/tasks/task_01J0000000000000000000ZZZZ"), key).await;
    assert_eq!(task.status(), 404);
    assert_eq!(get(app.url("/nowhere/x7q3z"), None).await.status(), 404);
    assert_eq!(
        get(app.url("/.well-known/jwks.json"), None).await.status(),
        200
    );
    let text = scrape(app.url("/metrics"), Some(TOKEN)).await;
    let tasks = [
        "method=\"GET\"",
        "route=\"/api/tasks/{task_id}\"",
        "status=\"404\"",
    ];
    assert!(
        sample(&text, "svc_http_requests_total", &tasks) >= Some(1.0),
        "{text}"
    );
    let unknown = ["route=\"unmatched\"", "status=\"404\""];
    assert!(
        sample(&text, "svc_http_requests_total", &unknown) >= Some(1.0),
        "{text}"
    );
    let jwks = ["route=\"/.well-known/jwks.json\"", "status=\"200\""];
    assert!(
        sample(&text, "svc_http_requests_total", &jwks) >= Some(1.0),
        "{text}"
    );
    let latency = ["route=\"/api/tasks/{task_id}\"", "le=\"+Inf\""];
    assert!(
        sample(&text, "svc_http_request_duration_seconds_bucket", &latency) >= Some(1.0),
        "{text}"
    );
    for raw in ["x7q3z", "task_01J", "nowhere"] {
        assert!(!text.contains(raw), "a raw path became a label: {raw}");
    }
}

/// Executions, credits and webhook verifications are counted by the services, so every face
/// counts alike (here: one through REST, one through MCP).
#[tokio::test]
async fn executions_credits_and_webhooks_are_counted() {
    let app = TestApp::builder()
        .runtime(|r| r.internal_token = Some(TOKEN.into()))
        .action_sites()
        .await
        .payments()
        .await
        .spawn()
        .await;
    let before = scrape(app.url("/metrics"), Some(TOKEN)).await;
    let completed =
        |t: &str| sample(t, "svc_executions_total", &["outcome=\"completed\""]).unwrap_or(0.0);
    let charged = |t: &str| sample(t, "svc_credits_charged_total", &[]).unwrap_or(0.0);
    let body = json!({"domain": "shop.sandbox.test", "action": "search_products", "params": {"query": "tea"}});
    let rest = reqwest::Client::new()
        .post(app.url("/api/execute"))
        .bearer_auth(&app.api_key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 200);
    let (status, answer) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "execute", "arguments": body}}),
            Some(&bearer(&app.api_key)),
            "2025-11-25",
        )
        .await;
    assert_eq!(status, 200);
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let unsigned = reqwest::Client::new()
        .post(app.url("/api/billing/webhook"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 400);
    let after = scrape(app.url("/metrics"), Some(TOKEN)).await;
    assert_eq!(completed(&after) - completed(&before), 2.0, "{after}");
    assert!(charged(&after) - charged(&before) >= 2.0, "{after}");
    let missing = ["result=\"missing_header\""];
    assert!(
        sample(&after, "svc_webhook_verifications_total", &missing) >= Some(1.0),
        "{after}"
    );
}

/// `promtool check metrics` (Debian's `prometheus` package; `.ci/run` installs it) finds
/// nothing to say about a scrape with every kind of series in it.
#[tokio::test]
async fn promtool_accepts_the_scrape() {
    let Some(promtool) = which("promtool") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool is missing in CI: .ci/run installs the prometheus package"
        );
        eprintln!("skipped: promtool is not installed (apt-get install prometheus)");
        return;
    };
    let app = TestApp::builder()
        .runtime(|r| r.internal_token = Some(TOKEN.into()))
        .action_sites()
        .await
        .spawn()
        .await;
    let body = json!({"domain": "shop.sandbox.test", "action": "search_products", "params": {"query": "tea"}});
    reqwest::Client::new()
        .post(app.url("/api/execute"))
        .bearer_auth(&app.api_key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = scrape(app.url("/metrics"), Some(TOKEN)).await;
    use std::io::Write;
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A log line from inside a handler carries the request's id (here the caller's
/// `X-Request-Id`), also through MCP, where rmcp serves each request on a task of its own (it
/// instruments those tasks with the span they were spawned in, the edge's request span).
#[tokio::test]
async fn log_lines_of_an_mcp_tool_carry_the_request_id() {
    crate::helpers::capture_logs();
    let app = TestApp::builder().action_sites().await.spawn().await;
    let resp = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("X-Request-Id", "req-mcp-log-7")
        .bearer_auth(&app.api_key)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "execute",
            "arguments": {"domain": "shop.sandbox.test", "action": "search_products",
                          "params": {"query": "tea"}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "req-mcp-log-7");
    assert_eq!(resp.status(), 200);
    let logs = crate::helpers::captured_logs();
    let begun: Vec<&str> = logs.lines().filter(|l| l.contains("task begun")).collect();
    assert_eq!(begun.len(), 1, "{logs}");
    assert!(begun[0].contains("req-mcp-log-7"), "{}", begun[0]);
    let settled = logs.lines().find(|l| l.contains("task settled")).unwrap();
    assert!(settled.contains("req-mcp-log-7"), "{settled}");
}

/// Connections that go quiet are closed once quiet for `SVC_IDLE_TIMEOUT_SECONDS` (here its
/// least, 20 s): one kept alive after its request, and one that never sent a byte (a review
/// held 3,000 open for minutes).
#[tokio::test]
async fn connections_that_go_quiet_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::builder()
        .runtime(|r| r.idle_timeout_seconds = 20)
        .spawn()
        .await;
    let address = app.base_url.strip_prefix("http://").unwrap().to_owned();
    let mut kept = tokio::net::TcpStream::connect(&address).await.unwrap();
    kept.write_all(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    let closed = async |socket: &mut tokio::net::TcpStream| {
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(90), socket.read_to_end(&mut answer))
            .await
            .expect("the quiet connection was closed")
            .ok();
        String::from_utf8_lossy(&answer).into_owned()
    };
    let answered = closed(&mut kept).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert_eq!(closed(&mut silent).await, "");
}

/// RFC 9112: a request with two `Host` headers, or an HTTP/1.1 request with none, is 400 (a
/// review passed `/mcp`'s host check with a second `Host` after an allowed one). HTTP/1.0
/// may omit it, as haproxy's health check does.
#[tokio::test]
async fn host_headers_are_one_and_present() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn().await;
    let address = app.base_url.strip_prefix("http://").unwrap().to_owned();
    let status_of = async |request: String| {
        let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        socket.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer)
            .split(' ')
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    };
    let host = format!("Host: {address}\r\n");
    for (request, want) in [
        (
            format!("GET /health/live HTTP/1.1\r\n{host}Connection: close\r\n\r\n"),
            "200",
        ),
        (
            format!(
                "GET /health/live HTTP/1.1\r\n{host}Host: evil.example\r\nConnection: close\r\n\r\n"
            ),
            "400",
        ),
        (
            "GET /health/live HTTP/1.1\r\nConnection: close\r\n\r\n".to_owned(),
            "400",
        ),
        ("GET /health/live HTTP/1.0\r\n\r\n".to_owned(), "200"),
    ] {
        assert_eq!(status_of(request.clone()).await, want, "{request:?}");
    }
}

/// A compressed body would be read as its compressed bytes: 415 with `Accept-Encoding:
/// identity` (RFC 9110), before any handler, on every face; `identity` is read as usual.
#[tokio::test]
async fn compressed_bodies_are_refused_with_the_coding_to_use() {
    let app = TestApp::spawn().await;
    let client = reqwest::Client::new();
    let body = r#"{"url":"https://example.com/"}"#;
    for (path, coding) in [
        ("/api/read", "gzip"),
        ("/api/read", "br, identity"),
        ("/mcp", "deflate"),
        ("/oauth2/token", "zstd"),
        ("/api/read", "x\u{1}y"),
    ] {
        let resp = client
            .post(app.url(path))
            .header("content-type", "application/json")
            .header("content-encoding", coding.replace('\u{1}', "%01"))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 415, "{path} {coding}");
        assert_eq!(
            resp.headers()["accept-encoding"],
            "identity",
            "{path} {coding}"
        );
        let text = resp.text().await.unwrap();
        assert!(text.contains("unsupported_media_type"), "{path}: {text}");
    }
    // Uncompressed, said or not: past the edge (401 without a key, not 415).
    for coding in [Some("identity"), Some("Identity"), None] {
        let mut req = client
            .post(app.url("/api/read"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(c) = coding {
            req = req.header("content-encoding", c);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{coding:?}");
        assert!(resp.headers().get("accept-encoding").is_none());
    }
}

/// A query parameter given twice would mean two things (the first used to win silently): 400
/// naming it, except the list parameters, given once per item.
#[tokio::test]
async fn a_query_parameter_given_twice_is_refused_unless_it_is_a_list() {
    let app = TestApp::spawn().await;
    let key = app.api_key.clone();
    let client = reqwest::Client::new();
    let status = async |query: &str| {
        let resp = client
            .get(app.url(&format!("/api/tasks?{query}")))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    };
    let (code, body) = status("limit=1&limit=100").await;
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("`limit` more than once"), "{body}");
    assert_eq!(status("limit=1&%6Cimit=100").await.0, 400, "decoded names");
    assert_eq!(status("limit=1").await.0, 200);
    let resp = client
        .get(app.url(
            "/api/read?url=https://example.com/&include_selectors=main&include_selectors=%5B%5B",
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    // Past the edge, and both items read: the second does not parse (422, before any fetch).
    let code = resp.status();
    let body = resp.text().await.unwrap();
    assert_eq!(code, 422, "a list parameter is given once per item: {body}");
    assert!(body.contains("[["), "{body}");
}
