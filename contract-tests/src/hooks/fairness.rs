//! Claims are fair: an endpoint and an account get at most their caps of deliveries under a
//! live lease, counting what earlier claims still hold, so one slow or flooded tenant never
//! takes every sender; and an endpoint's replays waiting to be sent are capped.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use svc_ports::{
    AttemptResult, ClaimCaps, ClaimedDelivery, EndpointHealth, HookError, HookEvent, HookEventType,
    WebhookEndpoint,
};

use super::{at, attempt, delivered, endpoint, event, new_delivery, new_ids};
use crate::{Backend, scenarios::new_account};

/// Loose enough that only the scenario's own caps bind.
pub(crate) const UNCAPPED: ClaimCaps = ClaimCaps {
    per_endpoint: 1_000,
    per_account: 1_000,
    endpoints: EndpointHealth::Any,
};

const CAPS: ClaimCaps = ClaimCaps {
    per_endpoint: 4,
    per_account: 5,
    endpoints: EndpointHealth::Any,
};

/// The claimed deliveries by the event source each tells of.
fn sources(claimed: &[ClaimedDelivery]) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for c in claimed {
        let body: serde_json::Value = serde_json::from_str(&c.payload).unwrap();
        *by.entry(body["data"]["source"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    by
}

pub async fn claims_keep_each_endpoint_and_account_within_its_caps(b: &Backend) {
    let alice = new_account(b, "hooks-fair-a@example.com").await;
    let bob = new_account(b, "hooks-fair-b@example.com").await;
    let flooded = WebhookEndpoint {
        events: vec![HookEventType::TaskCompleted],
        ..endpoint(&alice.id, "https://a.example/flooded", 0)
    };
    let other = WebhookEndpoint {
        events: vec![HookEventType::TaskFailed],
        ..endpoint(&alice.id, "https://a.example/other", 0)
    };
    let bobs = endpoint(&bob.id, "https://b.example/", 0);
    for e in [&flooded, &other, &bobs] {
        b.hooks.insert_endpoint(e).await.unwrap();
    }
    // Alice's flooded endpoint has six due (at 0..5 s), her other one two, Bob's two.
    for i in 0..6 {
        let e = event(&alice.id, &format!("a{i}"), i);
        b.hooks.enqueue_event(&e, new_ids()).await.unwrap();
    }
    for i in 0..2 {
        let e = HookEvent {
            event_type: HookEventType::TaskFailed,
            ..event(&alice.id, &format!("o{i}"), i)
        };
        b.hooks.enqueue_event(&e, new_ids()).await.unwrap();
        b.hooks
            .enqueue_event(&event(&bob.id, &format!("b{i}"), i), new_ids())
            .await
            .unwrap();
    }
    let first = b
        .hooks
        .claim_due(at(10), "first", at(60), 16, CAPS)
        .await
        .unwrap();
    let want: BTreeMap<String, usize> = ["a0", "a1", "a2", "o0", "o1", "b0", "b1"]
        .into_iter()
        .map(|s| (s.to_owned(), 1))
        .collect();
    assert_eq!(
        sources(&first),
        want,
        "{}: the flooded endpoint's four oldest, then Alice's cap of five, oldest first; Bob's all",
        b.name
    );

    let second = b
        .hooks
        .claim_due(at(11), "second", at(60), 16, CAPS)
        .await
        .unwrap();
    assert!(
        second.is_empty(),
        "{}: what the first claim holds counts: {:?}",
        b.name,
        sources(&second)
    );

    // One of Alice's sends ends: she has four in flight, two of them on the flooded endpoint.
    let a0 = first.iter().find(|c| c.payload.contains("\"a0\"")).unwrap();
    b.hooks
        .record_attempt(
            &a0.delivery.id,
            "first",
            &attempt(12, AttemptResult::Delivered),
        )
        .await
        .unwrap();
    let third = b
        .hooks
        .claim_due(at(12), "third", at(120), 16, CAPS)
        .await
        .unwrap();
    assert_eq!(
        sources(&third).into_keys().collect::<Vec<_>>(),
        ["a3"],
        "{}: one turn of Alice's came free",
        b.name
    );

    // The first claim's leases end (at 60): only the third's is live.
    let fourth = b
        .hooks
        .claim_due(at(61), "fourth", at(120), 16, CAPS)
        .await
        .unwrap();
    let got = sources(&fourth);
    assert_eq!(
        got.keys()
            .filter(|s| s.starts_with('a') || s.starts_with('o'))
            .count(),
        4,
        "{}: Alice's cap of five, less the third claim's: {got:?}",
        b.name
    );
    assert_eq!(
        got.keys().filter(|s| s.starts_with('b')).count(),
        2,
        "{}: Bob's leases ended too: {got:?}",
        b.name
    );
    let uncapped = b
        .hooks
        .claim_due(at(200), "fifth", at(260), 16, UNCAPPED)
        .await
        .unwrap();
    assert_eq!(
        uncapped.len(),
        9,
        "{}: all but the delivered one, once every lease ended",
        b.name
    );
}

pub async fn an_endpoint_has_at_most_its_cap_of_replays_waiting(b: &Backend) {
    let alice = new_account(b, "hooks-replays@example.com").await;
    let ep = endpoint(&alice.id, "https://a.example/", 0);
    b.hooks.insert_endpoint(&ep).await.unwrap();
    b.hooks
        .enqueue_event(&event(&alice.id, "task:r", 0), new_ids())
        .await
        .unwrap();
    let original = b
        .hooks
        .claim_due(at(1), "l", at(60), 1, UNCAPPED)
        .await
        .unwrap()
        .remove(0)
        .delivery;
    b.hooks
        .record_attempt(&original.id, "l", &attempt(2, AttemptResult::GaveUp))
        .await
        .unwrap();
    // Eight race for a cap of five: five land, whatever the order.
    let raced = join_all((0..8).map(|_| {
        let hooks = b.hooks.clone();
        let (account, id) = (alice.id.clone(), original.id.clone());
        async move {
            hooks
                .replay_delivery(&account, &id, &new_delivery(), at(3), 5)
                .await
        }
    }))
    .await;
    let landed: Vec<_> = raced.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(landed.len(), 5, "{}: {raced:?}", b.name);
    assert!(
        raced
            .iter()
            .filter(|r| r.is_err())
            .all(|r| matches!(r, Err(HookError::TooManyReplays(5)))),
        "{}: {raced:?}",
        b.name
    );
    // One is sent: a turn comes free. The original, failed, never counted.
    let sent = b
        .hooks
        .claim_due(at(4), "m", at(60), 1, UNCAPPED)
        .await
        .unwrap()
        .remove(0)
        .delivery;
    b.hooks
        .record_attempt(&sent.id, "m", &attempt(5, AttemptResult::Delivered))
        .await
        .unwrap();
    b.hooks
        .replay_delivery(&alice.id, &original.id, &new_delivery(), at(6), 5)
        .await
        .unwrap();
    assert!(matches!(
        b.hooks
            .replay_delivery(&alice.id, &original.id, &new_delivery(), at(6), 5)
            .await,
        Err(HookError::TooManyReplays(5))
    ));
    assert_eq!(
        delivered(b, &alice.id).await.len(),
        7,
        "{}: the original, five replays and the one after a send; no refused one stored",
        b.name
    );
}

/// An endpoint whose last attempt failed is claimed only by a claim for failing endpoints, and
/// one whose last attempt was delivered (or that has none) only by a claim for answering ones;
/// a delivery after failures makes the endpoint answering again. A failing endpoint's leases
/// still count against its account's cap in either claim.
pub async fn claims_take_answering_or_failing_endpoints_as_asked(b: &Backend) {
    let answering = |per| ClaimCaps {
        per_endpoint: per,
        per_account: 1_000,
        endpoints: EndpointHealth::Answering,
    };
    let failing = |per| ClaimCaps {
        endpoints: EndpointHealth::Failing,
        ..answering(per)
    };
    let alice = new_account(b, "hooks-health@example.com").await;
    let hangs = WebhookEndpoint {
        events: vec![HookEventType::TaskCompleted],
        ..endpoint(&alice.id, "https://a.example/hangs", 0)
    };
    let answers = WebhookEndpoint {
        events: vec![HookEventType::TaskFailed],
        ..endpoint(&alice.id, "https://a.example/answers", 0)
    };
    for e in [&hangs, &answers] {
        b.hooks.insert_endpoint(e).await.unwrap();
    }
    for i in 0..3 {
        b.hooks
            .enqueue_event(&event(&alice.id, &format!("h{i}"), i), new_ids())
            .await
            .unwrap();
        let failed = HookEvent {
            event_type: HookEventType::TaskFailed,
            ..event(&alice.id, &format!("w{i}"), i)
        };
        b.hooks.enqueue_event(&failed, new_ids()).await.unwrap();
    }
    // No attempt yet: both answer. The hanging endpoint's first send fails.
    let none = b
        .hooks
        .claim_due(at(5), "none", at(60), 16, failing(1))
        .await
        .unwrap();
    assert!(none.is_empty(), "{}: nothing failed yet", b.name);
    let first = b
        .hooks
        .claim_due(at(5), "first", at(60), 16, answering(1))
        .await
        .unwrap();
    assert_eq!(
        sources(&first).into_keys().collect::<Vec<_>>(),
        ["h0", "w0"],
        "{}",
        b.name
    );
    for c in &first {
        let result = if c.payload.contains("\"h0\"") {
            AttemptResult::RetryAt(at(30))
        } else {
            AttemptResult::Delivered
        };
        b.hooks
            .record_attempt(&c.delivery.id, "first", &attempt(6, result))
            .await
            .unwrap();
    }
    // Now the hanging endpoint is failing: each claim takes only its own kind.
    let answering_claim = b
        .hooks
        .claim_due(at(7), "answering", at(60), 16, answering(10))
        .await
        .unwrap();
    assert_eq!(
        sources(&answering_claim).into_keys().collect::<Vec<_>>(),
        ["w1", "w2"],
        "{}",
        b.name
    );
    let failing_claim = b
        .hooks
        .claim_due(at(7), "failing", at(60), 16, failing(1))
        .await
        .unwrap();
    assert_eq!(
        sources(&failing_claim).into_keys().collect::<Vec<_>>(),
        ["h1"],
        "{}: one at a time",
        b.name
    );
    // Its next send is delivered: it answers again.
    b.hooks
        .record_attempt(
            &failing_claim[0].delivery.id,
            "failing",
            &attempt(8, AttemptResult::Delivered),
        )
        .await
        .unwrap();
    let after = b
        .hooks
        .claim_due(at(9), "after", at(60), 16, failing(10))
        .await
        .unwrap();
    assert!(after.is_empty(), "{}: {:?}", b.name, sources(&after));
    let after = b
        .hooks
        .claim_due(at(9), "after", at(60), 16, answering(10))
        .await
        .unwrap();
    assert_eq!(
        sources(&after).into_keys().collect::<Vec<_>>(),
        ["h2"],
        "{}: h0 waits for its retry at 30 s",
        b.name
    );
    // A lost lease records nothing, health included.
    let lost = b
        .hooks
        .record_attempt(
            &after[0].delivery.id,
            "not-the-lease",
            &attempt(10, AttemptResult::RetryAt(at(40))),
        )
        .await;
    assert!(matches!(lost, Err(HookError::LeaseLost)), "{}", b.name);
    let still = b
        .hooks
        .claim_due(at(31), "still", at(90), 16, answering(10))
        .await
        .unwrap();
    assert_eq!(
        sources(&still).into_keys().collect::<Vec<_>>(),
        ["h0"],
        "{}: still answering; h0's retry is due",
        b.name
    );
}
