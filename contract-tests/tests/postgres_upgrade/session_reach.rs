//! Migration 0024 on a database with sessions: the one an older release opened from a handoff
//! link (a link of its account taken in the minute before it began) becomes a checkout
//! session; a session signed in by code stays a full one.

use std::path::Path;

use sqlx::{Connection, PgConnection, migrate::Migrator};
use svc_ports::{IdentityStore, KeyHash, SessionReach};

use crate::{old_layout, rows};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_a_handoff_link_opened_before_0024_become_checkout_sessions() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/postgres");
    let all = Migrator::new(dir.as_path()).await.unwrap();
    let upto = |v: i64| {
        Migrator::with_migrations(
            all.migrations
                .iter()
                .filter(|m| m.version <= v)
                .cloned()
                .collect(),
        )
    };
    let mut conn = PgConnection::connect(&url).await.unwrap();
    upto(10).run(&mut conn).await.unwrap();
    let x = rows::rows();
    old_layout::insert(&mut conn, &x).await;
    upto(23).run(&mut conn).await.unwrap();
    // A new connection: this one prepared the old layout's statements, with their old types.
    conn.close().await.unwrap();
    let mut conn = PgConnection::connect(&url).await.unwrap();
    // The fixture's session began 5 s after its account's link was taken: the older release's
    // handoff. A second session of the account began an hour later, by code.
    sqlx::query("UPDATE checkout_handoffs SET taken_at = $1")
        .bind(x.session.created_at - chrono::Duration::seconds(5))
        .execute(&mut conn)
        .await
        .unwrap();
    let by_code = KeyHash::of("signed in by code");
    sqlx::query(
        "INSERT INTO web_sessions (token_hash, account_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(by_code.as_bytes().as_slice())
    .bind(x.account.id.as_str())
    .bind(x.session.created_at + chrono::Duration::hours(1))
    .bind(x.session.expires_at)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let store = svc_sql::PostgresStore::open(&url, 2).await.unwrap();
    let now = x.session.created_at + chrono::Duration::hours(2);
    let reach = |hash| {
        let store = &store;
        async move {
            let (session, _) = store.session(&hash, now).await.unwrap().unwrap();
            session.reach
        }
    };
    assert_eq!(reach(x.session.token_hash).await, SessionReach::Checkout);
    assert_eq!(reach(by_code).await, SessionReach::Account);
    store.close().await;
}
