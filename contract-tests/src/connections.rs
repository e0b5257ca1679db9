//! Scenarios for `ConnectionStore`: storing and finding connections, finishing them exactly
//! once (also under racing finishes), refreshing only connected ones, and expiry.

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use svc_ports::{
    AccountId, ConnectionFinish, ConnectionId, ConnectionRecord, ConnectionState, ProviderId,
    SealedSecret,
    connections::{CONNECT_LINK_TTL_MINUTES, oauth_state_hash},
    store::ConnectionError,
};
use ulid::Ulid;

use crate::{
    Backend,
    scenarios::{new_account, t0},
};

pub(crate) fn pending(account: &AccountId, provider: &str, at: DateTime<Utc>) -> ConnectionRecord {
    ConnectionRecord {
        id: ConnectionId::from_ulid(Ulid::new()),
        account_id: account.clone(),
        provider: ProviderId::parse(provider).unwrap(),
        expected_account: Some("guest-42".into()),
        upstream_account: None,
        state: ConnectionState::Pending,
        oauth_state_hash: oauth_state_hash(&Ulid::new().to_string()),
        pkce_verifier: SealedSecret::new(vec![0, 1, 2, 255, 254]),
        credentials: None,
        credentials_expire_at: None,
        link_expires_at: at + Duration::minutes(CONNECT_LINK_TTL_MINUTES),
        created_at: at,
        updated_at: at,
    }
}

pub(crate) fn connected(upstream: &str) -> ConnectionFinish {
    ConnectionFinish::Connected {
        upstream_account: upstream.into(),
        credentials: SealedSecret::new(format!("sealed:{upstream}").into_bytes()),
        credentials_expire_at: Some(t0() + Duration::hours(1)),
    }
}

pub async fn connections_are_stored_and_found(b: &Backend) {
    let a = new_account(b, "con@example.com").await.id;
    let old = pending(&a, "shop-example", t0());
    let new = pending(&a, "shop-example", t0() + Duration::seconds(5));
    let other = pending(&a, "booking-sandbox", t0() + Duration::seconds(9));
    for c in [&old, &new, &other] {
        b.connections.insert_connection(c).await.unwrap();
    }
    assert_eq!(
        b.connections.connection(&old.id).await.unwrap().as_ref(),
        Some(&old),
        "{}: a connection round-trips whole",
        b.name
    );
    assert_eq!(
        b.connections
            .connection_by_state_hash(&new.oauth_state_hash)
            .await
            .unwrap()
            .map(|c| c.id),
        Some(new.id.clone())
    );
    assert_eq!(
        b.connections
            .connection_by_state_hash(&oauth_state_hash("unknown"))
            .await
            .unwrap(),
        None
    );
    let shop = ProviderId::parse("shop-example").unwrap();
    assert_eq!(
        b.connections
            .latest_connection(&a, &shop)
            .await
            .unwrap()
            .map(|c| c.id),
        Some(new.id.clone()),
        "{}: the newest connection to the provider",
        b.name
    );
    let stranger = new_account(b, "stranger@example.com").await.id;
    assert_eq!(
        b.connections
            .latest_connection(&stranger, &shop)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        b.connections
            .connection(&ConnectionId::from_ulid(Ulid::new()))
            .await
            .unwrap(),
        None
    );

    let ghost = pending(&AccountId::from_ulid(Ulid::new()), "shop-example", t0());
    assert!(matches!(
        b.connections.insert_connection(&ghost).await,
        Err(ConnectionError::UnknownAccount)
    ));
    let mut same_state = pending(&a, "shop-example", t0());
    same_state.oauth_state_hash = old.oauth_state_hash.clone();
    assert!(matches!(
        b.connections.insert_connection(&same_state).await,
        Err(ConnectionError::Duplicate)
    ));
    assert!(matches!(
        b.connections.insert_connection(&old).await,
        Err(ConnectionError::Duplicate)
    ));
    assert_eq!(
        b.connections.connection(&same_state.id).await.unwrap(),
        None
    );
}

