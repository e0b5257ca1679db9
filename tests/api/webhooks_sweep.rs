//! The recovery job's sweep of webhook events that were never recorded: a settlement (and the
//! `credits.low` or `authority.exhausted` it causes), a credited payment or an expired
//! connection stored without its event (by a process that
//! recorded it after, and died between) gets it once, and it is delivered.

use serde_json::{Value, json};
use svc::startup::Stores;

use crate::helpers::bearer;
use crate::webhooks::{Receiver, SHOP, app_with, register, register_ok, verify_independently};

/// A settlement stored without its event (an earlier version recorded it after settling, and
/// its process could die between): the recovery job's sweep records it (once), and it is
/// delivered.
#[tokio::test]
async fn a_settlement_whose_event_was_never_recorded_is_swept_up() {
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let app = app_with(&receiver, None, false, Some(stores.clone())).await;
    let (_, secret) = register_ok(&app, &receiver.url()).await;
    let account = account_of(&app).await;
    // Begun and settled straight in the store without the event, as a process of an earlier
    // version could leave it (it recorded the event after the settlement and died between).
    let task = settled_in_store(&stores, account, 1, app.services.clock.now()).await;
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 0);

    assert_eq!(app.services.actions.recover_task_events().await.unwrap(), 1);
    assert_eq!(
        app.services.actions.recover_task_events().await.unwrap(),
        0,
        "once"
    );
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let got = receiver.next().await;
    let body = verify_independently(&secret, &got);
    assert_eq!(body["type"], "task.completed");
    assert_eq!(body["data"]["task_id"], task.as_str());
}

/// A fact left without its event just before every instance stopped for longer than the
/// sweep's hour is still found when they come back: the sweep looks back from the start of its
/// last complete run too (its mark in the store), not only from now.
#[tokio::test]
async fn a_fact_left_before_an_outage_longer_than_the_window_is_still_swept_up() {
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let clock = crate::helpers::TestClock::new();
    let app = app_with(&receiver, Some(clock.clone()), false, Some(stores.clone())).await;
    let (_, secret) = register_ok(&app, &receiver.url()).await;
    let account = account_of(&app).await;
    // A complete sweep, then a settlement whose process dies before its event.
    assert_eq!(app.services.actions.recover_task_events().await.unwrap(), 0);
    clock.advance(std::time::Duration::from_secs(60));
    let task = settled_in_store(&stores, account, 1, app.services.clock.now()).await;
    // Three hours without any instance: the fact is two hours older than the window.
    clock.advance(std::time::Duration::from_secs(3 * 3600));
    assert_eq!(app.services.actions.recover_task_events().await.unwrap(), 1);
    assert_eq!(
        app.services.actions.recover_task_events().await.unwrap(),
        0,
        "once"
    );
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let body = verify_independently(&secret, &receiver.next().await);
    assert_eq!(body["data"]["task_id"], task.as_str());
    // The run that found it went through everything: the next looks back an hour from it.
    let mark = stores.hooks.sweep_mark("task_events").await.unwrap();
    assert_eq!(mark, Some(app.services.clock.now()));
}

/// A process that died between crediting a verified payment and recording `credits.added`:
/// the same sweep records it (once), and it is delivered.
#[tokio::test]
async fn a_credited_payment_whose_event_was_never_recorded_is_swept_up() {
    use svc_ports::billing::{CheckoutRecord, Currency, EventOutcome, PaymentEvent, PaymentFact};
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let app = app_with(&receiver, None, false, Some(stores.clone())).await;
    let secret = register_for(&app, &receiver, "credits.added").await;
    let account = account_of(&app).await;
    // Credited straight in the store, as the dead process did; no event followed.
    let now = app.services.clock.now();
    let checkout = CheckoutRecord {
        id: svc_ports::CheckoutId::from_ulid(ulid::Ulid::new()),
        account_id: account,
        sku: "starter".into(),
        plan: svc_ports::Plan::Starter,
        credits: 1000,
        amount: 900,
        currency: Currency::parse("usd").unwrap(),
        provider_session_id: "cs_swept".into(),
        checkout_url: "https://pay.example/cs".into(),
        idempotency_key: None,
        created_at: now,
        expires_at: now + chrono::Duration::hours(1),
    };
    stores.billing.insert_checkout(&checkout).await.unwrap();
    let applied = stores
        .billing
        .apply_payment_event(&PaymentEvent {
            provider: "sandbox".into(),
            webhook_id: "msg_swept".into(),
            event_type: "checkout.completed".into(),
            fact: PaymentFact::Paid {
                payment_id: "pay_swept".into(),
                checkout_id: checkout.id.clone(),
                amount: 900,
                currency: Currency::parse("usd").unwrap(),
            },
            body: b"{}".to_vec(),
            received_at: now,
        })
        .await
        .unwrap();
    let EventOutcome::Applied(receipts) = applied else {
        panic!("not applied: {applied:?}")
    };
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 0);

    assert_eq!(
        app.services.billing.recover_credit_events().await.unwrap(),
        1
    );
    assert_eq!(
        app.services.billing.recover_credit_events().await.unwrap(),
        0,
        "once"
    );
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let got = receiver.next().await;
    let body = verify_independently(&secret, &got);
    assert_eq!(body["type"], "credits.added");
    assert_eq!(body["data"]["credits"], 1000);
    assert_eq!(body["data"]["receipt_id"], receipts[0].id.as_str());
    assert_eq!(body["data"]["payment_id"], "pay_swept");
}

