//! Scenarios for `AuthorityStore` and for spending under an authority with `begin_task`:
//! refusals store nothing, replays spend once, failures give the spend back, single-use means
//! once, windows reset on schedule, concurrent tasks stay within the limit, and a property test
//! over random sequences of spends, revocations, clock advances and settlements.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use svc_ports::{
    AccountId, AmountLimit, AuthorityId, AuthorityInterval, AuthorityRefusal, AuthoritySpend,
    AuthorityStatus, AuthorityUsage, BeginOutcome, NewTask, PaymentAuthority, Principal,
    SettleOutcome, TaskId, billing::Currency, store::AuthorityError,
};
use ulid::Ulid;

use crate::{
    Backend,
    actions::{check_money, funded, new_task, settlement},
    scenarios::{new_account, t0},
};

mod property;
pub use property::authority_property;

pub(crate) fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

pub(crate) fn authority(
    account: &AccountId,
    value: i64,
    interval: AuthorityInterval,
    lifetime: Duration,
) -> PaymentAuthority {
    PaymentAuthority {
        authority_id: AuthorityId::from_ulid(Ulid::new()),
        principal: Principal {
            kind: "agent".into(),
            id: "agent-7".into(),
            agent_provider: "example-agents".into(),
        },
        scope: vec!["order".into(), "booking".into()],
        amount_limit: AmountLimit::new(value, interval).unwrap(),
        currency: usd(),
        expires_at: t0() + lifetime,
        revocation_url: "https://svc.example/authorities/revoke".into(),
        receipt_required: true,
        verification_required: false,
        created_at: t0(),
        account_id: account.clone(),
        created_by: "human@example.com".into(),
        revoked_at: None,
    }
}

pub(crate) fn spend(a: &PaymentAuthority, amount: i64) -> AuthoritySpend {
    AuthoritySpend {
        authority_id: a.authority_id.clone(),
        amount,
        currency: usd(),
        scope: "order".into(),
    }
}

pub(crate) fn paying(
    account: &AccountId,
    key: Option<&str>,
    fingerprint: &str,
    spend: AuthoritySpend,
    at: DateTime<Utc>,
) -> NewTask {
    let mut t = new_task(account, 1, key, fingerprint);
    t.authority_spend = Some(spend);
    t.created_at = at;
    t
}

async fn spent(b: &Backend, a: &PaymentAuthority, now: DateTime<Utc>) -> (i64, u32) {
    let usage = usage_of(b, &a.authority_id, now).await;
    (usage.spent_in_window, usage.spends)
}

/// The usage of a stored authority at `at`.
async fn usage_of(b: &Backend, id: &AuthorityId, at: DateTime<Utc>) -> AuthorityUsage {
    let (_, usage) = b.authorities.authority(id, at).await.unwrap().unwrap();
    usage
}

