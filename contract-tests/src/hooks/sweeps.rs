//! The sweep for `connection.expired`: connections that were connected and expired, without
//! their event, are found; pending ones that ended, and those whose event was recorded, are
//! not.

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
