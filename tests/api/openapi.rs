use serde_json::{Value, json};

use crate::helpers::{Browser, TestApp, bearer, csrf_of, problem};

#[tokio::test]
async fn both_paths_serve_one_openapi_31_document() {
    let app = TestApp::spawn().await;
    let doc: Value = app.get_json("/openapi.json").await;
    let mirror: Value = app.get_json("/.well-known/openapi.json").await;
    assert_eq!(doc, mirror);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], app.base_url);
    let usage = &doc["paths"]["/api/usage"]["get"];
    assert_eq!(usage["security"][0]["ApiKeyAuth"], serde_json::json!([]));
    for status in ["200", "401", "429"] {
        assert!(usage["responses"][status].is_object(), "missing {status}");
    }
    assert!(usage["responses"]["401"]["content"]["application/problem+json"].is_object());
    assert!(
        doc.to_string().find("\"nullable\"").is_none(),
        "3.0 nullable left in the document"
    );
    // Extra fields are refused, and the schema says so.
    assert_eq!(
        doc["components"]["schemas"]["ReadBody"]["additionalProperties"],
        false
    );
    let read = &doc["paths"]["/api/read"];
    for (method, status) in [
        ("get", "200"),
        ("post", "200"),
        ("get", "422"),
        ("post", "502"),
    ] {
        assert!(
            read[method]["responses"][status].is_object(),
            "{method} {status}"
        );
    }
}

#[tokio::test]
async fn the_document_is_pinned() {
    let app = TestApp::builder()
        .runtime(|r| r.base_url = Some("https://api.svc.example".into()))
        .spawn()
        .await;
    let doc: Value = app.get_json("/openapi.json").await;
    insta::assert_json_snapshot!("openapi", doc);
}

/// The constraint at `pointer` in the served document.
fn at<'a>(doc: &'a Value, pointer: &str) -> &'a Value {
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("{pointer} is not in the document"))
}

/// The schema of parameter `name` of an operation.
fn param<'a>(doc: &'a Value, op: &str, name: &str) -> &'a Value {
    at(doc, &format!("{op}/parameters"))
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .map(|p| &p["schema"])
        .unwrap_or_else(|| panic!("{op} has no parameter {name}"))
}

