//! The property test of `TaskStore`: random execution sequences (begins under keys, settles,
//! replays) keep the books equal to a model of them.

use std::collections::HashMap;

use proptest::prelude::*;
use svc_ports::{BeginOutcome, SettleOutcome, TaskId, TaskStatus, ledger::EntryKind};

use super::{check_money, funded, new_task, settlement};
use crate::scenarios::{BackendFuture, t0};

#[derive(Debug, Clone)]
enum ExecOp {
    /// Begin with a key from a small set (so replays and conflicts happen) or none.
    Begin {
        key: Option<u8>,
        params: u8,
        cost: i64,
    },
    /// Settle the n-th begun task (mod count) as completed or failed.
    Settle { nth: usize, completed: bool },
}

fn exec_op() -> impl Strategy<Value = ExecOp> {
    prop_oneof![
        (proptest::option::of(0..4u8), 0..2u8, 0..4i64)
            .prop_map(|(key, params, cost)| ExecOp::Begin { key, params, cost }),
        (0..20usize, any::<bool>()).prop_map(|(nth, completed)| ExecOp::Settle { nth, completed }),
    ]
}

/// Random sequences of begins (with repeated keys and other params) and settlements (some
/// repeated): spendable always equals the sum of entries, held equals what is in flight, no
/// balance goes below zero, each task is charged at most once and a failed task nets zero.
pub fn execution_property(make: impl Fn() -> BackendFuture) {
    let (runtime, mut runner) = crate::property::runner(crate::property::config(16));
    runner
        .run(&proptest::collection::vec(exec_op(), 1..50), |ops| {
            runtime.block_on(async {
                let b = make().await;
                let a = funded(&b, "prop@example.com", 20).await;
                let mut begun: Vec<TaskId> = Vec::new();
                let mut cost_of: HashMap<TaskId, i64> = HashMap::new();
                let mut status: HashMap<TaskId, TaskStatus> = HashMap::new();
                let mut expected_spendable = 20i64;
                for op in &ops {
                    match op {
                        ExecOp::Begin { key, params, cost } => {
                            let key = key.map(|k| format!("k{k}"));
                            let t = new_task(&a, *cost, key.as_deref(), &format!("p{params}"));
                            match b.tasks.begin_task(&t).await.unwrap() {
                                BeginOutcome::Started { task: r, .. } => {
                                    expected_spendable -= cost;
                                    begun.push(r.id.clone());
                                    cost_of.insert(r.id.clone(), *cost);
                                    status.insert(r.id, TaskStatus::InFlight);
                                }
                                BeginOutcome::InsufficientCredits { spendable } => {
                                    prop_assert!(spendable < *cost);
                                    prop_assert_eq!(spendable, expected_spendable);
                                }
                                BeginOutcome::Replay(r) | BeginOutcome::InFlight(r) => {
                                    prop_assert_eq!(&r.fingerprint, &format!("p{params}"));
                                }
                                BeginOutcome::Conflict(r) => {
                                    prop_assert_ne!(&r.fingerprint, &format!("p{params}"))
                                }
                                BeginOutcome::AuthorityRefused(r) => {
                                    prop_assert!(false, "no authority was asked for: {:?}", r)
                                }
                            }
                        }
                        ExecOp::Settle { nth, completed } => {
                            if begun.is_empty() {
                                continue;
                            }
                            let id = begun[nth % begun.len()].clone();
                            let outcome = b
                                .tasks
                                .settle_task(&settlement(&id, *completed, t0()))
                                .await
                                .unwrap();
                            let was = status[&id];
                            match outcome {
                                SettleOutcome::Settled(..) => {
                                    prop_assert_eq!(was, TaskStatus::InFlight);
                                    if !completed {
                                        expected_spendable += cost_of[&id];
                                    }
                                    status.insert(
                                        id,
                                        if *completed {
                                            TaskStatus::Completed
                                        } else {
                                            TaskStatus::Failed
                                        },
                                    );
                                }
                                SettleOutcome::AlreadySettled(_) => {
                                    prop_assert_ne!(was, TaskStatus::InFlight)
                                }
                            }
                        }
                    }
                    let in_flight: i64 = status
                        .iter()
                        .filter(|(_, s)| **s == TaskStatus::InFlight)
                        .map(|(id, _)| cost_of[id])
                        .sum();
                    let (spendable, _) = check_money(&b, &a, in_flight).await;
                    prop_assert_eq!(spendable, expected_spendable);
                }
                // Per task: at most one capture or refund, and a failed task nets zero.
                let entries = b.ledger.entries(&a, 100_000).await.unwrap();
                for id in &begun {
                    let mine: Vec<_> = entries
                        .iter()
                        .filter(|e| {
                            e.reference
                                .as_deref()
                                .is_some_and(|r| r.starts_with(&format!("task:{id}:")))
                        })
                        .collect();
                    let settlements = mine
                        .iter()
                        .filter(|e| matches!(e.kind, EntryKind::Capture | EntryKind::Refund))
                        .count();
                    prop_assert!(settlements <= 1);
                    if status[id] == TaskStatus::Failed {
                        prop_assert_eq!(mine.iter().map(|e| e.delta).sum::<i64>(), 0);
                    }
                }
                Ok(())
            })
        })
        .unwrap();
}
