//! Web Bot Auth (issue 22, item 4): the service's outbound requests, captured at a wiremock
//! site, carry an RFC 9421 signature that verifies against the key directory the service
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

#[tokio::test]
async fn outbound_requests_are_signed_with_a_key_the_directory_publishes() {
    let site = site().await;
    let app = TestApp::builder()
        .sandbox_host(HOST, *site.address())
        .spawn()
        .await;
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
    let signature_of = |field: &str, label: &str| {
        let value = field
            .strip_prefix(&format!("{label}=:"))
            .and_then(|v| v.strip_suffix(':'))
            .unwrap();
        STANDARD.decode(value).unwrap()
    };
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

    let requests = read_through(&app, &site).await;
    let paths: Vec<&str> = requests.iter().map(|r| r.url.path()).collect();
    assert_eq!(paths, ["/robots.txt", "/page"], "robots.txt is fetched too");
    let mut captured = Vec::new();
    for req in &requests {
        let agent = header(req, "signature-agent").expect("Signature-Agent");
        assert_eq!(agent, format!("sig1=\"{}\"", app.base_url));
        let input = header(req, "signature-input").unwrap();
        let params = input.strip_prefix("sig1=").unwrap();
        assert!(params.starts_with("(\"@authority\" \"signature-agent\";key=\"sig1\");created="));
        assert!(params.contains(&format!(";keyid=\"{keyid}\"")));
        assert!(params.contains(";tag=\"web-bot-auth\"") && params.contains(";expires="));
        let host = header(req, "host").unwrap();
        assert_eq!(host, format!("{HOST}:{}", site.address().port()));
        let base = format!(
            "\"@authority\": {host}\n\"signature-agent\";key=\"sig1\": \"{}\"\n\"@signature-params\": {params}",
            app.base_url
        );
        let signature = signature_of(&header(req, "signature").unwrap(), "sig1");
        public
            .verify(base.as_bytes(), &signature)
            .expect("the request's signature verifies with the published key");
        // Another authority, same headers: refused.
        let replayed = base.replacen(&host, "elsewhere.example", 1);
        assert!(public.verify(replayed.as_bytes(), &signature).is_err());
        let headers: Vec<(String, String)> = req
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        captured.push(json!({"method": "GET", "url": format!("http://{host}{}", req.url.path()), "headers": headers}));
    }
    // An independent implementation of RFC 9421 agrees, when the Python peers are installed.
    if let Ok(python) = std::env::var("SVC_TEST_PYTHON") {
        let file = tempfile::NamedTempFile::new().unwrap();
        let doc = json!({"directory": directory, "agent": app.base_url, "requests": captured});
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
    }
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