/// Issue 19: every constraint the server enforces is in the document; each assertion below
/// fails when one is dropped, and `each_documented_constraint_is_enforced` sends the values
/// that break them.
#[tokio::test]
async fn the_document_carries_what_the_server_enforces() {
    let app = TestApp::spawn().await;
    let doc: Value = app.get_json("/openapi.json").await;
    let schemas = "/components/schemas";
    // RFC 8628 requests: the fields the handler answers 400 without.
    let token = at(&doc, &format!("{schemas}/TokenForm"));
    assert_eq!(token["required"], json!(["grant_type", "device_code"]));
    assert_eq!(
        token["properties"]["grant_type"]["enum"],
        json!(["urn:ietf:params:oauth:grant-type:device_code"])
    );
    let device = at(&doc, &format!("{schemas}/DeviceAuthorizationForm"));
    assert_eq!(device["required"], json!(["client_id"]));
    assert!(device["properties"]["client_id"]["pattern"].is_string());
    let device_json = at(&doc, &format!("{schemas}/DeviceAuthorizationJson"));
    assert_eq!(device_json["anyOf"][0]["required"], json!(["client_id"]));
    assert_eq!(device_json["anyOf"][1]["required"], json!(["agent_name"]));
    // E-mail signup.
    let email = at(&doc, &format!("{schemas}/RegisterBody/properties/email"));
    assert_eq!(email["format"], "email");
    assert!(email["pattern"].is_string());
    // Execution: the Idempotency-Key syntax, params an object.
    let key = param(&doc, "/paths/~1api~1execute/post", "Idempotency-Key");
    assert_eq!(
        (&key["minLength"], &key["maxLength"]),
        (&json!(1), &json!(255))
    );
    assert!(key["pattern"].is_string());
    assert_eq!(
        at(
            &doc,
            &format!("{schemas}/ExecuteBody/properties/params/type")
        ),
        "object"
    );
    // Reading: absolute http(s) URLs, no empty selector, in the body and in the query.
    let read = at(&doc, &format!("{schemas}/ReadBody/properties"));
    assert_eq!(read["url"]["format"], "uri");
    assert_eq!(read["include_selectors"]["items"]["minLength"], 1);
    assert_eq!(read["exclude_selectors"]["items"]["minLength"], 1);
    let query = param(&doc, "/paths/~1api~1read/get", "include_selectors");
    assert_eq!(query["items"]["minLength"], 1);
    assert_eq!(
        param(&doc, "/paths/~1api~1read/get", "url")["format"],
        "uri"
    );
    // Optional JSON fields take null, as the server does.
    assert_eq!(read["max_age"]["type"], json!(["number", "null"]));
    // failure_class: the published catalog.
    let catalog = at(
        &doc,
        &format!("{schemas}/Problem/properties/failure_class/enum"),
    );
    let catalog: Vec<&str> = catalog
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for class in [
        "not_found",
        "unknown_provider",
        "url_refused",
        "internal_token_required",
    ] {
        assert!(catalog.contains(&class), "{class} missing from {catalog:?}");
    }
    assert_eq!(
        at(
            &doc,
            &format!("{schemas}/ExecutionFailure/properties/failure_class/enum")
        )
        .as_array()
        .unwrap()
        .len(),
        catalog.len()
    );
    // The telemetry body is the served event schema (plus: no NUL in any string).
    let body = at(
        &doc,
        "/paths/~1telemetry~1agent-event/post/requestBody/content/application~1json; charset=utf-8/schema",
    );
    assert_eq!(body["$ref"], "#/components/schemas/AgentTrafficEvent");
    let served: Value = app
        .get_json("/.well-known/agent-traffic-event.schema.json")
        .await;
    let event = at(&doc, &format!("{schemas}/AgentTrafficEvent"));
    assert_eq!(event["required"], served["required"]);
    assert_eq!(
        event["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        served["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>()
    );
    assert_eq!(
        event["properties"]["agent_protocol"]["enum"],
        served["properties"]["agent_protocol"]["enum"]
    );
    assert_eq!(event["externalDocs"]["url"], served["$id"]);
    // The site's billing endpoints, with every answer they give.
    for (path, method, statuses) in [
        ("/api/billing/account", "get", &["200", "401", "403"][..]),
        (
            "/api/billing/create-checkout-session",
            "post",
            &[
                "200", "201", "400", "401", "403", "413", "422", "502", "503",
            ],
        ),
        (
            "/api/billing/webhook",
            "post",
            &["200", "400", "413", "503"],
        ),
        (
            "/api/billing/report-meter-event",
            "post",
            &["202", "401", "403", "422"],
        ),
    ] {
        let op = &doc["paths"][path][method];
        for status in statuses {
            assert!(
                op["responses"][status].is_object(),
                "{method} {path} {status}"
            );
        }
    }
    // Links from what creates a resource to what reads it.
    for (op, status, link) in [
        ("/paths/~1api~1execute/post", "200", "GetTask"),
        ("/paths/~1api~1execute/post", "502", "GetTask"),
        ("/paths/~1api~1readiness~1scan/post", "200", "GetScan"),
        (
            "/paths/~1api~1connections~1{provider}~1start/post",
            "201",
            "PollConnection",
        ),
    ] {
        let link = at(&doc, &format!("{op}/responses/{status}/links/{link}"));
        let target = link["operationRef"]
            .as_str()
            .unwrap()
            .trim_start_matches('#');
        assert!(
            doc.pointer(target).is_some(),
            "{target} is not an operation"
        );
    }
    // Unknown resources are 404 everywhere they can be named.
    for op in [
        "/paths/~1api~1connections~1{provider}/get",
        "/paths/~1api~1verify/post",
        "/paths/~1api~1tasks~1{task_id}/get",
    ] {
        assert!(at(&doc, &format!("{op}/responses/404")).is_object(), "{op}");
    }
}

/// The values on the wrong side of each documented constraint are refused.
#[tokio::test]
async fn each_documented_constraint_is_enforced() {
    let app = TestApp::builder()
        .outbox()
        .action_sites()
        .await
        .spawn()
        .await;
    let post_form = |path: &str, form: &'static [(&'static str, &'static str)]| {
        app.http.post(app.url(path)).form(form).send()
    };
    // RFC 8628: no client_id, no grant_type, no device_code, another grant type.
    assert_eq!(
        post_form("/agent/identity", &[("scope", "read")])
            .await
            .unwrap()
            .status(),
        400
    );
    assert_eq!(
        post_form("/agent/identity", &[("client_id", "  ")])
            .await
            .unwrap()
            .status(),
        400
    );
    assert_eq!(
        post_form(
            "/agent/identity",
            &[("client_id", "a"), ("scope", "discoverread")]
        )
        .await
        .unwrap()
        .status(),
        400
    );
    assert_eq!(
        post_form(
            "/agent/identity",
            &[("client_id", "a"), ("scope", " read,execute ")]
        )
        .await
        .unwrap()
        .status(),
        200
    );
    assert_eq!(
        post_form("/oauth2/token", &[("device_code", "x")])
            .await
            .unwrap()
            .status(),
        400
    );
    let grant = "urn:ietf:params:oauth:grant-type:device_code";
    let no_code = app
        .http
        .post(app.url("/oauth2/token"))
        .form(&[("grant_type", grant)])
        .send();
    assert_eq!(no_code.await.unwrap().status(), 400);
    let other = [("grant_type", "client_credentials"), ("device_code", "x")];
    assert_eq!(
        app.http
            .post(app.url("/oauth2/token"))
            .form(&other)
            .send()
            .await
            .unwrap()
            .status(),
        400
    );
    // JSON: neither client_id nor agent_name.
    let json_identity = app
        .http
        .post(app.url("/agent/identity"))
        .json(&json!({"scope": "read"}));
    assert_eq!(json_identity.send().await.unwrap().status(), 400);
    // E-mail format: what JSON Schema's `format: email` refuses, the server refuses.
    for email in [
        " a@example.com",
        "a..b@example.com",
        "a@example",
        "\"a b\"@example.com",
    ] {
        let resp = app
            .http
            .post(app.url("/api/register"))
            .json(&json!({"email": email}))
            .send();
        problem(resp.await.unwrap(), 422, "invalid_request").await;
    }
    let ok = app
        .http
        .post(app.url("/api/register"))
        .json(&json!({"email": "a+b@example.com", "agent_name": null}));
    assert_eq!(ok.send().await.unwrap().status(), 200);
    // Execution: an Idempotency-Key of 256 characters; params that are not an object.
    let body = json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {}});
    let long = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .header("Idempotency-Key", "k".repeat(256))
        .json(&body);
    problem(long.send().await.unwrap(), 422, "invalid_request").await;
    let mut not_object = body.clone();
    not_object["params"] = json!(false);
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(&not_object);
    assert_eq!(resp.send().await.unwrap().status(), 422);
    // Reading: an empty selector, a URL that is not absolute http(s).
    for bad in [
        json!({"url": "https://example.com/", "include_selectors": [""]}),
        json!({"url": "example.com"}),
        json!({"url": "ftp://example.com/"}),
    ] {
        let resp = app
            .http
            .post(app.url("/api/read"))
            .header("Authorization", bearer(&app.api_key))
            .json(&bad);
        assert_eq!(resp.send().await.unwrap().status(), 422, "{bad}");
    }
    // The telemetry event: a missing required field, a NUL in an extra property.
    let event = json!({
        "event_id": "e-1", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s-1",
        "agent_protocol": "mcp", "discovery_surface": "llms_txt", "task_type": "read_page",
        "conversion_state": "capability_read", "privacy_redactions": []
    });
    let mut missing = event.clone();
    missing.as_object_mut().unwrap().remove("session_id");
    let mut nul = event.clone();
    nul["extra"] = json!({"deep": "a\u{0}b"});
    for bad in [missing, nul] {
        let resp = app
            .http
            .post(app.url("/telemetry/agent-event"))
            .json(&bad)
            .send();
        assert_eq!(resp.await.unwrap().status(), 422, "{bad}");
    }
    let resp = app
        .http
        .post(app.url("/telemetry/agent-event"))
        .json(&event)
        .send();
    assert_eq!(resp.await.unwrap().status(), 202);
}

