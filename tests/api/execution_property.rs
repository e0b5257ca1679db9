//! End to end, on every store: random sequences of executions through the real HTTP face
//! (completions, failures, timeouts, replays, the same key with other params, concurrent
//! duplicates) keep the money invariants: the balance equals the sum of the ledger entries,
//! nothing is held once all settled, every task is charged at most once, every failed task
//! nets zero, no balance goes below zero, and the credits spent equal the completed tasks.

use std::{collections::HashMap, time::Duration};

use futures_util::future::join_all;
use proptest::prelude::*;
use serde_json::{Value, json};
use svc_ports::ledger::EntryKind;

use crate::helpers::{TestApp, bearer};

#[derive(Debug, Clone)]
enum Op {
    /// A completing action (get_product), with a key from a small set or none.
    Complete { key: Option<u8> },
    /// An action the site fails (HTTP 500).
    Fail { key: Option<u8> },
    /// An action that times out.
    Timeout { key: Option<u8> },
    /// The same key with other params (a conflict if the key was used).
    OtherParams { key: u8 },
    /// Five identical requests with one key at once.
    Burst { key: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    let key = proptest::option::of(0..3u8);
    prop_oneof![
        4 => key.clone().prop_map(|key| Op::Complete { key }),
        2 => key.clone().prop_map(|key| Op::Fail { key }),
        1 => key.prop_map(|key| Op::Timeout { key }),
        1 => (0..3u8).prop_map(|key| Op::OtherParams { key }),
        2 => (0..3u8).prop_map(|key| Op::Burst { key }),
    ]
}

fn body(op: &Op) -> Value {
    match op {
        Op::Complete { .. } | Op::Burst { .. } => {
            json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "TEA-GREEN"}})
        }
        Op::OtherParams { .. } => {
            json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "MUG-BLUE"}})
        }
        Op::Fail { .. } => {
            json!({"domain": "flaky.sandbox.test", "action": "server_error", "params": {}})
        }
        Op::Timeout { .. } => {
            json!({"domain": "flaky.sandbox.test", "action": "slow", "params": {}})
        }
    }
}

async fn send(app: &TestApp, body: &Value, key: Option<String>) -> (u16, Value) {
    let mut req = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(body);
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    let resp = req.send().await.unwrap();
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or(Value::Null),
    )
}

fn run_property(name: &'static str, make: crate::helpers::StoresFactory) {
    let (runtime, mut runner) =
        svc_contract_tests::property::runner(svc_contract_tests::property::config(6));
    runner
        .run(&proptest::collection::vec(op(), 1..14), |ops| {
            runtime.block_on(async {
                let stores = make().await;
                let app = TestApp::builder()
                    .stores(stores.clone())
                    .fetch_timeout(Duration::from_millis(300))
                    .action_sites()
                    .await
                    .spawn()
                    .await;
                // What each key was first used for (same params replay; others conflict).
                let mut first_use: HashMap<u8, Value> = HashMap::new();
                // Completed task ids: each must be charged exactly once.
                let mut completed = std::collections::HashSet::new();
                for (i, op) in ops.iter().enumerate() {
                    let b = body(op);
                    let key = match op {
                        Op::Complete { key } | Op::Fail { key } | Op::Timeout { key } => *key,
                        Op::OtherParams { key } | Op::Burst { key } => Some(*key),
                    };
                    let header = key.map(|k| format!("{name}-k{k}"));
                    let answers = if let Op::Burst { .. } = op {
                        join_all((0..5).map(|_| send(&app, &b, header.clone()))).await
                    } else {
                        vec![send(&app, &b, header.clone()).await]
                    };
                    for (status, answer) in &answers {
                        let reused = key.and_then(|k| first_use.get(&k));
                        match reused {
                            Some(first) if first != &b => {
                                prop_assert_eq!(*status, 422, "op {} {:?}: {}", i, op, answer)
                            }
                            _ => prop_assert!(
                                [200, 409, 502, 504].contains(status),
                                "op {} {:?}: {} {}",
                                i,
                                op,
                                status,
                                answer
                            ),
                        }
                        if *status == 200 {
                            completed
                                .insert(answer["task_id"].as_str().unwrap_or_default().to_owned());
                        }
                    }
                    if let Some(k) = key {
                        first_use.entry(k).or_insert(b);
                    }
                }
                // Every request was answered, so no task is left in flight: nothing is held.
                let principal = app.services.auth.authenticate(&app.api_key).await.unwrap();
                let account = principal.account.id;
                let balance = stores.ledger.balance(&account).await.unwrap();
                let entries = stores.ledger.entries(&account, 100_000).await.unwrap();
                prop_assert_eq!(
                    balance.spendable,
                    entries.iter().map(|e| e.delta).sum::<i64>()
                );
                prop_assert_eq!(balance.held, 0);
                prop_assert!(balance.spendable >= 0);
                let mut per_task: HashMap<String, Vec<(EntryKind, i64)>> = HashMap::new();
                for e in &entries {
                    if let Some(task) = e.reference.as_deref().and_then(|r| r.strip_prefix("task:"))
                    {
                        let id = task.split(':').next().unwrap_or_default().to_owned();
                        per_task.entry(id).or_default().push((e.kind, e.delta));
                    }
                }
                for (task, moves) in &per_task {
                    let captures = moves
                        .iter()
                        .filter(|(k, _)| *k == EntryKind::Capture)
                        .count();
                    let refunds = moves
                        .iter()
                        .filter(|(k, _)| *k == EntryKind::Refund)
                        .count();
                    prop_assert!(
                        captures + refunds == 1,
                        "task {} settled {} times",
                        task,
                        captures + refunds
                    );
                    if refunds == 1 {
                        prop_assert_eq!(
                            moves.iter().map(|(_, d)| d).sum::<i64>(),
                            0,
                            "failed task {} nets zero",
                            task
                        );
                    }
                    prop_assert_eq!(
                        captures == 1,
                        completed.contains(task),
                        "task {} charged iff it completed",
                        task
                    );
                }
                prop_assert_eq!(
                    1000 - balance.spendable,
                    completed.len() as i64,
                    "one credit per completed task"
                );
                Ok(())
            })
        })
        .unwrap();
}

#[test]
fn money_invariants_hold_end_to_end_in_memory() {
    run_property("memory", crate::helpers::memory_stores());
}

#[test]
fn money_invariants_hold_end_to_end_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_property("sqlite", crate::helpers::sqlite_stores(dir.path()));
}

#[test]
fn money_invariants_hold_end_to_end_on_postgres() {
    run_property("postgres", crate::helpers::postgres_stores());
}