pub async fn connections_finish_once(b: &Backend) {
    let a = new_account(b, "finish@example.com").await.id;
    let c = pending(&a, "shop-example", t0());
    b.connections.insert_connection(&c).await.unwrap();
    let at = t0() + Duration::minutes(2);
    let done = b
        .connections
        .finish_connection(&c.id, connected("guest-42"), at)
        .await
        .unwrap();
    assert_eq!(done, connected("guest-42").apply(&c, at), "{}", b.name);
    assert_eq!(done.state, ConnectionState::Connected);
    assert_eq!(
        b.connections.connection(&c.id).await.unwrap().as_ref(),
        Some(&done)
    );
    match b
        .connections
        .finish_connection(&c.id, ConnectionFinish::Refused, at + Duration::seconds(1))
        .await
    {
        Err(ConnectionError::NotPending(current)) => assert_eq!(*current, done, "{}", b.name),
        other => panic!("{}: expected NotPending, got {other:?}", b.name),
    }
    assert_eq!(
        b.connections.connection(&c.id).await.unwrap().as_ref(),
        Some(&done),
        "{}: a second finish changes nothing",
        b.name
    );
    assert!(matches!(
        b.connections
            .finish_connection(
                &ConnectionId::from_ulid(Ulid::new()),
                ConnectionFinish::Expired,
                at
            )
            .await,
        Err(ConnectionError::NotFound)
    ));

    for (finish, state) in [
        (
            ConnectionFinish::WrongAccount {
                upstream_account: "someone-else".into(),
            },
            ConnectionState::WrongAccount,
        ),
        (ConnectionFinish::Refused, ConnectionState::Refused),
        (ConnectionFinish::Expired, ConnectionState::Expired),
    ] {
        let c = pending(&a, "shop-example", t0());
        b.connections.insert_connection(&c).await.unwrap();
        let done = b
            .connections
            .finish_connection(&c.id, finish.clone(), at)
            .await
            .unwrap();
        assert_eq!(done, finish.apply(&c, at), "{}", b.name);
        assert_eq!((done.state, done.credentials.as_ref()), (state, None));
        assert!(state.is_final());
    }
}

pub async fn racing_finishes_have_one_winner(b: &Backend) {
    let a = new_account(b, "race-con@example.com").await.id;
    for n in 2..=8usize {
        let c = pending(&a, "shop-example", t0());
        b.connections.insert_connection(&c).await.unwrap();
        let finishes: Vec<ConnectionFinish> = (0..n)
            .map(|i| match i % 4 {
                0 => connected(&format!("guest-{i}")),
                1 => ConnectionFinish::Refused,
                2 => ConnectionFinish::WrongAccount {
                    upstream_account: format!("other-{i}"),
                },
                _ => ConnectionFinish::Expired,
            })
            .collect();
        let results = join_all(finishes.iter().cloned().map(|f| {
            let store = b.connections.clone();
            let id = c.id.clone();
            async move { store.finish_connection(&id, f, t0()).await }
        }))
        .await;
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(
            winners.len(),
            1,
            "{}: {} of {n} racing finishes won",
            b.name,
            winners.len()
        );
        let stored = b.connections.connection(&c.id).await.unwrap().unwrap();
        assert_eq!(&stored, winners[0], "{}", b.name);
        for r in &results {
            match r {
                Ok(_) => {}
                Err(ConnectionError::NotPending(current)) => {
                    assert_ne!(current.state, ConnectionState::Pending)
                }
                Err(e) => panic!("{}: {e:?}", b.name),
            }
        }
    }
}

pub async fn credentials_refresh_only_when_connected(b: &Backend) {
    let a = new_account(b, "refresh@example.com").await.id;
    let c = pending(&a, "shop-example", t0());
    b.connections.insert_connection(&c).await.unwrap();
    let fresh = SealedSecret::new(b"sealed:new".to_vec());
    let later = t0() + Duration::hours(2);
    match b
        .connections
        .refresh_credentials(&c.id, fresh.clone(), Some(later), later)
        .await
    {
        Err(ConnectionError::NotConnected(current)) => assert_eq!(*current, c, "{}", b.name),
        other => panic!("{}: expected NotConnected, got {other:?}", b.name),
    }
    b.connections
        .finish_connection(&c.id, connected("guest-42"), t0())
        .await
        .unwrap();
    let refreshed = b
        .connections
        .refresh_credentials(
            &c.id,
            fresh.clone(),
            Some(later + Duration::hours(1)),
            later,
        )
        .await
        .unwrap();
    assert_eq!(
        (
            refreshed.state,
            refreshed.credentials.as_ref(),
            refreshed.credentials_expire_at,
            refreshed.updated_at
        ),
        (
            ConnectionState::Connected,
            Some(&fresh),
            Some(later + Duration::hours(1)),
            later
        ),
        "{}",
        b.name
    );
    assert_eq!(
        b.connections.connection(&c.id).await.unwrap().as_ref(),
        Some(&refreshed)
    );
    b.connections.expire_connection(&c.id, later).await.unwrap();
    assert!(matches!(
        b.connections
            .refresh_credentials(&c.id, fresh.clone(), None, later)
            .await,
        Err(ConnectionError::NotConnected(ref r)) if r.state == ConnectionState::Expired
    ));
    assert!(matches!(
        b.connections
            .refresh_credentials(&ConnectionId::from_ulid(Ulid::new()), fresh, None, later)
            .await,
        Err(ConnectionError::NotFound)
    ));
}