/// Unknown resources answer 404 with a problem, whatever names them.
#[tokio::test]
async fn unknown_resources_are_404() {
    let app = TestApp::spawn().await;
    let get = |path: String| {
        app.http
            .get(app.url(&path))
            .header("Authorization", bearer(&app.api_key))
            .send()
    };
    problem(
        get("/api/connections/nowhere-test".into()).await.unwrap(),
        404,
        "unknown_provider",
    )
    .await;
    problem(
        get("/api/connections/nowhere-test/poll".into())
            .await
            .unwrap(),
        404,
        "unknown_provider",
    )
    .await;
    problem(
        get("/api/tasks/task_01ARZ3NDEKTSV4RRFFQ69G5FAV".into())
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
    problem(
        get("/api/readiness/scans/scn_01ARZ3NDEKTSV4RRFFQ69G5FAV".into())
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
    let verify = app
        .http
        .post(app.url("/api/verify"))
        .json(&json!({"deviceId": "dev_01ARZ3NDEKTSV4RRFFQ69G5FAV", "code": "123456"}));
    problem(verify.send().await.unwrap(), 404, "not_found").await;
}

/// Every string a JSON body's schema declares, as (operation, field pointer, body with a number
/// or boolean in that place). Fields of nested objects and items of string arrays included.
fn string_places(doc: &Value) -> Vec<(String, String, Value)> {
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => at(doc, r.trim_start_matches('#')),
            None => schema,
        }
    }
    fn walk(doc: &Value, schema: &Value, place: &mut Vec<Value>, found: &mut Vec<Vec<Value>>) {
        let schema = resolve(doc, schema);
        let parts = ["allOf", "anyOf", "oneOf"].map(|k| schema[k].as_array());
        for part in parts.into_iter().flatten().flatten() {
            walk(doc, part, place, found);
        }
        let ty = &schema["type"];
        if ty == "string" || ty.as_array().is_some_and(|t| t.contains(&json!("string"))) {
            found.push(place.clone());
        }
        for (name, sub) in schema["properties"].as_object().into_iter().flatten() {
            place.push(json!(name));
            walk(doc, sub, place, found);
            place.pop();
        }
        if schema["items"].is_object() {
            place.push(json!(0));
            walk(doc, &schema["items"], place, found);
            place.pop();
        }
    }
    /// `place` built up as a body: `["a", 0, "b"]` with `v` is `{"a": [{"b": v}]}`.
    fn body_at(place: &[Value], v: Value) -> Value {
        match place.split_first() {
            None => v,
            Some((Value::String(name), rest)) => json!({ name.as_str(): body_at(rest, v) }),
            Some((_, rest)) => json!([body_at(rest, v)]),
        }
    }
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let content = op
                .pointer("/requestBody/content")
                .and_then(Value::as_object);
            let Some((_, media)) = content
                .into_iter()
                .flatten()
                .find(|(ty, _)| ty.starts_with("application/json"))
            else {
                continue;
            };
            let schema = &media["schema"];
            let mut found = Vec::new();
            walk(doc, schema, &mut Vec::new(), &mut found);
            for (i, place) in found.into_iter().filter(|p| !p.is_empty()).enumerate() {
                let field = place
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join("/");
                let wrong = if i % 2 == 0 { json!(5) } else { json!(true) };
                out.push((format!("{method} {path}"), field, body_at(&place, wrong)));
            }
        }
    }
    out
}

