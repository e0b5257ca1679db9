//! Issue 18: limits that protect accounts hold across instances, and the client address they
//! count cannot be forged through forwarding headers.

use futures_util::future::join_all;
use serde_json::{Value, json};
use svc::startup::Stores;

use crate::helpers::{TestApp, latest_code, problem};

async fn register(app: &TestApp, email: &str) -> String {
    let resp = app
        .http
        .post(app.url("/api/register"))
        .json(&json!({"email": email}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    body["deviceId"].as_str().unwrap().to_owned()
}

/// Two instances on one Postgres database, as behind a load balancer: 30 wrong codes sent at
/// once, alternating between them, from one address. Together they check exactly the
/// documented 20 (`wrong_codes_per_ip`); the other 10 are `locked_out`, and so is the right
/// code afterwards, on either instance. (Each instance counted its own 20 before.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_postgres_allow_only_the_documented_wrong_codes() {
    let url = svc_contract_tests::postgres_database().await;
    let a = TestApp::builder()
        .outbox()
        .stores(Stores::open(&url, 8).await.unwrap())
        .spawn()
        .await;
    let b = TestApp::builder()
        .outbox()
        .stores(Stores::open(&url, 8).await.unwrap())
        .spawn()
        .await;
    let documented = a.get_json("/.well-known/sandbox.json").await;
    let limit = documented["limits"]["wrong_codes_per_ip"]
        .as_u64()
        .or_else(|| find_number(&documented, "wrong_codes_per_ip"))
        .expect("wrong_codes_per_ip is published");
    assert_eq!(limit, 20);

    // Six challenges take five wrong tries each: 30 wrong codes in all.
    let mut attempts = Vec::new();
    for i in 0..6 {
        let email = format!("shared{i}@example.com");
        let device_id = register(&a, &email).await;
        let code = latest_code(&a, &email).await;
        let wrong = if code == "999999" { "888888" } else { "999999" };
        for j in 0..5 {
            let app = if (i + j) % 2 == 0 { &a } else { &b };
            attempts.push((app, device_id.clone(), wrong.to_owned()));
        }
    }
    let answers = join_all(attempts.iter().map(|(app, device_id, wrong)| async move {
        app.http
            .post(app.url("/api/verify"))
            .json(&json!({"deviceId": device_id, "code": wrong}))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }))
    .await;
    let checked = answers.iter().filter(|s| **s == 422).count();
    let locked = answers.iter().filter(|s| **s == 429).count();
    assert_eq!(
        (checked, locked),
        (limit as usize, 30 - limit as usize),
        "{answers:?}"
    );

    // The right code is refused too now, whichever instance it reaches.
    let device_id = register(&b, "shared-right@example.com").await;
    let code = latest_code(&b, "shared-right@example.com").await;
    for app in [&a, &b] {
        let resp = app
            .http
            .post(app.url("/api/verify"))
            .json(&json!({"deviceId": device_id, "code": code}))
            .send()
            .await
            .unwrap();
        assert!(resp.headers().contains_key("retry-after"));
        problem(resp, 429, "locked_out").await;
    }
}

fn find_number(v: &Value, name: &str) -> Option<u64> {
    match v {
        Value::Object(map) => map
            .get(name)
            .and_then(Value::as_u64)
            .or_else(|| map.values().find_map(|v| find_number(v, name))),
        Value::Array(items) => items.iter().find_map(|v| find_number(v, name)),
        _ => None,
    }
}

/// Two instances on one Postgres share the readiness-scan budget of an address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_scan_budget_per_address() {
    let url = svc_contract_tests::postgres_database().await;
    let spawn = || async {
        TestApp::builder()
            .runtime(|r| r.scan_rate_limit_per_ip = 3)
            .stores(Stores::open(&url, 4).await.unwrap())
            .spawn()
            .await
    };
    let (a, b) = (spawn().await, spawn().await);
    let mut statuses = Vec::new();
    for app in [&a, &b, &a, &b] {
        statuses.push(scan(app, &[]).await);
    }
    // An empty URL is refused (422) after the scan was counted.
    assert_eq!(statuses, [422, 422, 422, 429]);
}

/// One readiness scan (of an empty URL, so nothing is fetched) with these headers; its status.
async fn scan(app: &TestApp, headers: &[(&str, &str)]) -> u16 {
    let mut req = app
        .http
        .post(app.url("/api/readiness/scan"))
        .json(&json!({"url": ""}));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.send().await.unwrap().status().as_u16()
}

/// The scan limit (one per minute here) shows which address the service counted.
async fn app_trusting(list: Option<&str>, header: &str, old_switch: bool) -> TestApp {
    let list = list.map(str::to_owned);
    let header = header.to_owned();
    TestApp::builder()
        .runtime(move |r| {
            r.scan_rate_limit_per_ip = 1;
            r.trusted_proxies = list;
            r.forwarded_header = header;
            r.trust_forwarded_for = old_switch;
        })
        .spawn()
        .await
}