/// A process that died between ending a connection it could not refresh and recording
/// `connection.expired`: the same sweep records it (once), and it is delivered; a pending
/// connection that ended without ever connecting tells nothing.
#[tokio::test]
async fn an_expired_connection_whose_event_was_never_recorded_is_swept_up() {
    use svc_ports::{
        ConnectionFinish, ConnectionId, ConnectionRecord, ConnectionState, ProviderId, SealedSecret,
    };
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let app = app_with(&receiver, None, false, Some(stores.clone())).await;
    let secret = register_for(&app, &receiver, "connection.expired").await;
    let account = account_of(&app).await;
    let now = app.services.clock.now();
    let connection = |expected: &str| ConnectionRecord {
        id: ConnectionId::from_ulid(ulid::Ulid::new()),
        account_id: account.clone(),
        provider: ProviderId::parse("shop-example").unwrap(),
        expected_account: Some(expected.into()),
        upstream_account: None,
        state: ConnectionState::Pending,
        oauth_state_hash: svc_ports::connections::oauth_state_hash(expected),
        pkce_verifier: SealedSecret::new(vec![1, 2, 3]),
        credentials: None,
        credentials_expire_at: None,
        link_expires_at: now + chrono::Duration::minutes(10),
        created_at: now,
        updated_at: now,
    };
    let (ended, never) = (connection("guest-1"), connection("guest-2"));
    for c in [&ended, &never] {
        stores.connections.insert_connection(c).await.unwrap();
    }
    stores
        .connections
        .finish_connection(
            &ended.id,
            ConnectionFinish::Connected {
                upstream_account: "guest-1".into(),
                credentials: SealedSecret::new(vec![9]),
                credentials_expire_at: Some(now),
            },
            now,
        )
        .await
        .unwrap();
    // Ended straight in the store, as a process that died before recording the event left it.
    for c in [&ended, &never] {
        stores
            .connections
            .expire_connection(&c.id, now)
            .await
            .unwrap();
    }
    let connections = &app.services.connections;
    assert_eq!(connections.recover_expired_events().await.unwrap(), 1);
    assert_eq!(
        connections.recover_expired_events().await.unwrap(),
        0,
        "once"
    );
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let body = verify_independently(&secret, &receiver.next().await);
    assert_eq!(body["type"], "connection.expired");
    assert_eq!(body["data"]["connection_id"], ended.id.as_str());
    assert_eq!(body["data"]["provider"], "shop-example");
    assert_eq!(body["data"]["state"], "expired");
}

/// A process that died between settling the charge that took the account below the low mark
/// and recording `credits.low`: the sweep records it (once), with the balance the charge left.
#[tokio::test]
async fn a_low_credits_event_never_recorded_is_swept_up() {
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let app = app_with(&receiver, None, false, Some(stores.clone())).await;
    let secret = register_for(&app, &receiver, "credits.low").await;
    let account = account_of(&app).await;
    let spendable = stores.ledger.balance(&account).await.unwrap().spendable;
    let cost = spendable - 4;
    assert!(cost > 0, "the sandbox account starts with credits");
    let task = settled_in_store(&stores, account, cost, app.services.clock.now()).await;

    let actions = &app.services.actions;
    assert_eq!(
        actions.recover_task_events().await.unwrap(),
        2,
        "task.completed and credits.low"
    );
    assert_eq!(actions.recover_task_events().await.unwrap(), 0, "once");
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let body = verify_independently(&secret, &receiver.next().await);
    assert_eq!(body["type"], "credits.low");
    assert_eq!(body["data"]["task_id"], task.as_str());
    assert_eq!(body["data"]["spendable"], 4);
    assert_eq!(body["data"]["threshold"], 10);
}

