//! Activity and usage over HTTP and MCP: `GET /api/tasks` (filters, keyset pages that neither
//! repeat nor skip a task while new ones begin, one account's tasks only, errors) and
//! `GET /api/usage/history` (per UTC day, sums equal to the ledger's receipts), and the
//! account page's activity list, artifact and signature check. Time moves by the TestClock.

use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
    time::Duration,
};

use reqwest::{StatusCode, redirect::Policy};
use serde_json::{Value, json};

use crate::helpers::{Browser, TestApp, TestClock, bearer, csrf_of, problem};

const SHOP: &str = "shop.sandbox.test";
const FLAKY: &str = "flaky.sandbox.test";
const MINUTE: Duration = Duration::from_secs(60);

async fn app(clock: Arc<TestClock>) -> TestApp {
    TestApp::builder()
        .clock(clock)
        .outbox()
        .payments()
        .await
        .action_sites()
        .await
        .spawn()
        .await
}

/// Runs one action with `key`: a completed search on the shop, or a failing one on the flaky
/// site. Answers the task id.
async fn run(app: &TestApp, key: &str, complete: bool) -> String {
    let body = if complete {
        json!({"domain": SHOP, "action": "search_products", "params": {"query": "tea"}})
    } else {
        json!({"domain": FLAKY, "action": "server_error", "params": {}})
    };
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(key))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(status, if complete { 200 } else { 502 }, "{answer}");
    answer["task_id"].as_str().unwrap().to_owned()
}

async fn get(app: &TestApp, key: Option<&str>, path: &str) -> reqwest::Response {
    let mut req = app.http.get(app.url(path));
    if let Some(k) = key {
        req = req.header("Authorization", bearer(k));
    }
    req.send().await.unwrap()
}

async fn list(app: &TestApp, key: &str, query: &str) -> Value {
    let resp = get(app, Some(key), &format!("/api/tasks{query}")).await;
    assert_eq!(resp.status(), 200, "{query}");
    resp.json().await.unwrap()
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task_id"].as_str().unwrap().to_owned())
        .collect()
}

