//! End to end, on every store: random interleavings of checkouts, payments, refunds, disputes,
//! webhook replays, badly signed deliveries and executions, through the sandbox's payment
//! provider and the real HTTP face, keep the books: the balance equals the ledger entries, the
//! frozen credits equal the receipts, no delivery is applied twice, nothing that failed
//! verification moves a credit, and no checkout is credited without a verified payment.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use serde_json::{Value, json};
use svc_ports::{ReceiptKind, ledger::EntryKind};

use crate::helpers::{TestApp, bearer};

#[derive(Debug, Clone)]
enum Op {
    Checkout,
    Send {
        checkout: usize,
        event: &'static str,
        variant: &'static str,
        amount: Option<i64>,
    },
    Replay,
    Execute,
}

fn op() -> impl Strategy<Value = Op> {
    let event = prop_oneof![
        3 => Just("pay"),
        1 => Just("payment_succeeded"),
        2 => Just("refund"),
        2 => Just("dispute"),
        1 => Just("dispute_won"),
        1 => Just("dispute_lost"),
    ];
    let variant = prop_oneof![
        5 => Just("ok"),
        1 => Just("tampered"),
        1 => Just("stale"),
        1 => Just("wrong_secret"),
    ];
    prop_oneof![
        2 => Just(Op::Checkout),
        6 => (0..3usize, event, variant, proptest::option::of(1..900i64))
            .prop_map(|(checkout, event, variant, amount)| Op::Send { checkout, event, variant, amount }),
        2 => Just(Op::Replay),
        2 => Just(Op::Execute),
    ]
}

async fn balance(app: &TestApp) -> (i64, i64) {
    let usage: Value = app.get_json_as_owner("/api/usage").await;
    (
        usage["balance"]["spendable"].as_i64().unwrap(),
        usage["balance"]["frozen"].as_i64().unwrap(),
    )
}

