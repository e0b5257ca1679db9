//! Discovery and execution over HTTP against the sandbox's action sites: charges only for
//! verified completions, refunds and artifacts for every failure, scopes, connections, and
//! artifacts that verify with nothing but the JWKS (idempotency in `idempotency.rs`).

use std::time::Duration;

use serde_json::{Value, json};
use svc_ports::{CreditAmount, Email, Plan, Scopes};

use crate::helpers::{TestApp, bearer, problem};

pub(crate) const SHOP: &str = "shop.sandbox.test";
pub(crate) const FLAKY: &str = "flaky.sandbox.test";

pub(crate) async fn app() -> TestApp {
    TestApp::builder()
        // The flaky site's `slow` action outlasts this, so it times out soon; every other action
        // answers well within it, a loaded machine too.
        .fetch_timeout(Duration::from_secs(5))
        .action_sites()
        .await
        .spawn()
        .await
}

pub(crate) async fn execute(
    app: &TestApp,
    key: &str,
    body: Value,
    idempotency_key: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(key))
        .json(&body);
    if let Some(k) = idempotency_key {
        req = req.header("Idempotency-Key", k);
    }
    req.send().await.unwrap()
}

pub(crate) async fn balance(app: &TestApp, key: &str) -> (i64, i64) {
    let usage: Value = app
        .get_usage(Some(&bearer(key)))
        .await
        .json()
        .await
        .unwrap();
    (
        usage["balance"]["spendable"].as_i64().unwrap(),
        usage["balance"]["held"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn discover_lists_exact_names_keys_providers_and_costs() {
    let app = app().await;
    let resp = app
        .http
        .get(app.url(&format!("/api/discover?domain={SHOP}")))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let shop: Value = resp.json().await.unwrap();
    let names: Vec<&str> = shop["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "search_products",
            "get_product",
            "add_to_cart",
            "place_order",
            "pay_order",
            "order_status",
            "payment_status"
        ]
    );
    let order = &shop["actions"][3];
    assert_eq!(order["consequential"], true);
    assert_eq!(order["scopes"], json!(["execute", "execute:consequential"]));
    assert_eq!(order["cost"], 1);
    assert_eq!(order["auth_provider"], Value::Null);
    assert_eq!(
        shop["actions"][2]["params"][1],
        json!({"name": "sku", "type": "string", "required": true})
    );

    let booking: Value = app
        .http
        .post(app.url("/api/discover"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"domain": "booking.sandbox.test"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        booking["actions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["auth_provider"] == "booking-sandbox")
    );
    let unknown = app
        .http
        .get(app.url("/api/discover?domain=nowhere.example.com"))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    problem(unknown, 404, "unknown_domain").await;
}

#[tokio::test]
async fn a_completed_action_is_charged_once_with_a_verifiable_artifact() {
    let app = app().await;
    let key = app.api_key.clone();
    assert_eq!(balance(&app, &key).await, (1000, 0));
    let resp = execute(&app, &key, json!({"domain": SHOP, "action": "add_to_cart", "params": {"sku": "TEA-GREEN", "quantity": 2}}), None).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "completed");
    assert_eq!(body["result"]["total_cents"], 1300);
    assert_eq!(body["credits_charged"], 1);
    let artifact = &body["artifact"];
    assert_eq!(artifact["status"], "completed");
    assert_eq!(artifact["task_id"], body["task_id"]);
    assert_eq!(artifact["failure_class"], Value::Null);
    assert_eq!(artifact["source"]["domain"], SHOP);
    crate::helpers::verify_with_jwks(&app, artifact).await;
    assert_eq!(balance(&app, &key).await, (999, 0));

    // The consequential order, with the cart from before; then the HTML confirmation page.
    let cart = body["result"]["cart_id"].as_str().unwrap();
    let order: Value = execute(
        &app,
        &key,
        json!({"domain": SHOP, "action": "place_order", "params": {"cart_id": cart}}),
        None,
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(order["result"]["status"], "placed", "{order}");
    let page: Value = execute(
        &app,
        &key,
        json!({"domain": SHOP, "action": "order_status", "params": {"order_id": order["result"]["order_id"]}}),
        None,
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        page["result"],
        json!({"status": "Placed", "http_status": 200}),
        "{page}"
    );

    let task: Value = app
        .get_json_with_key(
            &format!("/api/tasks/{}", body["task_id"].as_str().unwrap()),
            &key,
        )
        .await;
    assert_eq!(task["status"], "completed");
    assert_eq!(task["artifact"], body["artifact"]);
    crate::helpers::verify_with_jwks(&app, &task["artifact"]).await;
    assert_eq!(balance(&app, &key).await, (997, 0));
}

#[tokio::test]
async fn every_failure_is_refunded_with_an_artifact_of_the_failure() {
    let app = app().await;
    let key = app.api_key.clone();
    let cases = [
        (FLAKY, "server_error", json!({}), 502, "action_failed"),
        (
            FLAKY,
            "garbage",
            json!({}),
            502,
            "upstream_invalid_response",
        ),
        (FLAKY, "slow", json!({}), 504, "upstream_timeout"),
        (
            FLAKY,
            "unconfirmed_submit",
            json!({"message": "hi"}),
            502,
            "action_failed",
        ),
        // The shop answers 200 for an unknown cart but does not confirm an order.
        (
            SHOP,
            "place_order",
            json!({"cart_id": "nope"}),
            502,
            "action_failed",
        ),
        (
            SHOP,
            "get_product",
            json!({"sku": "NOPE"}),
            502,
            "action_failed",
        ),
    ];
    for (domain, action, params, status, class) in cases {
        let resp = execute(
            &app,
            &key,
            json!({"domain": domain, "action": action, "params": params}),
            None,
        )
        .await;
        let body = problem(resp, status, class).await;
        assert_eq!(body["credits_refunded"], 1, "{action}");
        assert_eq!(body["artifact"]["status"], "failed");
        assert_eq!(body["artifact"]["failure_class"], class);
        crate::helpers::verify_with_jwks(&app, &body["artifact"]).await;
        let task: Value = app
            .get_json_with_key(
                &format!("/api/tasks/{}", body["task_id"].as_str().unwrap()),
                &key,
            )
            .await;
        assert_eq!(task["status"], "failed");
        assert_eq!(
            balance(&app, &key).await,
            (1000, 0),
            "{action} was not refunded"
        );
    }
}

/// A map whose site is at a refused address (a private one), and whose path a param fills:
/// the refused request settles as a failure whose problem `status` is the HTTP status sent
/// (a review found 502 sent with `status: 422`), and a param that would step out of its path
/// segment (`..`) is refused before anything is held.
#[tokio::test]
async fn a_refused_site_settles_with_one_status_and_dot_segments_never_run() {
    let app = app().await;
    let key = app.api_key.clone();
    let flaky = app
        ._sites
        .as_ref()
        .unwrap()
        .sites
        .iter()
        .find(|s| s.host == FLAKY)
        .unwrap();
    let mut map: Value = serde_json::from_str(&flaky.map_json()).unwrap();
    map["domain"] = json!("private.example");
    map["base_url"] = json!("http://10.255.255.1");
    map["actions"][0]["request"]["path"] = json!("/orders/{id}/boom");
    map["actions"][0]["params_schema"] = json!({
        "type": "object",
        "required": ["id"],
        "additionalProperties": false,
        "properties": {"id": {"type": "string"}}
    });
    let document: svc_ports::MapDocument = serde_json::from_value(map).unwrap();
    let action = document.actions[0].name.clone();
    app.services
        .actions
        .import_map(&document, "test")
        .await
        .unwrap();
    app.services
        .actions
        .publish("private.example", None)
        .await
        .unwrap();
    let run = |id: &str| {
        execute(
            &app,
            &key,
            json!({"domain": "private.example", "action": action, "params": {"id": id}}),
            None,
        )
    };
    let body = problem(run("ord-1").await, 502, "url_refused").await;
    assert_eq!(body["artifact"]["failure_class"], "url_refused");
    assert_eq!(balance(&app, &key).await, (1000, 0));
    for id in ["..", "."] {
        let said = problem(run(id).await, 422, "invalid_request").await;
        assert!(
            said["detail"]
                .as_str()
                .unwrap()
                .contains("path segment `{id}`"),
            "{said}"
        );
        assert!(said.get("task_id").is_none(), "{said}");
    }
    assert_eq!(balance(&app, &key).await, (1000, 0));
}

#[tokio::test]
async fn refusals_happen_before_any_charge() {
    let app = app().await;
    let key = app.api_key.clone();
    let bad_params = execute(&app, &key, json!({"domain": SHOP, "action": "add_to_cart", "params": {"sku": "TEA-GREEN", "quantity": 99}}), None).await;
    let p = problem(bad_params, 422, "invalid_request").await;
    assert!(p["detail"].as_str().unwrap().contains("quantity"), "{p}");
    problem(
        execute(
            &app,
            &key,
            json!({"domain": SHOP, "action": "buy_everything", "params": {}}),
            None,
        )
        .await,
        404,
        "unknown_action",
    )
    .await;
    problem(
        execute(
            &app,
            &key,
            json!({"domain": "nowhere.example.com", "action": "x", "params": {}}),
            None,
        )
        .await,
        404,
        "unknown_domain",
    )
    .await;
    let needs_connection = execute(
        &app,
        &key,
        json!({"domain": "booking.sandbox.test", "action": "list_my_bookings", "params": {}}),
        None,
    )
    .await;
    let p = problem(needs_connection, 403, "connection_required").await;
    assert_eq!(p["next_action"]["kind"], "connect");
    problem(
        execute(
            &app,
            &key,
            json!({"domain": SHOP, "action": "search_products"}),
            None,
        )
        .await,
        422,
        "invalid_request",
    )
    .await;

    // A key without the approval scope cannot place orders; without credits nothing runs.
    let plain = app
        .services
        .keys
        .create_key(svc::services::CreateKey {
            email: Email::parse("plain@example.com").unwrap(),
            plan: Plan::Free,
            credits: Some(CreditAmount::new(1).unwrap()),
            scopes: Scopes::default_for_new_key(),
            label: "plain".into(),
        })
        .await
        .unwrap();
    let plain_key = plain.secret.expose().to_owned();
    let p = problem(
        execute(
            &app,
            &plain_key,
            json!({"domain": SHOP, "action": "place_order", "params": {"cart_id": "cart-1"}}),
            None,
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;
    assert_eq!(p["next_action"]["kind"], "approve");
    assert_eq!(
        execute(
            &app,
            &plain_key,
            json!({"domain": SHOP, "action": "search_products", "params": {"query": "mug"}}),
            None
        )
        .await
        .status(),
        200
    );
    let broke = execute(
        &app,
        &plain_key,
        json!({"domain": SHOP, "action": "search_products", "params": {"query": "mug"}}),
        None,
    )
    .await;
    let p = problem(broke, 402, "insufficient_credits").await;
    assert_eq!(p["next_action"]["kind"], "top_up");
    // Where to top up, in the link and in the sentence a model reads.
    let top_up = format!("{}/account", app.base_url);
    assert_eq!(p["next_action"]["url"], top_up.as_str(), "{p}");
    assert!(p["detail"].as_str().unwrap().contains(&top_up), "{p}");
    assert_eq!(balance(&app, &key).await, (1000, 0));
    assert_eq!(balance(&app, &plain_key).await, (0, 0));
}

#[tokio::test]
async fn tasks_are_private_to_their_account() {
    let app = app().await;
    let body: Value = execute(
        &app,
        &app.api_key,
        json!({"domain": SHOP, "action": "search_products", "params": {"query": "kettle"}}),
        None,
    )
    .await
    .json()
    .await
    .unwrap();
    let other = app
        .services
        .keys
        .create_key(svc::services::CreateKey {
            email: Email::parse("other@example.com").unwrap(),
            plan: Plan::Free,
            credits: None,
            scopes: Scopes::default_for_new_key(),
            label: "other".into(),
        })
        .await
        .unwrap();
    let resp = app
        .http
        .get(app.url(&format!("/api/tasks/{}", body["task_id"].as_str().unwrap())))
        .header("Authorization", bearer(other.secret.expose()))
        .send()
        .await
        .unwrap();
    problem(resp, 404, "not_found").await;
}

#[tokio::test]
async fn mcp_tools_discover_and_execute() {
    let app = app().await;
    let call = |name: &'static str, args: Value| {
        let app = &app;
        async move {
            let (_, body) = app
                .mcp(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}),
                    Some(&bearer(&app.api_key)),
                    "2025-11-25",
                )
                .await;
            body["result"].clone()
        }
    };
    let listed = call("list_actions", json!({"domain": "booking.sandbox.test"})).await;
    assert_eq!(
        listed["structuredContent"]["actions"][0]["auth_provider"],
        "booking-sandbox"
    );
    let done = call("execute", json!({"domain": SHOP, "action": "get_product", "params": {"sku": "KETTLE-1"}, "idempotency_key": "mcp-1"})).await;
    assert_eq!(
        done["structuredContent"]["result"]["name"], "Kettle, 1 litre",
        "{done}"
    );
    crate::helpers::verify_with_jwks(&app, &done["structuredContent"]["artifact"]).await;
    let failed = call(
        "execute",
        json!({"domain": FLAKY, "action": "server_error", "params": {}}),
    )
    .await;
    assert_eq!(failed["isError"], true);
    assert!(
        failed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("action_failed")
    );
    assert_eq!(balance(&app, &app.api_key).await, (999, 0));
}

#[tokio::test]
async fn orphaned_tasks_are_refunded_by_recovery() {
    let stores = svc::startup::Stores::memory();
    // The app's own recovery pass only takes tasks older than an hour: this test runs it.
    let app = TestApp::builder()
        .stores(stores.clone())
        .runtime(|r| r.recover_after_seconds = 3600)
        .action_sites()
        .await
        .spawn()
        .await;
    let key = app.api_key.clone();
    // A task that began but whose process never settled it.
    let account = app.services.auth.authenticate(&key).await.unwrap();
    let orphan = svc_ports::NewTask {
        id: svc_ports::TaskId::from_ulid(ulid::Ulid::new()),
        account_id: account.account.id.clone(),
        key_id: account.key.id.clone(),
        domain: SHOP.into(),
        action: "place_order".into(),
        cost: 1,
        idempotency_key: Some("crashed".into()),
        fingerprint: "f".into(),
        hold_entry: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
        authority_spend: None,
        created_at: chrono::Utc::now() - chrono::Duration::minutes(5),
    };
    assert!(matches!(
        stores.tasks.begin_task(&orphan).await.unwrap(),
        svc_ports::BeginOutcome::Started { .. }
    ));
    assert_eq!(balance(&app, &key).await, (999, 1));
    assert_eq!(app.services.actions.recover(60).await.unwrap(), 1);
    assert_eq!(balance(&app, &key).await, (1000, 0));
    let task: Value = app
        .get_json_with_key(&format!("/api/tasks/{}", orphan.id), &key)
        .await;
    assert_eq!(task["status"], "failed");
    assert_eq!(task["artifact"]["failure_class"], "interrupted");
    crate::helpers::verify_with_jwks(&app, &task["artifact"]).await;
    assert_eq!(
        app.services.actions.recover(60).await.unwrap(),
        0,
        "settled once"
    );
}

#[tokio::test]
async fn discovery_files_for_actions_are_served() {
    let app = app().await;
    let catalog = app.get_json("/.well-known/action-catalog.json").await;
    let allowed: Vec<&str> = catalog["allowed_families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert!(allowed.contains(&"order") && !allowed.contains(&"credential_entry"));
    assert!(
        catalog["failure_classes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["failure_class"] == "action_failed")
    );
    let schema = app
        .get_json("/.well-known/payment-artifact.schema.json")
        .await;
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let jwks = app.get_json("/.well-known/jwks.json").await;
    assert_eq!(jwks["keys"][0]["alg"], "EdDSA");
}

#[tokio::test]
async fn learning_drafts_a_candidate_that_runs_only_once_published() {
    use wiremock::{
        Mock, MockServer, ResponseTemplate,
        matchers::{method, path},
    };
    let site = MockServer::start().await;
    let openapi = json!({
        "openapi": "3.1.0",
        "info": {"title": "Library", "version": "1"},
        "paths": {
            "/api/books": {"get": {"operationId": "searchBooks", "summary": "Search books",
                "parameters": [{"name": "q", "in": "query", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["books"], "properties": {"books": {"type": "array"}}}}}}}}},
            "/api/loans": {"post": {"operationId": "borrowBook", "summary": "Borrow a book",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["isbn"],
                    "properties": {"isbn": {"type": "string"}}}}}},
                "responses": {"201": {"description": "created"}}}},
            "/api/login": {"post": {"operationId": "login", "responses": {"200": {"description": "ok"}}}}
        }
    });
    let home = r#"<html><head><title>Library</title></head><body>
        <a href="/contact">Contact</a>
        <form action="/search" method="get"><input type="search" name="q"></form>
        <form action="/login" method="post"><input name="user"><input type="password" name="pw"></form>
        </body></html>"#;
    let contact = r#"<html><head><title>Contact</title></head><body>
        <form action="/contact" method="post"><label>Email <input type="email" name="email" required></label>
        <textarea name="message"></textarea></form></body></html>"#;
    for (p, body, ct) in [
        ("/openapi.json", openapi.to_string(), "application/json"),
        ("/", home.to_owned(), "text/html"),
        ("/contact", contact.to_owned(), "text/html"),
    ] {
        Mock::given(method("GET"))
            .and(path(p))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, ct))
            .mount(&site)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/api/books"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"books": [{"title": "Dune"}]})),
        )
        .mount(&site)
        .await;
    let host = "library.sandbox.test";
    let app = TestApp::builder()
        .sandbox_host(host, *site.address())
        .spawn()
        .await;
    let base = format!("http://{host}:{}", site.address().port());
    let learned = app.services.actions.learn(host, &base).await.unwrap();
    assert_eq!(learned.map.status, svc_ports::MapStatus::Candidate);
    assert_eq!(learned.map.origin, "learned");
    let actions = &learned.map.document.actions;
    let find = |n: &str| {
        actions.iter().find(|a| a.name == n).unwrap_or_else(|| {
            panic!(
                "no {n} in {:?}",
                actions.iter().map(|a| &a.name).collect::<Vec<_>>()
            )
        })
    };
    assert!(!find("search_books").consequential, "a safe read");
    assert!(find("borrow_book").consequential, "a state change");
    assert!(
        actions.iter().all(|a| !a.name.contains("login")),
        "credential handling is never learned"
    );
    assert!(
        actions
            .iter()
            .any(|a| a.request.path.starts_with("/contact") && a.consequential)
    );
    assert!(
        learned.notes.iter().any(|n| n.contains("login")),
        "{:?}",
        learned.notes
    );

    // Nothing learned runs before a person publishes it.
    let body = json!({"domain": host, "action": "search_books", "params": {"q": "dune"}});
    problem(
        execute(&app, &app.api_key, body.clone(), None).await,
        404,
        "unknown_domain",
    )
    .await;
    app.services.actions.publish(host, None).await.unwrap();
    let done = execute(&app, &app.api_key, body, None).await;
    let status = done.status();
    let done: Value = done.json().await.unwrap();
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["books"][0]["title"], "Dune", "{done}");
}

