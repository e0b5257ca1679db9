//! Upgrading a Postgres database written before migration 0011: rows of every table are
//! stored in the old layout (BIGINT milliseconds, hex hashes, JSON as TEXT, integer flags),
//! the store then applies 0011 and reads each of them back unchanged.

mod old_layout;
mod rows;
mod session_reach;

use std::path::Path;

use sqlx::{Connection, PgConnection, migrate::Migrator};
use svc_ports::{
    AuthorityUsage, BeginOutcome, ConnectionState, Domain, EventOutcome, LedgerEntryId, MeterEvent,
    MeterEventId, MeterOutcome, NewTask, PaymentEvent, PaymentFact, ReceiptKind, TaskId,
    billing::task_receipt,
};
use ulid::Ulid;

use rows::{HELD, Rows, SPENDABLE, at, t0};

/// 0001 to 0010, recorded as sqlx records them, so that opening the store applies 0011 alone.
async fn database_at_0010() -> (String, PgConnection) {
    let url = svc_contract_tests::postgres_database().await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/postgres");
    let all = Migrator::new(dir.as_path()).await.unwrap();
    assert!(all.migrations.iter().any(|m| m.version == 11));
    let old = Migrator::with_migrations(
        all.migrations
            .iter()
            .filter(|m| m.version <= 10)
            .cloned()
            .collect(),
    );
    let mut conn = PgConnection::connect(&url).await.unwrap();
    old.run(&mut conn).await.unwrap();
    (url, conn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_before_0011_read_back_unchanged() {
    let (url, mut conn) = database_at_0010().await;
    let x = rows::rows();
    old_layout::insert(&mut conn, &x).await;
    let before: String = sqlx::query_scalar(
        "SELECT data_type FROM information_schema.columns \
         WHERE table_name = 'accounts' AND column_name = 'created_at'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(before, "bigint");

    let store = svc_sql::PostgresStore::open(&url, 4).await.unwrap();
    let after: String = sqlx::query_scalar(
        "SELECT data_type FROM information_schema.columns \
         WHERE table_name = 'accounts' AND column_name = 'created_at'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(after, "timestamp with time zone", "0011 was applied");
    // No read of the store returns a webhook's body or fact: read here, as they are now.
    let (fact, body): (String, Vec<u8>) =
        sqlx::query_as("SELECT fact::TEXT, body FROM payment_events WHERE webhook_id = 'wh_paid'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(serde_json::from_str::<PaymentFact>(&fact).unwrap(), x.paid);
    assert_eq!(body, x.paid_body);
    conn.close().await.unwrap();

    read_back(&store, &x).await;
    store.close().await;
}

async fn read_back(store: &svc_sql::PostgresStore, x: &Rows) {
    use svc_ports::{
        AccountStore, AuthorityStore, BillingStore, ConnectionStore, IdentityStore, LedgerStore,
        MapStore, PageCache, ScanStore, TaskStore, TelemetryStore,
    };
    let a = &x.account;
    assert_eq!(store.account(&a.id).await.unwrap().as_ref(), Some(a));
    assert_eq!(
        store
            .account_by_email(a.environment, &a.email)
            .await
            .unwrap()
            .as_ref(),
        Some(a)
    );
    assert_eq!(store.keys(Some(a.id.clone())).await.unwrap(), x.keys);
    assert_eq!(
        store.key_by_hash(&x.keys[0].hash).await.unwrap(),
        Some((x.keys[0].clone(), a.clone()))
    );
    let balance = store.balance(&a.id).await.unwrap();
    assert_eq!(
        (balance.spendable, balance.held, balance.frozen),
        (SPENDABLE, HELD, 0)
    );
    let mut newest_first = x.entries.clone();
    newest_first.reverse();
    assert_eq!(store.entries(&a.id, 10).await.unwrap(), newest_first);

    assert_eq!(
        store.checkout(&x.checkout.id).await.unwrap().as_ref(),
        Some(&x.checkout)
    );
    assert_eq!(
        store
            .checkout_by_key(&a.id, "ck-old")
            .await
            .unwrap()
            .as_ref(),
        Some(&x.checkout)
    );
    let mut receipts = vec![x.purchase.clone()];
    receipts.extend(task_receipt(&x.done));
    receipts.sort_by(|p, q| (q.created_at, &q.id).cmp(&(p.created_at, &p.id)));
    assert_eq!(store.receipts(&a.id, 10).await.unwrap(), receipts);

    assert_eq!(
        store.task(&x.done.id, None).await.unwrap().as_ref(),
        Some(&x.done)
    );
    assert_eq!(
        store
            .task(&x.running.id, Some(a.id.clone()))
            .await
            .unwrap()
            .as_ref(),
        Some(&x.running)
    );
    assert_eq!(
        store.unsettled_tasks(at(3_600_000)).await.unwrap(),
        vec![x.running.clone()]
    );
    let again = NewTask {
        id: TaskId::from_ulid(Ulid::new()),
        account_id: a.id.clone(),
        key_id: x.done.key_id.clone(),
        domain: x.done.domain.clone(),
        action: x.done.action.clone(),
        cost: x.done.cost,
        idempotency_key: x.done.idempotency_key.clone(),
        fingerprint: x.done.fingerprint.clone(),
        hold_entry: LedgerEntryId::from_ulid(Ulid::new()),
        authority_spend: None,
        created_at: at(60_000),
    };
    assert_eq!(
        store.begin_task(&again).await.unwrap(),
        BeginOutcome::Replay(x.done.clone())
    );

    let now = at(60_000);
    let usage = AuthorityUsage::compute(&x.authority, 50, 1, now);
    assert_eq!(
        store
            .authority(&x.authority.authority_id, now)
            .await
            .unwrap(),
        Some((x.authority.clone(), usage))
    );
    assert_eq!(
        store.authorities(&a.id, now).await.unwrap(),
        vec![(x.authority.clone(), usage)]
    );
    assert_eq!(
        store
            .authority_spends(&x.authority.authority_id)
            .await
            .unwrap(),
        x.spends
    );

    assert_eq!(
        store
            .device_grant_by_code(&x.grant.device_code_hash)
            .await
            .unwrap()
            .as_ref(),
        Some(&x.grant)
    );
    assert_eq!(
        store
            .device_grant_by_user_code(&x.grant.user_code)
            .await
            .unwrap()
            .as_ref(),
        Some(&x.grant)
    );
    assert_eq!(
        store.challenge(&x.challenge.id).await.unwrap().as_ref(),
        Some(&x.challenge)
    );
    assert_eq!(
        store.session(&x.session.token_hash, now).await.unwrap(),
        Some((x.session.clone(), a.clone()))
    );
    assert_eq!(
        store
            .take_handoff(&x.handoff.token_hash, now)
            .await
            .unwrap()
            .as_ref(),
        Some(&x.handoff)
    );

    assert_eq!(
        store.fresh_page("k1", t0()).await.unwrap().as_ref(),
        Some(&x.page)
    );
    let shop = Domain::parse("shop.example.com").unwrap();
    assert_eq!(store.maps(Some(shop.clone())).await.unwrap(), x.maps);
    assert_eq!(
        store.published_map(&shop).await.unwrap().as_ref(),
        Some(&x.maps[0])
    );
    assert_eq!(store.recent_events(10).await.unwrap(), x.events);
    let mine = store.funnel(t0(), Some(&a.id)).await.unwrap();
    assert_eq!(mine.iter().map(|f| f.events).sum::<u64>(), 1);
    assert_eq!(
        store.scan(&x.report.scan_id).await.unwrap().as_ref(),
        Some(&x.report)
    );
    let again = MeterEvent {
        id: MeterEventId::from_ulid(Ulid::new()),
        ..x.meter.clone()
    };
    assert_eq!(
        store.record_meter_event(&again).await.unwrap(),
        MeterOutcome::Existing(x.meter.clone())
    );
    let c = &x.connection;
    assert_eq!(store.connection(&c.id).await.unwrap().as_ref(), Some(c));
    assert_eq!(
        store
            .connection_by_state_hash(&c.oauth_state_hash)
            .await
            .unwrap()
            .as_ref(),
        Some(c)
    );
    assert_eq!(
        store
            .latest_connection_in(&a.id, &c.provider, ConnectionState::Connected)
            .await
            .unwrap()
            .as_ref(),
        Some(c)
    );

    // The payment's events: a redelivery is a duplicate, and a refund of it is judged with
    // the stored fact (read from JSONB) and the stored purchase: only the clawback moves.
    let event = |webhook: &str, fact: PaymentFact| PaymentEvent {
        provider: "sandbox".into(),
        webhook_id: webhook.into(),
        event_type: "x".into(),
        fact,
        body: x.paid_body.clone(),
        received_at: at(70_000),
    };
    assert_eq!(
        store
            .apply_payment_event(&event("wh_paid", x.paid.clone()))
            .await
            .unwrap(),
        EventOutcome::Duplicate {
            status: "applied".into()
        }
    );
    let refund = PaymentFact::Refunded {
        payment_id: "pay_old".into(),
        refund_id: "re_1".into(),
        amount: 900,
    };
    let EventOutcome::Applied(moved) = store
        .apply_payment_event(&event("wh_refund", refund))
        .await
        .unwrap()
    else {
        panic!("the refund applies")
    };
    assert_eq!(
        moved
            .iter()
            .map(|r| (r.kind, r.spendable_delta))
            .collect::<Vec<_>>(),
        vec![(ReceiptKind::RefundClawback, -100)]
    );
    assert_eq!(
        store.balance(&a.id).await.unwrap().spendable,
        SPENDABLE - 100
    );
}