/// A process that died between settling the payment that used up its authority and recording
/// `authority.exhausted`: the sweep records it (once), and it is delivered.
#[tokio::test]
async fn an_exhausted_authority_event_never_recorded_is_swept_up() {
    use svc_ports::{AmountLimit, AuthorityInterval, AuthoritySpend, PaymentAuthority, Principal};
    let mut receiver = Receiver::start(&[]).await;
    let stores = Stores::memory();
    let app = app_with(&receiver, None, false, Some(stores.clone())).await;
    let secret = register_for(&app, &receiver, "authority.exhausted").await;
    let account = account_of(&app).await;
    let now = app.services.clock.now();
    let authority = PaymentAuthority {
        authority_id: svc_ports::AuthorityId::from_ulid(ulid::Ulid::new()),
        principal: Principal {
            kind: "agent".into(),
            id: "agent-7".into(),
            agent_provider: "example-agents".into(),
        },
        scope: vec!["order".into()],
        amount_limit: AmountLimit::new(500, AuthorityInterval::Day).unwrap(),
        currency: svc_ports::Currency::parse("usd").unwrap(),
        expires_at: now + chrono::Duration::days(30),
        revocation_url: "https://svc.example/authorities/revoke".into(),
        receipt_required: true,
        verification_required: false,
        created_at: now,
        account_id: account.clone(),
        created_by: "human@example.com".into(),
        revoked_at: None,
    };
    stores
        .authorities
        .insert_authority(&authority)
        .await
        .unwrap();
    let spend = |amount| AuthoritySpend {
        authority_id: authority.authority_id.clone(),
        amount,
        currency: authority.currency.clone(),
        scope: "order".into(),
    };
    // 200 leaves 300; the second payment, 300, fills the day's window, and its task settles
    // last.
    let first = paid_in_store(&stores, account.clone(), 1, Some(spend(200)), now).await;
    let later = now + chrono::Duration::seconds(1);
    let last = paid_in_store(&stores, account, 1, Some(spend(300)), later).await;

    let actions = &app.services.actions;
    assert_eq!(
        actions.recover_task_events().await.unwrap(),
        3,
        "two task.completed and one authority.exhausted"
    );
    assert_eq!(actions.recover_task_events().await.unwrap(), 0, "once");
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    let body = verify_independently(&secret, &receiver.next().await);
    assert_eq!(body["type"], "authority.exhausted");
    assert_eq!(body["data"]["task_id"], last.as_str());
    assert_ne!(body["data"]["task_id"], first.as_str());
    assert_eq!(
        body["data"]["authority_id"],
        authority.authority_id.as_str()
    );
    // Nothing remains until the day's window ends.
    assert_eq!(
        body["data"]["remaining"],
        json!({"value": 0, "currency": "usd",
            "window_end": authority.created_at + chrono::Duration::days(1)})
    );
}

/// The account of the app's key.
async fn account_of(app: &crate::helpers::TestApp) -> svc_ports::AccountId {
    app.services
        .auth
        .authenticate_header(Some(&bearer(&app.api_key)))
        .await
        .unwrap()
        .account
        .id
}

/// Registers the receiver for `event` alone; answers the endpoint's secret.
async fn register_for(app: &crate::helpers::TestApp, receiver: &Receiver, event: &str) -> String {
    let resp = register(
        app,
        &app.api_key,
        json!({"url": receiver.url(), "events": [event]}),
    )
    .await;
    assert_eq!(resp.status(), 201);
    resp.json::<Value>().await.unwrap()["secret"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A task of `cost` begun and settled completed straight in the store, without its events, as
/// a process that recorded them after the settlement and died between left it.
async fn settled_in_store(
    stores: &Stores,
    account: svc_ports::AccountId,
    cost: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> svc_ports::TaskId {
    paid_in_store(stores, account, cost, None, now).await
}

/// As [`settled_in_store`], the task paying `spend` under an authority.
async fn paid_in_store(
    stores: &Stores,
    account: svc_ports::AccountId,
    cost: i64,
    spend: Option<svc_ports::AuthoritySpend>,
    now: chrono::DateTime<chrono::Utc>,
) -> svc_ports::TaskId {
    let task = svc_ports::NewTask {
        id: svc_ports::TaskId::from_ulid(ulid::Ulid::new()),
        account_id: account,
        key_id: svc_ports::ApiKeyId::from_ulid(ulid::Ulid::new()),
        domain: SHOP.into(),
        action: "search_products".into(),
        cost,
        idempotency_key: None,
        fingerprint: "swept".into(),
        hold_entry: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
        authority_spend: spend,
        created_at: now,
    };
    stores.tasks.begin_task(&task).await.unwrap();
    stores
        .tasks
        .settle_task(&svc_ports::Settlement {
            task_id: task.id.clone(),
            completed: true,
            release_spend: false,
            response_status: 200,
            response_body: "{}".into(),
            artifact_id: svc_ports::ArtifactId::from_ulid(ulid::Ulid::new()),
            artifact: r#"{"status":"completed"}"#.into(),
            entry: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
            clawback_entry: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
            freeze_entry: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
            at: now,
            event: None,
        })
        .await
        .unwrap();
    task.id
}
