//! The event feed (`events_after`) pages in the order events were committed, so a reader that
//! passes the last event it got as its cursor never steps over one: an event's id is drawn
//! before its transaction commits, and a later-committed event may have the older id.

use svc_ports::{AccountId, HookEvent, WebhookEventId};
use ulid::Ulid;

use super::{event, new_ids};
use crate::{Backend, scenarios::new_account};

async fn feed(
    b: &Backend,
    account: &AccountId,
    after: Option<WebhookEventId>,
    limit: u32,
) -> Vec<HookEvent> {
    b.hooks.events_after(account, after, limit).await.unwrap()
}

fn ids(events: &[HookEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.event_type.as_str().to_owned() + ":" + &e.source)
        .collect()
}

pub async fn the_feed_never_steps_over_an_event_committed_after_a_newer_id(b: &Backend) {
    let alice = new_account(b, "hooks-feed@example.com").await;
    let bob = new_account(b, "hooks-feed-b@example.com").await;
    // Two settlements: the first draws its event's id, the second draws a newer one and
    // commits first.
    let older = WebhookEventId::from_ulid(Ulid::from_parts(1_000, 1));
    let newer = WebhookEventId::from_ulid(Ulid::from_parts(2_000, 1));
    let late = HookEvent {
        id: older.clone(),
        ..event(&alice.id, "late", 1)
    };
    let early = HookEvent {
        id: newer.clone(),
        ..event(&alice.id, "early", 2)
    };
    b.hooks.enqueue_event(&early, new_ids()).await.unwrap();
    b.hooks
        .enqueue_event(&event(&bob.id, "bobs", 2), new_ids())
        .await
        .unwrap();
    let page = feed(b, &alice.id, None, 10).await;
    assert_eq!(ids(&page), ["task.completed:early"], "{}", b.name);

    b.hooks.enqueue_event(&late, new_ids()).await.unwrap();
    let next = feed(b, &alice.id, Some(newer.clone()), 10).await;
    assert_eq!(
        ids(&next),
        ["task.completed:late"],
        "{}: the event committed after the cursor comes, though its id is older",
        b.name
    );
    assert!(
        b.hooks
            .events_after(&alice.id, Some(older.clone()), 10)
            .await
            .unwrap()
            .is_empty(),
        "{}: and nothing after it",
        b.name
    );
    let all = feed(b, &alice.id, None, 10).await;
    assert_eq!(
        ids(&all),
        ["task.completed:early", "task.completed:late"],
        "{}: in the order they were stored",
        b.name
    );
    let one = b.hooks.events_after(&alice.id, None, 1).await.unwrap();
    assert_eq!(
        ids(&one),
        ["task.completed:early"],
        "{}: at most limit",
        b.name
    );
    // A cursor that is not one of Alice's events is compared as an id.
    let stranger = WebhookEventId::from_ulid(Ulid::from_parts(1_500, 0));
    assert_eq!(
        ids(&b
            .hooks
            .events_after(&alice.id, Some(stranger), 10)
            .await
            .unwrap()),
        ["task.completed:early"],
        "{}",
        b.name
    );
}