/// Issue 20: an unknown domain's problem points to the list of the domains that have a map, and
/// that list (REST and MCP) names exactly what discover accepts.
#[tokio::test]
async fn an_unknown_domain_points_to_the_supported_domains() {
    let app = app().await;
    let unknown = app
        .http
        .get(app.url("/api/discover?domain=nowhere.example.com"))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    let body = problem(unknown, 404, "unknown_domain").await;
    assert!(
        body["hint"].as_str().unwrap().contains("/api/domains"),
        "{body}"
    );

    let listed = app.get_json_with_key("/api/domains", &app.api_key).await;
    let domains = listed["domains"].as_array().unwrap();
    assert!(domains.iter().any(|d| d["domain"] == SHOP), "{listed}");
    for d in domains {
        let name = d["domain"].as_str().unwrap();
        let map = app
            .get_json_with_key(&format!("/api/discover?domain={name}"), &app.api_key)
            .await;
        assert_eq!(
            d["actions"],
            map["actions"].as_array().unwrap().len(),
            "{name}"
        );
        assert_eq!(d["map_version"], map["map_version"], "{name}");
    }
    let mut names: Vec<&str> = domains
        .iter()
        .map(|d| d["domain"].as_str().unwrap())
        .collect();
    let sorted = {
        let mut s = names.clone();
        s.sort();
        s
    };
    assert_eq!(names, sorted, "by name");
    names.dedup();
    assert_eq!(names.len(), domains.len(), "each once");

    // The same list over MCP; a key without discover is refused on both.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "list_domains", "arguments": {}}});
    let (_, tool) = app
        .mcp(call, Some(&bearer(&app.api_key)), "2025-11-25")
        .await;
    assert_eq!(tool["result"]["structuredContent"], listed, "{tool}");
    let reader = app.stranger_key("reader@example.com", "read").await;
    let refused = app
        .http
        .get(app.url("/api/domains"))
        .header("Authorization", bearer(&reader))
        .send()
        .await
        .unwrap();
    problem(refused, 403, "insufficient_scope").await;
}

