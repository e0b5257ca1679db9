//! Scenarios for `HookStore`: endpoints per account, events stored once per source with their
//! deliveries, claims under a lease (never one delivery to two claims at once, taken again when
//! a lease ends), attempts recorded only under their lease, replays and deletions.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use svc_ports::{
    AccountId, Attempt, AttemptResult, DeliveryIds, DeliveryStatus, EnqueueOutcome, HookError,
    HookEvent, HookEventType, SealedSecret, WebhookDeliveryId, WebhookEndpoint, WebhookEndpointId,
    WebhookEventId,
};
use ulid::Ulid;

use crate::{
    Backend,
    scenarios::{new_account, t0},
};

mod fairness;
mod feed;
mod sweeps;
pub(crate) use fairness::UNCAPPED;
pub use fairness::{
    an_endpoint_has_at_most_its_cap_of_replays_waiting,
    claims_keep_each_endpoint_and_account_within_its_caps,
    claims_take_answering_or_failing_endpoints_as_asked,
};
pub use feed::the_feed_never_steps_over_an_event_committed_after_a_newer_id;
pub use sweeps::{
    charges_that_crossed_the_low_mark_without_their_event_are_found,
    expired_connections_without_their_event_are_found,
    payments_that_used_up_their_authority_without_their_event_are_found,
    sweep_marks_move_forward_only_and_per_sweep,
};

pub(crate) fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds)
}

pub(crate) fn endpoint(account: &AccountId, url: &str, seconds: i64) -> WebhookEndpoint {
    WebhookEndpoint {
        id: WebhookEndpointId::from_ulid(Ulid::new()),
        account_id: account.clone(),
        url: url.to_owned(),
        description: "contract é \u{1F980}".into(),
        events: vec![HookEventType::TaskCompleted, HookEventType::TaskFailed],
        secret: SealedSecret::new(vec![0, 1, 2, 255, 7]),
        created_at: at(seconds),
    }
}

