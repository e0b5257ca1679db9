//! The sweeps for `connection.expired` and `credits.low`: connections that were connected
//! and expired, and charges that took the account below the mark, without their event, are
//! found; pending connections that ended, other charges, and those whose event was recorded,
//! are not.

use chrono::Duration;
use svc_ports::{ConnectionFinish, HookEvent, HookEventType};

use super::{event, new_ids};
use crate::{
    Backend,
    connections::{connected, pending},
    scenarios::{new_account, t0},
};

pub async fn expired_connections_without_their_event_are_found(b: &Backend) {
    let a = new_account(b, "hooks-expired@example.com").await.id;
    let was_connected = pending(&a, "shop-example", t0());
    let never_connected = pending(&a, "shop-example", t0());
    let refused = pending(&a, "shop-example", t0());
    let still_connected = pending(&a, "shop-example", t0());
    for c in [&was_connected, &never_connected, &refused, &still_connected] {
        b.connections.insert_connection(c).await.unwrap();
    }
    for c in [&was_connected, &still_connected] {
        b.connections
            .finish_connection(&c.id, connected("guest-42"), t0())
            .await
            .unwrap();
    }
    b.connections
        .finish_connection(&refused.id, ConnectionFinish::Refused, t0())
        .await
        .unwrap();
    let at = t0() + Duration::minutes(5);
    for c in [&was_connected, &never_connected] {
        b.connections.expire_connection(&c.id, at).await.unwrap();
    }
    let missing = b.hooks.connections_missing_events(at, 10).await.unwrap();
    assert_eq!(
        missing.iter().map(|c| &c.id).collect::<Vec<_>>(),
        [&was_connected.id],
        "{}: only the connection that was connected and ended",
        b.name
    );
    assert_eq!(
        missing[0],
        b.connections
            .connection(&was_connected.id)
            .await
            .unwrap()
            .unwrap()
    );
    assert!(
        b.hooks
            .connections_missing_events(at + Duration::seconds(1), 10)
            .await
            .unwrap()
            .is_empty(),
        "{}: older than the window",
        b.name
    );
    let recorded = HookEvent {
        event_type: HookEventType::ConnectionExpired,
        source: format!("connection:{}:expired", was_connected.id),
        ..event(&a, "unused", 400)
    };
    b.hooks.enqueue_event(&recorded, new_ids()).await.unwrap();
    assert!(
        b.hooks
            .connections_missing_events(at, 10)
            .await
            .unwrap()
            .is_empty(),
        "{}: once its event is recorded",
        b.name
    );
}

pub async fn charges_that_crossed_the_low_mark_without_their_event_are_found(b: &Backend) {
    use crate::actions::{funded, new_task, settlement};
    let a = funded(b, "hooks-low@example.com", 12).await;
    let settled_at = t0() + Duration::minutes(1);
    // Each costs 2: the account holds 10 after the first, 8 after the second (the charge that
    // crossed a mark of 10), 6 after the third; the fourth fails and is refunded.
    let mut tasks = Vec::new();
    for completed in [true, true, true, false] {
        let task = new_task(&a, 2, None, "low");
        b.tasks.begin_task(&task).await.unwrap();
        b.tasks
            .settle_task(&settlement(&task.id, completed, settled_at))
            .await
            .unwrap();
        tasks.push(task);
    }
    // Two at once: the first holds 5 of 1,100, the second 1,090, and the first is charged
    // after the second's hold. The second crossed the mark, though both charges leave 5.
    let busy = funded(b, "hooks-low-busy@example.com", 1_100).await;
    let (small, big) = (
        new_task(&busy, 5, None, "low"),
        new_task(&busy, 1_090, None, "low"),
    );
    for task in [&small, &big] {
        b.tasks.begin_task(task).await.unwrap();
    }
    for task in [&small, &big] {
        b.tasks
            .settle_task(&settlement(&task.id, true, settled_at))
            .await
            .unwrap();
    }
    // A hold that crossed, then a top-up before the charge: the account is not low.
    let topped = funded(b, "hooks-low-topped@example.com", 11).await;
    let crossed = new_task(&topped, 2, None, "low");
    b.tasks.begin_task(&crossed).await.unwrap();
    b.ledger
        .grant(&svc_ports::Grant {
            id: svc_ports::LedgerEntryId::from_ulid(ulid::Ulid::new()),
            account_id: topped.clone(),
            amount: svc_ports::CreditAmount::new(100).unwrap(),
            reference: None,
            memo: "top-up".into(),
            at: settled_at,
        })
        .await
        .unwrap();
    b.tasks
        .settle_task(&settlement(&crossed.id, true, settled_at))
        .await
        .unwrap();

    let missing = b
        .hooks
        .low_charges_missing_events(settled_at, 10, 10)
        .await
        .unwrap();
    let mut got: Vec<_> = missing
        .iter()
        .map(|c| (c.task.id.clone(), c.spendable))
        .collect();
    got.sort();
    let mut want = vec![(tasks[1].id.clone(), 8), (big.id.clone(), 5)];
    want.sort();
    assert_eq!(
        got, want,
        "{}: only the charges that crossed, with the balance each capture left",
        b.name
    );
    let missing: Vec<_> = missing
        .into_iter()
        .filter(|c| c.task.account_id == a)
        .collect();
    assert_eq!(missing[0].task.cost, 2);
    assert!(
        b.hooks
            .low_charges_missing_events(settled_at + Duration::seconds(1), 10, 10)
            .await
            .unwrap()
            .is_empty(),
        "{}: settled before the window",
        b.name
    );
    let recorded = HookEvent {
        event_type: HookEventType::CreditsLow,
        source: format!("task:{}:credits.low", tasks[1].id),
        ..event(&a, "unused", 60)
    };
    b.hooks.enqueue_event(&recorded, new_ids()).await.unwrap();
    let left = b
        .hooks
        .low_charges_missing_events(settled_at, 10, 10)
        .await
        .unwrap();
    assert_eq!(
        left.iter().map(|c| &c.task.id).collect::<Vec<_>>(),
        [&big.id],
        "{}: once its event is recorded",
        b.name
    );
}