fn encoded(time: chrono::DateTime<chrono::Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A new key of the account of `email` (created if new), with 100 credits granted to it.
async fn key_of(app: &TestApp, email: &str) -> String {
    app.services
        .keys
        .create_key(svc::services::CreateKey {
            email: svc_ports::Email::parse(email).unwrap(),
            plan: svc_ports::Plan::Sandbox,
            credits: Some(svc_ports::CreditAmount::new(100).unwrap()),
            scopes: svc_ports::Scopes::parse_list("read discover execute").unwrap(),
            label: "activity".into(),
        })
        .await
        .unwrap()
        .secret
        .expose()
        .to_owned()
}

#[tokio::test]
async fn tasks_are_listed_filtered_and_paged_without_repeats_or_gaps() {
    let clock = TestClock::new();
    let app = app(clock.clone()).await;
    let key = app.api_key.clone();
    let start = svc_ports::Clock::now(clock.as_ref());
    // Seven tasks a minute apart: completed, failed, completed, ...
    let mut begun = Vec::new();
    for i in 0..7 {
        begun.push(run(&app, &key, i % 2 == 0).await);
        clock.advance(MINUTE);
    }
    let newest_first: Vec<String> = begun.iter().rev().cloned().collect();

    let all = list(&app, &key, "").await;
    assert_eq!(ids(&all), newest_first);
    assert_eq!(all["next_cursor"], Value::Null, "one page holds them");
    let usage: Value = app
        .get_usage(Some(&bearer(&key)))
        .await
        .json()
        .await
        .unwrap();
    let first = &all["tasks"][0];
    assert_eq!(first["status"], "completed");
    assert_eq!(first["domain"], SHOP);
    assert_eq!(first["action"], "search_products");
    assert_eq!(first["key_prefix"], usage["key"]["prefix"]);
    assert_eq!(
        (
            first["credits_charged"].as_i64(),
            first["credits_refunded"].as_i64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(first["artifact_status"], "completed");
    assert!(
        first["artifact_id"].as_str().unwrap().starts_with("art_"),
        "{first}"
    );
    let failed = &all["tasks"][1];
    assert_eq!(
        (
            failed["status"].as_str(),
            failed["credits_refunded"].as_i64()
        ),
        (Some("failed"), Some(1))
    );
    // The task URL answers the task with its artifact.
    let url = first["task_url"].as_str().unwrap();
    assert_eq!(url, app.url(&format!("/api/tasks/{}", begun[6])));
    let task: Value = get(&app, Some(&key), &format!("/api/tasks/{}", begun[6]))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(task["artifact"]["artifact_id"], first["artifact_id"]);

    // Filters.
    let completed = list(&app, &key, "?status=completed").await;
    assert_eq!(
        ids(&completed),
        [&begun[6], &begun[4], &begun[2], &begun[0]].map(String::clone)
    );
    let flaky = list(&app, &key, &format!("?domain={FLAKY}")).await;
    assert_eq!(
        ids(&flaky),
        [&begun[5], &begun[3], &begun[1]].map(String::clone)
    );
    let window = format!(
        "?since={}&until={}",
        encoded(start + MINUTE * 2),
        encoded(start + MINUTE * 4)
    );
    assert_eq!(
        ids(&list(&app, &key, &window).await),
        [&begun[3], &begun[2]].map(String::clone),
        "since included, until excluded"
    );
    let both = list(
        &app,
        &key,
        &format!("{window}&status=failed&domain={FLAKY}"),
    )
    .await;
    assert_eq!(ids(&both), vec![begun[3].clone()]);
    assert!(ids(&list(&app, &key, "?domain=nowhere.example").await).is_empty());

    // Pages of three while new tasks begin between them: the seven, each once, in order.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut later = Vec::new();
    loop {
        let query = match &cursor {
            Some(c) => format!("?limit=3&cursor={}", crate::helpers::urlencode(c)),
            None => "?limit=3".to_owned(),
        };
        let page = list(&app, &key, &query).await;
        assert!(page["tasks"].as_array().unwrap().len() <= 3);
        seen.extend(ids(&page));
        later.push(run(&app, &key, later.len() % 2 == 0).await);
        clock.advance(MINUTE);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, newest_first, "no task twice, none missing");
    assert_eq!(later.len(), 3);
    let now_all = list(&app, &key, "?limit=100").await;
    let unique: HashSet<String> = ids(&now_all).into_iter().collect();
    assert_eq!(unique.len(), 10);
    assert_eq!(ids(&now_all)[0], *later.last().unwrap());

    // Another account's tasks never appear, either way.
    let stranger = key_of(&app, "stranger@example.com").await;
    let theirs = run(&app, &stranger, true).await;
    assert_eq!(ids(&list(&app, &stranger, "").await), vec![theirs.clone()]);
    assert!(!ids(&list(&app, &key, "?limit=100").await).contains(&theirs));
    let cursor_of_owner = list(&app, &key, "?limit=1").await["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let with_foreign_cursor = list(
        &app,
        &stranger,
        &format!("?cursor={}", crate::helpers::urlencode(&cursor_of_owner)),
    )
    .await;
    assert!(
        ids(&with_foreign_cursor).iter().all(|t| *t == theirs),
        "a cursor never opens another account"
    );
}

#[tokio::test]
async fn bad_filters_are_refused_as_the_other_endpoints_refuse_them() {
    let clock = TestClock::new();
    let app = app(clock).await;
    let key = app.api_key.clone();
    for query in [
        "?status=done",
        "?limit=0",
        "?limit=101",
        "?limit=ten",
        "?since=yesterday",
        "?until=2026-13-01T00:00:00Z",
        "?domain=",
        // Not UTF-8 once decoded: it was read as U+FFFD and looked up.
        "?domain=%FF",
    ] {
        let resp = get(&app, Some(&key), &format!("/api/tasks{query}")).await;
        problem(resp, 400, "malformed_request").await;
    }
    for query in [
        "?cursor=not-a-cursor",
        "?cursor=MTIzLnRhc2tfbm9wZQ",
        "?since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z",
    ] {
        let resp = get(&app, Some(&key), &format!("/api/tasks{query}")).await;
        let body = problem(resp, 422, "invalid_request").await;
        assert!(body["detail"].as_str().unwrap().ends_with('.'), "{body}");
    }
    for query in [
        "?from=2026-11-02&to=2026-11-01",
        "?from=2025-01-01&to=2026-01-02",
    ] {
        let resp = get(&app, Some(&key), &format!("/api/usage/history{query}")).await;
        problem(resp, 422, "invalid_request").await;
    }
    for query in ["?from=01/11/2026", "?to=2026-02-30"] {
        let resp = get(&app, Some(&key), &format!("/api/usage/history{query}")).await;
        problem(resp, 400, "malformed_request").await;
    }
    // A full year is allowed.
    let year = get(
        &app,
        Some(&key),
        "/api/usage/history?from=2025-01-01&to=2026-01-01",
    )
    .await;
    assert_eq!(year.status(), 200);
    let year: Value = year.json().await.unwrap();
    assert_eq!(year["days"].as_array().unwrap().len(), 366);
    for path in ["/api/tasks", "/api/usage/history"] {
        problem(get(&app, None, path).await, 401, "missing_api_key").await;
    }
}

/// Receipts of the account (purchases, charges and refunds), from its signed-in owner.
async fn receipts(app: &TestApp, browser: &Browser) -> Vec<Value> {
    let account: Value = browser
        .http
        .get(app.url("/api/billing/account?limit=100"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    account["receipts"].as_array().unwrap().clone()
}

#[tokio::test]
async fn usage_per_day_adds_up_to_the_ledger_per_kind_and_key() {
    let clock = TestClock::new();
    let app = app(clock.clone()).await;
    let email = "owner@example.com";
    let first_key = key_of(&app, email).await;
    let second_key = key_of(&app, email).await;
    let prefix = |k: &str| k[..17].to_owned();

    // The owner buys credits on the site (the provider's webhook credits them).
    let browser = Browser::new(&app);
    let page = browser.sign_in(&app, email, "/account").await;
    let created = browser
        .http
        .post(app.url("/api/billing/create-checkout-session"))
        .header("Origin", &app.base_url)
        .header("Authorization", format!("Bearer {}", csrf_of(&page)))
        .header("Idempotency-Key", "buy-1")
        .json(&json!({"sku": "starter"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let checkout: Value = created.json().await.unwrap();
    let paid = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
        .post(format!(
            "{}/pay",
            checkout["checkout_url"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), StatusCode::SEE_OTHER);

    // Day one: two completed and a failed by the first key. Day two: the second key.
    let day_one = svc_ports::Clock::now(clock.as_ref()).date_naive();
    run(&app, &first_key, true).await;
    run(&app, &first_key, true).await;
    run(&app, &first_key, false).await;
    // And the purchase is refunded (while the provider's clock and ours agree): its credits
    // are taken back.
    let session = crate::billing::session_of(checkout["checkout_url"].as_str().unwrap());
    assert_eq!(
        crate::billing::qa_send(&app, &session, "refund", "ok").await,
        vec![200]
    );
    clock.advance(Duration::from_secs(24 * 3600));
    run(&app, &second_key, true).await;
    run(&app, &second_key, false).await;
    run(&app, &first_key, true).await;
    let day_two = day_one.succ_opt().unwrap();

    let resp = get(
        &app,
        Some(&second_key),
        &format!("/api/usage/history?from={day_one}&to={day_two}"),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let history: Value = resp.json().await.unwrap();
    let days = history["days"].as_array().unwrap();
    assert_eq!(days.len(), 2);

    // What the ledger's receipts say, per day and kind.
    let mut ledger: BTreeMap<(String, &str), i64> = BTreeMap::new();
    for r in receipts(&app, &browser).await {
        let kind = match r["kind"].as_str().unwrap() {
            "purchase" => "bought",
            "action_charge" => "charged",
            "action_refund" => "refunded",
            "refund_clawback" => "taken_back",
            other => panic!("unexpected receipt {other}"),
        };
        let day = r["created_at"].as_str().unwrap()[..10].to_owned();
        *ledger.entry((day, kind)).or_default() += r["credits"].as_i64().unwrap();
    }
    let mut reported: BTreeMap<(String, &str), i64> = BTreeMap::new();
    for d in days {
        for kind in ["charged", "refunded", "bought", "taken_back", "released"] {
            let n = d[kind].as_i64().unwrap();
            if n != 0 {
                reported.insert((d["date"].as_str().unwrap().to_owned(), kind), n);
            }
        }
    }
    assert_eq!(reported, ledger, "{history}");
    assert_eq!(days[0]["date"], day_one.to_string());
    assert_eq!(
        (
            days[0]["charged"].as_i64(),
            days[0]["refunded"].as_i64(),
            days[0]["bought"].as_i64()
        ),
        (Some(2), Some(1), Some(1000))
    );
    assert_eq!(
        (days[1]["charged"].as_i64(), days[1]["refunded"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(history["totals"]["charged"], 4);
    assert_eq!(history["totals"]["bought"], 1000);
    assert_eq!(days[0]["taken_back"], 1000, "{history}");
    assert_eq!(history["totals"]["taken_back"], 1000);
    assert_eq!(history["totals"]["released"], 0);

    // Per key: day two split between the keys, charged largest first.
    let by_key: Vec<(String, i64, i64)> = days[1]["by_key"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key_prefix"].as_str().unwrap().to_owned(),
                k["charged"].as_i64().unwrap(),
                k["refunded"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut want = vec![(prefix(&first_key), 1, 0), (prefix(&second_key), 1, 1)];
    want.sort_by(|a, b| (b.1, b.2).cmp(&(a.1, a.2)).then(a.0.cmp(&b.0)));
    assert_eq!(by_key, want);
    assert_eq!(
        days[0]["by_key"][0]["key_prefix"].as_str().unwrap(),
        prefix(&first_key)
    );
    assert_eq!(days[0]["by_key"][0]["completed"], 2);

    // The default range is the 30 days up to today, and another account has nothing of it.
    let default: Value = get(&app, Some(&second_key), "/api/usage/history")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(default["to"], day_two.to_string());
    assert_eq!(default["days"].as_array().unwrap().len(), 30);
    assert_eq!(default["totals"]["charged"], 4);
    let stranger = app.stranger_key("someone-else@example.com", "read").await;
    let theirs: Value = get(&app, Some(&stranger), "/api/usage/history")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(theirs["totals"]["charged"], 0);
    assert_eq!(theirs["totals"]["bought"], 0);

    // The MCP tools answer the same JSON.
    let call = |name: &'static str, args: Value| {
        let app = &app;
        let auth = bearer(&second_key);
        async move {
            let (status, body) = app
                .mcp(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}), Some(&auth), "2025-11-25")
                .await;
            assert_eq!(status, 200, "{body}");
            body["result"].clone()
        }
    };
    let tool = call(
        "svc_usage_history",
        json!({"from": day_one.to_string(), "to": day_two.to_string()}),
    )
    .await;
    assert_eq!(tool["structuredContent"], history);
    let rest_tasks = list(&app, &second_key, "?limit=2&status=completed").await;
    let tool = call("svc_list_tasks", json!({"limit": 2, "status": "completed"})).await;
    assert_eq!(tool["structuredContent"], rest_tasks);
    let tool = call("svc_list_tasks", json!({})).await;
    assert_eq!(
        tool["structuredContent"]["tasks"].as_array().unwrap().len(),
        6
    );
    let tool = call("svc_list_tasks", json!({"cursor": "nope"})).await;
    assert_eq!(tool["isError"], true);
    assert!(
        tool["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("invalid_request")
    );
    let tool = call("svc_usage_history", json!({"from": "tomorrow"})).await;
    assert_eq!(tool["isError"], true);
}

#[tokio::test]
async fn the_account_page_lists_tasks_with_their_artifact_and_a_signature_check() {
    let clock = TestClock::new();
    let app = app(clock.clone()).await;
    let email = "pages@example.com";
    let key = key_of(&app, email).await;
    let done = run(&app, &key, true).await;
    clock.advance(MINUTE);
    let failed = run(&app, &key, false).await;
    let browser = Browser::new(&app);
    let page = browser.sign_in(&app, email, "/account").await;
    assert!(page.contains("id=\"activity\""), "{page}");
    let newest = page.find(&failed).unwrap();
    assert!(newest < page.find(&done).unwrap(), "newest first");
    assert!(page.contains("<svg id=\"usage-chart\" role=\"img\""));
    assert!(page.contains("<title id=\"usage-chart-title\">Credits per day"));
    assert!(page.contains("1 credit charged") && page.contains("1 credit refunded"));

    // The artifact is the stored JSON; the check page verifies it on the server.
    let artifact = browser
        .get(&format!("/account/activity/{done}/artifact"))
        .await;
    assert_eq!(artifact.status(), 200);
    assert!(
        artifact.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let artifact: Value = artifact.json().await.unwrap();
    assert_eq!(artifact["task_id"], done);
    crate::helpers::verify_with_jwks(&app, &artifact).await;
    let check = browser
        .page(&format!("/account/activity/{failed}/verify"))
        .await;
    assert!(check.contains("data-valid=\"true\""), "{check}");
    assert!(check.contains("The signature is valid"), "{check}");

    // Another account's task is not found, nor is an unknown one, and nothing without sign-in.
    let other = key_of(&app, "other-pages@example.com").await;
    let theirs = run(&app, &other, true).await;
    for path in [
        format!("/account/activity/{theirs}/verify"),
        format!("/account/activity/{theirs}/artifact"),
        "/account/activity/task_nope/verify".into(),
    ] {
        let resp = browser.get(&path).await;
        assert_eq!(resp.status(), 404, "{path}");
        assert!(!resp.text().await.unwrap().contains(&theirs));
    }
    let anonymous = Browser::new(&app)
        .get(&format!("/account/activity/{done}/artifact"))
        .await;
    assert_ne!(anonymous.status(), 200);

    // The full list pages by links.
    for _ in 0..30 {
        clock.advance(MINUTE);
        run(&app, &key, true).await;
    }
    let page = browser.page("/account").await;
    assert_eq!(page.matches("class=\"task\"").count(), 10);
    assert!(
        page.contains("href=\"/account/activity\""),
        "a link to the rest"
    );
    let first = browser.page("/account/activity").await;
    assert_eq!(first.matches("class=\"task\"").count(), 25);
    let next = first
        .split("id=\"activity-more\" href=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .replace("&#x3D;", "=")
        .replace("&amp;", "&");
    let second = browser.page(&next).await;
    assert_eq!(
        second.matches("class=\"task\"").count(),
        7,
        "32 tasks in all"
    );
    assert!(second.contains(&done));
}
