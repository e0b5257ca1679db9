//! The database goes away mid-run: every connection the service holds to Postgres is dropped,
//! again and again, while executions are running. Each request is answered either as usual or
//! with a retryable 503 (`unavailable`, with `Retry-After`), never with a 500; nothing is half
//! written: once the orphaned tasks are recovered, the balance equals the sum of the ledger,
//! nothing is held, every task moved money at most once, and the credits spent equal the
//! executions answered as completed.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use svc::startup::Stores;
use svc_ports::ledger::EntryKind;

use crate::helpers::{TestApp, bearer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_database_connections_give_retryable_503s_and_lose_nothing() {
    let url = svc_contract_tests::postgres_database().await;
    let stores = Stores::open(&url, 8).await.unwrap();
    let app = TestApp::builder()
        .stores(stores.clone())
        .action_sites()
        .await
        .spawn()
        .await;
    let body = json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "TEA-GREEN"}});

    // The outage: connections dropped every few milliseconds while the requests run.
    let running = Arc::new(AtomicBool::new(true));
    let killer = {
        let running = running.clone();
        let url = url.clone();
        tokio::spawn(async move {
            let mut dropped = 0;
            while running.load(Ordering::SeqCst) {
                dropped += svc_contract_tests::drop_connections(&url).await;
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            dropped
        })
    };
    let send = |key: String| {
        let req = app
            .http
            .post(app.url("/api/execute"))
            .header("Authorization", bearer(&app.api_key))
            .header("Idempotency-Key", key.clone())
            .json(&body);
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                key,
                status,
                retry_after,
                resp.json().await.unwrap_or(Value::Null),
            )
        }
    };
    let mut answers: Vec<(String, u16, Option<String>, Value)> = Vec::new();
    for round in 0..20 {
        let sends = (0..4).map(|i| send(format!("outage-{round}-{i}")));
        answers.extend(futures_util::future::join_all(sends).await);
    }
    running.store(false, Ordering::SeqCst);
    let dropped = killer.await.unwrap();
    assert!(dropped > 0, "the outage dropped no connection");

    let mut completed = std::collections::HashSet::new();
    let mut unavailable = Vec::new();
    for (key, status, retry_after, answer) in &answers {
        match status {
            200 => {
                completed.insert(answer["task_id"].as_str().unwrap().to_owned());
            }
            503 => {
                assert_eq!(answer["failure_class"], "unavailable", "{answer}");
                assert_eq!(answer["retryable"], true, "{answer}");
                assert!(retry_after.is_some(), "a 503 says when to retry: {answer}");
                unavailable.push(key.clone());
            }
            other => panic!("answered {other} during the outage: {answer}"),
        }
    }
    println!(
        "{} requests: {} completed, {} unavailable, {dropped} connections dropped",
        answers.len(),
        completed.len(),
        unavailable.len()
    );

    // Tasks whose settlement never landed are what recovery is for. Then each request answered
    // 503 is sent again with its key: it runs now, or replays what its task became (completed,
    // or refunded by recovery as interrupted).
    // A pooled connection dropped just before the outage ended fails its next statement
    // once (then the pool connects anew), as it would for the recovery job and for clients,
    // which retry a 503.
    let mut recovered = app.services.actions.recover(0).await;
    for _ in 0..10 {
        if recovered.is_ok() {
            break;
        }
        recovered = app.services.actions.recover(0).await;
    }
    recovered.unwrap();
    for key in unavailable {
        let (mut status, mut answer) = (503, Value::Null);
        for _ in 0..10 {
            let (_, s, _, a) = send(key.clone()).await;
            (status, answer) = (s, a);
            if status != 503 {
                break;
            }
        }
        match status {
            200 => {
                completed.insert(answer["task_id"].as_str().unwrap().to_owned());
            }
            _ => assert_eq!(answer["failure_class"], "interrupted", "{status} {answer}"),
        }
    }
    let principal = app.services.auth.authenticate(&app.api_key).await.unwrap();
    let account = principal.account.id;
    let balance = stores.ledger.balance(&account).await.unwrap();
    let entries = stores.ledger.entries(&account, 100_000).await.unwrap();
    assert_eq!(
        balance.spendable,
        entries.iter().map(|e| e.delta).sum::<i64>()
    );
    assert_eq!(balance.held, 0);
    let mut per_task: HashMap<String, Vec<EntryKind>> = HashMap::new();
    for e in &entries {
        if let Some(task) = e.reference.as_deref().and_then(|r| r.strip_prefix("task:")) {
            let id = task.split(':').next().unwrap_or_default().to_owned();
            per_task.entry(id).or_default().push(e.kind);
        }
    }
    let mut captured = 0;
    for (task, kinds) in &per_task {
        let settlements = kinds
            .iter()
            .filter(|k| matches!(k, EntryKind::Capture | EntryKind::Refund))
            .count();
        assert_eq!(settlements, 1, "task {task} settled {settlements} times");
        if kinds.contains(&EntryKind::Capture) {
            captured += 1;
            assert!(
                completed.contains(task),
                "task {task} was charged but not answered as completed"
            );
        }
    }
    assert_eq!(
        captured,
        completed.len(),
        "every completed answer was charged"
    );
    assert_eq!(1000 - balance.spendable, captured as i64);
}
