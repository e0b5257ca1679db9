//! Scenarios for `MapStore` and `TaskStore`: map versions, holds, charges, refunds and
//! idempotency, including races and a property test over random execution sequences.

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use serde_json::json;
use svc_ports::{
    AccountId, ApiKeyId, ArtifactId, BeginOutcome, CreditAmount, Domain, LedgerEntryId,
    MapDocument, MapStatus, NewTask, ScanId, SettleOutcome, Settlement, TaskId, TaskStatus,
    VerifyOutcome,
    ledger::{EntryKind, Grant},
    store::{MapStoreError, TaskError},
};
use ulid::Ulid;

use crate::{
    Backend,
    scenarios::{new_account, t0},
};

mod property;
pub use property::execution_property;

fn document(domain: &str, description: &str) -> MapDocument {
    serde_json::from_value(json!({
        "domain": domain,
        "base_url": format!("https://{domain}"),
        "description": description,
        "actions": [{
            "name": "search_products",
            "description": "Search.",
            "family": "search",
            "params_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "consequential": false,
            "request": {"method": "GET", "path": "/search?q={q}"},
            "verify": {"status": [200]},
            "output_schema": {"type": "object"}
        }]
    }))
    .unwrap()
}

pub async fn maps_are_versioned_and_one_is_published(b: &Backend) {
    let shop = Domain::parse("shop.example.com").unwrap();
    let v1 = b
        .maps
        .insert_map(&document("shop.example.com", "one"), "imported", t0())
        .await
        .unwrap();
    let v2 = b
        .maps
        .insert_map(&document("shop.example.com", "two"), "learned", t0())
        .await
        .unwrap();
    b.maps
        .insert_map(&document("other.example.com", "x"), "imported", t0())
        .await
        .unwrap();
    assert_eq!(
        (v1.version, v2.version, v2.status),
        (1, 2, MapStatus::Candidate),
        "{}",
        b.name
    );
    assert_eq!(b.maps.published_map(&shop).await.unwrap(), None);
    assert!(matches!(
        b.maps.retire_map(&shop, t0()).await,
        Err(MapStoreError::NotFound)
    ));
    let missing = Domain::parse("none.example.com").unwrap();
    assert!(matches!(
        b.maps.publish_map(&missing, None, t0()).await,
        Err(MapStoreError::NotFound)
    ));
    assert!(matches!(
        b.maps.publish_map(&shop, Some(9), t0()).await,
        Err(MapStoreError::NotFound)
    ));

    let p1 = b.maps.publish_map(&shop, Some(1), t0()).await.unwrap();
    assert_eq!((p1.version, p1.status), (1, MapStatus::Published));
    let later = t0() + Duration::seconds(1);
    let p2 = b.maps.publish_map(&shop, None, later).await.unwrap();
    assert_eq!(p2.version, 2, "None publishes the newest");
    let published = b.maps.published_map(&shop).await.unwrap().unwrap();
    assert_eq!(
        (published.version, published.document.description.as_str()),
        (2, "two")
    );
    let all = b.maps.maps(Some(shop.clone())).await.unwrap();
    let statuses: Vec<_> = all.iter().map(|m| (m.version, m.status)).collect();
    assert_eq!(
        statuses,
        vec![(2, MapStatus::Published), (1, MapStatus::Retired)],
        "{}",
        b.name
    );
    assert_eq!(b.maps.maps(None).await.unwrap().len(), 3);
    let retired = b.maps.retire_map(&shop, later).await.unwrap();
    assert_eq!(retired.status, MapStatus::Retired);
    assert_eq!(b.maps.published_map(&shop).await.unwrap(), None);
    assert_eq!(
        retired.document,
        document("shop.example.com", "two"),
        "documents round-trip whole"
    );
}

pub(crate) async fn funded(b: &Backend, email: &str, credits: i64) -> AccountId {
    let a = new_account(b, email).await;
    if credits > 0 {
        b.ledger
            .grant(&Grant {
                id: LedgerEntryId::from_ulid(Ulid::new()),
                account_id: a.id.clone(),
                amount: CreditAmount::new(credits).unwrap(),
                reference: None,
                memo: "fund".into(),
                at: t0(),
            })
            .await
            .unwrap();
    }
    a.id
}