/// poem-openapi's `String` turns `5` or `true` into text; every JSON body is read by its schema
/// instead (`JsonBody`), so a number or boolean where a string belongs is a 400 naming it.
#[tokio::test]
async fn a_number_or_boolean_where_a_string_belongs_is_refused() {
    let app = TestApp::builder()
        .runtime(|r| r.internal_token = Some("internal-token-for-tests".into()))
        .outbox()
        .spawn()
        .await;
    let browser = Browser::new(&app);
    let csrf = csrf_of(&browser.sign_in(&app, "owner@example.com", "/account").await);
    let doc: Value = app.get_json("/openapi.json").await;
    let places = string_places(&doc);
    for op in ["post /api/read", "post /api/execute", "post /api/register"] {
        assert!(
            places.iter().any(|(o, ..)| o == op),
            "{op} has no string field"
        );
    }
    assert!(
        places
            .iter()
            .any(|(_, f, _)| f == "\"exclude_selectors\"/0"),
        "array items are walked"
    );
    for (op, field, body) in &places {
        let (method, path) = op.split_once(' ').unwrap();
        // The telemetry event is checked against its published JSON Schema (422 by its
        // contract), so the wrong value goes into an otherwise valid event.
        let (body, expected) = if path == "/telemetry/agent-event" {
            let mut event = json!({
                "event_id": "e-1", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s-1",
                "agent_protocol": "mcp", "discovery_surface": "llms_txt",
                "task_type": "read_page", "conversion_state": "capability_read",
                "privacy_redactions": []
            });
            for (k, v) in body.as_object().unwrap() {
                event[k] = v.clone();
            }
            (event, 422)
        } else {
            (body.clone(), 400)
        };
        let op_doc = &doc["paths"][path][method];
        let internal = op_doc["security"][0]["InternalToken"].is_array();
        // Billing is the signed-in customer's own act: a session and its CSRF token.
        let (http, credential) = match (internal, path.starts_with("/api/billing/")) {
            (true, _) => (&app.http, "internal-token-for-tests"),
            (false, true) => (&browser.http, csrf.as_str()),
            (false, false) => (&app.http, app.api_key.as_str()),
        };
        let resp = http
            .request(method.to_uppercase().parse().unwrap(), app.url(path))
            .header("Authorization", bearer(credential))
            .header("Origin", &app.base_url)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert_eq!(status, expected, "{op} with {body} (field {field}): {text}");
        let first = field.split('/').next().unwrap().trim_matches('"');
        assert!(
            text.contains(first),
            "{op}: the problem names `{first}`: {text}"
        );
    }
}

