//! Credits across processes: one idempotency key charged once by two processes on one
//! Postgres, and a process killed mid-action losing no credit.

use super::*;

#[tokio::test]
async fn two_processes_on_one_postgres_charge_one_idempotency_key_once() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = tempfile::tempdir().unwrap();
    let db = ["--database-url", url.as_str()];
    let a = start_sandbox(dir.path(), &db, &[]);
    let b = start_sandbox(dir.path(), &db, &[]);
    // One account (the seeded address), a key from each process, 1,000 credits granted once.
    assert_eq!(spendable_and_held(&a.base, &a.key).await, (1000, 0));
    assert_eq!(spendable_and_held(&b.base, &b.key).await, (1000, 0));
    let body = serde_json::json!({"domain": "shop.sandbox.test", "action": "add_to_cart",
        "params": {"sku": "TEA-BLACK", "quantity": 3}});
    let answers = futures_util::future::join_all((0..200).map(|i| {
        let (base, key) = if i % 2 == 0 {
            (&a.base, &a.key)
        } else {
            (&b.base, &b.key)
        };
        let req = execute_request(base, key, &body, "two-instances-1");
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    }))
    .await;
    // Each sandbox runs its own shop, and only the last one published points the shared map at
    // its shop, so the one execution may complete (200) or be refused by the other process's
    // guarded client (a settled failure): either way every answer but "in flight" is that one
    // stored answer, and it moved money once.
    let settled: Vec<&(u16, String)> = answers.iter().filter(|(s, _)| *s != 409).collect();
    assert!(!settled.is_empty());
    assert!(
        settled.iter().all(|a| *a == settled[0]),
        "every settled answer is the same: {:?}",
        settled.iter().map(|(s, _)| s).collect::<Vec<_>>()
    );
    let task_ids: std::collections::HashSet<String> = settled
        .iter()
        .map(|(_, t)| serde_json::from_str::<Value>(t).unwrap()["task_id"].to_string())
        .collect();
    assert_eq!(task_ids.len(), 1, "one billing task");
    let expected = if settled[0].0 == 200 {
        (999, 0)
    } else {
        (1000, 0)
    };
    assert_eq!(
        spendable_and_held(&a.base, &a.key).await,
        expected,
        "charged at most once, refunded if it failed, across both processes"
    );
}

#[tokio::test]
async fn a_process_killed_mid_action_loses_no_credit() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("sandbox.db").display());
    let db = ["--database-url", url.as_str()];
    // The shortest window allowed: the 15 s request deadline and as long again.
    let env = [("SVC_RECOVER_AFTER_SECONDS", "30")];
    let first = start_sandbox(dir.path(), &db, &env);
    assert_eq!(spendable_and_held(&first.base, &first.key).await, (1000, 0));
    let body = serde_json::json!({"domain": "flaky.sandbox.test", "action": "slow", "params": {}});
    // The site answers after 30 s: the process dies while the task is in flight.
    let in_flight =
        tokio::spawn(execute_request(&first.base, &first.key, &body, "killed-1").send());
    let started = Instant::now();
    while spendable_and_held(&first.base, &first.key).await != (999, 1) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the task never began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(first); // SIGKILL: no shutdown, no settlement
    assert!(
        in_flight.await.unwrap().is_err(),
        "the request died with the process"
    );

    let second = start_sandbox(dir.path(), &db, &env);
    let started = Instant::now();
    let replay = loop {
        let r = execute_request(&second.base, &second.key, &body, "killed-1")
            .send()
            .await
            .unwrap();
        if r.status() != 409 {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "recovery never settled the task"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(replay.status(), 502);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let failure: Value = replay.json().await.unwrap();
    assert_eq!(failure["failure_class"], "interrupted");
    assert_eq!(failure["artifact"]["status"], "failed");
    assert_eq!(
        spendable_and_held(&second.base, &second.key).await,
        (1000, 0),
        "refunded"
    );
}
