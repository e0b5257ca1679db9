//! The store contract suite against the postgres store.

svc_contract_tests::contract_suite!(svc_contract_tests::postgres);

use svc_ports::StoreHealth;

/// Readiness's view of a store's life: connected but never migrated is not current; migrated,
/// it is; closed, it does not answer.
#[tokio::test]
async fn readiness_follows_migration_and_close() {
    let url = svc_contract_tests::postgres_database().await;
    let store = svc_sql::PostgresStore::connect(&url, 4).await.unwrap();
    store.ping().await.expect("connected");
    assert!(!store.migrations_current().await.unwrap(), "never migrated");
    store.migrate().await.unwrap();
    assert!(store.migrations_current().await.unwrap(), "migrated");
    store.close().await;
    assert!(
        store.ping().await.is_err(),
        "a closed store does not answer"
    );
}

/// Instances starting together on a fresh database migrate it once: sqlx's migrator holds a
/// Postgres advisory lock (`pg_advisory_lock`, keyed on the database name) while it migrates,
/// so the others wait and then find every migration applied. Without the lock they would race
/// on `CREATE TABLE` and on the version rows, and some would fail to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn instances_starting_together_migrate_once() {
    use sqlx::Connection;
    let url = svc_contract_tests::postgres_database().await;
    let opened =
        futures_util::future::join_all((0..4).map(|_| svc_sql::PostgresStore::open(&url, 2))).await;
    for (i, store) in opened.iter().enumerate() {
        let store = store
            .as_ref()
            .unwrap_or_else(|e| panic!("instance {i}: {e:#}"));
        assert!(store.migrations_current().await.unwrap());
    }
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    let (rows, versions, failed): (i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT version), COUNT(*) FILTER (WHERE NOT success) \
         FROM _sqlx_migrations",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows, versions, "each migration recorded once");
    assert!(rows >= 11, "{rows}");
    assert_eq!(failed, 0);
}

/// Two instances, one key, the account's last credit: the loser hears "in flight".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn key_racers_on_two_instances_hear_in_flight_not_insufficient_credits() {
    let url = svc_contract_tests::postgres_database().await;
    svc_contract_tests::postgres_races::key_racers_on_two_instances_hear_in_flight_not_insufficient_credits(&url)
        .await;
}

/// An event enqueued while its endpoint was deleted is cancelled, never sent.
#[tokio::test]
async fn a_delivery_left_pending_for_a_deleted_endpoint_is_never_sent() {
    let url = svc_contract_tests::postgres_database().await;
    svc_contract_tests::postgres_races::a_delivery_left_pending_for_a_deleted_endpoint_is_never_sent(&url)
        .await;
}

/// An event still being committed holds back the feed after it.
#[tokio::test]
async fn the_feed_waits_for_an_event_still_being_committed() {
    let url = svc_contract_tests::postgres_database().await;
    svc_contract_tests::postgres_races::the_feed_waits_for_an_event_still_being_committed(&url)
        .await;
}

/// Events stored before their numbers come first, in id order.
#[tokio::test]
async fn events_stored_before_their_numbers_come_first() {
    let url = svc_contract_tests::postgres_database().await;
    svc_contract_tests::postgres_races::events_stored_before_their_numbers_come_first(&url).await;
}