/// Issue 20: a browser that meets an error gets a page in sentences; an API client (any Accept
/// that does not name HTML first) gets problem+json. The headers stay either way.
#[tokio::test]
async fn browsers_get_error_pages_and_api_clients_get_problems() {
    let app = TestApp::spawn().await;
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let get = |path: &'static str, accept: &'static str| {
        app.http.get(app.url(path)).header("Accept", accept).send()
    };
    let page = get("/no-such-page", browser).await.unwrap();
    assert_eq!(page.status(), 404);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert_eq!(page.headers()["vary"], "Accept");
    let html = page.text().await.unwrap();
    assert!(html.contains("<h1 id=\"heading\">Not found</h1>"), "{html}");
    assert!(html.contains("No resource lives at this path."), "{html}");
    assert!(html.contains("href=\"/\""), "{html}");
    assert!(!html.contains("failure_class"), "{html}");

    let unauthenticated = get("/api/usage", browser).await.unwrap();
    assert_eq!(unauthenticated.status(), 401);
    assert!(unauthenticated.headers().contains_key("www-authenticate"));
    assert!(unauthenticated.text().await.unwrap().contains("<h1"));

    for accept in [
        "*/*",
        "application/json",
        "application/json, text/plain, */*",
    ] {
        let resp = get("/no-such-page", accept).await.unwrap();
        assert_eq!(
            resp.headers()["content-type"],
            "application/problem+json",
            "{accept}"
        );
        problem(resp, 404, "not_found").await;
    }
}

/// Every JSON request body of the API refuses fields it does not name, and the document says
/// so (the telemetry event, open by its own schema, and the site's billing endpoints, which
/// take and ignore extra fields, aside).
#[tokio::test]
async fn every_json_body_says_it_is_closed() {
    let app = TestApp::spawn().await;
    let doc: Value = app.get_json("/openapi.json").await;
    let mut bodies = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let content = op
                .pointer("/requestBody/content")
                .and_then(Value::as_object);
            for (ty, media) in content.into_iter().flatten() {
                let Some(r) = media["schema"]["$ref"].as_str() else {
                    continue;
                };
                if !ty.starts_with("application/json")
                    || path == "/telemetry/agent-event"
                    || path.starts_with("/api/billing/")
                {
                    continue;
                }
                bodies += 1;
                let schema = at(&doc, r.trim_start_matches('#'));
                assert_eq!(
                    schema["additionalProperties"], false,
                    "{method} {path}: {r} is not closed"
                );
            }
        }
    }
    assert!(bodies >= 10, "{bodies} bodies");
}