pub(crate) fn new_task(
    account: &AccountId,
    cost: i64,
    key: Option<&str>,
    fingerprint: &str,
) -> NewTask {
    NewTask {
        id: TaskId::from_ulid(Ulid::new()),
        account_id: account.clone(),
        key_id: ApiKeyId::from_ulid(Ulid::new()),
        domain: "shop.example.com".into(),
        action: "place_order".into(),
        cost,
        idempotency_key: key.map(str::to_owned),
        fingerprint: fingerprint.into(),
        hold_entry: LedgerEntryId::from_ulid(Ulid::new()),
        authority_spend: None,
        created_at: t0(),
    }
}

pub(crate) fn settlement(task: &TaskId, completed: bool, at: DateTime<Utc>) -> Settlement {
    Settlement {
        task_id: task.clone(),
        completed,
        // A failure here stands for one that surely moved no money (its spend is given back).
        release_spend: !completed,
        response_status: if completed { 200 } else { 502 },
        response_body: format!("{{\"completed\": {completed}}}"),
        artifact_id: ArtifactId::from_ulid(Ulid::new()),
        artifact: "{\"signed\": true}".into(),
        entry: LedgerEntryId::from_ulid(Ulid::new()),
        clawback_entry: LedgerEntryId::from_ulid(Ulid::new()),
        freeze_entry: LedgerEntryId::from_ulid(Ulid::new()),
        at,
        event: None,
    }
}

/// Settles a task in flight (completed or failed) at `t0`; it must land.
pub(crate) async fn settled(b: &Backend, task: &TaskId, completed: bool) {
    let outcome = b
        .tasks
        .settle_task(&settlement(task, completed, t0()))
        .await
        .unwrap();
    assert!(
        matches!(outcome, SettleOutcome::Settled(..)),
        "{}: {outcome:?}",
        b.name
    );
}

/// spendable equals the sum of entries, held equals the cost of tasks in flight, and it
/// returns (spendable, held).
pub(crate) async fn check_money(
    b: &Backend,
    account: &AccountId,
    in_flight_cost: i64,
) -> (i64, i64) {
    let balance = b.ledger.balance(account).await.unwrap();
    let entries = b.ledger.entries(account, 100_000).await.unwrap();
    let sum: i64 = entries.iter().map(|e| e.delta).sum();
    assert_eq!(
        balance.spendable, sum,
        "{}: spendable differs from the entries",
        b.name
    );
    assert_eq!(
        balance.held, in_flight_cost,
        "{}: held differs from tasks in flight",
        b.name
    );
    assert!(balance.spendable >= 0 && balance.held >= 0);
    (balance.spendable, balance.held)
}

pub async fn tasks_hold_then_charge_or_refund(b: &Backend) {
    let a = funded(b, "tasks@example.com", 10).await;
    let BeginOutcome::Started {
        task: t1,
        spendable,
    } = b
        .tasks
        .begin_task(&new_task(&a, 3, None, "f1"))
        .await
        .unwrap()
    else {
        panic!("{}: not started", b.name)
    };
    assert_eq!(t1.status, TaskStatus::InFlight);
    assert_eq!(check_money(b, &a, 3).await, (7, 3));
    // What a begin says is left after its hold (credits.low is judged on it).
    assert_eq!(spendable, 7, "{}", b.name);
    let BeginOutcome::Started {
        task: t2,
        spendable,
    } = b
        .tasks
        .begin_task(&new_task(&a, 2, None, "f2"))
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(check_money(b, &a, 5).await, (5, 5));
    assert_eq!(spendable, 5, "{}", b.name);

    let later = t0() + Duration::seconds(2);
    let SettleOutcome::Settled(done, None) = b
        .tasks
        .settle_task(&settlement(&t1.id, true, later))
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (done.status, done.response_status, done.settled_at),
        (TaskStatus::Completed, Some(200), Some(later))
    );
    assert_eq!(
        check_money(b, &a, 2).await,
        (5, 2),
        "{}: completed is charged",
        b.name
    );
    b.tasks
        .settle_task(&settlement(&t2.id, false, later))
        .await
        .unwrap();
    assert_eq!(
        check_money(b, &a, 0).await,
        (7, 0),
        "{}: failed is refunded",
        b.name
    );

    // Settling again changes nothing.
    let again = b
        .tasks
        .settle_task(&settlement(&t2.id, true, later))
        .await
        .unwrap();
    assert!(
        matches!(again, SettleOutcome::AlreadySettled(ref t) if t.status == TaskStatus::Failed)
    );
    assert_eq!(check_money(b, &a, 0).await, (7, 0));
    let kinds: Vec<EntryKind> = b
        .ledger
        .entries(&a, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            EntryKind::Refund,
            EntryKind::Capture,
            EntryKind::Hold,
            EntryKind::Hold,
            EntryKind::Grant
        ]
    );

    let stored = b
        .tasks
        .task(&t1.id, Some(a.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.artifact.as_deref(), Some("{\"signed\": true}"));
    let stranger = AccountId::from_ulid(Ulid::new());
    assert_eq!(
        b.tasks.task(&t1.id, Some(stranger)).await.unwrap(),
        None,
        "another account's task"
    );
    let unknown = TaskId::from_ulid(Ulid::new());
    assert!(matches!(
        b.tasks
            .settle_task(&settlement(&unknown, true, later))
            .await,
        Err(TaskError::NotFound)
    ));
}

