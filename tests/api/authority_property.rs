//! End to end, on every store: random payments (single ones, concurrent bursts, ones the site
//! declines), revocations and the passing of time, against a random authority, through the
//! real HTTP face. The spends never exceed `amount_limit` within a window, nothing is spent
//! after revocation or expiry, and a single-use authority pays at most once.

use std::{collections::HashMap, sync::Arc, time::Duration};

use futures_util::future::join_all;
use proptest::prelude::*;
use serde_json::Value;
use svc::services::NewAuthority;
use svc_ports::{AuthorityId, AuthorityInterval};

use crate::{
    authority::pay,
    helpers::{TestApp, TestClock, bearer},
};

#[derive(Debug, Clone)]
enum Op {
    Spend(i64),
    /// A payment the site declines: refunded, its spend given back.
    Declined(i64),
    /// Several payments at once.
    Burst(Vec<i64>),
    Revoke,
    AdvanceHours(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1..700i64).prop_map(Op::Spend),
        1 => (1..700i64).prop_map(Op::Declined),
        4 => proptest::collection::vec(1..500i64, 2..6).prop_map(Op::Burst),
        1 => Just(Op::Revoke),
        2 => (1..40i64).prop_map(Op::AdvanceHours),
    ]
}

fn interval() -> impl Strategy<Value = AuthorityInterval> {
    prop::sample::select(vec![
        AuthorityInterval::SingleUse,
        AuthorityInterval::Day,
        AuthorityInterval::Week,
    ])
}