pub(crate) fn event(account: &AccountId, source: &str, seconds: i64) -> HookEvent {
    HookEvent {
        id: WebhookEventId::from_ulid(Ulid::new()),
        account_id: account.clone(),
        event_type: HookEventType::TaskCompleted,
        source: source.to_owned(),
        payload: format!(r#"{{"type":"task.completed","data":{{"source":"{source}"}}}}"#),
        created_at: at(seconds),
    }
}

pub(crate) fn new_delivery() -> WebhookDeliveryId {
    WebhookDeliveryId::from_ulid(Ulid::new())
}

pub(crate) fn new_ids() -> DeliveryIds {
    DeliveryIds::new(Ulid::new())
}

pub(crate) fn attempt(seconds: i64, result: AttemptResult) -> Attempt {
    Attempt {
        at: at(seconds),
        status_code: Some(500),
        error: Some("HTTP 500".into()),
        result,
    }
}

pub async fn endpoints_are_stored_listed_and_deleted_per_account(b: &Backend) {
    let alice = new_account(b, "hooks-a@example.com").await;
    let bob = new_account(b, "hooks-b@example.com").await;
    let first = endpoint(&alice.id, "https://a.example/1", 0);
    let second = endpoint(&alice.id, "https://a.example/2", 1);
    let bobs = endpoint(&bob.id, "https://b.example/", 2);
    for e in [&first, &second, &bobs] {
        b.hooks.insert_endpoint(e).await.unwrap();
    }
    assert!(matches!(
        b.hooks.insert_endpoint(&first).await,
        Err(HookError::Duplicate)
    ));
    let stranger = AccountId::from_ulid(Ulid::new());
    assert!(matches!(
        b.hooks
            .insert_endpoint(&endpoint(&stranger, "https://x.example/", 0))
            .await,
        Err(HookError::UnknownAccount)
    ));
    let listed = b.hooks.endpoints(&alice.id).await.unwrap();
    assert_eq!(listed, vec![second.clone(), first.clone()], "{}", b.name);
    // Another account's endpoint is not found, and stays.
    assert!(matches!(
        b.hooks.delete_endpoint(&alice.id, &bobs.id, at(3)).await,
        Err(HookError::NotFound)
    ));
    assert_eq!(b.hooks.endpoints(&bob.id).await.unwrap(), vec![bobs]);
    b.hooks
        .delete_endpoint(&alice.id, &first.id, at(3))
        .await
        .unwrap();
    // Again: nothing changes, and it is not an error.
    b.hooks
        .delete_endpoint(&alice.id, &first.id, at(4))
        .await
        .unwrap();
    assert!(matches!(
        b.hooks
            .delete_endpoint(&alice.id, &WebhookEndpointId::from_ulid(Ulid::new()), at(4))
            .await,
        Err(HookError::NotFound)
    ));
    assert_eq!(b.hooks.endpoints(&alice.id).await.unwrap(), vec![second]);
}

/// `Settlement::event`: stored with the settlement that lands (deliveries as `enqueue_event`
/// makes them), a duplicate when its source was recorded before, and never by a settlement
/// that does not land (settled before, or racing one that won).
pub async fn a_settlement_stores_its_event_only_when_it_lands(b: &Backend) {
    use crate::actions::{funded, new_task, settlement};
    use svc_ports::{BeginOutcome, SettleOutcome};

    let a = funded(b, "hooks-settle@example.com", 100).await;
    let live = endpoint(&a, "https://a.example/settled", 0);
    b.hooks.insert_endpoint(&live).await.unwrap();
    let begin = |fingerprint: &'static str| {
        let task = new_task(&a, 2, None, fingerprint);
        async move {
            match b.tasks.begin_task(&task).await.unwrap() {
                BeginOutcome::Started { task, .. } => task,
                other => panic!("{}: not started: {other:?}", b.name),
            }
        }
    };
    let with_event = |task: &svc_ports::TaskRecord, completed: bool| {
        let mut s = settlement(&task.id, completed, at(5));
        s.event = Some((event(&a, &format!("task:{}", task.id), 5), new_ids()));
        s
    };
    let account = &a;
    let stored = |id: WebhookEventId| async move {
        b.hooks
            .events_after(account, None, 100)
            .await
            .unwrap()
            .into_iter()
            .find(|e| e.id == id)
    };

    // Lands: the task, the money and the event with its delivery, together.
    let task = begin("one").await;
    let s = with_event(&task, true);
    let (event_id, _) = s.event.clone().unwrap();
    let outcome = b.tasks.settle_task(&s).await.unwrap();
    let SettleOutcome::Settled(settled, Some(EnqueueOutcome::Enqueued { deliveries: 1 })) = outcome
    else {
        panic!("{}: {outcome:?}", b.name)
    };
    assert_eq!(settled.artifact_id.as_ref(), Some(&s.artifact_id));
    assert_eq!(stored(event_id.id.clone()).await.as_ref(), Some(&event_id));
    let deliveries = b.hooks.deliveries(&a, 100).await.unwrap();
    assert!(
        deliveries
            .iter()
            .any(|d| d.event_id == event_id.id && d.endpoint_id == live.id),
        "{}: {deliveries:?}",
        b.name
    );

    // Settled before: nothing lands, so no event.
    let again = with_event(&task, false);
    let outcome = b.tasks.settle_task(&again).await.unwrap();
    assert!(
        matches!(outcome, SettleOutcome::AlreadySettled(_)),
        "{}",
        b.name
    );
    assert_eq!(stored(again.event.unwrap().0.id).await, None);

    // Its source recorded before: the settlement lands, the event is a duplicate.
    let task = begin("two").await;
    let s = with_event(&task, false);
    let earlier = event(&a, &s.event.as_ref().unwrap().0.source, 1);
    b.hooks.enqueue_event(&earlier, new_ids()).await.unwrap();
    let outcome = b.tasks.settle_task(&s).await.unwrap();
    assert!(
        matches!(
            outcome,
            SettleOutcome::Settled(_, Some(EnqueueOutcome::Duplicate))
        ),
        "{}: {outcome:?}",
        b.name
    );
    assert_eq!(stored(s.event.unwrap().0.id).await, None);

    // Racing settlements of one task: one lands, and exactly its event is stored.
    let task = begin("three").await;
    let racing: Vec<_> = (0..8).map(|i| with_event(&task, i % 2 == 0)).collect();
    let outcomes = join_all(racing.iter().map(|s| b.tasks.settle_task(s))).await;
    let landed: Vec<_> = outcomes
        .iter()
        .zip(&racing)
        .filter(|(o, _)| matches!(o, Ok(SettleOutcome::Settled(..))))
        .map(|(_, s)| s.event.clone().unwrap().0.id)
        .collect();
    assert_eq!(landed.len(), 1, "{}: {outcomes:?}", b.name);
    let events = b.hooks.events_after(&a, None, 100).await.unwrap();
    let source = format!("task:{}", task.id);
    let of_task: Vec<_> = events.iter().filter(|e| e.source == source).collect();
    assert_eq!(of_task.len(), 1, "{}", b.name);
    assert_eq!(of_task[0].id, landed[0]);
}

