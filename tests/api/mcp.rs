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
    // A call whose params are not `{name, arguments}`: invalid params, not an unknown method.
    for params in [
        json!({"name": "svc_auth_status", "arguments": "x"}),
        json!({"name": "svc_auth_status", "arguments": [1]}),
        json!({"name": 1}),
        json!({}),
        json!("svc_auth_status"),
    ] {
        let (status, body) = app
            .mcp(
                json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}),
                None,
                V2,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["error"]["code"], -32602, "{body}");
        assert_eq!(body["id"], 5, "{body}");
    }
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
    // An Origin that is not text is no allowed one, not an absent one.
    let odd = app
        .http
        .post(app.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header(
            "Origin",
            reqwest::header::HeaderValue::from_bytes(b"http://localhost:3000\xff").unwrap(),
        )
        .json(&list)
        .send()
        .await
        .unwrap();
    problem(odd, 403, "host_not_allowed").await;

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

/// The `isError` result of a call with bad arguments, and the problem in its text.
async fn argument_problem(app: &TestApp, args: Value) -> Value {
    let (status, body) = app
        .mcp(call("read_page", args), Some(&bearer(&app.api_key)), V2)
        .await;
    assert_eq!(status, 200);
    assert!(body.get("error").is_none(), "a protocol error: {body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    let problem: Value = serde_json::from_str(text).unwrap();
    assert_eq!(problem["failure_class"], "invalid_request");
    assert!(!problem["hint"].as_str().unwrap().is_empty());
    problem
}

/// Issue 19: bad types were coerced or answered as JSON-RPC -32602 naming no field. Now each is
/// a tool result a model can act on, checked against the schema tools/list publishes.
#[tokio::test]
async fn bad_arguments_are_tool_errors_naming_the_field() {
    let app = TestApp::spawn().await;
    let detail = |p: Value| p["detail"].as_str().unwrap().to_owned();
    let d = detail(argument_problem(&app, json!({"url": 5})).await);
    assert!(d.contains("`url` must be a string, not an integer"), "{d}");
    let d = detail(argument_problem(&app, json!({})).await);
    assert!(d.contains("`url` is required"), "{d}");
    let d = detail(argument_problem(&app, json!({"url": "https://a.example", "colour": 1})).await);
    assert!(d.contains("unknown field `colour`"), "{d}");
    let d =
        detail(argument_problem(&app, json!({"url": "https://a.example", "max_age": null})).await);
    assert!(d.contains("`max_age`") && d.contains("leave it out"), "{d}");
    let d =
        detail(argument_problem(&app, json!({"url": "https://a.example", "max_age": "60"})).await);
    assert!(
        d.contains("`max_age` must be an integer, not a string"),
        "{d}"
    );
    let d = detail(
        argument_problem(&app, json!({"url": "https://a.example", "max_age": 604801})).await,
    );
    assert!(d.contains("`max_age`"), "{d}");
    // A tool that does not exist stays a protocol error.
    let (_, body) = app.mcp(call("no_such_tool", json!({})), None, V2).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
}

/// A raw POST to /mcp: status, content type and the JSON body.
async fn post_raw(
    app: &TestApp,
    headers: &[(&str, &str)],
    body: &'static str,
) -> (u16, String, Value) {
    let mut req = app.http.post(app.url("/mcp")).body(body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = resp.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(json!({ "raw": text }));
    (status, content_type, json)
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");
const LIST: &str = r#"{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}"#;

/// Issue 19: `2024-11-05` and `2025-03-26` were accepted, garbage answered in plain text.
#[tokio::test]
async fn unsupported_protocol_versions_are_refused_with_400() {
    let app = TestApp::spawn().await;
    for version in ["2024-11-05", "2025-03-26", "not-a-version", "2099-01-01"] {
        let (status, content_type, body) = post_raw(
            &app,
            &[ACCEPT, JSON, ("MCP-Protocol-Version", version)],
            LIST,
        )
        .await;
        assert_eq!(status, 400, "{version}: {body}");
        assert!(
            content_type.starts_with("application/json"),
            "{content_type}"
        );
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], 5);
        assert_eq!(body["error"]["code"], -32022, "{body}");
        assert_eq!(body["error"]["data"]["requested"], version);
        assert_eq!(
            body["error"]["data"]["supported"],
            json!(["2025-06-18", "2025-11-25", "2026-07-28"])
        );
    }
    for version in [V1, V2] {
        let (status, _, body) = post_raw(
            &app,
            &[ACCEPT, JSON, ("MCP-Protocol-Version", version)],
            LIST,
        )
        .await;
        assert_eq!(status, 200, "{version}: {body}");
        assert!(body["result"]["tools"].is_array());
    }
    // No header: clients from before the header still get an answer.
    let (status, _, body) = post_raw(&app, &[ACCEPT, JSON], LIST).await;
    assert_eq!(
        (status, body["result"]["tools"].is_array()),
        (200, true),
        "{body}"
    );
}

/// Issue 19: malformed JSON got 415 with a plain-text body.
#[tokio::test]
async fn malformed_requests_are_json_rpc_errors() {
    let app = TestApp::spawn().await;
    let v2 = ("MCP-Protocol-Version", V2);
    let (status, content_type, body) = post_raw(&app, &[ACCEPT, JSON, v2], r#"{"jsonrpc":"#).await;
    assert_eq!(status, 400);
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], Value::Null);
    let (status, _, body) = post_raw(&app, &[ACCEPT, JSON, v2], r#"{"id": 3, "hello": 1}"#).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32600)),
        "{body}"
    );
    assert_eq!(body["id"], 3);
    // Not a JSON-RPC 2.0 request: invalid request, whatever its method's params.
    let (status, _, body) = post_raw(
        &app,
        &[ACCEPT, JSON, v2],
        r#"{"id": 3, "method": "tools/call", "params": {}}"#,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32600)),
        "{body}"
    );
    // A key given twice: rmcp refused it with a plain-text 415.
    for twice in [
        r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call"}"#,
        // Inside a tool's arguments too.
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_page","arguments":{"url":"https://a.example/","url":"https://b.example/"}}}"#,
    ] {
        let (status, content_type, body) = post_raw(&app, &[ACCEPT, JSON, v2], twice).await;
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (400, json!(-32600)),
            "{twice}: {body}"
        );
        assert!(
            content_type.starts_with("application/json"),
            "{content_type}"
        );
    }
    let (status, _, body) =
        post_raw(&app, &[ACCEPT, ("Content-Type", "text/plain"), v2], LIST).await;
    assert_eq!(
        (status, body["jsonrpc"].clone()),
        (415, json!("2.0")),
        "{body}"
    );
    let (status, _, body) = post_raw(&app, &[("Accept", "application/json"), JSON, v2], LIST).await;
    assert_eq!(
        (status, body["jsonrpc"].clone()),
        (406, json!("2.0")),
        "{body}"
    );
    // A method the endpoint does not serve: problem+json, not rmcp's plain text.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let resp = app
            .http
            .request(method.clone(), app.url("/mcp"))
            .header(ACCEPT.0, ACCEPT.1)
            .header(v2.0, v2.1)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["allow"], "POST", "{method}");
        problem(resp, 405, "method_not_allowed").await;
    }
}