pub async fn payments_that_used_up_their_authority_without_their_event_are_found(b: &Backend) {
    use svc_ports::AuthorityInterval::{Day, SingleUse};

    use crate::{
        actions::{funded, settlement},
        authority::{authority, paying, spend, usd},
    };
    let acct = funded(b, "hooks-exhausted@example.com", 100).await;
    let settled_at = t0() + Duration::minutes(1);
    let later = settled_at + Duration::seconds(1);
    let day = || authority(&acct, 100, Day, Duration::days(30));
    let pay = |a: &svc_ports::PaymentAuthority, amount, seconds| {
        paying(
            &acct,
            None,
            "exhausted",
            spend(a, amount),
            t0() + Duration::seconds(seconds),
        )
    };
    // Two spends fill a window: the one whose task settles last tells, though its spend came
    // first (spends are stamped before they wait for the authority's lock).
    let full = day();
    let (older, newer) = (pay(&full, 60, 0), pay(&full, 40, 1));
    // The second spend of a window failed and was given back: the window is not full.
    let reopened = day();
    let (kept, failed) = (pay(&reopened, 60, 0), pay(&reopened, 40, 1));
    // A payment of unknown outcome: its task failed, its spend was kept, the window is full.
    let unknown = day();
    let unsure = pay(&unknown, 100, 0);
    // Any payment uses up a single-use authority.
    let once = authority(&acct, 50, SingleUse, Duration::days(30));
    let one = pay(&once, 10, 2);
    // Full, but one of its payments has not settled.
    let waiting = day();
    let (settled_half, in_flight) = (pay(&waiting, 60, 0), pay(&waiting, 40, 1));
    // Full, but revoked before its payment settled.
    let revoked = day();
    let late = pay(&revoked, 100, 0);
    // Full, and the authority expires before the window ends: nothing comes back.
    let short = authority(&acct, 100, Day, Duration::hours(12));
    let last_day = pay(&short, 100, 0);
    for a in [
        &full, &reopened, &unknown, &once, &waiting, &revoked, &short,
    ] {
        b.authorities.insert_authority(a).await.unwrap();
    }
    for t in [
        &older,
        &newer,
        &kept,
        &failed,
        &unsure,
        &one,
        &settled_half,
        &in_flight,
        &late,
        &last_day,
    ] {
        b.tasks.begin_task(t).await.unwrap();
    }
    b.authorities
        .revoke_authority(&acct, &revoked.authority_id, t0() + Duration::seconds(30))
        .await
        .unwrap();
    for (t, completed, at) in [
        (&newer, true, settled_at),
        (&older, true, later),
        (&kept, true, settled_at),
        (&failed, false, settled_at),
        (&one, true, settled_at),
        (&settled_half, true, settled_at),
        (&late, true, settled_at),
        (&last_day, true, settled_at),
    ] {
        b.tasks
            .settle_task(&settlement(&t.id, completed, at))
            .await
            .unwrap();
    }
    let mut kept_spend = settlement(&unsure.id, false, settled_at);
    kept_spend.release_spend = false;
    b.tasks.settle_task(&kept_spend).await.unwrap();

    let found = |since, task: Option<&svc_ports::NewTask>| {
        let task = task.map(|t| t.id.clone());
        async move {
            b.hooks
                .exhaustions_missing_events(since, task, 10)
                .await
                .unwrap()
        }
    };
    let all = found(settled_at, None).await;
    let mut got: Vec<_> = all
        .iter()
        .map(|e| {
            (
                e.task.id.clone(),
                e.authority_id.clone(),
                e.currency.to_string(),
                e.window_end,
            )
        })
        .collect();
    got.sort();
    let window_end = Some(t0() + Duration::days(1));
    let mut want = vec![
        (
            older.id.clone(),
            full.authority_id.clone(),
            usd().to_string(),
            window_end,
        ),
        (
            unsure.id.clone(),
            unknown.authority_id.clone(),
            usd().to_string(),
            window_end,
        ),
        (
            one.id.clone(),
            once.authority_id.clone(),
            usd().to_string(),
            None,
        ),
        (
            last_day.id.clone(),
            short.authority_id.clone(),
            usd().to_string(),
            None,
        ),
    ];
    want.sort();
    assert_eq!(
        got, want,
        "{}: only the last settlement of each full window",
        b.name
    );
    let stored = b.tasks.task(&older.id, None).await.unwrap().unwrap();
    assert_eq!(
        all.iter().find(|e| e.task.id == older.id).unwrap().task,
        stored
    );
    assert_eq!(found(settled_at, Some(&older)).await.len(), 1, "{}", b.name);
    assert!(
        found(settled_at, Some(&newer)).await.is_empty(),
        "{}: asked about one task, only that task",
        b.name
    );
    assert!(
        found(later + Duration::seconds(1), None).await.is_empty(),
        "{}: settled before the window",
        b.name
    );
    // The window in flight tells once its last payment settles.
    b.tasks
        .settle_task(&settlement(&in_flight.id, true, later))
        .await
        .unwrap();
    assert_eq!(found(later, Some(&in_flight)).await.len(), 1, "{}", b.name);
    assert!(found(settled_at, Some(&settled_half)).await.is_empty());
    let recorded = HookEvent {
        event_type: HookEventType::AuthorityExhausted,
        source: format!("task:{}:authority.exhausted", older.id),
        ..event(&acct, "unused", 60)
    };
    b.hooks.enqueue_event(&recorded, new_ids()).await.unwrap();
    let mut left: Vec<_> = found(settled_at, None)
        .await
        .into_iter()
        .map(|e| e.task.id)
        .collect();
    left.sort();
    let mut want = vec![
        unsure.id.clone(),
        one.id.clone(),
        in_flight.id.clone(),
        last_day.id.clone(),
    ];
    want.sort();
    assert_eq!(left, want, "{}: once its event is recorded", b.name);
}