pub async fn events_are_stored_once_per_source_with_their_deliveries(b: &Backend) {
    let alice = new_account(b, "hooks-c@example.com").await;
    let bob = new_account(b, "hooks-d@example.com").await;
    let live = endpoint(&alice.id, "https://a.example/live", 0);
    let gone = endpoint(&alice.id, "https://a.example/gone", 0);
    let bobs = endpoint(&bob.id, "https://b.example/", 0);
    for e in [&live, &gone, &bobs] {
        b.hooks.insert_endpoint(e).await.unwrap();
    }
    b.hooks
        .delete_endpoint(&alice.id, &gone.id, at(1))
        .await
        .unwrap();
    let e = event(&alice.id, "task:1", 2);
    // Only the account's own endpoint that is not deleted gets a delivery.
    let outcome = b.hooks.enqueue_event(&e, new_ids()).await.unwrap();
    assert_eq!(
        outcome,
        EnqueueOutcome::Enqueued { deliveries: 1 },
        "{}",
        b.name
    );
    let again = event(&alice.id, "task:1", 3);
    assert_eq!(
        b.hooks.enqueue_event(&again, new_ids()).await.unwrap(),
        EnqueueOutcome::Duplicate
    );
    // The very same event again (same id and source) is a duplicate too, with no delivery.
    assert_eq!(
        b.hooks.enqueue_event(&e, new_ids()).await.unwrap(),
        EnqueueOutcome::Duplicate,
        "{}",
        b.name
    );
    // Another account may have the same source; its event goes to its own endpoint.
    assert_eq!(
        b.hooks
            .enqueue_event(&event(&bob.id, "task:1", 3), new_ids())
            .await
            .unwrap(),
        EnqueueOutcome::Enqueued { deliveries: 1 }
    );
    let log = b.hooks.deliveries(&alice.id, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    let d = &log[0];
    assert_eq!(
        (
            &d.event_id,
            d.event_type,
            &d.endpoint_id,
            d.endpoint_url.as_str()
        ),
        (&e.id, e.event_type, &live.id, "https://a.example/live")
    );
    assert_eq!(
        (d.status, d.attempts, d.next_attempt_at, d.created_at),
        (DeliveryStatus::Pending, 0, Some(at(2)), at(2))
    );
    let bobs_log = b.hooks.deliveries(&bob.id, 10).await.unwrap();
    assert_eq!(
        bobs_log.iter().map(|d| &d.endpoint_id).collect::<Vec<_>>(),
        [&bobs.id]
    );
    assert_eq!(
        b.hooks.delivery(&alice.id, &d.id).await.unwrap().as_ref(),
        Some(d)
    );
    assert_eq!(b.hooks.delivery(&bob.id, &d.id).await.unwrap(), None);
    // Events page by id, oldest first, per account.
    let events = b.hooks.events_after(&alice.id, None, 10).await.unwrap();
    assert_eq!(events, vec![e.clone()]);
    assert!(
        b.hooks
            .events_after(&alice.id, Some(e.id.clone()), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        b.hooks
            .enqueue_event(
                &event(&AccountId::from_ulid(Ulid::new()), "x", 0),
                new_ids()
            )
            .await,
        Err(HookError::UnknownAccount)
    ));
}

/// The store picks the endpoints: those subscribed to the event's type, oldest first, the
/// n-th taking the id `ids.nth(n)`, spelled the same by every store.
pub async fn events_go_to_subscribed_endpoints_oldest_first(b: &Backend) {
    let carol = new_account(b, "hooks-order@example.com").await;
    let newer = endpoint(&carol.id, "https://c.example/newer", 5);
    let older = endpoint(&carol.id, "https://c.example/older", 1);
    let credits_only = WebhookEndpoint {
        events: vec![HookEventType::CreditsAdded],
        ..endpoint(&carol.id, "https://c.example/credits", 0)
    };
    for e in [&newer, &older, &credits_only] {
        b.hooks.insert_endpoint(e).await.unwrap();
    }
    // Two of the seeds are one apart, as a monotonic generator makes them within a millisecond.
    let seed = Ulid::new();
    let ids = new_ids();
    let task = event(&carol.id, "task:order", 6);
    assert_eq!(
        b.hooks.enqueue_event(&task, ids).await.unwrap(),
        EnqueueOutcome::Enqueued { deliveries: 2 },
        "{}",
        b.name
    );
    let credits = HookEvent {
        event_type: HookEventType::CreditsAdded,
        ..event(&carol.id, "payment:order", 7)
    };
    let one = DeliveryIds::new(seed);
    assert_eq!(
        b.hooks.enqueue_event(&credits, one).await.unwrap(),
        EnqueueOutcome::Enqueued { deliveries: 1 }
    );
    let next = DeliveryIds::new(Ulid(seed.0 + 1));
    let later = event(&carol.id, "task:later", 8);
    assert_eq!(
        b.hooks.enqueue_event(&later, next).await.unwrap(),
        EnqueueOutcome::Enqueued { deliveries: 2 },
        "{}: ids from the next seed are other ids",
        b.name
    );
    let got = delivered(b, &carol.id).await;
    let nth = |ids: DeliveryIds, n| ids.nth(n).unwrap();
    let mut want = vec![
        (nth(ids, 0), task.id.clone(), older.id.clone()),
        (nth(ids, 1), task.id.clone(), newer.id.clone()),
        (nth(one, 0), credits.id.clone(), credits_only.id.clone()),
        (nth(next, 0), later.id.clone(), older.id.clone()),
        (nth(next, 1), later.id.clone(), newer.id.clone()),
    ];
    want.sort();
    assert_eq!(got, want, "{}", b.name);
}

/// The account's deliveries as (id, event, endpoint), by id.
pub(crate) async fn delivered(
    b: &Backend,
    account: &AccountId,
) -> Vec<(WebhookDeliveryId, WebhookEventId, WebhookEndpointId)> {
    let mut all: Vec<_> = b
        .hooks
        .deliveries(account, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.id, d.event_id, d.endpoint_id))
        .collect();
    all.sort();
    all
}

