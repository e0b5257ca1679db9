//! The property test of `AuthorityStore` and spending with `begin_task`: random sequences of
//! spends, revocations, clock advances and settlements against the rules.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use svc_ports::{
    AuthorityInterval, AuthorityRefusal, BeginOutcome, PaymentAuthority, SettleOutcome, TaskId,
    authority::{check_spend, window_start},
};

use super::{authority, paying, spend, usage_of};
use crate::{
    actions::{funded, settlement},
    scenarios::{BackendFuture, t0},
};

#[derive(Debug, Clone)]
enum Op {
    /// Spend under authority `auth` (3: one that does not exist) with a key from a small set.
    Spend {
        auth: usize,
        amount: i64,
        key: Option<u8>,
    },
    Advance {
        hours: i64,
    },
    Revoke {
        auth: usize,
    },
    /// Settle the n-th begun task (mod count).
    Settle {
        nth: usize,
        completed: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..4usize, 1..12i64, proptest::option::of(0..3u8))
            .prop_map(|(auth, amount, key)| Op::Spend { auth, amount, key }),
        1 => (1..60i64).prop_map(|hours| Op::Advance { hours }),
        1 => (0..3usize).prop_map(|auth| Op::Revoke { auth }),
        2 => (0..20usize, any::<bool>()).prop_map(|(nth, completed)| Op::Settle { nth, completed }),
    ]
}

fn spec() -> impl Strategy<Value = (i64, AuthorityInterval, i64)> {
    (
        1..20i64,
        prop::sample::select(AuthorityInterval::ALL.to_vec()),
        1..(24 * 12i64),
    )
}