fn run_property(make: crate::helpers::StoresFactory) {
    let (runtime, mut runner) =
        svc_contract_tests::property::runner(svc_contract_tests::property::config(6));
    runner
        .run(
            &(
                interval(),
                100..1500i64,
                proptest::collection::vec(op(), 1..16),
            ),
            |(interval, value, ops)| {
                runtime.block_on(async {
                    let stores = make().await;
                    let clock: Arc<TestClock> = TestClock::new();
                    let app = TestApp::builder()
                        .stores(stores.clone())
                        .clock(clock.clone())
                        .action_sites()
                        .await
                        .spawn()
                        .await;
                    let account = app
                        .services
                        .auth
                        .authenticate(&app.api_key)
                        .await
                        .unwrap()
                        .account;
                    let created = app
                        .services
                        .authorities
                        .create(
                            &account,
                            NewAuthority {
                                scope: vec!["order".into()],
                                amount: value,
                                interval: interval.as_str().into(),
                                currency: "usd".into(),
                                expires_in_days: 3,
                                agent_provider: "proptest".into(),
                                receipt_required: true,
                                verification_required: false,
                            },
                        )
                        .await
                        .unwrap();
                    let authority = created.authority;
                    let id = authority.authority_id.to_string();
                    let window_of = |now: chrono::DateTime<chrono::Utc>| {
                        svc_ports::authority::window_start(&authority, now)
                    };
                    let now = || svc_ports::Clock::now(clock.as_ref());
                    // Accepted amounts per window, by the answers.
                    let mut accepted: HashMap<chrono::DateTime<chrono::Utc>, Vec<i64>> =
                        HashMap::new();
                    let mut revoked = false;
                    let mut records_at_revocation = None;
                    for (i, op) in ops.iter().enumerate() {
                        let at = now();
                        let over = revoked || at >= authority.expires_at;
                        let window = window_of(at);
                        let spent: i64 = accepted.get(&window).map_or(0, |v| v.iter().sum());
                        let used = !accepted.is_empty();
                        let left = if over || (interval == AuthorityInterval::SingleUse && used) {
                            0
                        } else {
                            value - spent
                        };
                        match op {
                            Op::Spend(amount) => {
                                let status = pay(&app, Some(&id), *amount, "ord-1").await.status();
                                let expected = if *amount <= left { 200 } else { 403 };
                                prop_assert_eq!(
                                    status.as_u16(),
                                    expected,
                                    "op {} {:?} left {}",
                                    i,
                                    op,
                                    left
                                );
                                if status == 200 {
                                    accepted.entry(window).or_default().push(*amount);
                                }
                            }
                            Op::Declined(amount) => {
                                let status = pay(&app, Some(&id), *amount, "nope").await.status();
                                let expected = if *amount <= left { 502 } else { 403 };
                                prop_assert_eq!(
                                    status.as_u16(),
                                    expected,
                                    "op {} {:?} left {}",
                                    i,
                                    op,
                                    left
                                );
                            }
                            Op::Burst(amounts) => {
                                let answers = join_all(
                                    amounts.iter().map(|a| pay(&app, Some(&id), *a, "ord-1")),
                                )
                                .await;
                                for (amount, resp) in amounts.iter().zip(answers) {
                                    let status = resp.status().as_u16();
                                    prop_assert!(
                                        status == 200 || status == 403,
                                        "op {} {:?}: {}",
                                        i,
                                        op,
                                        status
                                    );
                                    if status == 200 {
                                        prop_assert!(
                                            !over,
                                            "op {}: paid after revocation or expiry",
                                            i
                                        );
                                        accepted.entry(window).or_default().push(*amount);
                                    }
                                }
                            }
                            Op::Revoke => {
                                let resp =
                                    app.http
                                        .post(app.url(&format!(
                                            "/api/payment-authorities/{id}/revocation"
                                        )))
                                        .header("Authorization", bearer(&app.api_key))
                                        .send()
                                        .await
                                        .unwrap();
                                prop_assert_eq!(resp.status().as_u16(), 200);
                                let body: Value = resp.json().await.unwrap();
                                prop_assert_eq!(&body["status"], "revoked");
                                revoked = true;
                                if records_at_revocation.is_none() {
                                    let aid = AuthorityId::parse(&id).unwrap();
                                    records_at_revocation = Some(
                                        stores
                                            .authorities
                                            .authority_spends(&aid)
                                            .await
                                            .unwrap()
                                            .len(),
                                    );
                                }
                            }
                            Op::AdvanceHours(h) => {
                                clock.advance(Duration::from_secs(*h as u64 * 3600));
                            }
                        }
                    }
                    // What the answers said, within the limit per window.
                    for (window, amounts) in &accepted {
                        prop_assert!(
                            amounts.iter().sum::<i64>() <= value,
                            "window {} spent {:?} over {}",
                            window,
                            amounts,
                            value
                        );
                    }
                    let paid = accepted.values().map(Vec::len).sum::<usize>();
                    if interval == AuthorityInterval::SingleUse {
                        prop_assert!(paid <= 1, "single use paid {} times", paid);
                    }
                    // What the store holds agrees.
                    let aid = AuthorityId::parse(&id).unwrap();
                    let records = stores.authorities.authority_spends(&aid).await.unwrap();
                    let live: Vec<_> = records.iter().filter(|r| r.released_at.is_none()).collect();
                    prop_assert_eq!(live.len(), paid);
                    let mut per_window: HashMap<_, i64> = HashMap::new();
                    for r in &live {
                        *per_window.entry(r.window_start).or_default() += r.amount;
                    }
                    for (window, sum) in per_window {
                        prop_assert!(
                            sum <= value,
                            "store: window {} holds {} over {}",
                            window,
                            sum,
                            value
                        );
                    }
                    if let Some(n) = records_at_revocation {
                        prop_assert_eq!(records.len(), n, "spends stored after revocation");
                    }
                    let report = app.services.authorities.report(&aid).await.unwrap();
                    if revoked {
                        prop_assert_eq!(report.usage.status.as_str(), "revoked");
                        prop_assert_eq!(report.usage.remaining, 0);
                    }
                    Ok(())
                })
            },
        )
        .unwrap();
}

#[test]
fn spends_stay_within_the_authority_in_memory() {
    run_property(crate::helpers::memory_stores());
}

#[test]
fn spends_stay_within_the_authority_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_property(crate::helpers::sqlite_stores(dir.path()));
}

#[test]
fn spends_stay_within_the_authority_on_postgres() {
    run_property(crate::helpers::postgres_stores());
}
