use serde_json::{Value, json};
use svc_ports::ApiKeySecret;

use crate::helpers::{TestApp, bearer, problem};

fn call(name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

const V1: &str = "2025-06-18";
const V2: &str = "2025-11-25";

#[tokio::test]
async fn initialize_offers_each_supported_revision() {
    let app = TestApp::spawn().await;
    for version in [V1, V2] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let (status, body) = app.mcp(init, None, version).await;
        assert_eq!(status, 200);
        assert_eq!(body["result"]["protocolVersion"], version);
        assert_eq!(body["result"]["serverInfo"]["name"], "svc");
    }
}

#[tokio::test]
async fn tools_list_matches_the_published_manifest() {
    let app = TestApp::spawn().await;
    let (_, listed) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            None,
            V2,
        )
        .await;
    let manifest: Value = app.get_json("/.well-known/mcp/tools.json").await;
    let listed = listed["result"]["tools"].as_array().unwrap().clone();
    let published = manifest["tools"].as_array().unwrap();
    assert_eq!(listed.len(), published.len());
    for (l, p) in listed.iter().zip(published) {
        for field in [
            "name",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            assert_eq!(l[field], p[field], "{field} differs for {}", l["name"]);
        }
    }
    assert!(listed.iter().any(|t| t["name"] == "svc_auth_status"));
    assert_eq!(manifest["server"]["url"], app.url("/mcp"));
}

#[tokio::test]
async fn auth_status_reports_the_account_for_a_valid_key() {
    let app = TestApp::spawn().await;
    let (_, body) = app
        .mcp(
            call("svc_auth_status", json!({})),
            Some(&bearer(&app.api_key)),
            V2,
        )
        .await;
    let result = &body["result"];
    assert_eq!(result["isError"], false);
    let s = &result["structuredContent"];
    assert_eq!(s["authenticated"], true);
    assert_eq!(s["plan"], "sandbox");
    assert_eq!(s["balance"]["spendable"], 1000);
    assert!(app.api_key.starts_with(s["key_prefix"].as_str().unwrap()));
    assert!(!body.to_string().contains(&app.api_key));
    // The same JSON is in the text content for older clients.
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, s);
}

#[tokio::test]
async fn auth_status_without_or_with_a_bad_key_says_why() {
    let app = TestApp::spawn().await;
    let (_, none) = app.mcp(call("svc_auth_status", json!({})), None, V2).await;
    assert_eq!(none["result"]["structuredContent"]["authenticated"], false);
    assert_eq!(
        none["result"]["structuredContent"]["failure_class"],
        "missing_api_key"
    );

    let prefix = ApiKeySecret::parse(&app.api_key).unwrap().prefix();
    app.services.keys.revoke(&prefix).await.unwrap();
    let (_, revoked) = app
        .mcp(
            call("svc_auth_status", json!({})),
            Some(&bearer(&app.api_key)),
            V1,
        )
        .await;
    assert_eq!(
        revoked["result"]["structuredContent"]["failure_class"],
        "revoked_api_key"
    );
}

#[tokio::test]
async fn unknown_methods_and_tools_are_json_rpc_errors() {
    let app = TestApp::spawn().await;
    let (status, body) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover"}),
            None,
            V2,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32601);
    let (_, body) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 4, "method": "no/such", "params": {}}),
            None,
            V2,
        )
        .await;
    assert_eq!(body["error"]["code"], -32601);
    let (_, body) = app.mcp(call("no_such_tool", json!({})), None, V2).await;
    assert_eq!(body["error"]["code"], -32602);
    // Arguments the schema refuses: a tool error carrying the problem, so the model can fix
    // the call (MCP 2025-11-25), not a protocol error.
    let (_, body) = app
        .mcp(call("svc_auth_status", json!({"x": 1})), None, V2)
        .await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    let problem: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(problem["failure_class"], "invalid_request");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("unknown field `x`")
    );
}

#[tokio::test]
async fn stateless_2026_revision_is_served_without_initialize() {
    let app = TestApp::spawn().await;
    let resp = app
        .http
        .post(app.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "svc_auth_status")
        .header("Authorization", bearer(&app.api_key))
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "svc_auth_status", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .unwrap();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["result"]["structuredContent"]["authenticated"], true,
        "{body}"
    );
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let app = TestApp::spawn().await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let send = |header: &'static str, value: &'static str| {
        app.http
            .post(app.url("/mcp"))
            .header("Accept", "application/json, text/event-stream")
            .header(header, value)
            .json(&list)
            .send()
    };
    // Refused as problem+json like every other error (issue 15: they were text/plain).
    problem(
        send("Host", "evil.example.com").await.unwrap(),
        403,
        "host_not_allowed",
    )
    .await;
    problem(
        send("Origin", "https://evil.example.com").await.unwrap(),
        403,
        "host_not_allowed",
    )
    .await;
    assert_eq!(
        send("Origin", "http://localhost:3000")
            .await
            .unwrap()
            .status(),
        200
    );

    let open = TestApp::builder()
        .runtime(|r| {
            r.mcp_allowed_hosts = vec!["agents.example.com".into()];
        })
        .spawn()
        .await;
    let resp = open
        .http
        .post(open.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header("Host", "agents.example.com")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn health_answers_beside_mcp() {
    let app = TestApp::spawn().await;
    let body: Value = app.get_json("/health").await;
    assert_eq!(body["status"], "ok");
}

/// The three connection tools: status, start (a link, never a token) and poll, with the
/// provider exactly as the booking site's actions declare it; anything else is refused.
#[tokio::test]
async fn connection_tools_start_and_poll_and_refuse_unknown_providers() {
    let app = TestApp::builder()
        .action_sites()
        .await
        .auth_server()
        .await
        .spawn()
        .await;
    let key = bearer(&app.api_key);
    let (_, status) = app
        .mcp(
            call(
                "svc_connection_status",
                json!({"provider": "booking-sandbox"}),
            ),
            Some(&key),
            V2,
        )
        .await;
    let status = &status["result"]["structuredContent"];
    assert_eq!(
        (status["state"].as_str(), status["connected"].as_bool()),
        (Some("none"), Some(false))
    );

    let (_, started) = app
        .mcp(
            call("svc_start_connection", json!({"provider": "booking-sandbox", "expected_account": "traveller@booking.example"})),
            Some(&key),
            V2,
        )
        .await;
    let started = &started["result"]["structuredContent"];
    assert!(
        started["connect_url"]
            .as_str()
            .unwrap()
            .contains("/connect?c="),
        "{started}"
    );
    assert_eq!(started["state"], "pending");

    let (_, polled) = app
        .mcp(
            call(
                "svc_poll_connection",
                json!({"provider": "booking-sandbox", "wait_ms": 300}),
            ),
            Some(&key),
            V2,
        )
        .await;
    let polled = &polled["result"]["structuredContent"];
    assert_eq!(
        (polled["state"].as_str(), polled["final"].as_bool()),
        (Some("pending"), Some(false))
    );
    assert_eq!(polled["poll_after_ms"], 2000);
    assert_eq!(polled["expected_account"], "traveller@booking.example");

    let (_, unknown) = app
        .mcp(
            call("svc_start_connection", json!({"provider": "shop-sandbox"})),
            Some(&key),
            V2,
        )
        .await;
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    assert!(
        unknown.to_string().contains("unknown_provider"),
        "{unknown}"
    );

    let (_, no_key) = app
        .mcp(
            call(
                "svc_connection_status",
                json!({"provider": "booking-sandbox"}),
            ),
            None,
            V2,
        )
        .await;
    assert!(no_key.to_string().contains("missing_api_key"), "{no_key}");
}
