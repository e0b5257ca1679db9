//! No sequence of key operations widens a key: random creations (with random requested
//! scopes, by random keys), rotations, revocations, device approvals (random requested scopes,
//! the consequential box ticked or not) and the passing of time, through the real HTTP face.
//! After every step, every key of the account holds only scopes its creator held (for a device
//! approval: what the agent asked for, `execute:consequential` only if the human ticked it),
//! and each answer is the one the rule predicts.

use std::{
    collections::{BTreeSet, HashMap},
    time::Duration,
};

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::helpers::{Browser, TestApp, TestClock, bearer, csrf_of};

const SCOPES: [&str; 5] = [
    "read",
    "discover",
    "execute",
    "execute:consequential",
    "admin",
];
const GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

type Set = BTreeSet<String>;

#[derive(Debug, Clone)]
enum Op {
    /// Key `by` (an index into the keys made so far) creates a key with these scopes (or the
    /// defaults).
    Create {
        by: usize,
        scopes: Option<Set>,
    },
    Rotate {
        by: usize,
        target: usize,
    },
    Revoke {
        by: usize,
        target: usize,
    },
    /// An agent asks for these scopes; the human approves, ticking the box or not.
    Device {
        requested: Set,
        tick: bool,
    },
    AdvanceHours(u64),
}

fn scope_set(with_unknown: bool) -> impl Strategy<Value = Set> {
    let pool: Vec<&str> = SCOPES[..if with_unknown { 5 } else { 4 }].to_vec();
    proptest::sample::subsequence(pool, 1..=if with_unknown { 5 } else { 4 })
        .prop_map(|v| v.into_iter().map(str::to_owned).collect())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..8usize, proptest::option::weighted(0.8, scope_set(true)))
            .prop_map(|(by, scopes)| Op::Create { by, scopes }),
        2 => (0..8usize, 1..8usize).prop_map(|(by, target)| Op::Rotate { by, target }),
        1 => (0..8usize, 1..8usize).prop_map(|(by, target)| Op::Revoke { by, target }),
        2 => (scope_set(false), any::<bool>()).prop_map(|(requested, tick)| Op::Device { requested, tick }),
        // At most 13 x 12 h: the human's web session (7 days) outlives every case.
        1 => (1..12u64).prop_map(Op::AdvanceHours),
    ]
}

fn set_of(v: &Value) -> Set {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// The account's keys by prefix: (status, scopes).
async fn listed(app: &TestApp) -> HashMap<String, (String, Set)> {
    let body: Value = app
        .http
        .get(app.url("/api/keys"))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["prefix"].as_str().unwrap().to_owned(),
                (
                    k["status"].as_str().unwrap().to_owned(),
                    set_of(&k["scopes"]),
                ),
            )
        })
        .collect()
}