/// Asks the provider to send; the service's statuses (none when the provider had nothing to send).
async fn send(app: &TestApp, body: Value) -> Vec<u64> {
    let provider = app.payments.as_ref().unwrap().uri();
    let answer: Value = app
        .http
        .post(format!("{provider}/qa/send"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["deliveries"]
        .as_array()
        .map(|d| d.iter().map(|x| x["status"].as_u64().unwrap()).collect())
        .unwrap_or_default()
}

fn run_property(make: crate::helpers::StoresFactory) {
    let (runtime, mut runner) =
        svc_contract_tests::property::runner(svc_contract_tests::property::config(6));
    runner
        .run(&proptest::collection::vec(op(), 1..16), |ops| {
            runtime.block_on(async {
                let stores = make().await;
                let app = TestApp::builder()
                    .stores(stores.clone())
                    .payments()
                    .await
                    .action_sites()
                    .await
                    .spawn()
                    .await;
                let mut sessions: Vec<(String, String)> = Vec::new(); // (provider session, checkout id)
                let mut paid_ok: HashSet<String> = HashSet::new();
                let mut executed = 0i64;
                for (i, op) in ops.iter().enumerate() {
                    let before = balance(&app).await;
                    match op {
                        Op::Checkout => {
                            let c: Value = app
                                .http
                                .post(app.url("/sandbox/checkouts"))
                                .header("Authorization", bearer(&app.api_key))
                                .send()
                                .await
                                .unwrap()
                                .json()
                                .await
                                .unwrap();
                            sessions.push((
                                c["provider_session_id"].as_str().unwrap().to_owned(),
                                c["checkout_id"].as_str().unwrap().to_owned(),
                            ));
                        }
                        Op::Send { checkout, event, variant, amount } => {
                            let Some((session, checkout_id)) = sessions.get(*checkout) else { continue };
                            let statuses = send(&app, json!({"session_id": session, "event": event,
                                "variant": variant, "amount": amount})).await;
                            if *variant == "ok" {
                                prop_assert!(statuses.iter().all(|s| *s == 200), "op {} {:?}: {:?}", i, op, statuses);
                                if ["pay", "payment_succeeded"].contains(event) {
                                    paid_ok.insert(checkout_id.clone());
                                }
                            } else {
                                prop_assert!(statuses.iter().all(|s| *s == 400), "op {} {:?}: {:?}", i, op, statuses);
                                prop_assert_eq!(balance(&app).await, before, "op {} {:?} moved credits", i, op);
                            }
                        }
                        Op::Replay => {
                            let statuses = send(&app, json!({"event": "replay"})).await;
                            prop_assert!(statuses.iter().all(|s| *s == 200), "replay: {:?}", statuses);
                            prop_assert_eq!(balance(&app).await, before, "op {}: a replay moved credits", i);
                        }
                        Op::Execute => {
                            let resp = app
                                .http
                                .post(app.url("/api/execute"))
                                .header("Authorization", bearer(&app.api_key))
                                .json(&json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "TEA-GREEN"}}))
                                .send()
                                .await
                                .unwrap();
                            if resp.status() == 200 {
                                executed += 1;
                            } else {
                                prop_assert_eq!(resp.status(), 402, "op {}", i);
                            }
                        }
                    }
                }
                let principal = app.services.auth.authenticate(&app.api_key).await.unwrap();
                let account = principal.account.id;
                let balance = stores.ledger.balance(&account).await.unwrap();
                let entries = stores.ledger.entries(&account, 100_000).await.unwrap();
                let receipts = stores.billing.receipts(&account, 100_000).await.unwrap();
                prop_assert_eq!(balance.spendable, entries.iter().map(|e| e.delta).sum::<i64>());
                prop_assert_eq!(balance.frozen, receipts.iter().map(|r| r.frozen_delta).sum::<i64>());
                prop_assert!(balance.spendable >= 0 && balance.frozen >= 0 && balance.held == 0);
                // Every payment movement is one ledger entry and one receipt, never two.
                let payment_entries: Vec<_> = entries
                    .iter()
                    .filter(|e| e.reference.as_deref().is_some_and(|r| r.starts_with("payment:")))
                    .collect();
                let payment_receipts: Vec<_> = receipts.iter().filter(|r| r.payment_id.is_some()).collect();
                prop_assert_eq!(payment_entries.len(), payment_receipts.len());
                let refs: HashSet<_> = payment_receipts.iter().map(|r| r.reference.as_str()).collect();
                prop_assert_eq!(refs.len(), payment_receipts.len());
                // A purchase only for a checkout whose payment was sent well signed, and once.
                let mut purchases: HashMap<String, usize> = HashMap::new();
                for r in receipts.iter().filter(|r| r.kind == ReceiptKind::Purchase) {
                    *purchases.entry(r.checkout_id.as_ref().unwrap().to_string()).or_default() += 1;
                }
                for (checkout, n) in &purchases {
                    prop_assert_eq!(*n, 1, "checkout {} credited {} times", checkout, n);
                    prop_assert!(paid_ok.contains(checkout), "checkout {} credited without a verified payment", checkout);
                }
                // The seed, plus what payments moved, minus one credit per completed action.
                let moved: i64 = payment_receipts.iter().map(|r| r.spendable_delta).sum();
                let charged = entries.iter().filter(|e| e.kind == EntryKind::Capture).count() as i64;
                prop_assert_eq!(charged, executed);
                prop_assert_eq!(balance.spendable, 1000 + moved - executed);
                Ok(())
            })
        })
        .unwrap();
}

#[test]
fn billing_keeps_the_books_in_memory() {
    run_property(crate::helpers::memory_stores());
}

#[test]
fn billing_keeps_the_books_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_property(crate::helpers::sqlite_stores(dir.path()));
}

#[test]
fn billing_keeps_the_books_on_postgres() {
    run_property(crate::helpers::postgres_stores());
}