/// Each sweep's mark reads back (to the millisecond), only ever moves forward, and is its own.
pub async fn sweep_marks_move_forward_only_and_per_sweep(b: &Backend) {
    assert_eq!(b.hooks.sweep_mark("task_events").await.unwrap(), None);
    let first = t0() + Duration::milliseconds(1_234);
    b.hooks.mark_sweep("task_events", first).await.unwrap();
    assert_eq!(
        b.hooks.sweep_mark("task_events").await.unwrap(),
        Some(first),
        "{}",
        b.name
    );
    // A slower run of another instance, begun earlier, ends later: the mark stays.
    b.hooks
        .mark_sweep("task_events", first - Duration::minutes(5))
        .await
        .unwrap();
    assert_eq!(
        b.hooks.sweep_mark("task_events").await.unwrap(),
        Some(first)
    );
    let later = first + Duration::hours(3);
    b.hooks.mark_sweep("task_events", later).await.unwrap();
    assert_eq!(
        b.hooks.sweep_mark("task_events").await.unwrap(),
        Some(later)
    );
    assert_eq!(b.hooks.sweep_mark("credit_events").await.unwrap(), None);
    b.hooks.mark_sweep("credit_events", first).await.unwrap();
    assert_eq!(
        b.hooks.sweep_mark("credit_events").await.unwrap(),
        Some(first)
    );
    assert_eq!(
        b.hooks.sweep_mark("task_events").await.unwrap(),
        Some(later)
    );
}
