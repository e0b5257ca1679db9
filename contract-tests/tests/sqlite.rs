//! The store contract suite against the sqlite store.

svc_contract_tests::contract_suite!(svc_contract_tests::sqlite);

use svc_ports::StoreHealth;

/// Readiness's view of a store's life: connected but never migrated is not current; migrated,
/// it is; closed, it does not answer.
#[tokio::test]
async fn readiness_follows_migration_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("fresh.db").display());
    let store = svc_sql::SqliteStore::connect(&url).await.unwrap();
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