pub async fn insufficient_credits_store_nothing(b: &Backend) {
    let a = funded(b, "poor@example.com", 2).await;
    let t = new_task(&a, 3, Some("k1"), "f");
    let outcome = b.tasks.begin_task(&t).await.unwrap();
    assert_eq!(
        outcome,
        BeginOutcome::InsufficientCredits { spendable: 2 },
        "{}",
        b.name
    );
    assert_eq!(b.tasks.task(&t.id, None).await.unwrap(), None);
    assert_eq!(check_money(b, &a, 0).await, (2, 0));
    // The key was not used up: the same key works once there is money.
    let cheap = new_task(&a, 2, Some("k1"), "f");
    assert!(matches!(
        b.tasks.begin_task(&cheap).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    let ghost = new_task(&AccountId::from_ulid(Ulid::new()), 1, None, "f");
    assert!(matches!(
        b.tasks.begin_task(&ghost).await,
        Err(TaskError::UnknownAccount)
    ));
    // Cost 0 holds nothing and writes no entry.
    let free = new_task(&a, 0, None, "f0");
    assert!(matches!(
        b.tasks.begin_task(&free).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    b.tasks
        .settle_task(&settlement(&free.id, true, t0()))
        .await
        .unwrap();
    assert_eq!(check_money(b, &a, 2).await, (0, 2));
}

pub async fn idempotency_keys_replay_refuse_and_conflict(b: &Backend) {
    let a = funded(b, "idem@example.com", 10).await;
    let first = new_task(&a, 1, Some("key-1"), "same");
    assert!(matches!(
        b.tasks.begin_task(&first).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    let dup = new_task(&a, 1, Some("key-1"), "same");
    assert!(
        matches!(b.tasks.begin_task(&dup).await.unwrap(), BeginOutcome::InFlight(ref t) if t.id == first.id),
        "{}",
        b.name
    );
    let other = new_task(&a, 1, Some("key-1"), "different");
    assert!(matches!(
        b.tasks.begin_task(&other).await.unwrap(),
        BeginOutcome::Conflict(_)
    ));
    b.tasks
        .settle_task(&settlement(&first.id, true, t0()))
        .await
        .unwrap();
    match b.tasks.begin_task(&dup).await.unwrap() {
        BeginOutcome::Replay(t) => {
            assert_eq!(t.id, first.id);
            assert_eq!(t.response_body.as_deref(), Some("{\"completed\": true}"));
        }
        other => panic!("{}: expected a replay, got {other:?}", b.name),
    }
    // Keys belong to an account: another account may use the same key.
    let other_account = funded(b, "idem2@example.com", 1).await;
    let theirs = new_task(&other_account, 1, Some("key-1"), "same");
    assert!(matches!(
        b.tasks.begin_task(&theirs).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    // Each account reads its own task under the key, settled as it was; none under another.
    let mine = b.tasks.task_by_key(&a, "key-1").await.unwrap().unwrap();
    assert_eq!(
        (&mine.id, mine.status),
        (&first.id, TaskStatus::Completed),
        "{}",
        b.name
    );
    let their_task = b.tasks.task_by_key(&other_account, "key-1").await.unwrap();
    assert_eq!(their_task.map(|t| t.id), Some(theirs.id.clone()));
    assert_eq!(b.tasks.task_by_key(&a, "key-2").await.unwrap(), None);
    assert_eq!(
        check_money(b, &a, 0).await,
        (9, 0),
        "{}: charged once",
        b.name
    );
}

pub async fn concurrent_requests_with_one_key_hold_once(b: &Backend) {
    let a = funded(b, "race@example.com", 1000).await;
    let results = join_all((0..50).map(|_| {
        let tasks = b.tasks.clone();
        let t = new_task(&a, 1, Some("same-key"), "same");
        async move { tasks.begin_task(&t).await.unwrap() }
    }))
    .await;
    let started: Vec<_> = results
        .iter()
        .filter(|r| matches!(r, BeginOutcome::Started { .. }))
        .collect();
    assert_eq!(
        started.len(),
        1,
        "{}: {} tasks started for one key",
        b.name,
        started.len()
    );
    assert!(
        results
            .iter()
            .all(|r| matches!(r, BeginOutcome::Started { .. } | BeginOutcome::InFlight(_)))
    );
    let BeginOutcome::Started { task, .. } = started[0] else {
        unreachable!()
    };
    // Racing settlements: one lands.
    let settled = join_all((0..10).map(|i| {
        let tasks = b.tasks.clone();
        let s = settlement(&task.id, i % 2 == 0, t0());
        async move { tasks.settle_task(&s).await.unwrap() }
    }))
    .await;
    assert_eq!(
        settled
            .iter()
            .filter(|s| matches!(s, SettleOutcome::Settled(..)))
            .count(),
        1,
        "{}",
        b.name
    );
    let (spendable, _) = check_money(b, &a, 0).await;
    assert!(spendable == 999 || spendable == 1000);
}

/// A settlement whose own ledger entry id is already stored fails and changes nothing: not
/// `AlreadySettled` (nobody settled the task), the task still in flight with its hold, and a
/// settlement with fresh ids then lands.
pub async fn a_settlement_whose_own_id_is_taken_changes_nothing(b: &Backend) {
    let a = funded(b, "taken-id@example.com", 10).await;
    let mut begun = Vec::new();
    for fingerprint in ["one", "two"] {
        let BeginOutcome::Started { task, .. } = b
            .tasks
            .begin_task(&new_task(&a, 2, None, fingerprint))
            .await
            .unwrap()
        else {
            panic!("{}: not started", b.name)
        };
        begun.push(task);
    }
    let first = settlement(&begun[0].id, true, t0());
    assert!(matches!(
        b.tasks.settle_task(&first).await.unwrap(),
        SettleOutcome::Settled(..)
    ));
    let mut taken = settlement(&begun[1].id, true, t0());
    taken.entry = first.entry.clone();
    let outcome = b.tasks.settle_task(&taken).await;
    assert!(
        matches!(outcome, Err(TaskError::Store(_))),
        "{}: {outcome:?}",
        b.name
    );
    let task = b.tasks.task(&begun[1].id, None).await.unwrap().unwrap();
    assert_eq!(task.status, TaskStatus::InFlight, "{}", b.name);
    assert_eq!(check_money(b, &a, 2).await, (6, 2), "{}", b.name);
    let fresh = settlement(&begun[1].id, false, t0());
    assert!(matches!(
        b.tasks.settle_task(&fresh).await.unwrap(),
        SettleOutcome::Settled(..)
    ));
    assert_eq!(check_money(b, &a, 0).await, (8, 0), "{}", b.name);
}

/// A settled task whose artifact has this status.
async fn settled_with(
    b: &Backend,
    account: &AccountId,
    completed: bool,
    status: &str,
) -> svc_ports::TaskRecord {
    let BeginOutcome::Started { task, .. } = b
        .tasks
        .begin_task(&new_task(account, 1, None, status))
        .await
        .unwrap()
    else {
        panic!("{}: not started", b.name)
    };
    let mut s = settlement(&task.id, completed, t0());
    s.artifact = json!({"artifact_id": s.artifact_id.as_str(), "status": status}).to_string();
    let SettleOutcome::Settled(settled, _) = b.tasks.settle_task(&s).await.unwrap() else {
        panic!("{}: not settled", b.name)
    };
    settled
}

pub async fn payment_verifications_are_stored_once(b: &Backend) {
    let a = funded(b, "verify@example.com", 100).await;
    let at = t0() + Duration::seconds(5);
    let artifact = |n: usize| json!({"status": "verified", "n": n}).to_string();
    let verify = |task: TaskId, n: usize| {
        let tasks = b.tasks.clone();
        async move {
            tasks
                .record_verification(&task, &ArtifactId::from_ulid(Ulid::new()), &artifact(n), at)
                .await
        }
    };
    assert!(
        matches!(
            verify(TaskId::from_ulid(Ulid::new()), 0).await,
            Err(TaskError::NotFound)
        ),
        "{}: unknown task",
        b.name
    );
    // In flight, failed, or settled with another status: not verifiable, nothing changes.
    let BeginOutcome::Started {
        task: in_flight, ..
    } = b
        .tasks
        .begin_task(&new_task(&a, 1, None, "in-flight"))
        .await
        .unwrap()
    else {
        panic!("{}: not started", b.name)
    };
    let failed = settled_with(b, &a, false, "failed").await;
    let completed = settled_with(b, &a, true, "completed").await;
    let already = settled_with(b, &a, true, "verified").await;
    for task in [&in_flight, &failed, &completed, &already] {
        let outcome = verify(task.id.clone(), 0).await.unwrap();
        assert!(
            matches!(&outcome, VerifyOutcome::NotVerifiable(t) if t.verified_artifact.is_none()),
            "{}: {outcome:?}",
            b.name
        );
        let stored = b.tasks.task(&task.id, None).await.unwrap().unwrap();
        assert_eq!(
            &stored, task,
            "{}: a refused verification changed the task",
            b.name
        );
    }
    let before = check_money(b, &a, 1).await;

    // A payment_completed task: of racing verifications exactly one lands.
    let paid = settled_with(b, &a, true, "payment_completed").await;
    assert!(paid.verifiable() && paid.verified_artifact.is_none());
    let before = (before.0 - 1, before.1);
    assert_eq!(check_money(b, &a, 1).await, before);
    let outcomes = join_all((0..20).map(|n| verify(paid.id.clone(), n))).await;
    let outcomes: Vec<VerifyOutcome> = outcomes.into_iter().map(Result::unwrap).collect();
    let winners: Vec<&svc_ports::TaskRecord> = outcomes
        .iter()
        .filter_map(|o| match o {
            VerifyOutcome::Verified(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "{}: {} verifications landed",
        b.name,
        winners.len()
    );
    let winner = winners[0].verified_artifact.clone().unwrap();
    for o in &outcomes {
        match o {
            VerifyOutcome::Verified(_) => {}
            VerifyOutcome::AlreadyVerified(t) => assert_eq!(
                t.verified_artifact.as_deref(),
                Some(winner.as_str()),
                "{}: a loser sees the winner",
                b.name
            ),
            other => panic!("{}: {other:?}", b.name),
        }
    }
    let stored = b
        .tasks
        .task(&paid.id, Some(a.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.verified_artifact.as_deref(), Some(winner.as_str()));
    assert_eq!(stored.verified_at, Some(at));
    // The settlement stands as it was: status, response, artifact, money.
    assert_eq!(
        (
            stored.status,
            &stored.artifact,
            &stored.response_body,
            stored.settled_at
        ),
        (
            paid.status,
            &paid.artifact,
            &paid.response_body,
            paid.settled_at
        )
    );
    assert_eq!(check_money(b, &a, 1).await, before, "{}", b.name);
    // Later: AlreadyVerified with the stored one, nothing changes.
    let again = verify(paid.id.clone(), 99).await.unwrap();
    assert!(
        matches!(&again, VerifyOutcome::AlreadyVerified(t) if t.verified_artifact.as_deref() == Some(winner.as_str())),
        "{}: {again:?}",
        b.name
    );
    assert_eq!(b.tasks.task(&paid.id, None).await.unwrap().unwrap(), stored);
}

pub async fn unsettled_tasks_are_listed_for_recovery(b: &Backend) {
    let a = funded(b, "crash@example.com", 5).await;
    let mut old = new_task(&a, 1, None, "f");
    old.created_at = t0() - Duration::minutes(10);
    let fresh = new_task(&a, 1, None, "g");
    b.tasks.begin_task(&old).await.unwrap();
    b.tasks.begin_task(&fresh).await.unwrap();
    let stale = b
        .tasks
        .unsettled_tasks(t0() - Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(
        stale.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        vec![old.id.clone()],
        "{}",
        b.name
    );
    b.tasks
        .settle_task(&settlement(&old.id, false, t0()))
        .await
        .unwrap();
    assert!(
        b.tasks
            .unsettled_tasks(t0() - Duration::minutes(1))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(check_money(b, &a, 1).await, (4, 1));
}

fn stored_event(surface: &str, state: &str, at: DateTime<Utc>) -> svc_ports::StoredEvent {
    svc_ports::StoredEvent {
        id: format!("evt_{}", Ulid::new()),
        received_at: at,
        event_id: "e".into(),
        session_id: "s".into(),
        agent_protocol: "mcp".into(),
        discovery_surface: surface.into(),
        conversion_state: state.into(),
        task_type: "read_page".into(),
        account_id: None,
        event: json!({"event_id": "e", "nested": {"a": [1, 2]}}),
    }
}

pub async fn telemetry_batches_are_stored_whole_and_counted(b: &Backend) {
    let old = stored_event("llms_txt", "discovered", t0() - Duration::hours(2));
    let mut batch: Vec<_> = (0..1200)
        .map(|i| {
            stored_event(
                if i % 3 == 0 {
                    "mcp_registry"
                } else {
                    "llms_txt"
                },
                "discovered",
                t0(),
            )
        })
        .collect();
    batch.push(old.clone());
    b.telemetry.insert_events(&batch).await.unwrap();
    b.telemetry.insert_events(&[]).await.unwrap();
    let funnel = b
        .telemetry
        .funnel(t0() - Duration::hours(1), None)
        .await
        .unwrap();
    let counts: Vec<(String, u64)> = funnel
        .iter()
        .map(|c| (c.discovery_surface.clone(), c.events))
        .collect();
    assert_eq!(
        counts,
        vec![
            ("llms_txt".to_owned(), 800),
            ("mcp_registry".to_owned(), 400)
        ],
        "{}",
        b.name
    );
    let all = b
        .telemetry
        .funnel(t0() - Duration::hours(3), None)
        .await
        .unwrap();
    assert_eq!(all.iter().map(|c| c.events).sum::<u64>(), 1201);
    let recent = b.telemetry.recent_events(5).await.unwrap();
    assert_eq!(recent.len(), 5);
    assert_eq!(
        recent[0].event,
        json!({"event_id": "e", "nested": {"a": [1, 2]}}),
        "{}: the event round-trips",
        b.name
    );
}

/// A readiness report reads back exactly as stored (evidence, statuses, millisecond times);
/// an unknown id reads as none; an id is stored once.
pub async fn scan_reports_round_trip_whole(b: &Backend) {
    let report =
        crate::samples::sample_report(crate::samples::sample_checks("line one\nline two"), 1234);
    b.scans.insert_scan(&report).await.unwrap();
    assert_eq!(
        b.scans.scan(&report.scan_id).await.unwrap(),
        Some(report.clone()),
        "{}",
        b.name
    );
    let mut other = report.clone();
    other.score = 1;
    assert!(b.scans.insert_scan(&other).await.is_err(), "{}", b.name);
    assert_eq!(
        b.scans.scan(&report.scan_id).await.unwrap().unwrap().score,
        report.score
    );
    assert_eq!(
        b.scans.scan(&ScanId::from_ulid(Ulid::new())).await.unwrap(),
        None
    );
}