#[tokio::test]
async fn behind_a_trusted_proxy_forged_left_entries_are_ignored() {
    let app = app_trusting(Some("127.0.0.1"), "x-forwarded-for", false).await;
    let xff = |v: &'static str| [("X-Forwarded-For", v)];
    assert_eq!(scan(&app, &xff("6.6.6.6, 198.51.100.1")).await, 422);
    // Another forged left part is the same client: the one the proxy appended.
    assert_eq!(scan(&app, &xff("7.7.7.7, 198.51.100.1")).await, 429);
    assert_eq!(scan(&app, &xff("198.51.100.1")).await, 429);
    // The same header twice is one list.
    let two = app
        .http
        .post(app.url("/api/readiness/scan"))
        .header("X-Forwarded-For", "8.8.8.8")
        .header("X-Forwarded-For", "198.51.100.1")
        .json(&json!({"url": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(two.status(), 429);
    // Another client behind the proxy has its own budget.
    assert_eq!(scan(&app, &xff("198.51.100.2")).await, 422);
    // Through a chain of trusted proxies (127.0.0.0/8 here) the walk goes on leftwards.
    let chain = app_trusting(Some("127.0.0.0/8"), "x-forwarded-for", false).await;
    assert_eq!(
        scan(&chain, &xff("6.6.6.6, 203.0.113.5, 127.0.0.9")).await,
        422
    );
    assert_eq!(scan(&chain, &xff("203.0.113.5")).await, 429);
}

#[tokio::test]
async fn without_trusted_proxies_forwarding_headers_are_ignored() {
    let app = app_trusting(None, "x-forwarded-for", false).await;
    assert_eq!(
        scan(&app, &[("X-Forwarded-For", "198.51.100.3")]).await,
        422
    );
    // A different claimed address is still the same peer.
    assert_eq!(
        scan(&app, &[("X-Forwarded-For", "198.51.100.4")]).await,
        429
    );
    assert_eq!(scan(&app, &[("Forwarded", "for=198.51.100.5")]).await, 429);
    assert_eq!(scan(&app, &[]).await, 429);
}

#[tokio::test]
async fn rfc_7239_forwarded_is_read_when_configured() {
    let app = app_trusting(Some("127.0.0.1"), "forwarded", false).await;
    let fwd = |v: &'static str| [("Forwarded", v)];
    assert_eq!(
        scan(
            &app,
            &fwd(r#"for=6.6.6.6, for="[2001:db8:7:7::1]:4711";proto=https"#)
        )
        .await,
        422
    );
    // Another host of the same /64 is the same client; X-Forwarded-For is not read.
    assert_eq!(scan(&app, &fwd(r#"for="[2001:db8:7:7::2]""#)).await, 429);
    assert_eq!(
        scan(&app, &[("X-Forwarded-For", "198.51.100.9")]).await,
        422
    );
    assert_eq!(
        scan(&app, &[("X-Forwarded-For", "198.51.100.10")]).await,
        429
    );
}

/// The deprecated switch now means one hop: the entry the immediate peer appended.
#[tokio::test]
async fn the_old_switch_takes_the_right_most_entry() {
    let app = app_trusting(None, "x-forwarded-for", true).await;
    let xff = |v: &'static str| [("X-Forwarded-For", v)];
    assert_eq!(scan(&app, &xff("6.6.6.6, 198.51.100.20")).await, 422);
    assert_eq!(scan(&app, &xff("9.9.9.9, 198.51.100.20")).await, 429);
}

/// The wrong codes sent over MCP and A2A count against the caller's address as the REST and
/// web ones do (they were counted per code only): 20 wrong codes spread over REST, MCP and A2A
/// lock the address out, and the 21st, over MCP, is `locked_out`.
#[tokio::test]
async fn wrong_codes_over_mcp_and_a2a_count_against_the_address() {
    let app = TestApp::builder().outbox().spawn().await;
    let mcp_verify = |device: String| {
        let app = &app;
        async move {
            let (status, body) = app
                .mcp(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                        "name": "svc_complete_api_key_signup",
                        "arguments": {"deviceId": device, "code": "000000"}}}),
                    None,
                    "2025-11-25",
                )
                .await;
            assert_eq!(status, 200, "{body}");
            body["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    let mut device = String::new();
    for i in 0..20 {
        if i % 5 == 0 {
            device = register(&app, &format!("spread{i}@example.com")).await;
        }
        let answer = match i % 3 {
            0 => mcp_verify(device.clone()).await,
            1 => app
                .a2a(
                    "tasks/create",
                    json!({"task_type": "complete_api_key_signup", "deviceId": device, "code": "000000"}),
                )
                .await["result"]["artifacts"][0]["parts"][0]["data"]["failure_class"]
                .to_string(),
            _ => app
                .http
                .post(app.url("/api/verify"))
                .json(&json!({"deviceId": device, "code": "000000"}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap(),
        };
        assert!(!answer.contains("locked_out"), "wrong code {i}: {answer}");
    }
    let fresh = register(&app, "spread-last@example.com").await;
    let locked = mcp_verify(fresh).await;
    assert!(locked.contains("locked_out"), "{locked}");
}