pub async fn authorities_are_stored_listed_and_revoked(b: &Backend) {
    let acct = new_account(b, "pa@example.com").await.id;
    let older = authority(&acct, 500, AuthorityInterval::Week, Duration::days(30));
    let mut newer = authority(&acct, 25, AuthorityInterval::SingleUse, Duration::days(1));
    newer.created_at = t0() + Duration::seconds(1);
    b.authorities.insert_authority(&older).await.unwrap();
    b.authorities.insert_authority(&newer).await.unwrap();
    let (stored, usage) = b
        .authorities
        .authority(&older.authority_id, t0())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored, older, "{}: an authority round-trips whole", b.name);
    assert_eq!(
        (
            usage.spent_in_window,
            usage.spends,
            usage.remaining,
            usage.status
        ),
        (0, 0, 500, AuthorityStatus::Active)
    );
    let listed: Vec<_> = b
        .authorities
        .authorities(&acct, t0())
        .await
        .unwrap()
        .into_iter()
        .map(|(a, _)| a.authority_id)
        .collect();
    assert_eq!(
        listed,
        vec![newer.authority_id.clone(), older.authority_id.clone()],
        "{}: newest first",
        b.name
    );
    let stranger = new_account(b, "pa-stranger@example.com").await.id;
    assert!(
        b.authorities
            .authorities(&stranger, t0())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        b.authorities.insert_authority(&older).await,
        Err(AuthorityError::Duplicate)
    ));
    let ghost = authority(
        &AccountId::from_ulid(Ulid::new()),
        1,
        AuthorityInterval::Day,
        Duration::days(1),
    );
    assert!(matches!(
        b.authorities.insert_authority(&ghost).await,
        Err(AuthorityError::UnknownAccount)
    ));
    assert_eq!(
        b.authorities
            .authority(&ghost.authority_id, t0())
            .await
            .unwrap(),
        None
    );

    let at = t0() + Duration::minutes(5);
    assert!(matches!(
        b.authorities
            .revoke_authority(&stranger, &older.authority_id, at)
            .await,
        Err(AuthorityError::NotFound)
    ));
    assert!(matches!(
        b.authorities
            .revoke_authority(&acct, &ghost.authority_id, at)
            .await,
        Err(AuthorityError::NotFound)
    ));
    assert_eq!(
        b.authorities
            .authority(&older.authority_id, at)
            .await
            .unwrap()
            .unwrap()
            .0
            .revoked_at,
        None,
        "{}: another account cannot revoke it",
        b.name
    );
    let revoked = b
        .authorities
        .revoke_authority(&acct, &older.authority_id, at)
        .await
        .unwrap();
    assert_eq!(revoked.revoked_at, Some(at));
    let again = b
        .authorities
        .revoke_authority(&acct, &older.authority_id, at + Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(
        again.revoked_at,
        Some(at),
        "{}: the first revocation time stays",
        b.name
    );
    let usage = usage_of(b, &older.authority_id, at).await;
    assert_eq!(
        (usage.status, usage.remaining),
        (AuthorityStatus::Revoked, 0)
    );
}

