//! Web Bot Auth (issue 22, item 4): the service's outbound requests (the reader's, the
//! readiness scan's GETs and MCP probe, learning's, an executed action's), captured at a
//! wiremock site, carry an RFC 9421 signature that verifies against the key directory the service
//! serves, checked here with `ring` from the served JWKS alone and, when `SVC_TEST_PYTHON` is
//! set, by pyauth's http-message-signatures (`clients/web_bot_auth_check.py`).

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use serde_json::{Value, json};
use sha2::Digest;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::{TestApp, bearer};

const HOST: &str = "signed.sandbox.test";

async fn site() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(200).set_body_string("User-agent: *\nAllow: /\n"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            b"<html><head><title>Signed</title></head><body><main><h1>Signed</h1><p>A page.</p></main></body></html>".to_vec(),
            "text/html",
        ))
        .mount(&server)
        .await;
    server
}

fn thumbprint(x: &str) -> String {
    let canonical = format!("{{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"{x}\"}}");
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()))
}

/// Reads a page of the wiremock site through the app; returns the requests the site saw.
async fn read_through(app: &TestApp, site: &MockServer) -> Vec<wiremock::Request> {
    let url = format!("http://{HOST}:{}/page", site.address().port());
    let resp = app
        .http
        .get(app.url("/api/read"))
        .query(&[("url", url.as_str()), ("max_age", "0")])
        .header("authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    site.received_requests().await.unwrap()
}

fn header(req: &wiremock::Request, name: &str) -> Option<String> {
    req.headers
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// The key the service's directory publishes, after checking the directory's own proof.
struct PublishedKey {
    directory: Value,
    keyid: String,
    public: ring::signature::UnparsedPublicKey<Vec<u8>>,
}

fn signature_of(field: &str, label: &str) -> Vec<u8> {
    let value = field
        .strip_prefix(&format!("{label}=:"))
        .and_then(|v| v.strip_suffix(':'))
        .unwrap();
    STANDARD.decode(value).unwrap()
}

async fn published_key(app: &TestApp) -> PublishedKey {
    let resp = app
        .http
        .get(app.url("/.well-known/http-message-signatures-directory"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/http-message-signatures-directory+json"
    );
    let digest = resp.headers()["content-digest"]
        .to_str()
        .unwrap()
        .to_owned();
    let proof_input = resp.headers()["signature-input"]
        .to_str()
        .unwrap()
        .to_owned();
    let proof = resp.headers()["signature"].to_str().unwrap().to_owned();
    let authority = app.base_url.trim_start_matches("http://").to_owned();
    let body = resp.bytes().await.unwrap();
    assert_eq!(
        digest,
        format!("sha-256=:{}:", STANDARD.encode(sha2::Sha256::digest(&body)))
    );
    let directory: Value = serde_json::from_slice(&body).unwrap();
    let key = &directory["keys"][0];
    assert_eq!(key["kty"], "OKP");
    assert_eq!(key["crv"], "Ed25519");
    let x = key["x"].as_str().unwrap();
    let keyid = thumbprint(x);
    assert_eq!(key["kid"], keyid.as_str());
    let public = ring::signature::UnparsedPublicKey::new(
        &ring::signature::ED25519,
        URL_SAFE_NO_PAD.decode(x).unwrap(),
    );
    // The directory's possession proof (the draft's appendix): `@authority;req` and the digest.
    let params = proof_input.strip_prefix("binding=").unwrap();
    assert!(params.contains(&format!("keyid=\"{keyid}\"")), "{params}");
    assert!(params.contains("tag=\"http-message-signatures-directory\""));
    let base = format!(
        "\"@authority\";req: {authority}\n\"content-digest\": {digest}\n\"@signature-params\": {params}"
    );
    public
        .verify(base.as_bytes(), &signature_of(&proof, "binding"))
        .expect("the directory proves possession of its key");
    PublishedKey {
        directory,
        keyid,
        public,
    }
}

/// Every request the site saw is signed with the published key: checked here with `ring`,
/// and by the independent Python verifier when `SVC_TEST_PYTHON` is set.
fn assert_signed(
    app: &TestApp,
    key: &PublishedKey,
    site: &MockServer,
    requests: &[wiremock::Request],
) {
    assert!(!requests.is_empty());
    let mut captured = Vec::new();
    for req in requests {
        let what = format!("{} {}", req.method, req.url);
        let agent = header(req, "signature-agent")
            .unwrap_or_else(|| panic!("no Signature-Agent on {what}"));
        assert_eq!(agent, format!("sig1=\"{}\"", app.base_url), "{what}");
        let input = header(req, "signature-input").unwrap();
        let params = input.strip_prefix("sig1=").unwrap();
        assert!(
            params.starts_with("(\"@authority\" \"signature-agent\";key=\"sig1\");created="),
            "{what}: {params}"
        );
        assert!(
            params.contains(&format!(";keyid=\"{}\"", key.keyid)),
            "{what}"
        );
        assert!(
            params.contains(";tag=\"web-bot-auth\"") && params.contains(";expires="),
            "{what}"
        );
        let host = header(req, "host").unwrap();
        assert_eq!(host, format!("{HOST}:{}", site.address().port()));
        let base = format!(
            "\"@authority\": {host}\n\"signature-agent\";key=\"sig1\": \"{}\"\n\"@signature-params\": {params}",
            app.base_url
        );
        let signature = signature_of(&header(req, "signature").unwrap(), "sig1");
        key.public
            .verify(base.as_bytes(), &signature)
            .unwrap_or_else(|_| {
                panic!("{what}: the signature does not verify with the published key")
            });
        // Another authority, same headers: refused.
        let replayed = base.replacen(&host, "elsewhere.example", 1);
        assert!(key.public.verify(replayed.as_bytes(), &signature).is_err());
        let headers: Vec<(String, String)> = req
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        let target = match req.url.query() {
            Some(q) => format!("{}?{q}", req.url.path()),
            None => req.url.path().to_owned(),
        };
        captured.push(json!({"method": req.method.as_str(), "url": format!("http://{host}{target}"), "headers": headers}));
    }
    // An independent implementation of RFC 9421 agrees, when the Python peers are installed.
    if let Ok(python) = std::env::var("SVC_TEST_PYTHON") {
        let file = tempfile::NamedTempFile::new().unwrap();
        let doc = json!({"directory": key.directory, "agent": app.base_url, "requests": captured});
        std::fs::write(file.path(), serde_json::to_vec(&doc).unwrap()).unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/web_bot_auth_check.py");
        let out = std::process::Command::new(python)
            .args([script, "captured"])
            .arg(file.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let verified = format!(
            "web bot auth: {} captured requests verified",
            requests.len()
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(&verified));
    }
}

#[tokio::test]
async fn outbound_requests_are_signed_with_a_key_the_directory_publishes() {
    let site = site().await;
    let app = TestApp::builder()
        .sandbox_host(HOST, *site.address())
        .spawn()
        .await;
    let key = published_key(&app).await;
    let requests = read_through(&app, &site).await;
    let paths: Vec<&str> = requests.iter().map(|r| r.url.path()).collect();
    assert_eq!(paths, ["/robots.txt", "/page"], "robots.txt is fetched too");
    assert_signed(&app, &key, &site, &requests);
}

/// The requests the site received after the first `seen`.
async fn since(site: &MockServer, seen: usize) -> Vec<wiremock::Request> {
    site.received_requests().await.unwrap().split_off(seen)
}

fn has(requests: &[wiremock::Request], method: &str, path: &str) -> bool {
    requests
        .iter()
        .any(|r| r.method.as_str() == method && r.url.path() == path)
}

#[tokio::test]
async fn the_scan_learning_and_actions_sign_their_requests_too() {
    let site = site().await;
    let openapi = json!({
        "openapi": "3.1.0",
        "info": {"title": "Library", "version": "1"},
        "paths": {"/api/books": {"get": {"operationId": "searchBooks", "summary": "Search books",
            "parameters": [{"name": "q", "in": "query", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}}}}}
    });
    Mock::given(method("GET"))
        .and(path("/openapi.json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openapi))
        .mount(&site)
        .await;
    Mock::given(method("GET"))
        .and(path("/"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(
                b"<html><head><title>Library</title></head><body><h1>Library</h1></body></html>"
                    .to_vec(),
                "text/html",
            ),
        )
        .mount(&site)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/books"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"books": [{"title": "Dune"}]})),
        )
        .mount(&site)
        .await;
    let app = TestApp::builder()
        .sandbox_host(HOST, *site.address())
        .spawn()
        .await;
    let key = published_key(&app).await;
    let base = format!("http://{HOST}:{}", site.address().port());

    // The readiness scan: its GETs and the MCP probe's POST.
    let resp = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({ "url": format!("{base}/") }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let scanned = since(&site, 0).await;
    assert!(
        has(&scanned, "GET", "/.well-known/api-catalog"),
        "the scan's probes"
    );
    assert!(has(&scanned, "POST", "/mcp"), "the live MCP probe");
    assert_signed(&app, &key, &site, &scanned);

    // Learning the site's actions.
    app.services.actions.learn(HOST, &base).await.unwrap();
    let learned = since(&site, scanned.len()).await;
    assert!(
        has(&learned, "GET", "/openapi.json"),
        "learning reads the API description"
    );
    assert_signed(&app, &key, &site, &learned);

    // One action, executed once its map is published.
    app.services.actions.publish(HOST, None).await.unwrap();
    let done = app
        .http
        .post(app.url("/api/execute"))
        .header("authorization", bearer(&app.api_key))
        .json(&json!({"domain": HOST, "action": "search_books", "params": {"q": "dune"}}))
        .send()
        .await
        .unwrap();
    let status = done.status();
    let done: Value = done.json().await.unwrap();
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    let executed = since(&site, scanned.len() + learned.len()).await;
    assert!(has(&executed, "GET", "/api/books"), "the action's request");
    assert_signed(&app, &key, &site, &executed);
}

#[tokio::test]
async fn with_web_bot_auth_off_nothing_is_signed_and_no_directory_is_served() {
    let site = site().await;
    let app = TestApp::builder()
        .sandbox_host(HOST, *site.address())
        .runtime(|r| r.web_bot_auth = "off".into())
        .spawn()
        .await;
    let resp = app
        .http
        .get(app.url("/.well-known/http-message-signatures-directory"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    for req in read_through(&app, &site).await {
        for name in ["signature", "signature-input", "signature-agent"] {
            assert!(header(&req, name).is_none(), "{name} sent with signing off");
        }
    }
}