/// Ids with two digits of n in use: an account with more endpoints than one base-32 digit
/// spells gets ids the store spells as `DeliveryIds::nth` does.
pub async fn many_endpoints_get_the_ids_nth_spells(b: &Backend) {
    let dave = new_account(b, "hooks-many@example.com").await;
    let mut endpoints = Vec::new();
    for n in 0..40 {
        let e = endpoint(&dave.id, &format!("https://d.example/{n}"), n);
        b.hooks.insert_endpoint(&e).await.unwrap();
        endpoints.push(e.id);
    }
    let ids = new_ids();
    let e = event(&dave.id, "task:many", 50);
    assert_eq!(
        b.hooks.enqueue_event(&e, ids).await.unwrap(),
        EnqueueOutcome::Enqueued { deliveries: 40 },
        "{}",
        b.name
    );
    let got: Vec<_> = delivered(b, &dave.id)
        .await
        .into_iter()
        .map(|(id, _, endpoint)| (id, endpoint))
        .collect();
    let want: Vec<_> = endpoints
        .into_iter()
        .enumerate()
        .map(|(n, e)| (ids.nth(n).unwrap(), e))
        .collect();
    assert_eq!(got, want, "{}", b.name);
}

pub async fn attempts_are_recorded_only_under_their_lease(b: &Backend) {
    let alice = new_account(b, "hooks-e@example.com").await;
    let ep = endpoint(&alice.id, "https://a.example/", 0);
    b.hooks.insert_endpoint(&ep).await.unwrap();
    let e = event(&alice.id, "task:2", 10);
    b.hooks.enqueue_event(&e, new_ids()).await.unwrap();
    assert!(
        b.hooks
            .claim_due(at(9), "early", at(70), 10, UNCAPPED)
            .await
            .unwrap()
            .is_empty()
    );
    let claimed = b
        .hooks
        .claim_due(at(10), "one", at(70), 10, UNCAPPED)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "{}", b.name);
    let c = &claimed[0];
    assert_eq!(
        (
            c.lease.as_str(),
            c.payload.as_str(),
            &c.secret,
            c.event_created_at
        ),
        ("one", e.payload.as_str(), &ep.secret, at(10))
    );
    // Leased: nobody else gets it before the lease ends.
    assert!(
        b.hooks
            .claim_due(at(11), "two", at(71), 10, UNCAPPED)
            .await
            .unwrap()
            .is_empty()
    );
    let id = &c.delivery.id;
    assert!(matches!(
        b.hooks
            .record_attempt(id, "two", &attempt(12, AttemptResult::GaveUp))
            .await,
        Err(HookError::LeaseLost)
    ));
    let retried = b
        .hooks
        .record_attempt(id, "one", &attempt(12, AttemptResult::RetryAt(at(17))))
        .await
        .unwrap();
    assert_eq!(
        (
            retried.status,
            retried.attempts,
            retried.next_attempt_at,
            retried.last_status_code,
            retried.last_error.as_deref()
        ),
        (
            DeliveryStatus::Pending,
            1,
            Some(at(17)),
            Some(500),
            Some("HTTP 500")
        )
    );
    // A second record under the same (now freed) lease is refused.
    assert!(matches!(
        b.hooks
            .record_attempt(id, "one", &attempt(13, AttemptResult::Delivered))
            .await,
        Err(HookError::LeaseLost)
    ));
    assert!(
        b.hooks
            .claim_due(at(16), "three", at(80), 10, UNCAPPED)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        b.hooks
            .claim_due(at(17), "three", at(80), 10, UNCAPPED)
            .await
            .unwrap()
            .len(),
        1
    );
    // The claimant died: once its lease ends, another claims it; the dead one cannot record.
    assert_eq!(
        b.hooks
            .claim_due(at(80), "four", at(140), 10, UNCAPPED)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(matches!(
        b.hooks
            .record_attempt(id, "three", &attempt(81, AttemptResult::Delivered))
            .await,
        Err(HookError::LeaseLost)
    ));
    let done = b
        .hooks
        .record_attempt(
            id,
            "four",
            &Attempt {
                at: at(81),
                status_code: Some(204),
                error: None,
                result: AttemptResult::Delivered,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (
            done.status,
            done.attempts,
            done.next_attempt_at,
            done.last_attempt_at
        ),
        (DeliveryStatus::Succeeded, 2, None, Some(at(81)))
    );
    assert!(
        b.hooks
            .claim_due(at(999), "five", at(1100), 10, UNCAPPED)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        b.hooks
            .record_attempt(&new_delivery(), "x", &attempt(1, AttemptResult::GaveUp))
            .await,
        Err(HookError::NotFound)
    ));
}