pub async fn refused_spends_store_nothing(b: &Backend) {
    let acct = funded(b, "refuse@example.com", 10).await;
    let other = funded(b, "refuse-other@example.com", 10).await;
    let day = authority(&acct, 100, AuthorityInterval::Day, Duration::days(10));
    let once = authority(&acct, 50, AuthorityInterval::SingleUse, Duration::days(10));
    let theirs = authority(&other, 100, AuthorityInterval::Day, Duration::days(10));
    let mut revoked = authority(&acct, 100, AuthorityInterval::Day, Duration::days(10));
    revoked.revoked_at = Some(t0());
    for a in [&day, &once, &theirs, &revoked] {
        b.authorities.insert_authority(a).await.unwrap();
    }
    // Use the single-use authority up, and 70 of the day's 100.
    for (a, amount) in [(&once, 10), (&day, 70)] {
        let t = paying(&acct, None, "setup", spend(a, amount), t0());
        assert!(
            matches!(
                b.tasks.begin_task(&t).await.unwrap(),
                BeginOutcome::Started { .. }
            ),
            "{}",
            b.name
        );
    }
    let unknown = authority(&acct, 100, AuthorityInterval::Day, Duration::days(10));
    let mut other_scope = spend(&day, 1);
    other_scope.scope = "subscription".into();
    let mut euros = spend(&day, 1);
    euros.currency = Currency::parse("eur").unwrap();
    let cases = [
        (
            "unknown",
            spend(&unknown, 1),
            t0(),
            AuthorityRefusal::UnknownAuthority,
        ),
        (
            "theirs",
            spend(&theirs, 1),
            t0(),
            AuthorityRefusal::UnknownAuthority,
        ),
        (
            "revoked",
            spend(&revoked, 1),
            t0(),
            AuthorityRefusal::Revoked,
        ),
        (
            "expired",
            spend(&day, 1),
            day.expires_at,
            AuthorityRefusal::Expired,
        ),
        (
            "scope",
            other_scope,
            t0(),
            AuthorityRefusal::ScopeNotAllowed,
        ),
        ("currency", euros, t0(), AuthorityRefusal::CurrencyMismatch),
        (
            "over",
            spend(&day, 31),
            t0() + Duration::hours(1),
            AuthorityRefusal::OverLimit { remaining: 30 },
        ),
        ("once", spend(&once, 1), t0(), AuthorityRefusal::Exhausted),
        (
            "zero",
            spend(&day, 0),
            t0(),
            AuthorityRefusal::InvalidAmount,
        ),
    ];
    let before = check_money(b, &acct, 2).await;
    let entries = b.ledger.entries(&acct, 100).await.unwrap().len();
    for (what, s, at, expected) in cases {
        let t = paying(&acct, Some(what), what, s, at);
        assert_eq!(
            b.tasks.begin_task(&t).await.unwrap(),
            BeginOutcome::AuthorityRefused(expected),
            "{}: {what}",
            b.name
        );
        assert_eq!(
            b.tasks.task(&t.id, None).await.unwrap(),
            None,
            "{}: {what} stored a task",
            b.name
        );
        assert_eq!(
            check_money(b, &acct, 2).await,
            before,
            "{}: {what} moved credits",
            b.name
        );
        assert_eq!(b.ledger.entries(&acct, 100).await.unwrap().len(), entries);
    }
    assert_eq!(spent(b, &day, t0()).await, (70, 1), "{}", b.name);
    assert_eq!(spent(b, &once, t0()).await, (10, 1));
    assert_eq!(spent(b, &theirs, t0()).await, (0, 0));
    // A refused key was not used up: it works for an allowed spend.
    let t = paying(&acct, Some("over"), "over", spend(&day, 30), t0());
    assert!(matches!(
        b.tasks.begin_task(&t).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    assert_eq!(spent(b, &day, t0()).await, (100, 2));
    // Not enough credits: nothing is spent either.
    let poor = funded(b, "refuse-poor@example.com", 0).await;
    let poor_auth = authority(&poor, 100, AuthorityInterval::Day, Duration::days(10));
    b.authorities.insert_authority(&poor_auth).await.unwrap();
    let t = paying(&poor, None, "poor", spend(&poor_auth, 5), t0());
    assert_eq!(
        b.tasks.begin_task(&t).await.unwrap(),
        BeginOutcome::InsufficientCredits { spendable: 0 }
    );
    assert_eq!(spent(b, &poor_auth, t0()).await, (0, 0), "{}", b.name);
}

pub async fn replays_spend_once(b: &Backend) {
    let acct = funded(b, "pa-replay@example.com", 10).await;
    let a = authority(&acct, 100, AuthorityInterval::Week, Duration::days(30));
    b.authorities.insert_authority(&a).await.unwrap();
    let first = paying(&acct, Some("k"), "same", spend(&a, 40), t0());
    // Under an authority too, a begin says what is left after its hold.
    let begun = b.tasks.begin_task(&first).await.unwrap();
    assert!(
        matches!(begun, BeginOutcome::Started { spendable, .. } if spendable == 10 - first.cost),
        "{}: {begun:?}",
        b.name
    );
    let again = paying(&acct, Some("k"), "same", spend(&a, 40), t0());
    assert!(matches!(
        b.tasks.begin_task(&again).await.unwrap(),
        BeginOutcome::InFlight(_)
    ));
    let conflict = paying(&acct, Some("k"), "different", spend(&a, 40), t0());
    assert!(matches!(
        b.tasks.begin_task(&conflict).await.unwrap(),
        BeginOutcome::Conflict(_)
    ));
    b.tasks
        .settle_task(&settlement(&first.id, true, t0()))
        .await
        .unwrap();
    assert!(
        matches!(b.tasks.begin_task(&again).await.unwrap(), BeginOutcome::Replay(ref t) if t.id == first.id)
    );
    assert_eq!(spent(b, &a, t0()).await, (40, 1), "{}: spent once", b.name);
    assert_eq!(
        b.authorities
            .authority_spends(&a.authority_id)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn failed_settlement_gives_the_spend_back(b: &Backend) {
    let acct = funded(b, "pa-fail@example.com", 10).await;
    let a = authority(&acct, 100, AuthorityInterval::Day, Duration::days(30));
    b.authorities.insert_authority(&a).await.unwrap();
    let failing = paying(&acct, None, "f1", spend(&a, 60), t0());
    let kept = paying(&acct, None, "f2", spend(&a, 40), t0());
    b.tasks.begin_task(&failing).await.unwrap();
    b.tasks.begin_task(&kept).await.unwrap();
    assert_eq!(spent(b, &a, t0()).await, (100, 2));
    let at = t0() + Duration::minutes(1);
    b.tasks
        .settle_task(&settlement(&failing.id, false, at))
        .await
        .unwrap();
    b.tasks
        .settle_task(&settlement(&kept.id, true, at))
        .await
        .unwrap();
    assert_eq!(
        spent(b, &a, at).await,
        (40, 1),
        "{}: the failed spend came back",
        b.name
    );
    // A second settlement of the failed task changes nothing.
    assert!(matches!(
        b.tasks
            .settle_task(&settlement(&failing.id, true, at))
            .await
            .unwrap(),
        SettleOutcome::AlreadySettled(_)
    ));
    let spends = b
        .authorities
        .authority_spends(&a.authority_id)
        .await
        .unwrap();
    let released: HashMap<TaskId, Option<DateTime<Utc>>> = spends
        .iter()
        .map(|s| (s.task_id.clone(), s.released_at))
        .collect();
    assert_eq!(released[&failing.id], Some(at), "{}", b.name);
    assert_eq!(released[&kept.id], None);
    // Each task's own spend reads back alone; a task that paid nothing has none.
    for t in [&failing, &kept] {
        let own = b.authorities.task_spend(&t.id).await.unwrap();
        assert_eq!(
            own.as_ref(),
            spends.iter().find(|s| s.task_id == t.id),
            "{}",
            b.name
        );
    }
    let unpaid = crate::actions::new_task(&acct, 1, None, "unpaid");
    b.tasks.begin_task(&unpaid).await.unwrap();
    assert_eq!(b.authorities.task_spend(&unpaid.id).await.unwrap(), None);
    let more = paying(&acct, None, "f3", spend(&a, 60), at);
    assert!(matches!(
        b.tasks.begin_task(&more).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    assert_eq!(spent(b, &a, at).await, (100, 2));
}

pub async fn single_use_is_spent_at_most_once(b: &Backend) {
    let acct = funded(b, "pa-once@example.com", 10).await;
    let a = authority(&acct, 30, AuthorityInterval::SingleUse, Duration::days(400));
    b.authorities.insert_authority(&a).await.unwrap();
    let first = paying(&acct, None, "o1", spend(&a, 5), t0());
    assert!(matches!(
        b.tasks.begin_task(&first).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    let later = t0() + Duration::days(100);
    let second = paying(&acct, None, "o2", spend(&a, 5), later);
    assert_eq!(
        b.tasks.begin_task(&second).await.unwrap(),
        BeginOutcome::AuthorityRefused(AuthorityRefusal::Exhausted),
        "{}: single use, whatever the window",
        b.name
    );
    let usage = usage_of(b, &a.authority_id, later).await;
    assert_eq!(
        (usage.status, usage.remaining),
        (AuthorityStatus::Exhausted, 0)
    );
    // A failed payment gives the one use back.
    b.tasks
        .settle_task(&settlement(&first.id, false, later))
        .await
        .unwrap();
    let retry = paying(&acct, None, "o3", spend(&a, 30), later);
    assert!(
        matches!(
            b.tasks.begin_task(&retry).await.unwrap(),
            BeginOutcome::Started { .. }
        ),
        "{}",
        b.name
    );
    b.tasks
        .settle_task(&settlement(&retry.id, true, later))
        .await
        .unwrap();
    let last = paying(&acct, None, "o4", spend(&a, 1), later);
    assert_eq!(
        b.tasks.begin_task(&last).await.unwrap(),
        BeginOutcome::AuthorityRefused(AuthorityRefusal::Exhausted)
    );
    assert_eq!(spent(b, &a, later).await, (30, 1));
}

pub async fn windows_reset_on_schedule(b: &Backend) {
    let acct = funded(b, "pa-window@example.com", 10).await;
    let a = authority(&acct, 100, AuthorityInterval::Day, Duration::days(3));
    b.authorities.insert_authority(&a).await.unwrap();
    let full = paying(&acct, None, "w1", spend(&a, 100), t0() + Duration::hours(1));
    assert!(matches!(
        b.tasks.begin_task(&full).await.unwrap(),
        BeginOutcome::Started { .. }
    ));
    let almost = t0() + Duration::days(1) - Duration::milliseconds(1);
    assert_eq!(
        b.tasks
            .begin_task(&paying(&acct, None, "w2", spend(&a, 1), almost))
            .await
            .unwrap(),
        BeginOutcome::AuthorityRefused(AuthorityRefusal::OverLimit { remaining: 0 }),
        "{}",
        b.name
    );
    let next = t0() + Duration::days(1);
    assert_eq!(spent(b, &a, next).await, (0, 1), "{}: a new window", b.name);
    assert!(matches!(
        b.tasks
            .begin_task(&paying(&acct, None, "w3", spend(&a, 100), next))
            .await
            .unwrap(),
        BeginOutcome::Started { .. }
    ));
    assert_eq!(
        b.tasks
            .begin_task(&paying(&acct, None, "w4", spend(&a, 1), a.expires_at))
            .await
            .unwrap(),
        BeginOutcome::AuthorityRefused(AuthorityRefusal::Expired)
    );
    let windows: Vec<DateTime<Utc>> = b
        .authorities
        .authority_spends(&a.authority_id)
        .await
        .unwrap()
        .iter()
        .map(|s| s.window_start)
        .collect();
    assert_eq!(windows, vec![t0(), t0() + Duration::days(1)], "{}", b.name);
}

pub async fn concurrent_spends_stay_within_the_limit(b: &Backend) {
    let acct = funded(b, "pa-race@example.com", 1000).await;
    // A few rounds: a lost race shows up only sometimes.
    let rounds = 4;
    for round in 0..rounds {
        let once = authority(&acct, 10, AuthorityInterval::SingleUse, Duration::days(1));
        let day = authority(&acct, 5, AuthorityInterval::Day, Duration::days(1));
        b.authorities.insert_authority(&once).await.unwrap();
        b.authorities.insert_authority(&day).await.unwrap();
        for (a, amount, expected) in [(&once, 3, 1usize), (&day, 2, 2)] {
            let results = join_all((0..16).map(|i| {
                let tasks = b.tasks.clone();
                let t = paying(
                    &acct,
                    Some(&format!("{}-{i}", a.authority_id)),
                    "r",
                    spend(a, amount),
                    t0(),
                );
                async move { tasks.begin_task(&t).await.unwrap() }
            }))
            .await;
            let started = results
                .iter()
                .filter(|r| matches!(r, BeginOutcome::Started { .. }))
                .count();
            assert_eq!(
                started,
                expected,
                "{}: round {round}: {started} of 16 racing spends under a {} authority went through",
                b.name,
                a.amount_limit.interval().as_str()
            );
            assert!(results.iter().all(|r| matches!(
                r,
                BeginOutcome::Started { .. } | BeginOutcome::AuthorityRefused(_)
            )));
            assert_eq!(
                spent(b, a, t0()).await.0,
                amount * expected as i64,
                "{}",
                b.name
            );
        }
    }
    check_money(b, &acct, 3 * rounds).await;
}
