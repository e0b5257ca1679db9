//! Postgres alone: races between instances (or between a statement's snapshot and a lock)
//! that only a second connection can stage, each held open until the racers wait.

use svc_ports::{BeginOutcome, DeliveryStatus};

use crate::{
    Backend,
    actions::{funded, new_task},
    hooks::{at, endpoint, event, new_ids},
    scenarios::new_account,
};

/// Returns once `count` statements of this database wait for a lock, or once `done` says so;
/// fails with `what` after about 2,000 looks.
async fn waiting_for_locks(url: &str, count: i64, done: impl Fn() -> bool, what: &str) {
    use sqlx::Connection;
    let mut watcher = sqlx::PgConnection::connect(url).await.unwrap();
    for polled in 0.. {
        assert!(polled < 2_000, "{what}");
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut watcher)
        .await
        .unwrap();
        if waiting >= count || done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Postgres, two instances: requests under one key racing for an account's last credit. A
/// begin looks its key up in the snapshot its statement took before it waits for the account's
/// lock, so one that waited behind the winner found no task and no credits, and answered
/// "insufficient credits" to a request whose twin was running (a review reproduced it). The
/// account is held locked until both wait, so the race is certain.
pub async fn key_racers_on_two_instances_hear_in_flight_not_insufficient_credits(url: &str) {
    use sqlx::Connection;
    let open = || async {
        std::sync::Arc::new(
            svc_sql::PostgresStore::open(url, 4)
                .await
                .expect("open Postgres"),
        )
    };
    let (one, two) = (open().await, open().await);
    let b = Backend::all_in(one.clone(), "postgres", None);
    let account = funded(&b, "racer@example.com", 1).await;
    let mut locker = sqlx::PgConnection::connect(url).await.unwrap();
    let mut lock = locker.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE")
        .bind(account.as_str())
        .execute(&mut *lock)
        .await
        .unwrap();
    let (first, second) = (
        new_task(&account, 1, Some("last-credit"), "fp"),
        new_task(&account, 1, Some("last-credit"), "fp"),
    );
    let racing = tokio::spawn({
        let (one, two) = (one.clone(), two.clone());
        async move {
            use svc_ports::TaskStore;
            tokio::join!(one.begin_task(&first), two.begin_task(&second))
        }
    });
    // Both wait for the account's lock before it is let go.
    waiting_for_locks(
        url,
        2,
        || false,
        "the two begins never both waited for the lock",
    )
    .await;
    lock.commit().await.unwrap();
    let (a, b2) = racing.await.unwrap();
    let outcomes = [a.unwrap(), b2.unwrap()];
    let started = outcomes
        .iter()
        .filter(|o| matches!(o, BeginOutcome::Started { .. }))
        .count();
    let in_flight = outcomes
        .iter()
        .filter(|o| matches!(o, BeginOutcome::InFlight(_)))
        .count();
    assert_eq!((started, in_flight), (1, 1), "{outcomes:?}");
    assert_eq!(b.ledger.balance(&account).await.unwrap().spendable, 0);
}

/// Postgres: an event enqueued while its endpoint was being deleted. Under read committed the
/// delete's cancel does not see the delivery the enqueue has not committed, so the delivery
/// is left pending for an endpoint that is gone (a review found 109 of them sent after the
/// DELETE's 204). Here the endpoint is marked deleted behind the store's back, as the race
/// leaves it: the delivery is cancelled at claim time, never handed out.
pub async fn a_delivery_left_pending_for_a_deleted_endpoint_is_never_sent(url: &str) {
    use sqlx::Connection;
    let store = std::sync::Arc::new(
        svc_sql::PostgresStore::open(url, 4)
            .await
            .expect("open Postgres"),
    );
    let b = Backend::all_in(store, "postgres", None);
    let alice = new_account(&b, "hooks-race@example.com").await;
    let ep = endpoint(&alice.id, "https://a.example/", 0);
    b.hooks.insert_endpoint(&ep).await.unwrap();
    let e = event(&alice.id, "task:race", 1);
    b.hooks.enqueue_event(&e, new_ids()).await.unwrap();
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query("UPDATE webhook_endpoints SET deleted_at = $1 WHERE id = $2")
        .bind(at(2))
        .bind(ep.id.as_str())
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(
        b.hooks
            .claim_due(at(3), "l", at(60), 10, crate::hooks::UNCAPPED)
            .await
            .unwrap()
            .is_empty()
    );
    let log = b.hooks.deliveries(&alice.id, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].status, log[0].next_attempt_at),
        (DeliveryStatus::Canceled, None)
    );
}