/// Random spends against random authorities, with revocations, clock advances and settlements:
/// the store's answer always equals the rules applied to what it holds, and afterwards no
/// window holds more than the limit, nothing was spent at or after expiry or after a
/// revocation, and a single-use authority has at most one live spend.
pub fn authority_property(make: impl Fn() -> BackendFuture) {
    let (runtime, mut runner) = crate::property::runner(crate::property::config(16));
    let strategy = (
        proptest::collection::vec(spec(), 3),
        proptest::collection::vec(op(), 1..40),
    );
    runner
        .run(&strategy, |(specs, ops)| {
            runtime.block_on(async {
                let b = make().await;
                let acct = funded(&b, "pa-prop@example.com", 10_000).await;
                let mut auths: Vec<PaymentAuthority> = Vec::new();
                for (value, interval, hours) in &specs {
                    let a = authority(&acct, *value, *interval, Duration::hours(*hours));
                    b.authorities.insert_authority(&a).await.unwrap();
                    auths.push(a);
                }
                let ghost = authority(&acct, 1, AuthorityInterval::Day, Duration::days(1));
                let mut now = t0();
                // The model: live spends (authority index, task, amount, window start), tasks by key.
                let mut live: Vec<(usize, TaskId, i64, DateTime<Utc>)> = Vec::new();
                let mut keys: HashMap<u8, (TaskId, String)> = HashMap::new();
                let mut begun: Vec<TaskId> = Vec::new();
                let mut settled: HashMap<TaskId, bool> = HashMap::new();
                let mut revoked_after: HashMap<usize, usize> = HashMap::new(); // auth -> live spends at revocation
                for op in &ops {
                    match op {
                        Op::Advance { hours } => now += Duration::hours(*hours),
                        Op::Revoke { auth } => {
                            let a = &mut auths[*auth];
                            let r = b
                                .authorities
                                .revoke_authority(&acct, &a.authority_id, now)
                                .await
                                .unwrap();
                            if a.revoked_at.is_none() {
                                a.revoked_at = Some(now);
                            }
                            prop_assert_eq!(r.revoked_at, a.revoked_at);
                            revoked_after.entry(*auth).or_insert(begun.len());
                        }
                        Op::Spend { auth, amount, key } => {
                            let target = auths.get(*auth).unwrap_or(&ghost);
                            let fingerprint = format!("{auth}:{amount}");
                            let key_s = key.map(|k| format!("k{k}"));
                            let t = paying(
                                &acct,
                                key_s.as_deref(),
                                &fingerprint,
                                spend(target, *amount),
                                now,
                            );
                            let outcome = b.tasks.begin_task(&t).await.unwrap();
                            if let Some((_, fp)) = key.and_then(|k| keys.get(&k)) {
                                let same = fp == &fingerprint;
                                prop_assert!(
                                    matches!(
                                        (&outcome, same),
                                        (BeginOutcome::Conflict(_), false)
                                            | (
                                                BeginOutcome::InFlight(_) | BeginOutcome::Replay(_),
                                                true
                                            )
                                    ),
                                    "{:?}",
                                    outcome
                                );
                                continue;
                            }
                            let expected = if *auth < auths.len() {
                                let start = window_start(target, now);
                                let in_window = live
                                    .iter()
                                    .filter(|(i, _, _, w)| i == auth && *w == start)
                                    .map(|(_, _, amount, _)| amount)
                                    .sum();
                                check_spend(target, &acct, &spend(target, *amount), in_window, now)
                            } else {
                                Err(AuthorityRefusal::UnknownAuthority)
                            };
                            match (outcome, expected) {
                                (BeginOutcome::Started { task: r, .. }, Ok(start)) => {
                                    live.push((*auth, r.id.clone(), *amount, start));
                                    begun.push(r.id.clone());
                                    if let Some(k) = key {
                                        keys.insert(*k, (r.id, fingerprint));
                                    }
                                }
                                (BeginOutcome::AuthorityRefused(got), Err(want)) => {
                                    prop_assert_eq!(got, want)
                                }
                                (got, want) => prop_assert!(
                                    false,
                                    "{}: got {:?}, the rules say {:?}",
                                    b.name,
                                    got,
                                    want
                                ),
                            }
                        }
                        Op::Settle { nth, completed } => {
                            if begun.is_empty() {
                                continue;
                            }
                            let id = begun[nth % begun.len()].clone();
                            let outcome = b
                                .tasks
                                .settle_task(&settlement(&id, *completed, now))
                                .await
                                .unwrap();
                            match outcome {
                                SettleOutcome::Settled(..) => {
                                    prop_assert!(!settled.contains_key(&id));
                                    settled.insert(id.clone(), *completed);
                                    if !completed {
                                        live.retain(|(_, t, _, _)| t != &id);
                                    }
                                }
                                SettleOutcome::AlreadySettled(_) => {
                                    prop_assert!(settled.contains_key(&id))
                                }
                            }
                        }
                    }
                }
                // The invariants, from what the store holds.
                for (i, a) in auths.iter().enumerate() {
                    let spends = b
                        .authorities
                        .authority_spends(&a.authority_id)
                        .await
                        .unwrap();
                    let live_spends: Vec<_> =
                        spends.iter().filter(|s| s.released_at.is_none()).collect();
                    let mut per_window: HashMap<DateTime<Utc>, i64> = HashMap::new();
                    for s in &live_spends {
                        *per_window.entry(s.window_start).or_default() += s.amount;
                        prop_assert_eq!(s.window_start, window_start(a, s.spent_at));
                    }
                    for total in per_window.values() {
                        prop_assert!(
                            *total <= a.amount_limit.value(),
                            "{}: {} spent in one window of {}",
                            b.name,
                            total,
                            a.amount_limit.value()
                        );
                    }
                    for s in &spends {
                        prop_assert!(s.spent_at < a.expires_at, "{}: spent after expiry", b.name);
                        prop_assert_eq!(
                            s.released_at.is_some(),
                            settled.get(&s.task_id) == Some(&false)
                        );
                    }
                    if a.amount_limit.interval() == AuthorityInterval::SingleUse {
                        prop_assert!(
                            live_spends.len() <= 1,
                            "{}: single use spent {} times",
                            b.name,
                            live_spends.len()
                        );
                    }
                    if let Some(n) = revoked_after.get(&i) {
                        let after: Vec<&TaskId> = begun[*n..].iter().collect();
                        prop_assert!(
                            spends.iter().all(|s| !after.contains(&&s.task_id)),
                            "{}: spent after revocation",
                            b.name
                        );
                    }
                    let usage = usage_of(&b, &a.authority_id, now).await;
                    let model: i64 = live
                        .iter()
                        .filter(|(j, _, _, w)| *j == i && *w == window_start(a, now))
                        .map(|(_, _, amount, _)| amount)
                        .sum();
                    prop_assert_eq!(usage.spent_in_window, model);
                    prop_assert_eq!(
                        usage.spends as usize,
                        live.iter().filter(|(j, _, _, _)| *j == i).count()
                    );
                }
                Ok(())
            })
        })
        .unwrap();
}
