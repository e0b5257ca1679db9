//! Scenarios for `SealedStore`: every sealed value is read once, page by page, in every state
//! of its record, and replaced only while unchanged, with nothing else of the record touched.

use std::collections::BTreeMap;

use chrono::Duration;
use svc_ports::{SealedField, SealedSecret};

use crate::{
    Backend,
    connections::{connected, pending},
    hooks::endpoint,
    scenarios::{new_account, t0},
};

/// Every value of `field`, read `limit` at a time.
async fn read_all(b: &Backend, field: SealedField, limit: u32) -> BTreeMap<String, SealedSecret> {
    let mut all = BTreeMap::new();
    let mut after = None;
    loop {
        let page = b.sealed.sealed_values(field, after, limit).await.unwrap();
        assert!(
            page.len() <= limit as usize,
            "{}: a page within its limit",
            b.name
        );
        let Some((last, _)) = page.last() else {
            break;
        };
        after = Some(last.clone());
        for (id, sealed) in page {
            assert!(
                all.insert(id.clone(), sealed).is_none(),
                "{}: {id} read twice",
                b.name
            );
        }
    }
    all
}

pub async fn sealed_values_are_read_once_and_replaced_only_while_unchanged(b: &Backend) {
    let a = new_account(b, "sealed@example.com").await.id;
    let waiting = pending(&a, "shop-example", t0());
    let linked = pending(&a, "shop-example", t0() + Duration::seconds(1));
    let ended = pending(&a, "booking-sandbox", t0() + Duration::seconds(2));
    for c in [&waiting, &linked, &ended] {
        b.connections.insert_connection(c).await.unwrap();
    }
    let linked = b
        .connections
        .finish_connection(&linked.id, connected("guest-1"), t0())
        .await
        .unwrap();
    b.connections
        .finish_connection(&ended.id, connected("guest-2"), t0())
        .await
        .unwrap();
    b.connections
        .expire_connection(&ended.id, t0())
        .await
        .unwrap();
    let kept = endpoint(&a, "https://hooks.example/kept", 0);
    let gone = endpoint(&a, "https://hooks.example/gone", 1);
    for e in [&kept, &gone] {
        b.hooks.insert_endpoint(e).await.unwrap();
    }
    b.hooks.delete_endpoint(&a, &gone.id, t0()).await.unwrap();

    // Every value once, whatever the page size; a connection without credentials has none.
    for limit in [1, 2, 50] {
        let credentials = read_all(b, SealedField::ConnectionCredentials, limit).await;
        assert_eq!(
            credentials.keys().collect::<Vec<_>>(),
            vec![linked.id.as_str()],
            "{}: only the connected connection has credentials",
            b.name
        );
        assert_eq!(
            Some(&credentials[linked.id.as_str()]),
            linked.credentials.as_ref()
        );
        let verifiers = read_all(b, SealedField::ConnectionPkceVerifier, limit).await;
        assert_eq!(
            verifiers.len(),
            3,
            "{}: every connection's verifier",
            b.name
        );
        assert_eq!(verifiers[waiting.id.as_str()], waiting.pkce_verifier);
        let secrets = read_all(b, SealedField::WebhookSecret, limit).await;
        assert_eq!(
            secrets
                .keys()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            [kept.id.as_str().to_owned(), gone.id.as_str().to_owned()].into(),
            "{}: a deleted endpoint's secret too",
            b.name
        );
    }

    // Replaced only while unchanged; nothing else of the record moves.
    let old = linked.credentials.clone().unwrap();
    let new = SealedSecret::new(vec![9, 8, 7, 0, 255]);
    let stale = SealedSecret::new(b"not what is stored".to_vec());
    assert!(
        !b.sealed
            .replace_sealed(
                SealedField::ConnectionCredentials,
                linked.id.as_str(),
                &stale,
                &new
            )
            .await
            .unwrap(),
        "{}: another value is not replaced",
        b.name
    );
    assert_eq!(
        b.connections.connection(&linked.id).await.unwrap().as_ref(),
        Some(&linked)
    );
    assert!(
        b.sealed
            .replace_sealed(
                SealedField::ConnectionCredentials,
                linked.id.as_str(),
                &old,
                &new
            )
            .await
            .unwrap()
    );
    let after = b.connections.connection(&linked.id).await.unwrap().unwrap();
    assert_eq!(
        after,
        svc_ports::ConnectionRecord {
            credentials: Some(new.clone()),
            ..linked.clone()
        },
        "{}: only the credentials changed",
        b.name
    );
    assert!(
        !b.sealed
            .replace_sealed(
                SealedField::ConnectionCredentials,
                linked.id.as_str(),
                &old,
                &new
            )
            .await
            .unwrap(),
        "{}: a second replace of the same old value finds it gone",
        b.name
    );
    // A connection without credentials has none to replace; an unknown id neither.
    assert!(
        !b.sealed
            .replace_sealed(
                SealedField::ConnectionCredentials,
                ended.id.as_str(),
                &old,
                &new
            )
            .await
            .unwrap()
    );
    assert!(
        !b.sealed
            .replace_sealed(
                SealedField::WebhookSecret,
                "whe_unknown",
                &kept.secret,
                &new
            )
            .await
            .unwrap()
    );
    assert!(
        b.sealed
            .replace_sealed(
                SealedField::ConnectionPkceVerifier,
                waiting.id.as_str(),
                &waiting.pkce_verifier,
                &new
            )
            .await
            .unwrap()
    );
    assert_eq!(
        b.connections
            .connection(&waiting.id)
            .await
            .unwrap()
            .unwrap()
            .pkce_verifier,
        new
    );
    assert!(
        b.sealed
            .replace_sealed(
                SealedField::WebhookSecret,
                kept.id.as_str(),
                &kept.secret,
                &new
            )
            .await
            .unwrap()
    );
    let listed = b.hooks.endpoints(&a).await.unwrap();
    assert_eq!(
        listed,
        vec![svc_ports::hooks::WebhookEndpoint {
            secret: new.clone(),
            ..kept.clone()
        }],
        "{}: the endpoint with its new secret, nothing else changed",
        b.name
    );
    assert!(
        b.sealed
            .replace_sealed(
                SealedField::WebhookSecret,
                gone.id.as_str(),
                &gone.secret,
                &new
            )
            .await
            .unwrap(),
        "{}: a deleted endpoint's secret is resealed too",
        b.name
    );
}