/// Postgres: an account's event stored while an earlier one's transaction is still running
/// waits for it to commit, so a reader never sees the later one first and steps over the
/// earlier one (its id is older) with its cursor. The earlier transaction is held open until
/// the later store waits, or, as before, stored.
pub async fn the_feed_waits_for_an_event_still_being_committed(url: &str) {
    use sqlx::Connection;
    let store = std::sync::Arc::new(
        svc_sql::PostgresStore::open(url, 4)
            .await
            .expect("open Postgres"),
    );
    let b = Backend::all_in(store, "postgres", None);
    let alice = new_account(&b, "hooks-feed-race@example.com").await;
    let mut writer = sqlx::PgConnection::connect(url).await.unwrap();
    let mut slow = writer.begin().await.unwrap();
    let first = event(&alice.id, "slow", 1);
    let item = serde_json::json!({
        "id": first.id.as_str(), "account_id": alice.id.as_str(), "type": "task.completed",
        "source": first.source, "payload": first.payload, "created_at": first.created_at,
        "head": "", "tail": "", "digits": "", "max": 0,
    });
    sqlx::query("SELECT * FROM svc_store_event($1)")
        .bind(item)
        .execute(&mut *slow)
        .await
        .unwrap();
    let quick = tokio::spawn({
        let hooks = b.hooks.clone();
        let second = event(&alice.id, "quick", 2);
        async move { hooks.enqueue_event(&second, new_ids()).await.unwrap() }
    });
    waiting_for_locks(
        url,
        1,
        || quick.is_finished(),
        "the second store neither waited nor finished",
    )
    .await;
    let seen = b.hooks.events_after(&alice.id, None, 10).await.unwrap();
    assert!(
        seen.is_empty(),
        "the later event is not shown before the earlier one commits: {seen:?}"
    );
    slow.commit().await.unwrap();
    quick.await.unwrap();
    let feed = b.hooks.events_after(&alice.id, None, 10).await.unwrap();
    let sources: Vec<_> = feed.iter().map(|e| e.source.as_str()).collect();
    assert_eq!(sources, ["slow", "quick"]);
}

/// Postgres: events stored before migration 0026 have no number; they come first, in id
/// order, and a cursor among them reaches the numbered ones after them.
pub async fn events_stored_before_their_numbers_come_first(url: &str) {
    use sqlx::Connection;
    let store = std::sync::Arc::new(
        svc_sql::PostgresStore::open(url, 4)
            .await
            .expect("open Postgres"),
    );
    let b = Backend::all_in(store, "postgres", None);
    let alice = new_account(&b, "hooks-feed-old@example.com").await;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let old = |n: u128, source: &str| svc_ports::HookEvent {
        id: svc_ports::WebhookEventId::from_ulid(ulid::Ulid::from_parts(1_000, n)),
        ..event(&alice.id, source, 1)
    };
    let (first, second) = (old(1, "old-1"), old(2, "old-2"));
    for old in [&first, &second] {
        sqlx::query(
            "INSERT INTO webhook_events (id, account_id, type, source, payload, created_at) \
             VALUES ($1, $2, 'task.completed', $3, $4, $5)",
        )
        .bind(old.id.as_str())
        .bind(alice.id.as_str())
        .bind(&old.source)
        .bind(&old.payload)
        .bind(old.created_at)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    let new = event(&alice.id, "new", 3);
    b.hooks.enqueue_event(&new, new_ids()).await.unwrap();
    let sources = |after: Option<&svc_ports::HookEvent>| {
        let hooks = b.hooks.clone();
        let (account, after) = (alice.id.clone(), after.map(|e| e.id.clone()));
        async move {
            hooks
                .events_after(&account, after, 10)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.source)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(sources(None).await, ["old-1", "old-2", "new"]);
    assert_eq!(sources(Some(&first)).await, ["old-2", "new"]);
    assert_eq!(sources(Some(&second)).await, ["new"]);
    assert!(sources(Some(&new)).await.is_empty());
}