/// Issue 19: Inspector `--strict` warned about home-made formats and type arrays.
#[tokio::test]
async fn served_schemas_are_plain_json_schema() {
    let app = TestApp::spawn().await;
    let (_, listed) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            None,
            V2,
        )
        .await;
    let text = listed["result"]["tools"].to_string();
    for bad in ["\"uint", "\"int64\"", "\"int32\"", "\"type\":[", "{}"] {
        assert!(!text.contains(bad), "{bad} in the served schemas");
    }
}

/// Issue 19: resources/list was empty. Each listed document reads back as served over HTTP;
/// an Agent Map reads through its template with a key, like discover.
#[tokio::test]
async fn resources_serve_the_guide_the_contract_and_each_agent_map() {
    let app = TestApp::builder().action_sites().await.spawn().await;
    let key = bearer(&app.api_key);
    let rpc = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let init = rpc(
        "initialize",
        json!({"protocolVersion": V2, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let (_, init) = app.mcp(init, None, V2).await;
    assert!(
        init["result"]["capabilities"]["resources"].is_object(),
        "{init}"
    );
    let (_, level) = app
        .mcp(rpc("logging/setLevel", json!({"level": "info"})), None, V2)
        .await;
    assert_eq!(level["result"], json!({}), "{level}");

    let (_, list) = app.mcp(rpc("resources/list", json!({})), None, V2).await;
    let resources = list["result"]["resources"].as_array().unwrap().clone();
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let served = [
        (app.url("/llms.txt"), app.get_text("/llms.txt").await),
        (
            app.url("/openapi.json"),
            app.get_text("/openapi.json").await,
        ),
        (
            app.url("/.well-known/sandbox.json"),
            app.get_text("/.well-known/sandbox.json").await,
        ),
    ];
    assert_eq!(uris.len(), served.len(), "{uris:?}");
    for (uri, text) in served {
        assert!(uris.contains(&uri.as_str()), "{uri} not in {uris:?}");
        let (_, read) = app
            .mcp(rpc("resources/read", json!({"uri": uri})), None, V2)
            .await;
        let contents = &read["result"]["contents"][0];
        assert_eq!(contents["uri"], uri.as_str());
        let (got, want) = (contents["text"].as_str().unwrap(), text.as_str());
        if uri.ends_with(".json") {
            let (got, want): (Value, Value) = (
                serde_json::from_str(got).unwrap(),
                serde_json::from_str(want).unwrap(),
            );
            assert_eq!(got, want, "{uri}");
        } else {
            assert_eq!(got, want, "{uri}");
        }
    }

    let (_, templates) = app
        .mcp(rpc("resources/templates/list", json!({})), None, V2)
        .await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "svc://maps/{domain}"
    );
    let map = rpc(
        "resources/read",
        json!({"uri": "svc://maps/shop.sandbox.test"}),
    );
    let (_, read) = app.mcp(map.clone(), Some(&key), V2).await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let doc: Value = serde_json::from_str(text).unwrap();
    assert_eq!(doc["domain"], "shop.sandbox.test");
    assert!(text.contains("search_products"));
    let (_, no_key) = app.mcp(map, None, V2).await;
    assert_eq!(
        no_key["error"]["data"]["failure_class"], "missing_api_key",
        "{no_key}"
    );
    let unknown = rpc(
        "resources/read",
        json!({"uri": "svc://maps/nowhere.example"}),
    );
    let (_, unknown) = app.mcp(unknown, Some(&key), V2).await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    let (_, other) = app
        .mcp(
            rpc("resources/read", json!({"uri": "test://static-text"})),
            None,
            V2,
        )
        .await;
    assert_eq!(other["error"]["code"], -32002, "{other}");
}

/// Every answer as the published output schema says (clients such as the TypeScript and Python
/// SDKs validate `structuredContent` against it): after issue 19 dropped `null` from optional
/// fields and typed the free-form ones, each tool's real answers still match.
#[tokio::test]
async fn answers_match_their_published_output_schemas() {
    let demo = svc_sandbox::DemoSite::start().await;
    let app = TestApp::builder()
        .sandbox_host(svc_sandbox::DEMO_HOST, demo.address())
        .action_sites()
        .await
        .auth_server()
        .await
        .spawn()
        .await;
    let (_, listed) = app
        .mcp(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            None,
            V2,
        )
        .await;
    let schemas: std::collections::HashMap<String, Value> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["outputSchema"].clone(),
            )
        })
        .collect();
    let key = bearer(&app.api_key);
    let calls = [
        ("svc_auth_status", json!({}), Some(&key)),
        ("svc_auth_status", json!({}), None),
        (
            "discover",
            json!({"domain": "shop.sandbox.test"}),
            Some(&key),
        ),
        (
            "list_actions",
            json!({"domain": "booking.sandbox.test"}),
            Some(&key),
        ),
        (
            "execute",
            json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "KETTLE-1"}}),
            Some(&key),
        ),
        (
            "read_page",
            json!({"url": demo.url("/articles/tides")}),
            Some(&key),
        ),
        (
            "read_page",
            json!({"url": demo.url("/no-such-page")}),
            Some(&key),
        ),
        (
            "svc_connection_status",
            json!({"provider": "booking-sandbox"}),
            Some(&key),
        ),
        (
            "svc_start_connection",
            json!({"provider": "booking-sandbox"}),
            Some(&key),
        ),
        (
            "svc_poll_connection",
            json!({"provider": "booking-sandbox", "wait_ms": 0}),
            Some(&key),
        ),
        (
            "svc_start_claim_link_signup",
            json!({"agent_name": "t"}),
            None,
        ),
    ];
    for (name, args, auth) in calls {
        let (_, body) = app
            .mcp(call(name, args), auth.map(String::as_str), V2)
            .await;
        let result = &body["result"];
        assert_eq!(result["isError"], false, "{name}: {body}");
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schemas[name])
            .unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&result["structuredContent"])
            .map(|e| format!("{}: {e}", e.instance_path().as_str()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{body}");
    }
}
