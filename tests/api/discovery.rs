//! Discovery files: each is served with ETag, Cache-Control and CORS; every schema is valid
//! draft 2020-12 and the spec's field lists validate against it; and every link, endpoint and
//! tool a discovery file names exists.

use serde_json::{Value, json};

use crate::helpers::TestApp;

const FILES: &[&str] = &[
    "/llms.txt",
    "/llms-full.txt",
    "/openapi.json",
    "/.well-known/openapi.json",
    "/.well-known/mcp/tools.json",
    "/.well-known/mcp/apps.json",
    "/.well-known/mcp/server-card.json",
    "/.well-known/mcp/server-card",
    "/.well-known/mcp.json",
    "/mcp/server-card",
    "/.well-known/mcp/catalog.json",
    "/.well-known/api-catalog",
    "/.well-known/agent-skills/index.json",
    "/.well-known/skills/index.json",
    "/.well-known/action-catalog.json",
    "/.well-known/sandbox.json",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/agent-card.json",
    "/.well-known/agent.json",
    "/.well-known/jwks.json",
    "/.well-known/agent-traffic-event.schema.json",
    "/.well-known/payment-authority.schema.json",
    "/.well-known/payment-artifact.schema.json",
];

#[tokio::test]
async fn every_discovery_file_is_cacheable_and_readable_from_anywhere() {
    let app = TestApp::builder().outbox().spawn().await;
    for path in FILES {
        let resp = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let h = resp.headers();
        assert_eq!(h["access-control-allow-origin"], "*", "{path}");
        assert!(
            h["cache-control"].to_str().unwrap().contains("max-age"),
            "{path}"
        );
        let etag = h["etag"].to_str().unwrap().to_owned();
        let again = app
            .http
            .get(app.url(path))
            .header("If-None-Match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
    }
}

#[tokio::test]
async fn served_schemas_are_valid_draft_2020_12_and_the_spec_fields_validate() {
    let app = TestApp::spawn().await;
    for path in [
        "/.well-known/agent-traffic-event.schema.json",
        "/.well-known/payment-authority.schema.json",
        "/.well-known/payment-artifact.schema.json",
    ] {
        let schema = app.get_json(path).await;
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{path}"
        );
        assert!(
            jsonschema::draft202012::meta::is_valid(&schema),
            "{path} is not a valid 2020-12 schema"
        );
    }
    let event_schema = app
        .get_json("/.well-known/agent-traffic-event.schema.json")
        .await;
    let events = jsonschema::validator_for(&event_schema).unwrap();
    let event = json!({
        "event_id": "evt_1", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s1",
        "agent_protocol": "mcp", "discovery_surface": "llms_txt", "task_type": "read_page",
        "conversion_state": "capability_read", "privacy_redactions": [],
        "extra_field": "extra properties are allowed"
    });
    assert!(events.is_valid(&event));
    for field in [
        "event_id",
        "timestamp",
        "session_id",
        "agent_protocol",
        "discovery_surface",
        "task_type",
        "conversion_state",
        "privacy_redactions",
    ] {
        let mut missing = event.clone();
        missing.as_object_mut().unwrap().remove(field);
        assert!(!events.is_valid(&missing), "{field} is required");
    }
    let mut wrong = event.clone();
    wrong["agent_protocol"] = json!("carrier_pigeon");
    assert!(!events.is_valid(&wrong));
    let authority_schema = app
        .get_json("/.well-known/payment-authority.schema.json")
        .await;
    let authorities = jsonschema::validator_for(&authority_schema).unwrap();
    let authority = json!({
        "authority_id": "auth_1", "principal": {"type": "user", "id": "acct_1", "agent_provider": "example"},
        "scope": ["order"], "amount_limit": {"value": 5000, "interval": "single_use"}, "currency": "eur",
        "expires_at": "2026-12-01T00:00:00Z", "revocation_url": "https://svc.example/authorities/auth_1",
        "receipt_required": true, "verification_required": false, "created_at": "2026-11-21T10:00:00Z"
    });
    assert!(authorities.is_valid(&authority));
    let mut upper = authority.clone();
    upper["currency"] = json!("EUR");
    assert!(!authorities.is_valid(&upper), "currency is lowercase");
}

/// Every `](url)` link of llms.txt, every URL-valued field of the JSON discovery files on this
/// origin (the commerce files too: nothing claimed that is not served), and every tool they
/// name.
#[tokio::test]
async fn discovery_files_name_only_things_that_exist() {
    let app = TestApp::builder().outbox().spawn().await;
    let mut urls = Vec::new();
    let llms = app.get_text("/llms.txt").await;
    assert!(
        llms.starts_with("# svc\n\n> "),
        "llms.txt opens with a title and a summary"
    );
    for part in llms.split("](").skip(1) {
        urls.push(part.split(')').next().unwrap().to_owned());
    }
    fn collect(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) if s.starts_with("http") => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            Value::Object(o) => o.values().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    for path in [
        "/.well-known/mcp/apps.json",
        "/.well-known/mcp/server-card.json",
        "/.well-known/mcp/catalog.json",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource",
        "/.well-known/sandbox.json",
        "/.well-known/agent-card.json",
    ] {
        collect(&app.get_json(path).await, &mut urls);
    }
    // What the service says it sells and how payments travel: every URL of its own they name
    // must be served.
    let mut commerce = Vec::new();
    for path in [
        "/.well-known/agent-commerce.json",
        "/.well-known/payment-protocols.json",
    ] {
        collect(&app.get_json(path).await, &mut commerce);
    }
    let own = |u: &&String| u.starts_with(&app.base_url) && u.len() > app.base_url.len() + 1;
    let commerce_own = commerce.iter().filter(own).count();
    assert!(
        commerce_own >= 10,
        "the commerce files name only {commerce_own} URLs of the service: {commerce:?}"
    );
    urls.extend(commerce);
    let mut checked = 0;
    // Bare origins are identifiers (an RFC 8414 issuer, an RFC 9728 resource), not endpoints.
    for url in urls.iter().filter(own) {
        let url = url.replace("{task_id}", "task_01ARZ3NDEKTSV4RRFFQ69G5FAV");
        let get = app.http.get(&url).send().await.unwrap().status().as_u16();
        // POST-only endpoints answer GET with 405; anything but 404 means it exists.
        assert_ne!(get, 404, "{url} is named but does not exist");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} links checked");

    let (_, listed) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            None,
            "2025-11-25",
        )
        .await;
    let tools: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let card = app.get_json("/.well-known/mcp/server-card.json").await;
    let mut named: Vec<String> = card["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    named.extend(
        card["_meta"]["io.svc/withoutKey"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned()),
    );
    let apps = app.get_json("/.well-known/mcp/apps.json").await;
    for key in ["preferred", "fallback"] {
        named.extend(
            apps["apps"][0]["setup"][key]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned()),
        );
    }
    named.push(
        apps["apps"][0]["auth"]["status_tool"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    for t in &named {
        assert!(tools.contains(t), "{t} is named but not served");
    }
    let full = app.get_text("/llms-full.txt").await;
    for t in &tools {
        assert!(full.contains(&format!("`{t}`")), "llms-full.txt misses {t}");
    }
    let openapi = app.get_json("/openapi.json").await;
    for path in openapi["paths"].as_object().unwrap().keys() {
        assert!(full.contains(path.as_str()), "llms-full.txt misses {path}");
    }
}