pub async fn connections_expire_once(b: &Backend) {
    let a = new_account(b, "expire@example.com").await.id;
    let at = t0() + Duration::minutes(11);
    let p = pending(&a, "shop-example", t0());
    b.connections.insert_connection(&p).await.unwrap();
    let expired = b.connections.expire_connection(&p.id, at).await.unwrap();
    assert_eq!(
        (expired.state, expired.updated_at),
        (ConnectionState::Expired, at),
        "{}",
        b.name
    );
    let again = b
        .connections
        .expire_connection(&p.id, at + Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(again, expired, "{}: expiring again changes nothing", b.name);

    let c = pending(&a, "shop-example", t0());
    b.connections.insert_connection(&c).await.unwrap();
    b.connections
        .finish_connection(&c.id, connected("guest-42"), t0())
        .await
        .unwrap();
    let gone = b.connections.expire_connection(&c.id, at).await.unwrap();
    assert_eq!(
        (gone.state, gone.credentials.as_ref()),
        (ConnectionState::Expired, None),
        "{}: an expired connection keeps no credentials",
        b.name
    );
    assert!(matches!(
        b.connections
            .finish_connection(&c.id, connected("guest-42"), at)
            .await,
        Err(ConnectionError::NotPending(_))
    ));

    let r = pending(&a, "shop-example", t0());
    b.connections.insert_connection(&r).await.unwrap();
    let refused = b
        .connections
        .finish_connection(&r.id, ConnectionFinish::Refused, t0())
        .await
        .unwrap();
    assert_eq!(
        b.connections.expire_connection(&r.id, at).await.unwrap(),
        refused,
        "{}: a final state stays",
        b.name
    );
    assert!(matches!(
        b.connections
            .expire_connection(&ConnectionId::from_ulid(Ulid::new()), at)
            .await,
        Err(ConnectionError::NotFound)
    ));
}

/// The newest connection in a given state is found past newer attempts in other states.
pub async fn newer_attempts_do_not_hide_a_connected_one(b: &Backend) {
    let account = new_account(b, "newer-attempts@example.com").await.id;
    let provider = ProviderId::parse("shop-example").unwrap();
    let first = pending(&account, "shop-example", t0());
    b.connections.insert_connection(&first).await.unwrap();
    b.connections
        .finish_connection(&first.id, connected("ann"), t0() + Duration::seconds(5))
        .await
        .unwrap();
    let second = pending(&account, "shop-example", t0() + Duration::minutes(1));
    b.connections.insert_connection(&second).await.unwrap();
    b.connections
        .finish_connection(
            &second.id,
            ConnectionFinish::Refused,
            t0() + Duration::minutes(2),
        )
        .await
        .unwrap();
    let third = pending(&account, "shop-example", t0() + Duration::minutes(3));
    b.connections.insert_connection(&third).await.unwrap();

    let latest = b
        .connections
        .latest_connection(&account, &provider)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.id, third.id, "{}", b.name);
    let found = b
        .connections
        .latest_connection_in(&account, &provider, ConnectionState::Connected)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.id, found.upstream_account.as_deref()),
        (first.id, Some("ann")),
        "{}",
        b.name
    );
    let refused = b
        .connections
        .latest_connection_in(&account, &provider, ConnectionState::Refused)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(refused.id, second.id);
    assert!(
        b.connections
            .latest_connection_in(&account, &provider, ConnectionState::WrongAccount)
            .await
            .unwrap()
            .is_none()
    );
    let other = ProviderId::parse("booking-example").unwrap();
    assert!(
        b.connections
            .latest_connection_in(&account, &other, ConnectionState::Connected)
            .await
            .unwrap()
            .is_none()
    );
}
