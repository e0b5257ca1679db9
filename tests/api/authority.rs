//! Delegated payment authorities end to end: created only by the signed-in human on the account
//! page, read by the agent, checked and revoked at the revocation URL, and enforced when a
//! payment action runs (refusals store nothing; receipts and artifact status follow the
//! authority).

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use svc::startup::{SANDBOX_EMAIL, Stores};
use svc_ports::{AccountId, AuthorityId};

use crate::authority_verify::get_task;
use crate::helpers::{Browser, TestApp, TestClock, bearer, csrf_of, problem};

pub struct Shop {
    pub app: TestApp,
    pub stores: Stores,
    pub browser: Browser,
    pub clock: Arc<TestClock>,
}

pub async fn shop_on(stores: Stores) -> Shop {
    let clock = TestClock::new();
    let app = TestApp::builder()
        .stores(stores.clone())
        .outbox()
        .clock(clock.clone())
        .action_sites()
        .await
        .spawn()
        .await;
    let browser = Browser::new(&app);
    browser.sign_in(&app, SANDBOX_EMAIL, "/account").await;
    Shop {
        app,
        stores,
        browser,
        clock,
    }
}

async fn shop() -> Shop {
    shop_on(Stores::memory()).await
}

/// Creates an authority on the account page; returns its id.
pub(crate) async fn create(shop: &Shop, fields: &[(&str, &str)]) -> String {
    let page = shop.browser.page("/account").await;
    let csrf = csrf_of(&page);
    let mut form: Vec<(&str, &str)> = vec![
        ("csrf", &csrf),
        ("scope_order", "1"),
        ("amount", "1000"),
        ("interval", "day"),
        ("currency", "usd"),
        ("expires_in_days", "30"),
        ("agent_provider", "anthropic"),
        ("receipt_required", "1"),
    ];
    for (k, v) in fields {
        form.retain(|(f, _)| f != k);
        if !v.is_empty() {
            form.push((k, v));
        }
    }
    let resp = shop
        .browser
        .post("/account/payment-authorities", &form)
        .await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let (status, page) = shop.browser.follow(resp).await;
    assert_eq!(status, 200);
    assert!(page.contains("id=\"notice\""), "{page}");
    let list = list(&shop.app).await;
    list["authorities"][0]["authority_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn list(app: &TestApp) -> Value {
    app.get_json_as_owner("/api/payment-authorities").await
}

/// The owning account's view of one authority (its key).
async fn owned(app: &TestApp, id: &str) -> Value {
    app.get_json_as_owner(&format!("/api/payment-authorities/{id}"))
        .await
}

async fn status_of(app: &TestApp, id: &str) -> Value {
    let resp = app
        .http
        .get(app.url(&format!("/api/payment-authorities/{id}/revocation")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

pub async fn pay(
    app: &TestApp,
    authority: Option<&str>,
    amount: i64,
    order_id: &str,
) -> reqwest::Response {
    let mut body = json!({"domain": "shop.sandbox.test", "action": "pay_order",
        "params": {"order_id": order_id, "amount": amount}});
    if let Some(a) = authority {
        body["authority_id"] = json!(a);
    }
    app.http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn account_of(app: &TestApp) -> AccountId {
    app.services
        .auth
        .authenticate(&app.api_key)
        .await
        .unwrap()
        .account
        .id
}

/// Balance, holds and ledger length: a refusal changes none of them.
pub(crate) async fn money(shop: &Shop) -> (i64, i64, usize) {
    let account = account_of(&shop.app).await;
    let balance = shop.stores.ledger.balance(&account).await.unwrap();
    let entries = shop.stores.ledger.entries(&account, 100_000).await.unwrap();
    (balance.spendable, balance.held, entries.len())
}

/// Every spend stored for the authority, given back or not.
async fn spends(shop: &Shop, id: &str) -> usize {
    let id = AuthorityId::parse(id).unwrap();
    shop.stores
        .authorities
        .authority_spends(&id)
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn only_the_signed_in_human_creates_an_authority() {
    let shop = shop().await;
    let app = &shop.app;
    // No API-key way to create one: the collection is read-only, the page refuses keys.
    let resp = app
        .http
        .post(app.url("/api/payment-authorities"))
        .header("Authorization", bearer(&app.api_key))
        .json(&json!({"scope": ["order"], "amount_limit": {"value": 100, "interval": "day"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    let resp = app
        .http
        .post(app.url("/account/payment-authorities"))
        .header("Authorization", bearer(&app.api_key))
        .header("Origin", &app.base_url)
        .form(&[("amount", "100"), ("interval", "day")])
        .send()
        .await
        .unwrap();
    problem(resp, 403, "api_key_not_allowed").await;
    // Signed out: the form sends the visitor to sign in, and creates nothing.
    let stranger = Browser::new(app);
    let page = stranger.page("/signin").await;
    let resp = stranger
        .post(
            "/account/payment-authorities",
            &[
                ("csrf", &csrf_of(&page)),
                ("scope_order", "1"),
                ("amount", "100"),
                ("interval", "day"),
                ("expires_in_days", "3"),
                ("agent_provider", "x"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 303);
    assert!(
        resp.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/signin")
    );
    assert_eq!(list(app).await["authorities"], json!([]));
    // A bad form is refused on the page.
    let page = shop.browser.page("/account").await;
    let resp = shop
        .browser
        .post(
            "/account/payment-authorities",
            &[
                ("csrf", &csrf_of(&page)),
                ("amount", "100"),
                ("interval", "day"),
                ("expires_in_days", "3"),
                ("agent_provider", "x"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains("id=\"error\""));
    // A currency must be a real one (ISO 4217): `zzz` and the test code `xts` are refused.
    for currency in ["zzz", "xts"] {
        let page = shop.browser.page("/account").await;
        let resp = shop
            .browser
            .post(
                "/account/payment-authorities",
                &[
                    ("csrf", &csrf_of(&page)),
                    ("scope_order", "1"),
                    ("amount", "100"),
                    ("currency", currency),
                    ("interval", "day"),
                    ("expires_in_days", "3"),
                    ("agent_provider", "x"),
                ],
            )
            .await;
        assert_eq!(resp.status(), 200);
        let text = resp.text().await.unwrap();
        assert!(text.contains("ISO 4217"), "{currency}: {text}");
    }
    assert_eq!(list(app).await["authorities"], json!([]));

    let id = create(&shop, &[("interval", "week"), ("scope_booking", "1")]).await;
    assert!(id.starts_with("pa_"));
    let page = shop.browser.page("/account").await;
    assert!(page.contains(&format!("data-id=\"{id}\"")), "{page}");

    let one: Value = app
        .get_json_as_owner(&format!("/api/payment-authorities/{id}"))
        .await;
    let mut keys: Vec<&str> = one
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "amount_limit",
            "authority_id",
            "created_at",
            "currency",
            "expires_at",
            "principal",
            "receipt_required",
            "remaining",
            "revocation_url",
            "scope",
            "status",
            "verification_required"
        ]
    );
    assert_eq!(one["scope"], json!(["booking", "order"]));
    assert_eq!(
        one["amount_limit"],
        json!({"value": 1000, "interval": "week"})
    );
    assert_eq!(one["currency"], "usd");
    assert_eq!(one["principal"]["type"], "agent");
    assert_eq!(one["principal"]["agent_provider"], "anthropic");
    assert_eq!(one["receipt_required"], true);
    assert_eq!(one["verification_required"], false);
    assert_eq!(one["status"], "active");
    assert_eq!(one["remaining"]["value"], 1000);
    assert_eq!(
        one["revocation_url"],
        format!("{}/api/payment-authorities/{id}/revocation", app.base_url)
    );
    // The record (without status and remaining) fits the served schema.
    let schema = app
        .get_json("/.well-known/payment-authority.schema.json")
        .await;
    let mut record = one.clone();
    record.as_object_mut().unwrap().remove("status");
    record.as_object_mut().unwrap().remove("remaining");
    assert!(
        jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&record)
    );
    // The revocation URL reports without credentials: status and what remains, nothing of whose
    // it is (issue 15: it answered the whole record, account id and limits included).
    let anonymous = status_of(app, &id).await;
    assert_eq!(
        anonymous,
        json!({"status": "active", "remaining": {"value": 1000, "currency": "usd"}})
    );

    // Another account's key sees nothing of it.
    let other_key = app
        .stranger_key("other@example.com", "read discover execute")
        .await;
    let resp = app
        .http
        .get(app.url(&format!("/api/payment-authorities/{id}")))
        .header("Authorization", bearer(&other_key))
        .send()
        .await
        .unwrap();
    problem(resp, 404, "not_found").await;
    let resp = app
        .http
        .post(app.url(&format!("/api/payment-authorities/{id}/revocation")))
        .header("Authorization", bearer(&other_key))
        .send()
        .await
        .unwrap();
    problem(resp, 404, "not_found").await;
    assert_eq!(status_of(app, &id).await["status"], "active");
    let resp = app
        .http
        .get(app.url("/api/payment-authorities"))
        .header("Authorization", bearer(&other_key))
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.json::<Value>().await.unwrap()["authorities"],
        json!([])
    );
}

#[tokio::test]
async fn a_payment_needs_an_authority_and_every_refusal_stores_nothing() {
    let shop = shop().await;
    let app = &shop.app;
    let before = money(&shop).await;
    let body = problem(
        pay(app, None, 100, "ord-1").await,
        403,
        "payment_authority_required",
    )
    .await;
    assert_eq!(body["next_action"]["kind"], "approve");
    assert!(
        body["next_action"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/account")
    );
    let daily = create(&shop, &[]).await;
    let booking_only = create(&shop, &[("scope_order", ""), ("scope_booking", "1")]).await;
    let euros = create(&shop, &[("currency", "eur")]).await;
    let short = create(&shop, &[("expires_in_days", "1")]).await;
    let revoked = create(&shop, &[]).await;
    let resp = app
        .http
        .post(app.url(&format!("/api/payment-authorities/{revoked}/revocation")))
        .header("Authorization", bearer(&app.api_key))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    shop.clock.advance(Duration::from_secs(2 * 86_400));
    let cases = [
        ("pa_01ARZ3NDEKTSV4RRFFQ69G5FAV", 100, "unknown"),
        ("not-an-id", 100, "unknown"),
        (daily.as_str(), 1001, "over_limit"),
        (booking_only.as_str(), 100, "scope"),
        (euros.as_str(), 100, "currency"),
        (short.as_str(), 100, "expired"),
        (revoked.as_str(), 100, "revoked"),
    ];
    for (id, amount, reason) in cases {
        let body = problem(
            pay(app, Some(id), amount, "ord-1").await,
            403,
            "payment_authority_refused",
        )
        .await;
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("({reason})")),
            "{reason}: {detail}"
        );
        if reason == "over_limit" {
            assert!(detail.contains("1000 usd remaining"), "{detail}");
        }
        assert_eq!(money(&shop).await, before, "{reason} moved money");
    }
    for id in [&daily, &booking_only, &euros, &short, &revoked] {
        assert_eq!(spends(&shop, id).await, 0);
    }
    // Another account's authority is unknown to this one.
    let account = account_of(app).await;
    assert!(app.services.authorities.get(&account, &daily).await.is_ok());
}

#[tokio::test]
async fn payments_spend_within_the_limit_with_receipts_and_artifact_status() {
    let shop = shop().await;
    let app = &shop.app;
    let plain = create(&shop, &[]).await;
    let verify = create(
        &shop,
        &[("verification_required", "1"), ("receipt_required", "")],
    )
    .await;
    let schema = app
        .get_json("/.well-known/payment-artifact.schema.json")
        .await;
    let artifacts = jsonschema::validator_for(&schema).unwrap();

    let resp = pay(app, Some(&plain), 600, "ord-7").await;
    assert_eq!(resp.status(), 200);
    let done: Value = resp.json().await.unwrap();
    let artifact = &done["artifact"];
    assert_eq!(artifact["status"], "verified", "{done}");
    assert!(artifacts.is_valid(artifact), "{artifact}");
    let receipt = &artifact["evidence"]["receipt"];
    assert_eq!(receipt["authority_id"], plain.as_str());
    assert_eq!(receipt["amount"], 600);
    assert_eq!(receipt["currency"], "usd");
    assert!(receipt["payment_id"].as_str().unwrap().starts_with("pay-"));
    assert_eq!(receipt["payment_id"], done["result"]["payment_id"]);
    assert!(receipt["paid_at"].is_string());
    assert_eq!(artifact["evidence"]["payment"]["spend"], "spent");
    let status = owned(app, &plain).await;
    assert_eq!(status["remaining"]["value"], 400);
    assert_eq!(status["remaining"]["spent_in_window"], 600);
    assert_eq!(status_of(app, &plain).await["remaining"]["value"], 400);

    // Over what remains: refused, nothing stored.
    let before = money(&shop).await;
    problem(
        pay(app, Some(&plain), 401, "ord-7").await,
        403,
        "payment_authority_refused",
    )
    .await;
    assert_eq!(money(&shop).await, before);
    // A payment the site declines: refunded, the spend given back, the artifact failed.
    let resp = pay(app, Some(&plain), 400, "nope").await;
    assert_eq!(resp.status(), 502);
    let failed: Value = resp.json().await.unwrap();
    assert_eq!(failed["artifact"]["status"], "failed");
    assert_eq!(
        failed["artifact"]["evidence"]["payment"]["spend"],
        "released"
    );
    assert!(failed["artifact"]["evidence"].get("receipt").is_none());
    assert!(artifacts.is_valid(&failed["artifact"]));
    let after = money(&shop).await;
    assert_eq!(
        (after.0, after.1),
        (before.0, before.1),
        "a failed payment is refunded"
    );
    assert_eq!(after.2, before.2 + 2, "held, then refunded");
    assert_eq!(status_of(app, &plain).await["remaining"]["value"], 400);
    // The rest of the window's allowance, exactly.
    assert_eq!(pay(app, Some(&plain), 400, "ord-7").await.status(), 200);
    assert_eq!(status_of(app, &plain).await["status"], "exhausted");
    // The next day's window brings it back.
    shop.clock.advance(Duration::from_secs(86_400));
    assert_eq!(status_of(app, &plain).await["remaining"]["value"], 1000);

    // verification_required: the artifact stays payment_completed; no receipt was asked for.
    let resp = pay(app, Some(&verify), 100, "ord-8").await;
    assert_eq!(resp.status(), 200);
    let done: Value = resp.json().await.unwrap();
    assert_eq!(done["artifact"]["status"], "payment_completed");
    assert!(done["artifact"]["evidence"].get("receipt").is_none());
    assert!(artifacts.is_valid(&done["artifact"]));

    // Non-payment actions ignore an authority_id.
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .json(
            &json!({"domain": "shop.sandbox.test", "action": "get_product",
            "params": {"sku": "TEA-GREEN"}, "authority_id": plain}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let done: Value = resp.json().await.unwrap();
    assert_eq!(done["artifact"]["status"], "completed");

    // Discover shows what the payment action pays.
    let discovered: Value = app
        .get_json_as_owner("/api/discover?domain=shop.sandbox.test")
        .await;
    let pay_order = discovered["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "pay_order")
        .unwrap();
    assert_eq!(
        pay_order["payment"],
        json!({"amount": "/amount", "currency": "usd"})
    );
}

#[tokio::test]
async fn a_single_use_authority_pays_once() {
    let shop = shop().await;
    let app = &shop.app;
    let once = create(&shop, &[("interval", "single_use"), ("amount", "500")]).await;
    assert_eq!(owned(app, &once).await["remaining"].get("window_end"), None);
    assert_eq!(pay(app, Some(&once), 300, "ord-1").await.status(), 200);
    let body = problem(
        pay(app, Some(&once), 100, "ord-2").await,
        403,
        "payment_authority_refused",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("(exhausted)"));
    let status = owned(app, &once).await;
    assert_eq!(status_of(app, &once).await["status"], "exhausted");
    assert_eq!(status["status"], "exhausted");
    assert_eq!(status["remaining"]["value"], 0);
    assert_eq!(status["remaining"]["spends"], 1);
    // The payment that used it up told the account's webhooks (`authority.exhausted`), once.
    let feed = app.get_json_as_owner("/api/webhook-events").await;
    let exhausted: Vec<serde_json::Value> = feed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "authority.exhausted")
        .map(|e| serde_json::from_str(e["body"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(exhausted.len(), 1, "{feed}");
    assert_eq!(exhausted[0]["data"]["authority_id"], once.as_str());
    assert_eq!(exhausted[0]["data"]["remaining"]["value"], 0);
}

/// A payment whose outcome is unknown (the shop broke mid-payment) is refunded in credits but
/// keeps its spend: a single-use authority cannot be used to pay a second time.
#[tokio::test]
async fn a_payment_of_unknown_outcome_keeps_its_spend() {
    let shop = shop().await;
    let app = &shop.app;
    let once = create(&shop, &[("interval", "single_use"), ("amount", "500")]).await;
    let (spendable, _, _) = money(&shop).await;
    let crashed = pay(app, Some(&once), 300, "ord-crash-1").await;
    let body = problem(crashed, 502, "action_failed").await;
    assert_eq!(
        body["artifact"]["evidence"]["payment"]["spend"], "spent",
        "{body}"
    );
    assert_eq!(money(&shop).await.0, spendable, "the credits are refunded");
    let again = problem(
        pay(app, Some(&once), 300, "ord-2").await,
        403,
        "payment_authority_refused",
    )
    .await;
    assert!(
        again["detail"].as_str().unwrap().contains("(exhausted)"),
        "{again}"
    );

    // A refusal the shop states outright (declined) gives the spend back.
    let other = create(&shop, &[("interval", "single_use"), ("amount", "500")]).await;
    let declined = pay(app, Some(&other), 300, "nope-1").await;
    let body = problem(declined, 502, "action_failed").await;
    assert_eq!(
        body["artifact"]["evidence"]["payment"]["spend"], "released",
        "{body}"
    );
    assert_eq!(pay(app, Some(&other), 300, "ord-3").await.status(), 200);
}

/// A payment task whose process died mid-action is recovered as failed: its credits are
/// refunded, its spend stays counted (the payment may have gone through), and its artifact
/// says so as a live settlement's does (a review found the spend kept without a word).
#[tokio::test]
async fn a_recovered_payment_keeps_its_spend_and_says_so() {
    let shop = shop().await;
    let app = &shop.app;
    let id = create(&shop, &[("interval", "single_use"), ("amount", "500")]).await;
    let principal = app.services.auth.authenticate(&app.api_key).await.unwrap();
    let orphan = svc_ports::NewTask {
        id: svc_ports::TaskId::from_ulid(ulid::Ulid::new()),
        account_id: principal.account.id.clone(),
        key_id: principal.key.id.clone(),
        domain: "shop.sandbox.test".into(),
        action: "pay_order".into(),
        cost: 1,
        idempotency_key: None,
        fingerprint: "f".into(),
        hold_entry: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
        authority_spend: Some(svc_ports::AuthoritySpend {
            authority_id: AuthorityId::parse(&id).unwrap(),
            amount: 300,
            currency: svc_ports::billing::Currency::parse("usd").unwrap(),
            scope: "order".into(),
        }),
        created_at: svc_ports::Clock::now(&*shop.clock),
    };
    let (spendable, _, _) = money(&shop).await;
    assert!(matches!(
        shop.stores.tasks.begin_task(&orphan).await.unwrap(),
        svc_ports::BeginOutcome::Started { .. }
    ));
    shop.clock.advance(Duration::from_secs(300));
    assert_eq!(app.services.actions.recover(60).await.unwrap(), 1);
    assert_eq!(money(&shop).await.0, spendable, "the credits are refunded");
    let task = get_task(app, orphan.id.as_str()).await;
    assert_eq!(task["artifact"]["failure_class"], "interrupted", "{task}");
    let payment = &task["artifact"]["evidence"]["payment"];
    assert_eq!(payment["spend"], "spent", "{task}");
    assert_eq!(payment["authority_id"], id.as_str());
    assert_eq!(payment["amount"], 300);
    crate::helpers::verify_with_jwks(app, &task["artifact"]).await;
    let kept = shop
        .stores
        .authorities
        .task_spend(&orphan.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.released_at, None);
}

#[tokio::test]
async fn revocation_stops_further_payments() {
    let shop = shop().await;
    let app = &shop.app;
    let id = create(&shop, &[]).await;
    assert_eq!(pay(app, Some(&id), 100, "ord-1").await.status(), 200);
    // No credentials: the URL reports, but does not revoke.
    let resp = app
        .http
        .post(app.url(&format!("/api/payment-authorities/{id}/revocation")))
        .send()
        .await
        .unwrap();
    problem(resp, 401, "missing_api_key").await;
    // A signed-in session from another site may not revoke (CSRF).
    let resp = shop
        .browser
        .http
        .post(format!(
            "{}/api/payment-authorities/{id}/revocation",
            app.base_url
        ))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    problem(resp, 403, "csrf_rejected").await;
    for _ in 0..2 {
        let resp = app
            .http
            .post(app.url(&format!("/api/payment-authorities/{id}/revocation")))
            .header("Authorization", bearer(&app.api_key))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "revoking is idempotent");
        assert_eq!(resp.json::<Value>().await.unwrap()["status"], "revoked");
    }
    let body = problem(
        pay(app, Some(&id), 100, "ord-1").await,
        403,
        "payment_authority_refused",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("(revoked)"));
    assert_eq!(spends(&shop, &id).await, 1);

    // The human revokes on the account page, and through the REST path with the session.
    let second = create(&shop, &[]).await;
    let page = shop.browser.page("/account").await;
    let resp = shop
        .browser
        .post(
            "/account/payment-authorities/revoke",
            &[("csrf", &csrf_of(&page)), ("authority_id", &second)],
        )
        .await;
    let (status, page) = shop.browser.follow(resp).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(&format!("data-id=\"{second}\" data-status=\"revoked\"")),
        "{page}"
    );
    let third = create(&shop, &[]).await;
    let resp = shop
        .browser
        .http
        .post(format!(
            "{}/api/payment-authorities/{third}/revocation",
            app.base_url
        ))
        .header("Origin", &app.base_url)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(status_of(app, &third).await["status"], "revoked");
    problem(
        pay(app, Some(&third), 1, "ord-1").await,
        403,
        "payment_authority_refused",
    )
    .await;
}

#[tokio::test]
async fn mcp_execute_takes_an_authority_id() {
    let shop = shop().await;
    let app = &shop.app;
    let id = create(&shop, &[]).await;
    let call = |authority: Option<&str>| {
        let mut args = json!({"domain": "shop.sandbox.test", "action": "pay_order",
            "params": {"order_id": "ord-3", "amount": 250}});
        if let Some(a) = authority {
            args["authority_id"] = json!(a);
        }
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "execute", "arguments": args}})
    };
    let key = bearer(&app.api_key);
    let (_, refused) = app.mcp(call(None), Some(&key), "2025-11-25").await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("payment_authority_required"), "{text}");
    let (_, paid) = app.mcp(call(Some(&id)), Some(&key), "2025-11-25").await;
    assert_eq!(
        paid["result"]["structuredContent"]["artifact"]["status"], "verified",
        "{paid}"
    );
}

/// An amount written `600.0` is the integer the schema asks for: the payment reads 600, the
/// site is sent 600, and the spend and receipt say 600 (a review had it refused as "not an
/// integer" although the schema accepted it).
#[tokio::test]
async fn an_amount_written_as_a_whole_float_is_paid_as_the_integer() {
    let shop = shop().await;
    let app = &shop.app;
    let authority = create(&shop, &[]).await;
    let body = format!(
        r#"{{"domain": "shop.sandbox.test", "action": "pay_order", "authority_id": "{authority}",
            "params": {{"order_id": "ord-float", "amount": 600.0}}}}"#
    );
    let resp = app
        .http
        .post(app.url("/api/execute"))
        .header("Authorization", bearer(&app.api_key))
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let done: Value = resp.json().await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["artifact"]["evidence"]["receipt"]["amount"], 600,
        "{done}"
    );
    assert_eq!(
        owned(app, &authority).await["remaining"]["spent_in_window"],
        600
    );
}