async fn device_key(
    app: &TestApp,
    clock: &TestClock,
    browser: &Browser,
    requested: &Set,
    tick: bool,
) -> String {
    let scope = requested.iter().cloned().collect::<Vec<_>>().join(" ");
    let started: Value = app
        .http
        .post(app.url("/agent/identity"))
        .form(&[("client_id", "prop-agent"), ("scope", scope.as_str())])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let user_code = started["user_code"].as_str().unwrap().to_owned();
    let page = browser
        .page(&format!("/device?user_code={user_code}"))
        .await;
    let csrf = csrf_of(&page);
    let mut form = vec![
        ("csrf", csrf.as_str()),
        ("user_code", user_code.as_str()),
        ("decision", "approve"),
    ];
    if tick {
        form.push(("consequential", "1"));
    }
    let (status, _) = browser.follow(browser.post("/device", &form).await).await;
    assert_eq!(status, 200);
    clock.advance(Duration::from_secs(6));
    let token: Value = app
        .http
        .post(app.url("/oauth2/token"))
        .form(&[
            ("grant_type", GRANT),
            ("device_code", started["device_code"].as_str().unwrap()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    token["api_key"].as_str().unwrap().to_owned()
}

fn run_property(make: crate::helpers::StoresFactory) {
    // What the cases did, so a property that only ever skipped cannot pass.
    let tally = std::cell::Cell::new([0usize; 4]);
    let count = |i: usize| {
        let mut t = tally.get();
        t[i] += 1;
        tally.set(t);
    };
    let (runtime, mut runner) =
        svc_contract_tests::property::runner(svc_contract_tests::property::config(16));
    runner
        .run(&proptest::collection::vec(op(), 1..14), |ops| {
            runtime.block_on(async {
                let stores = make().await;
                let clock = TestClock::new();
                let app = TestApp::builder()
                    .stores(stores)
                    .outbox()
                    .clock(clock.clone())
                    .spawn()
                    .await;
                let browser = Browser::new(&app);
                browser
                    .sign_in(&app, svc::startup::SANDBOX_EMAIL, "/account")
                    .await;
                // The keys the test holds (index 0: the seed, never rotated or revoked here),
                // and what each key's creator held: its scopes may never exceed that.
                let mut keys = vec![app.api_key.clone()];
                let seed: Set = SCOPES[..4].iter().map(|s| s.to_string()).collect();
                let mut bound: HashMap<String, Set> =
                    HashMap::from([(app.api_key[..17].to_owned(), seed)]);
                for (i, op) in ops.iter().enumerate() {
                    let before = listed(&app).await;
                    let held = |key: &str| before.get(&key[..17]).cloned();
                    match op {
                        Op::Create { by, scopes } => {
                            let by = &keys[by % keys.len()];
                            let Some((status, holds)) = held(by) else {
                                continue;
                            };
                            let body = match scopes {
                                Some(s) => json!({ "scopes": s }),
                                None => json!({}),
                            };
                            let resp = app
                                .http
                                .post(app.url("/api/keys"))
                                .header("Authorization", bearer(by))
                                .json(&body)
                                .send()
                                .await
                                .unwrap();
                            let code = resp.status().as_u16();
                            let works = status == "active" || status == "rotating";
                            let expected = match scopes {
                                _ if !works => 401,
                                // A rotated key in its overlap manages no key.
                                _ if status == "rotating" => 403,
                                // `admin` is no scope at all: a bad request, whoever asks.
                                Some(s) if s.contains("admin") => 422,
                                Some(s) if !s.is_subset(&holds) => 403,
                                None if holds.iter().all(|s| s == "execute:consequential") => 422,
                                _ => 201,
                            };
                            prop_assert_eq!(code, expected, "op {} {:?} holds {:?}", i, op, holds);
                            count(usize::from(code != 201));
                            if code == 201 {
                                let made: Value = resp.json().await.unwrap();
                                let key = made["api_key"].as_str().unwrap().to_owned();
                                bound.insert(key[..17].to_owned(), holds);
                                keys.push(key);
                            }
                        }
                        Op::Rotate { by, target } | Op::Revoke { by, target } => {
                            let by = keys[by % keys.len()].clone();
                            let target_index = 1 + target % keys.len().max(2).saturating_sub(1);
                            let Some(target) = keys.get(target_index).cloned() else {
                                continue;
                            };
                            let (Some((by_status, holds)), Some((t_status, t_scopes))) =
                                (held(&by), held(&target))
                            else {
                                continue;
                            };
                            let rotating = matches!(op, Op::Rotate { .. });
                            let path = if rotating {
                                format!("/api/keys/{}/rotate", &target[..17])
                            } else {
                                format!("/api/keys/{}", &target[..17])
                            };
                            let req = if rotating {
                                app.http.post(app.url(&path))
                            } else {
                                app.http.delete(app.url(&path))
                            };
                            let resp = req
                                .header("Authorization", bearer(&by))
                                .send()
                                .await
                                .unwrap();
                            let code = resp.status().as_u16();
                            let works = by_status == "active" || by_status == "rotating";
                            let expected = if !works {
                                401
                            } else if by_status == "rotating" && by[..17] != target[..17] {
                                // A rotated key in its overlap acts on itself alone.
                                403
                            } else if !t_scopes.is_subset(&holds) {
                                403
                            } else if rotating && t_status != "active" {
                                409
                            } else {
                                200
                            };
                            prop_assert_eq!(code, expected, "op {} {:?}", i, op);
                            if rotating && code == 200 {
                                count(2);
                                let made: Value = resp.json().await.unwrap();
                                prop_assert_eq!(set_of(&made["key"]["scopes"]), t_scopes);
                                let key = made["api_key"].as_str().unwrap().to_owned();
                                bound.insert(key[..17].to_owned(), holds);
                                keys.push(key);
                            }
                        }
                        Op::Device { requested, tick } => {
                            let key = device_key(&app, &clock, &browser, requested, *tick).await;
                            let mut granted = requested.clone();
                            if !tick {
                                granted.remove("execute:consequential");
                            }
                            bound.insert(key[..17].to_owned(), granted);
                            keys.push(key);
                            count(3);
                        }
                        Op::AdvanceHours(h) => clock.advance(Duration::from_secs(h * 3600)),
                    }
                    // No key of the account holds more than its creator did.
                    for (prefix, (_, scopes)) in listed(&app).await {
                        let creator = bound.get(&prefix);
                        prop_assert!(creator.is_some(), "op {}: a key nobody made: {}", i, prefix);
                        prop_assert!(
                            scopes.is_subset(creator.unwrap()),
                            "op {} {:?}: {} holds {:?} beyond its creator's {:?}",
                            i,
                            op,
                            prefix,
                            scopes,
                            creator.unwrap()
                        );
                    }
                }
                Ok(())
            })
        })
        .unwrap();
    let [created, refused, rotated, approved] = tally.get();
    assert!(
        created > 0 && refused > 0 && rotated > 0 && approved > 0,
        "the cases exercised too little: {:?}",
        tally.get()
    );
}

#[test]
fn no_key_operation_widens_a_key_in_memory() {
    run_property(crate::helpers::memory_stores());
}

#[test]
fn no_key_operation_widens_a_key_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_property(crate::helpers::sqlite_stores(dir.path()));
}
