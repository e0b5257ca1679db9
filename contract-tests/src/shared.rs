//! Scenarios for what instances behind a load balancer share through the store: finished A2A
//! tasks (`A2aTaskStore`) and the record of the keys in use (`KeySetStore`).

use chrono::Duration;
use futures_util::future::join_all;
use svc_ports::{A2aTask, KeyFingerprint, KeyHash, KeyKind};
use ulid::Ulid;

use crate::{Backend, scenarios::t0};

fn task(document: &str, hours: i64) -> A2aTask {
    A2aTask {
        id_hash: A2aTask::hash_of(&Ulid::new().to_string()),
        document: document.to_owned(),
        created_at: t0(),
        expires_at: t0() + Duration::hours(hours),
    }
}

fn fp(n: u32) -> KeyFingerprint {
    KeyFingerprint::parse(&format!("key-{n:04}-{}", Ulid::new())).unwrap()
}

pub async fn a2a_tasks_read_back_exactly_until_they_expire(b: &Backend) {
    // The caller's message is quoted in the task: any text, a NUL (escaped in JSON) included.
    let doc = r#"{"id":"t","history":[{"parts":[{"text":"nul \u0000 and é 🦀"}]}]}"#;
    let t = task(doc, 1);
    b.a2a_tasks.insert_a2a_task(&t).await.unwrap();
    let read = b.a2a_tasks.a2a_task(&t.id_hash, t0()).await.unwrap();
    assert_eq!(read.as_ref(), Some(&t), "{}", b.name);
    let last = t.expires_at - Duration::milliseconds(1);
    assert!(
        b.a2a_tasks
            .a2a_task(&t.id_hash, last)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        b.a2a_tasks
            .a2a_task(&t.id_hash, t.expires_at)
            .await
            .unwrap(),
        None,
        "{}: an expired task reads as absent",
        b.name
    );
    let unknown = KeyHash::of("no such task");
    assert_eq!(b.a2a_tasks.a2a_task(&unknown, t0()).await.unwrap(), None);
}

pub async fn a2a_tasks_are_never_replaced(b: &Backend) {
    let first = task("{\"n\":1}", 1);
    b.a2a_tasks.insert_a2a_task(&first).await.unwrap();
    let mut second = task("{\"n\":2}", 2);
    second.id_hash = first.id_hash;
    assert!(
        b.a2a_tasks.insert_a2a_task(&second).await.is_err(),
        "{}",
        b.name
    );
    let read = b.a2a_tasks.a2a_task(&first.id_hash, t0()).await.unwrap();
    assert_eq!(read, Some(first), "{}", b.name);
}

pub async fn a2a_purge_removes_only_expired_tasks(b: &Backend) {
    let (short, long) = (task("{\"n\":1}", 1), task("{\"n\":2}", 2));
    b.a2a_tasks.insert_a2a_task(&short).await.unwrap();
    b.a2a_tasks.insert_a2a_task(&long).await.unwrap();
    let cutoff = t0() + Duration::hours(1);
    assert_eq!(
        b.a2a_tasks.purge_a2a_tasks(cutoff).await.unwrap(),
        1,
        "{}",
        b.name
    );
    assert_eq!(b.a2a_tasks.purge_a2a_tasks(cutoff).await.unwrap(), 0);
    let at = cutoff - Duration::milliseconds(1);
    assert_eq!(
        b.a2a_tasks.a2a_task(&short.id_hash, at).await.unwrap(),
        None
    );
    assert_eq!(
        b.a2a_tasks.a2a_task(&long.id_hash, at).await.unwrap(),
        Some(long)
    );
}

pub async fn the_first_key_is_recorded_once_per_kind(b: &Backend) {
    let (a, other, c) = (fp(1), fp(2), fp(3));
    for kind in [KeyKind::Signing, KeyKind::Connection, KeyKind::WebBotAuth] {
        assert!(b.key_set.recorded_keys(kind).await.unwrap().is_empty());
    }
    let first = b.key_set.record_first_key(KeyKind::Signing, &a, t0()).await;
    assert_eq!(first.unwrap(), std::slice::from_ref(&a), "{}", b.name);
    let later = b
        .key_set
        .record_first_key(KeyKind::Signing, &other, t0())
        .await;
    assert_eq!(
        later.unwrap(),
        std::slice::from_ref(&a),
        "{}: a second first key changes nothing",
        b.name
    );
    let again = b.key_set.record_first_key(KeyKind::Signing, &a, t0()).await;
    assert_eq!(again.unwrap(), std::slice::from_ref(&a));
    assert_eq!(
        b.key_set.recorded_keys(KeyKind::Signing).await.unwrap(),
        [a]
    );
    // Kinds are apart.
    let conn = b
        .key_set
        .record_first_key(KeyKind::Connection, &c, t0())
        .await;
    assert_eq!(conn.unwrap(), std::slice::from_ref(&c));
    assert_eq!(
        b.key_set.recorded_keys(KeyKind::Connection).await.unwrap(),
        std::slice::from_ref(&c)
    );
    // The Web Bot Auth key is a kind of its own (migration 0017 lets the SQL stores hold it).
    let bot = b
        .key_set
        .record_first_key(KeyKind::WebBotAuth, &other, t0())
        .await;
    assert_eq!(bot.unwrap(), std::slice::from_ref(&other), "{}", b.name);
    assert_eq!(
        b.key_set.recorded_keys(KeyKind::Connection).await.unwrap(),
        [c]
    );
}

pub async fn rotated_keys_join_the_record_once(b: &Backend) {
    let (old, new) = (fp(1), fp(2));
    let k = KeyKind::Connection;
    b.key_set.record_first_key(k, &old, t0()).await.unwrap();
    let later = t0() + Duration::days(30);
    let rotated = b.key_set.record_rotated_key(k, &new, later).await.unwrap();
    assert_eq!(rotated, [old.clone(), new.clone()], "{}", b.name);
    let again = b
        .key_set
        .record_rotated_key(k, &new, later + Duration::days(1))
        .await;
    assert_eq!(
        again.unwrap(),
        [old.clone(), new.clone()],
        "{}: idempotent",
        b.name
    );
    // Rotating back to a recorded key adds nothing.
    let back = b
        .key_set
        .record_rotated_key(k, &old, later + Duration::days(2))
        .await;
    assert_eq!(back.unwrap(), [old.clone(), new.clone()]);
    assert_eq!(b.key_set.recorded_keys(k).await.unwrap(), [old, new]);
    assert!(
        b.key_set
            .recorded_keys(KeyKind::Signing)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn racing_first_starts_record_exactly_one_key(b: &Backend) {
    let keys: Vec<KeyFingerprint> = (0..10).map(fp).collect();
    let answers = join_all(
        keys.iter()
            .map(|k| b.key_set.record_first_key(KeyKind::Signing, k, t0())),
    )
    .await;
    let answers: Vec<Vec<KeyFingerprint>> = answers.into_iter().map(Result::unwrap).collect();
    let recorded = b.key_set.recorded_keys(KeyKind::Signing).await.unwrap();
    assert_eq!(recorded.len(), 1, "{}: {recorded:?}", b.name);
    assert!(keys.contains(&recorded[0]));
    for a in answers {
        assert_eq!(
            a, recorded,
            "{}: every racer is answered the winner",
            b.name
        );
    }
}
