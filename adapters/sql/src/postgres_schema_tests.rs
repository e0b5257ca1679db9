//! The rules migration 0020 moved from table CHECKs into domains still refuse what the CHECKs
//! refused, wherever a value is written; and the task indexes it made partial still keep
//! idempotency keys and artifact ids unique. (Outside `postgres/`: `statements.rs` prepares
//! every statement literal there, and these are built at run time.)

use sqlx::{Connection, Executor, PgConnection};

/// A fresh, migrated database on the test server (`SVC_TEST_POSTGRES_URL`).
async fn migrated(name: &str) -> PgConnection {
    let server = std::env::var("SVC_TEST_POSTGRES_URL").expect(
        "SVC_TEST_POSTGRES_URL: a Postgres server for the store tests (scripts/test.sh starts one)",
    );
    let name = format!("svc_schema_{}_{name}", std::process::id());
    let mut admin = PgConnection::connect(&server).await.unwrap();
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.execute(sqlx::AssertSqlSafe(statement)).await.unwrap();
    }
    let url = format!("{}/{name}", server.rsplit_once('/').unwrap().0);
    crate::PostgresStore::open(&url, 2).await.unwrap();
    PgConnection::connect(&url).await.unwrap()
}

/// The SQLSTATE `statement` fails with, or `None` when it succeeds.
async fn refusal(conn: &mut PgConnection, statement: &str) -> Option<String> {
    conn.execute(sqlx::AssertSqlSafe(statement.to_owned()))
        .await
        .err()
        .and_then(|e| e.as_database_error()?.code().map(|c| c.into_owned()))
}

const ACCOUNT: &str = "INSERT INTO accounts (id, email, plan, environment, spendable, created_at) \
     VALUES ('acct_1', 'a@example.com', 'free', 'live', 5, now())";
const TASK: &str = "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, fingerprint, \
     status, created_at) VALUES ('task_1', 'acct_1', 'key_1', 'd', 'a', 1, 'f', 'in_flight', now())";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_domains_refuse_what_the_checks_refused() {
    let mut conn = migrated("domains").await;
    assert_eq!(refusal(&mut conn, ACCOUNT).await, None);
    assert_eq!(refusal(&mut conn, TASK).await, None);
    let check = Some("23514".to_owned());
    for bad in [
        "UPDATE accounts SET spendable = -1",
        "UPDATE accounts SET held = held - 1",
        "UPDATE accounts SET frozen = -3",
        "UPDATE accounts SET plan = 'gold'",
        "UPDATE accounts SET environment = 'staging'",
        "UPDATE tasks SET cost = -1",
        "UPDATE tasks SET status = 'lost'",
        "UPDATE tasks SET status = 'completed', settled_at = now(), response_status = 42",
        // The rule over two columns stays a table CHECK.
        "UPDATE tasks SET status = 'completed'",
        "INSERT INTO ledger_entries (id, account_id, kind, delta, balance_after, reference, \
         memo, created_at) VALUES ('e1', 'acct_1', 'gift', 1, 1, 'r', 'm', now())",
        "INSERT INTO ledger_entries (id, account_id, kind, delta, balance_after, reference, \
         memo, created_at) VALUES ('e2', 'acct_1', 'grant', 1, -1, 'r', 'm', now())",
    ] {
        assert_eq!(refusal(&mut conn, bad).await, check, "{bad}");
    }
    // Values the rules allow still go in, and come back as their base types.
    assert_eq!(
        refusal(
            &mut conn,
            "UPDATE tasks SET status = 'completed', settled_at = now(), response_status = 599"
        )
        .await,
        None
    );
    let (status, code, spendable): (String, i64, i64) = sqlx::query_as(
        "SELECT t.status, t.response_status, a.spendable FROM tasks t \
         JOIN accounts a ON a.id = t.account_id",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!((status.as_str(), code, spendable), ("completed", 599, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_task_indexes_keep_keys_and_artifacts_unique() {
    let mut conn = migrated("partial").await;
    assert_eq!(refusal(&mut conn, ACCOUNT).await, None);
    let task = |id: &str, key: &str, artifact: &str| {
        format!(
            "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key, \
             fingerprint, status, artifact_id, created_at) VALUES ('{id}', 'acct_1', 'k', 'd', \
             'a', 0, {key}, 'f', 'in_flight', {artifact}, now())"
        )
    };
    let unique = Some("23505".to_owned());
    // Many tasks without a key or an artifact.
    for id in ["t1", "t2", "t3"] {
        assert_eq!(refusal(&mut conn, &task(id, "NULL", "NULL")).await, None);
    }
    assert_eq!(
        refusal(&mut conn, &task("t4", "'k1'", "'art1'")).await,
        None
    );
    assert_eq!(
        refusal(&mut conn, &task("t5", "'k1'", "NULL")).await,
        unique
    );
    assert_eq!(
        refusal(&mut conn, &task("t6", "'k2'", "'art1'")).await,
        unique
    );
    assert_eq!(
        refusal(&mut conn, &task("t7", "'k2'", "'art2'")).await,
        None
    );
}
