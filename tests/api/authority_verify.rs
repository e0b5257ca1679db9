//! Payments under an authority that asks for verification: each task stays unverified until
//! its agent verifies it with the shop (`POST /api/tasks/{id}/verify`), on every store.

use serde_json::{Value, json};
use svc::startup::Stores;

use crate::authority::{create, money, pay, shop_on};
use crate::helpers::{TestApp, bearer, problem};

async fn post_verify(app: &TestApp, key: &str, task_id: &str) -> reqwest::Response {
    app.http
        .post(app.url(&format!("/api/tasks/{task_id}/verify")))
        .header("Authorization", bearer(key))
        .send()
        .await
        .unwrap()
}

pub(crate) async fn get_task(app: &TestApp, task_id: &str) -> Value {
    app.get_json_as_owner(&format!("/api/tasks/{task_id}"))
        .await
}

async fn verification_required_payments_are_verified_later(stores: Stores) {
    let shop = shop_on(stores).await;
    let app = &shop.app;
    let verify = create(
        &shop,
        &[("verification_required", "1"), ("receipt_required", "")],
    )
    .await;
    let plain = create(&shop, &[]).await;
    let schema = app
        .get_json("/.well-known/payment-artifact.schema.json")
        .await;
    let artifacts = jsonschema::validator_for(&schema).unwrap();

    let resp = pay(app, Some(&verify), 100, "ord-8").await;
    assert_eq!(resp.status(), 200);
    let paid: Value = resp.json().await.unwrap();
    let task_id = paid["task_id"].as_str().unwrap();
    let original = paid["artifact"].clone();
    assert_eq!(original["status"], "payment_completed");
    assert_eq!(
        original["evidence"]["confirm"],
        json!({"action": "payment_status", "params": {"order_id": "ord-8"}})
    );
    assert!(artifacts.is_valid(&original));
    assert_eq!(get_task(app, task_id).await.get("verification"), None);

    // Verified: a second signed artifact, nothing charged.
    let before = money(&shop).await;
    let resp = post_verify(app, &app.api_key, task_id).await;
    assert_eq!(resp.status(), 200);
    let verified: Value = resp.json().await.unwrap();
    assert_eq!(
        (verified["task_id"].as_str(), verified["status"].as_str()),
        (Some(task_id), Some("verified"))
    );
    let artifact = &verified["artifact"];
    assert_eq!(artifact["status"], "verified");
    assert_eq!(artifact["task_id"], task_id);
    assert_ne!(artifact["artifact_id"], original["artifact_id"]);
    assert_eq!(artifact["failure_class"], Value::Null);
    assert_eq!(artifact["source"]["action"], "payment_status");
    assert!(
        artifact["source"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/orders/ord-8"),
        "{artifact}"
    );
    let evidence = &artifact["evidence"];
    assert_eq!(evidence["verifies_artifact_id"], original["artifact_id"]);
    assert_eq!(evidence["confirm"]["action"], "payment_status");
    assert_eq!(evidence["confirm"]["observed"]["http_status"], 200);
    assert_eq!(
        evidence["confirm"]["result"],
        json!({"payment": "Paid", "http_status": 200})
    );
    assert_eq!(evidence["payment"], original["evidence"]["payment"]);
    assert!(artifacts.is_valid(artifact), "{artifact}");
    crate::helpers::verify_with_jwks(app, artifact).await;
    assert_eq!(money(&shop).await, before, "verification charges nothing");

    // The task shows both; the original artifact is unchanged.
    let task = get_task(app, task_id).await;
    assert_eq!(task["artifact"], original);
    assert_eq!(&task["verification"], artifact);
    // Idempotent: the stored verification again.
    let again = post_verify(app, &app.api_key, task_id).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.json::<Value>().await.unwrap(), verified);
    assert_eq!(money(&shop).await, before);

    // A payment the shop accepted but never settled: not confirmed, nothing stored.
    let resp = pay(app, Some(&verify), 100, "ord-pending-1").await;
    assert_eq!(resp.status(), 200);
    let pending: Value = resp.json().await.unwrap();
    let pending_id = pending["task_id"].as_str().unwrap();
    assert_eq!(pending["artifact"]["status"], "payment_completed");
    let before = money(&shop).await;
    let body = problem(
        post_verify(app, &app.api_key, pending_id).await,
        409,
        "verification_pending",
    )
    .await;
    assert_eq!(body["retryable"], true);
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("payment_status") && detail.contains("Awaiting payment"),
        "{detail}"
    );
    assert_eq!(money(&shop).await, before);
    let task = get_task(app, pending_id).await;
    assert_eq!(task.get("verification"), None);
    assert_eq!(task["artifact"], pending["artifact"]);

    // Tasks that are not payment_completed: 409 not_verifiable.
    let resp = pay(app, Some(&plain), 100, "ord-9").await;
    let settled_verified: Value = resp.json().await.unwrap();
    assert_eq!(settled_verified["artifact"]["status"], "verified");
    let product = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(
            &json!({"domain": "shop.sandbox.test", "action": "get_product",
            "params": {"sku": "TEA-GREEN"}}),
        )
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let declined = pay(app, Some(&verify), 100, "nope")
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(declined["artifact"]["status"], "failed");
    for other in [&settled_verified, &product, &declined] {
        let id = other["task_id"].as_str().unwrap();
        problem(
            post_verify(app, &app.api_key, id).await,
            409,
            "not_verifiable",
        )
        .await;
        assert_eq!(get_task(app, id).await.get("verification"), None);
    }

    // Another account's task, or no such task: 404.
    let other_key = app
        .stranger_key("verifier@example.com", "read discover execute")
        .await;
    problem(
        post_verify(app, &other_key, pending_id).await,
        404,
        "not_found",
    )
    .await;
    problem(
        post_verify(app, &app.api_key, "task_nope").await,
        404,
        "not_found",
    )
    .await;
    let resp = app
        .http
        .post(app.url(&format!("/api/tasks/{task_id}/verify")))
        .send()
        .await
        .unwrap();
    problem(resp, 401, "missing_api_key").await;

    // The same over MCP: the stored verification, same JSON.
    let key = bearer(&app.api_key);
    let call = |id: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "svc_verify_task", "arguments": {"task_id": id}}})
    };
    let (_, done) = app.mcp(call(task_id), Some(&key), "2025-11-25").await;
    assert_eq!(done["result"]["structuredContent"], verified, "{done}");
    let (_, refused) = app.mcp(call(pending_id), Some(&key), "2025-11-25").await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("verification_pending"), "{text}");
}

#[tokio::test]
async fn verification_required_payments_are_verified_later_in_memory() {
    verification_required_payments_are_verified_later(Stores::memory()).await;
}

#[tokio::test]
async fn verification_required_payments_are_verified_later_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("svc.db").display());
    let stores = Stores::open(&url, 4).await.unwrap();
    verification_required_payments_are_verified_later(stores).await;
}

#[tokio::test]
async fn verification_required_payments_are_verified_later_on_postgres() {
    let url = svc_contract_tests::postgres_database().await;
    let stores = Stores::open(&url, 8).await.unwrap();
    verification_required_payments_are_verified_later(stores).await;
}