pub async fn concurrent_claims_hand_out_each_delivery_once(b: &Backend) {
    let alice = new_account(b, "hooks-f@example.com").await;
    let ep = endpoint(&alice.id, "https://a.example/", 0);
    b.hooks.insert_endpoint(&ep).await.unwrap();
    for i in 0..24 {
        b.hooks
            .enqueue_event(&event(&alice.id, &format!("task:{i}"), 0), new_ids())
            .await
            .unwrap();
    }
    let claims = join_all((0..8).map(|i| {
        let hooks = b.hooks.clone();
        async move {
            hooks
                .claim_due(at(1), &format!("lease-{i}"), at(60), 5, UNCAPPED)
                .await
                .unwrap()
        }
    }))
    .await;
    let ids: Vec<_> = claims
        .iter()
        .flatten()
        .map(|c| c.delivery.id.clone())
        .collect();
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "{}: a delivery was claimed twice",
        b.name
    );
    assert_eq!(ids.len(), 24, "{}: every due delivery claimed", b.name);
    for claim in &claims {
        assert!(claim.len() <= 5);
    }
}

pub async fn replays_are_new_deliveries_and_deletion_cancels(b: &Backend) {
    let alice = new_account(b, "hooks-g@example.com").await;
    let bob = new_account(b, "hooks-h@example.com").await;
    let ep = endpoint(&alice.id, "https://a.example/", 0);
    b.hooks.insert_endpoint(&ep).await.unwrap();
    let e = event(&alice.id, "task:3", 1);
    b.hooks.enqueue_event(&e, new_ids()).await.unwrap();
    let claimed = b
        .hooks
        .claim_due(at(1), "l", at(60), 1, UNCAPPED)
        .await
        .unwrap();
    let first = b
        .hooks
        .record_attempt(
            &claimed[0].delivery.id,
            "l",
            &attempt(2, AttemptResult::GaveUp),
        )
        .await
        .unwrap();
    assert_eq!(first.status, DeliveryStatus::Failed);
    let new_id = new_delivery();
    assert!(matches!(
        b.hooks
            .replay_delivery(&bob.id, &first.id, &new_id, at(5), 10)
            .await,
        Err(HookError::NotFound)
    ));
    let replay = b
        .hooks
        .replay_delivery(&alice.id, &first.id, &new_id, at(5), 10)
        .await
        .unwrap();
    assert_eq!(
        (
            &replay.id,
            &replay.event_id,
            &replay.endpoint_id,
            replay.status,
            replay.attempts,
            replay.next_attempt_at,
            replay.replay_of.as_ref()
        ),
        (
            &new_id,
            &e.id,
            &ep.id,
            DeliveryStatus::Pending,
            0,
            Some(at(5)),
            Some(&first.id)
        ),
        "{}",
        b.name
    );
    let log = b.hooks.deliveries(&alice.id, 10).await.unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].id, new_id, "newest first");
    // Deleting the endpoint cancels what is pending and refuses further replays.
    b.hooks
        .delete_endpoint(&alice.id, &ep.id, at(6))
        .await
        .unwrap();
    let canceled = b.hooks.delivery(&alice.id, &new_id).await.unwrap().unwrap();
    assert_eq!(
        (canceled.status, canceled.next_attempt_at),
        (DeliveryStatus::Canceled, None)
    );
    assert!(
        b.hooks
            .claim_due(at(99), "m", at(160), 10, UNCAPPED)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        b.hooks
            .replay_delivery(&alice.id, &first.id, &new_delivery(), at(7), 10)
            .await,
        Err(HookError::NotFound)
    ));
}

