//! The service's own site as agents find it (issue 22, item 3): `Link` headers, Markdown
//! answers, robots.txt with AI crawler groups and content signals, the API catalog, the agent
//! skills with their digests, the MCP server card at every path, WebMCP tools on the landing
//! page, and the protected-resource challenge on every 401.

use base64::Engine;
use serde_json::Value;
use sha2::Digest;

use svc::services::readiness::AI_CRAWLERS;

use crate::helpers::{TestApp, bearer};

/// The targets of a `Link` header value, by relation.
fn links(value: &str) -> Vec<(String, String)> {
    value
        .split(", <")
        .map(|l| {
            let target = l
                .trim_start_matches('<')
                .split('>')
                .next()
                .unwrap()
                .to_owned();
            let rel = l
                .split("rel=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or_default()
                .to_owned();
            (rel, target)
        })
        .collect()
}

#[tokio::test]
async fn pages_carry_link_headers_to_the_catalog_the_api_and_its_docs() {
    let app = TestApp::spawn().await;
    for (path, accept) in [
        ("/", "text/html"),
        ("/", "text/markdown"),
        ("/terms", "text/html"),
    ] {
        let resp = app
            .http
            .get(app.url(path))
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let link = resp.headers()["link"].to_str().unwrap().to_owned();
        let found = links(&link);
        for rel in ["api-catalog", "service-desc", "service-doc", "describedby"] {
            let (_, target) = found
                .iter()
                .find(|(r, _)| r == rel)
                .unwrap_or_else(|| panic!("{path} ({accept}): no rel={rel} in {link}"));
            let status = app.http.get(target).send().await.unwrap().status();
            assert_eq!(status, 200, "{rel} -> {target}");
        }
    }
}

#[tokio::test]
async fn human_pages_answer_markdown_to_agents_and_have_md_mirrors() {
    let app = TestApp::spawn().await;
    for (page, mirror, heading) in [
        ("/", "/index.md", "# svc"),
        ("/terms", "/terms.md", "# Terms of service"),
        ("/privacy", "/privacy.md", "# Privacy policy"),
    ] {
        let resp = app
            .http
            .get(app.url(page))
            .header("accept", "text/markdown")
            .send()
            .await
            .unwrap();
        let h = resp.headers().clone();
        assert!(
            h["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/markdown"),
            "{page}"
        );
        assert_eq!(h["vary"], "Accept", "{page}");
        let tokens: usize = h["x-markdown-tokens"].to_str().unwrap().parse().unwrap();
        let text = resp.text().await.unwrap();
        assert!(text.starts_with(heading), "{page}: {text}");
        assert_eq!(tokens, text.chars().count().div_ceil(4), "{page}");
        let mirrored = app.http.get(app.url(mirror)).send().await.unwrap();
        assert!(
            mirrored.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/markdown")
        );
        assert_eq!(mirrored.text().await.unwrap(), text, "{mirror}");
        // A browser still gets the page, and caches know the answer depends on Accept.
        let html = app
            .http
            .get(app.url(page))
            .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
            .send()
            .await
            .unwrap();
        assert!(
            html.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert_eq!(html.headers()["vary"], "Accept", "{page}");
    }
}

#[tokio::test]
async fn robots_txt_names_every_ai_crawler_and_gives_content_signals_in_each_group() {
    let app = TestApp::spawn().await;
    let robots = app.get_text("/robots.txt").await;
    // Groups: runs of User-agent lines, then their rules, up to the next User-agent run.
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in robots
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (field, value) = line.split_once(':').unwrap();
        let value = value.trim().to_owned();
        if field.eq_ignore_ascii_case("user-agent") {
            match groups.last_mut() {
                Some((agents, rules)) if rules.is_empty() => agents.push(value),
                _ => groups.push((vec![value], Vec::new())),
            }
        } else if let Some((_, rules)) = groups.last_mut() {
            rules.push(format!("{}: {value}", field.to_ascii_lowercase()));
        }
    }
    for crawler in AI_CRAWLERS {
        assert!(
            groups
                .iter()
                .any(|(agents, _)| agents.iter().any(|a| a == crawler)),
            "{crawler} is not named"
        );
    }
    assert!(groups.iter().any(|(agents, _)| agents == &["*"]));
    for (agents, rules) in &groups {
        let signal = rules
            .iter()
            .find_map(|r| r.strip_prefix("content-signal: "))
            .unwrap_or_else(|| panic!("no Content-Signal for {agents:?}"));
        let pairs: Vec<(&str, &str)> = signal
            .split(',')
            .map(|p| p.trim().split_once('=').unwrap())
            .collect();
        for key in ["search", "ai-input", "ai-train"] {
            let (_, v) = pairs.iter().find(|(k, _)| *k == key).expect(key);
            assert!(["yes", "no"].contains(v), "{key}={v}");
        }
        assert!(rules.contains(&"allow: /".to_owned()), "{agents:?}");
        assert!(
            rules.contains(&"disallow: /account".to_owned()),
            "{agents:?}"
        );
    }
    assert!(robots.contains(&format!("Sitemap: {}/sitemap.xml", app.base_url)));
}

#[tokio::test]
async fn the_api_catalog_is_an_rfc_9727_linkset_whose_links_resolve() {
    let app = TestApp::spawn().await;
    let resp = app
        .http
        .get(app.url("/.well-known/api-catalog"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let ctype = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ctype.starts_with("application/linkset+json"), "{ctype}");
    assert!(ctype.contains("rfc9727"), "{ctype}");
    let catalog: Value = resp.json().await.unwrap();
    let entries = catalog["linkset"].as_array().unwrap();
    assert!(entries.len() >= 3, "REST, MCP and A2A");
    for entry in entries {
        let anchor = entry["anchor"].as_str().unwrap();
        assert!(anchor.starts_with(&app.base_url), "{anchor}");
        for rel in ["service-desc", "service-doc"] {
            let targets = entry[rel]
                .as_array()
                .unwrap_or_else(|| panic!("{anchor}: no {rel}"));
            for t in targets {
                let href = t["href"].as_str().unwrap();
                assert_eq!(
                    app.http.get(href).send().await.unwrap().status(),
                    200,
                    "{href}"
                );
            }
        }
    }
    let rest = &entries[0];
    assert_eq!(rest["service-desc"][0]["href"], app.url("/openapi.json"));
    // A HEAD finds the catalog by its own link relation.
    let head = app
        .http
        .head(app.url("/.well-known/api-catalog"))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    let link = head.headers()["link"].to_str().unwrap();
    assert_eq!(
        links(link),
        [(
            "api-catalog".to_owned(),
            app.url("/.well-known/api-catalog")
        )]
    );
}

#[tokio::test]
async fn every_401_challenges_with_the_protected_resource_metadata() {
    let app = TestApp::builder().payments().await.spawn().await;
    let expected = format!(
        "resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
        app.base_url
    );
    // REST without a key, with an unknown key, with a malformed header; billing pages' own
    // 401s (a web-session endpoint answers them itself, not through the error mapper).
    let no_session = reqwest::Client::new();
    let requests = [
        app.http.get(app.url("/api/usage")),
        app.http.get(app.url("/api/usage")).header(
            "authorization",
            bearer("svc_test_00000000000000000000000000000000"),
        ),
        app.http
            .get(app.url("/api/tasks"))
            .header("authorization", "Basic eDp5"),
        app.http
            .post(app.url("/api/execute"))
            .json(&serde_json::json!({})),
        no_session.get(app.url("/api/billing/account")),
    ];
    for request in requests {
        let resp = request.send().await.unwrap();
        let url = resp.url().to_string();
        assert_eq!(resp.status(), 401, "{url}");
        let challenge = resp.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{url}: {challenge}");
        assert!(challenge.contains(&expected), "{url}: {challenge}");
    }
    let metadata = app.get_json("/.well-known/oauth-protected-resource").await;
    assert_eq!(metadata["resource"], app.base_url.as_str());
    let issuer = metadata["authorization_servers"][0].as_str().unwrap();
    // The device flow's authorization server metadata (RFC 8414), named by the resource's.
    let server = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(server["issuer"], issuer);
    for endpoint in ["token_endpoint", "device_authorization_endpoint"] {
        assert!(
            server[endpoint].as_str().unwrap().starts_with(issuer),
            "{endpoint}"
        );
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn agent_skills_describe_using_the_service_with_digests_of_the_served_files() {
    let app = TestApp::spawn().await;
    let index = app.get_json("/.well-known/agent-skills/index.json").await;
    assert_eq!(
        app.get_json("/.well-known/skills/index.json").await,
        index,
        "legacy path"
    );
    assert!(
        index["$schema"]
            .as_str()
            .unwrap()
            .contains("agentskills.io/discovery")
    );
    let skills = index["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "read-web-pages",
            "discover-actions",
            "execute-actions",
            "sign-up"
        ]
    );
    for skill in skills {
        let name = skill["name"].as_str().unwrap();
        assert_eq!(skill["type"], "skill-md");
        assert!(!skill["description"].as_str().unwrap().is_empty());
        let url = skill["url"].as_str().unwrap();
        assert_eq!(
            url,
            app.url(&format!("/.well-known/agent-skills/{name}/SKILL.md"))
        );
        let resp = app.http.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/markdown")
        );
        let bytes = resp.bytes().await.unwrap();
        assert_eq!(
            skill["digest"],
            format!("sha256:{}", sha256_hex(&bytes)),
            "{name}"
        );
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        assert!(
            text.starts_with(&format!("---\nname: {name}\ndescription: \"")),
            "{text}"
        );
        // The instructions name endpoints that exist.
        assert!(text.contains(&app.base_url), "{name} names the API");
        let legacy = app
            .http
            .get(app.url(&format!("/.well-known/skills/{name}/SKILL.md")))
            .send()
            .await
            .unwrap();
        assert_eq!(legacy.bytes().await.unwrap(), text.as_bytes());
    }
}

#[tokio::test]
async fn the_mcp_server_card_has_sep_2127_shape_at_every_path() {
    let app = TestApp::spawn().await;
    let card = app.get_json("/.well-known/mcp/server-card").await;
    for path in [
        "/.well-known/mcp/server-card.json",
        "/.well-known/mcp.json",
        "/mcp/server-card",
    ] {
        assert_eq!(app.get_json(path).await, card, "{path}");
    }
    assert_eq!(
        card["$schema"],
        "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
    );
    let name = card["name"].as_str().unwrap();
    let (namespace, server) = name.split_once('/').unwrap();
    assert!(!server.contains('/') && !server.is_empty(), "{name}");
    assert!(
        namespace.contains('.')
            && namespace.split('.').all(|l| !l.is_empty()
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')),
        "reverse-DNS namespace: {name}"
    );
    assert_eq!(card["version"], env!("CARGO_PKG_VERSION"));
    assert!(card["capabilities"]["tools"].is_object());
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(remote["url"], app.url("/mcp"));
    assert!(
        remote["supportedProtocolVersions"]
            .as_array()
            .unwrap()
            .contains(&"2025-11-25".into())
    );
    let tools = card["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "read_page" && t["inputSchema"].is_object())
    );
}

#[tokio::test]
async fn the_landing_page_registers_webmcp_tools_its_policy_allows() {
    let app = TestApp::spawn().await;
    let resp = app.http.get(app.url("/")).send().await.unwrap();
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let html = resp.text().await.unwrap();
    let script = html
        .split("<script>")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("an inline script");
    assert!(script.contains("navigator.modelContext"));
    assert!(script.contains("registerTool") && script.contains("provideContext"));
    for tool in ["\"scan_site\"", "\"read_page\""] {
        assert!(script.contains(tool), "{tool}");
    }
    // Allowed by hash, and only that: no 'unsafe-inline' for scripts.
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script));
    assert!(
        csp.contains(&format!("script-src 'sha256-{hash}'")),
        "{csp}"
    );
    assert!(
        csp.contains(&format!("connect-src 'self' {}", app.base_url)),
        "{csp}"
    );
    // The endpoints the tools call answer as the tools expect.
    assert!(script.contains("/api/readiness/scan") && script.contains("/api/read?url="));
    let scan = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&serde_json::json!({"url": "not a url"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        scan.status(),
        422,
        "the scan endpoint exists and needs no key"
    );
    let read = app
        .http
        .get(app.url("/api/read?url=https://example.com/"))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 401, "read_page sends the agent's key");
}