/// A whole number written with a fraction or an exponent (`2.0`, `2e0`) is the integer the
/// schema asks for (JSON Schema says so) and is sent as that integer: a review had
/// `"quantity": 1.0` stored as a task, refused by the site and refunded.
#[tokio::test]
async fn a_whole_number_written_as_a_float_is_sent_as_the_integer() {
    let app = app().await;
    let key = app.api_key.clone();
    for quantity in ["2.0", "2e0"] {
        let body = format!(
            r#"{{"domain": "{SHOP}", "action": "add_to_cart", "params": {{"sku": "TEA-GREEN", "quantity": {quantity}}}}}"#
        );
        let resp = app
            .http
            .post(app.url("/api/execute"))
            .header("Authorization", bearer(&key))
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let answer: Value = resp.json().await.unwrap();
        assert_eq!(answer["status"], "completed", "{quantity}: {answer}");
        assert_eq!(answer["result"]["total_cents"], 1300, "{answer}");
    }
    // A fraction is still refused before anything is stored.
    let half = execute(
        &app,
        &key,
        json!({"domain": SHOP, "action": "add_to_cart",
        "params": {"sku": "TEA-GREEN", "quantity": 1.5}}),
        None,
    )
    .await;
    problem(half, 422, "invalid_request").await;
}