pub async fn settled_tasks_without_their_event_are_found(b: &Backend) {
    use crate::actions::{funded, new_task, settlement};
    use svc_ports::{BeginOutcome, HookEvent};
    let a = funded(b, "hooks-sweep@example.com", 10).await;
    let mut tasks = Vec::new();
    for (i, completed) in [(0, true), (1, false), (2, true)] {
        let BeginOutcome::Started { task: t, .. } = b
            .tasks
            .begin_task(&new_task(&a, 1, None, &format!("sweep-{i}")))
            .await
            .unwrap()
        else {
            panic!("{}: not started", b.name)
        };
        if i < 2 {
            b.tasks
                .settle_task(&settlement(&t.id, completed, at(10 + i)))
                .await
                .unwrap();
        }
        tasks.push(t);
    }
    // The in-flight one is not listed; the settled ones are, oldest settlement first.
    let missing = b.hooks.tasks_missing_events(at(0), 10).await.unwrap();
    let ids: Vec<_> = missing.iter().map(|t| t.id.clone()).collect();
    assert_eq!(
        ids,
        vec![tasks[0].id.clone(), tasks[1].id.clone()],
        "{}",
        b.name
    );
    assert!(
        b.hooks
            .tasks_missing_events(at(11), 10)
            .await
            .unwrap()
            .len()
            == 1
    );
    assert_eq!(
        b.hooks.tasks_missing_events(at(0), 1).await.unwrap().len(),
        1
    );
    // Once its event is recorded, a task is no longer listed.
    let recorded = HookEvent {
        source: format!("task:{}", tasks[0].id),
        ..event(&a, "unused", 12)
    };
    b.hooks.enqueue_event(&recorded, new_ids()).await.unwrap();
    let missing = b.hooks.tasks_missing_events(at(0), 10).await.unwrap();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].id, tasks[1].id);
}

pub async fn credited_payments_without_their_event_are_found(b: &Backend) {
    use crate::billing::{checkout, event as payment, paid};
    use svc_ports::billing::{EventOutcome, PaymentFact};
    let a = crate::scenarios::new_account(b, "hooks-credits@example.com").await;
    let c = checkout(&a.id, Some("sweep"));
    b.billing.insert_checkout(&c).await.unwrap();
    let EventOutcome::Applied(credited) = b
        .billing
        .apply_payment_event(&payment(paid(&c, "pay_sweep")))
        .await
        .unwrap()
    else {
        panic!("{}: the payment was not applied", b.name)
    };
    // A refund takes credits back: it is no `credits.added`, so it is never listed.
    let refund = PaymentFact::Refunded {
        payment_id: "pay_sweep".into(),
        refund_id: "re_sweep".into(),
        amount: 100,
    };
    b.billing
        .apply_payment_event(&payment(refund))
        .await
        .unwrap();
    let t = crate::scenarios::t0();
    let missing = b.hooks.credits_missing_events(t, 10).await.unwrap();
    assert_eq!(missing, credited, "{}: the purchase alone", b.name);
    assert!(
        b.hooks
            .credits_missing_events(t + chrono::Duration::seconds(1), 10)
            .await
            .unwrap()
            .is_empty(),
        "{}: older than the window",
        b.name
    );
    // Once its event is recorded (the source is the receipt's reference), it is not listed.
    let recorded = HookEvent {
        source: credited[0].reference.clone(),
        ..event(&a.id, "unused", 12)
    };
    b.hooks.enqueue_event(&recorded, new_ids()).await.unwrap();
    assert!(
        b.hooks
            .credits_missing_events(t, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
