//! Scenarios for `IdentityStore` and key rotation: device grants, emailed codes, web sessions.

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use svc_ports::{
    AccountId, ChallengeId, ChallengePurpose, DeviceDecision, DeviceGrant, DeviceGrantId,
    DeviceGrantStatus, Email, EmailChallenge, KeyHash, KnownBrowser, Scopes, SessionReach,
    UserCode, WebSession,
    identity::MAX_CODE_ATTEMPTS,
    store::{IdentityError, KeyError},
};
use ulid::Ulid;

use crate::{
    Backend,
    scenarios::{key_for, new_account, t0},
};

fn user_code(n: u32) -> UserCode {
    let alphabet = svc_ports::identity::USER_CODE_ALPHABET;
    let mut x = n as usize + Ulid::new().random() as usize;
    let code: String = (0..8)
        .map(|_| {
            let c = alphabet[x % alphabet.len()] as char;
            x /= alphabet.len();
            c
        })
        .collect();
    UserCode::parse(&code).unwrap()
}

fn device_grant(expires_at: DateTime<Utc>) -> DeviceGrant {
    DeviceGrant {
        id: DeviceGrantId::from_ulid(Ulid::new()),
        device_code_hash: KeyHash::of(&Ulid::new().to_string()),
        user_code: user_code(0),
        client_id: "contract-agent".into(),
        agent_name: Some("Contract Agent".into()),
        scopes: Scopes::default_for_new_key(),
        status: DeviceGrantStatus::Pending,
        account_id: None,
        key_id: None,
        interval_secs: 5,
        created_at: t0(),
        expires_at,
        last_polled_at: None,
    }
}

fn challenge(email: &str, expires_at: DateTime<Utc>) -> EmailChallenge {
    let id = ChallengeId::from_ulid(Ulid::new());
    EmailChallenge {
        code_hash: EmailChallenge::code_hash_of(&id, "123456"),
        id,
        purpose: ChallengePurpose::ApiKey,
        email: Email::parse(email).unwrap(),
        agent_name: None,
        scopes: Scopes::default_for_new_key(),
        attempts: 0,
        created_at: t0(),
        expires_at,
        consumed_at: None,
        known_browser: false,
    }
}

pub async fn device_grants_round_trip_and_codes_are_unique(b: &Backend) {
    let g = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&g).await.unwrap();
    let by_code = b.identity.device_grant_by_code(&g.device_code_hash).await;
    assert_eq!(by_code.unwrap(), Some(g.clone()), "{}", b.name);
    let by_user = b.identity.device_grant_by_user_code(&g.user_code).await;
    assert_eq!(by_user.unwrap(), Some(g.clone()));
    let mut same_user_code = device_grant(t0() + Duration::minutes(15));
    same_user_code.user_code = g.user_code.clone();
    assert!(matches!(
        b.identity.insert_device_grant(&same_user_code).await,
        Err(IdentityError::Duplicate)
    ));
    let mut same_device_code = device_grant(t0() + Duration::minutes(15));
    same_device_code.device_code_hash = g.device_code_hash;
    assert!(matches!(
        b.identity.insert_device_grant(&same_device_code).await,
        Err(IdentityError::Duplicate)
    ));
    let unknown = KeyHash::of("nope");
    assert_eq!(
        b.identity.device_grant_by_code(&unknown).await.unwrap(),
        None
    );
    let polled = t0() + Duration::seconds(7);
    b.identity
        .record_device_poll(&g.id, polled, 10)
        .await
        .unwrap();
    let after = b
        .identity
        .device_grant_by_code(&g.device_code_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (after.last_polled_at, after.interval_secs),
        (Some(polled), 10)
    );
}

pub async fn device_decisions_happen_once_and_not_after_expiry(b: &Backend) {
    let owner = new_account(b, "owner@example.com").await;
    let g = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&g).await.unwrap();
    // The human granted less than the agent asked for: the grant keeps what was granted.
    let granted = Scopes::parse_list("read").unwrap();
    let approve = DeviceDecision::Approve {
        account: owner.id.clone(),
        scopes: granted.clone(),
    };
    let decided = b
        .identity
        .decide_device_grant(&g.id, &approve, t0())
        .await
        .unwrap();
    assert_eq!(decided.status, DeviceGrantStatus::Approved, "{}", b.name);
    assert_eq!(decided.account_id, Some(owner.id.clone()));
    assert_eq!(decided.scopes, granted, "{}", b.name);
    let stored = b
        .identity
        .device_grant_by_code(&g.device_code_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.scopes, granted,
        "{}: granted scopes not stored",
        b.name
    );
    assert!(matches!(
        b.identity
            .decide_device_grant(&g.id, &DeviceDecision::Deny, t0())
            .await,
        Err(IdentityError::NotPending)
    ));

    let late = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&late).await.unwrap();
    let at_expiry = late.expires_at;
    assert!(matches!(
        b.identity
            .decide_device_grant(&late.id, &approve, at_expiry)
            .await,
        Err(IdentityError::Expired)
    ));
    let unchanged = b
        .identity
        .device_grant_by_code(&late.device_code_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unchanged.status, DeviceGrantStatus::Pending);
    let missing = DeviceGrantId::from_ulid(Ulid::new());
    assert!(matches!(
        b.identity
            .decide_device_grant(&missing, &approve, t0())
            .await,
        Err(IdentityError::NotFound)
    ));

    // Two humans racing on one grant: exactly one decision lands.
    let raced = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&raced).await.unwrap();
    let results = join_all((0..6).map(|i| {
        let id = raced.id.clone();
        let d = if i % 2 == 0 {
            approve.clone()
        } else {
            DeviceDecision::Deny
        };
        let identity = b.identity.clone();
        async move { identity.decide_device_grant(&id, &d, t0()).await }
    }))
    .await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{}",
        b.name
    );
}

pub async fn device_keys_are_issued_once(b: &Backend) {
    let owner = new_account(b, "owner@example.com").await;
    let other = new_account(b, "other@example.com").await;
    let g = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&g).await.unwrap();
    let (_, early) = key_for(&owner, t0());
    assert!(matches!(
        b.identity.issue_device_key(&g.id, &early).await,
        Err(IdentityError::NotApproved)
    ));
    assert!(
        b.accounts
            .keys(Some(owner.id.clone()))
            .await
            .unwrap()
            .is_empty(),
        "{}: key kept",
        b.name
    );

    b.identity
        .decide_device_grant(
            &g.id,
            &DeviceDecision::Approve {
                account: owner.id.clone(),
                scopes: g.scopes.clone(),
            },
            t0(),
        )
        .await
        .unwrap();
    let (_, wrong_account) = key_for(&other, t0());
    assert!(matches!(
        b.identity.issue_device_key(&g.id, &wrong_account).await,
        Err(IdentityError::Key(KeyError::UnknownAccount))
    ));
    assert!(
        b.accounts
            .keys(Some(other.id.clone()))
            .await
            .unwrap()
            .is_empty()
    );

    // Ten polls racing: one key.
    let results = join_all((0..10).map(|_| {
        let (_, key) = key_for(&owner, t0());
        let (id, identity) = (g.id.clone(), b.identity.clone());
        async move { identity.issue_device_key(&id, &key).await }
    }))
    .await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{}",
        b.name
    );
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(IdentityError::AlreadyUsed)))
    );
    let keys = b.accounts.keys(Some(owner.id.clone())).await.unwrap();
    assert_eq!(keys.len(), 1);
    let issued = b
        .identity
        .device_grant_by_code(&g.device_code_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(issued.status, DeviceGrantStatus::Issued);
    assert_eq!(issued.key_id, Some(keys[0].id.clone()));

    let denied = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&denied).await.unwrap();
    b.identity
        .decide_device_grant(&denied.id, &DeviceDecision::Deny, t0())
        .await
        .unwrap();
    let (_, k) = key_for(&owner, t0());
    assert!(matches!(
        b.identity.issue_device_key(&denied.id, &k).await,
        Err(IdentityError::NotApproved)
    ));
}

pub async fn challenge_tries_are_capped(b: &Backend) {
    let c = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&c).await.unwrap();
    assert!(matches!(
        b.identity.insert_challenge(&c).await,
        Err(IdentityError::Duplicate)
    ));
    assert_eq!(
        b.identity.challenge(&c.id).await.unwrap(),
        Some(c.clone()),
        "{}",
        b.name
    );
    // Twelve concurrent guesses: exactly MAX_CODE_ATTEMPTS may be compared.
    let results = join_all((0..12).map(|_| {
        let (id, identity) = (c.id.clone(), b.identity.clone());
        async move { identity.attempt_challenge(&id, t0()).await }
    }))
    .await;
    let allowed = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(allowed as u32, MAX_CODE_ATTEMPTS, "{}", b.name);
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(IdentityError::Exhausted)))
    );
    let stored = b.identity.challenge(&c.id).await.unwrap().unwrap();
    assert_eq!(stored.attempts, MAX_CODE_ATTEMPTS);

    let expired = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&expired).await.unwrap();
    assert!(matches!(
        b.identity
            .attempt_challenge(&expired.id, expired.expires_at)
            .await,
        Err(IdentityError::Expired)
    ));
    let missing = ChallengeId::from_ulid(Ulid::new());
    assert!(matches!(
        b.identity.attempt_challenge(&missing, t0()).await,
        Err(IdentityError::NotFound)
    ));
    // Wrong tries per address: every try of a challenge not consumed, none of another
    // address's, none before `since`; the try that consumed one is not wrong.
    let human = Email::parse("human@example.com").unwrap();
    let wrong = |since| b.identity.wrong_code_tries(&human, since, false);
    assert_eq!(wrong(t0()).await.unwrap(), MAX_CODE_ATTEMPTS, "{}", b.name);
    assert_eq!(wrong(t0() + Duration::seconds(1)).await.unwrap(), 0);
    let other = Email::parse("other@example.com").unwrap();
    assert_eq!(
        b.identity
            .wrong_code_tries(&other, t0(), false)
            .await
            .unwrap(),
        0
    );
    // Challenges the address's own browser started are counted apart, both ways.
    let marked = EmailChallenge {
        known_browser: true,
        ..challenge("human@example.com", t0() + Duration::minutes(10))
    };
    b.identity.insert_challenge(&marked).await.unwrap();
    let read = b.identity.challenge(&marked.id).await.unwrap().unwrap();
    assert!(read.known_browser, "{}", b.name);
    for _ in 0..2 {
        let tried = b
            .identity
            .attempt_challenge(&marked.id, t0())
            .await
            .unwrap();
        assert!(tried.known_browser);
    }
    let own = |since| b.identity.wrong_code_tries(&human, since, true);
    assert_eq!(own(t0()).await.unwrap(), 2, "{}", b.name);
    assert_eq!(wrong(t0()).await.unwrap(), MAX_CODE_ATTEMPTS, "{}", b.name);
    let right = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&right).await.unwrap();
    b.identity.attempt_challenge(&right.id, t0()).await.unwrap();
    b.identity.attempt_challenge(&right.id, t0()).await.unwrap();
    b.identity
        .consume_challenge(&right.id, t0(), None)
        .await
        .unwrap();
    assert_eq!(
        wrong(t0()).await.unwrap(),
        MAX_CODE_ATTEMPTS + 1,
        "{}",
        b.name
    );
}

pub async fn challenges_are_consumed_once_with_their_key(b: &Backend) {
    let owner = new_account(b, "human@example.com").await;
    let c = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&c).await.unwrap();
    let results = join_all((0..6).map(|_| {
        let (_, key) = key_for(&owner, t0());
        let (id, identity) = (c.id.clone(), b.identity.clone());
        async move { identity.consume_challenge(&id, t0(), Some(&key)).await }
    }))
    .await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{}",
        b.name
    );
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(IdentityError::AlreadyUsed)))
    );
    assert_eq!(
        b.accounts.keys(Some(owner.id.clone())).await.unwrap().len(),
        1
    );
    assert!(matches!(
        b.identity.attempt_challenge(&c.id, t0()).await,
        Err(IdentityError::AlreadyUsed)
    ));

    // A key that cannot be stored leaves the challenge usable.
    let (_, existing) = key_for(&owner, t0());
    b.accounts.insert_key(&existing).await.unwrap();
    let c2 = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&c2).await.unwrap();
    assert!(matches!(
        b.identity
            .consume_challenge(&c2.id, t0(), Some(&existing))
            .await,
        Err(IdentityError::Key(KeyError::Duplicate))
    ));
    let still = b.identity.challenge(&c2.id).await.unwrap().unwrap();
    assert_eq!(still.consumed_at, None, "{}", b.name);
    let signed_in = b
        .identity
        .consume_challenge(&c2.id, t0(), None)
        .await
        .unwrap();
    assert_eq!(signed_in.consumed_at, Some(t0()));
    let expired = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&expired).await.unwrap();
    assert!(matches!(
        b.identity
            .consume_challenge(&expired.id, expired.expires_at, None)
            .await,
        Err(IdentityError::Expired)
    ));
}

pub async fn sessions_expire_and_end_on_sign_out(b: &Backend) {
    let owner = new_account(b, "human@example.com").await;
    let w = WebSession {
        token_hash: KeyHash::of("session-token"),
        account_id: owner.id.clone(),
        reach: SessionReach::Account,
        created_at: t0(),
        expires_at: t0() + Duration::days(7),
    };
    b.identity.insert_session(&w).await.unwrap();
    assert!(matches!(
        b.identity.insert_session(&w).await,
        Err(IdentityError::Duplicate)
    ));
    let (found, account) = b
        .identity
        .session(&w.token_hash, t0())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((found, account), (w.clone(), owner.clone()), "{}", b.name);
    assert_eq!(
        b.identity
            .session(&w.token_hash, w.expires_at)
            .await
            .unwrap(),
        None
    );
    b.identity.delete_session(&w.token_hash).await.unwrap();
    assert_eq!(b.identity.session(&w.token_hash, t0()).await.unwrap(), None);
    let orphan = WebSession {
        account_id: AccountId::from_ulid(Ulid::new()),
        token_hash: KeyHash::of("orphan"),
        ..w
    };
    assert!(
        b.identity.insert_session(&orphan).await.is_err(),
        "{}: session without account",
        b.name
    );
    // What a session may do is read back as it was stored.
    let checkout = WebSession {
        token_hash: KeyHash::of("checkout-token"),
        reach: SessionReach::Checkout,
        ..w
    };
    b.identity.insert_session(&checkout).await.unwrap();
    let (found, _) = b
        .identity
        .session(&checkout.token_hash, t0())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.reach, SessionReach::Checkout, "{}", b.name);
}

pub async fn keys_rotate_in_one_step(b: &Backend) {
    let owner = new_account(b, "human@example.com").await;
    let other = new_account(b, "other@example.com").await;
    let (_, old) = key_for(&owner, t0());
    b.accounts.insert_key(&old).await.unwrap();
    let (_, stranger) = key_for(&other, t0());
    assert!(matches!(
        b.accounts.rotate_key(&old.prefix, &stranger, t0()).await,
        Err(KeyError::NotFound)
    ));
    let (_, clash) = key_for(&owner, t0());
    let clash = svc_ports::ApiKeyRecord {
        hash: old.hash,
        ..clash
    };
    assert!(matches!(
        b.accounts.rotate_key(&old.prefix, &clash, t0()).await,
        Err(KeyError::Duplicate)
    ));
    let unchanged = b.accounts.keys(Some(owner.id.clone())).await.unwrap();
    assert_eq!(
        unchanged,
        vec![old.clone()],
        "{}: a failed rotation changed keys",
        b.name
    );

    let later = t0() + Duration::seconds(1);
    let overlap_end = later + Duration::hours(24);
    let (_, new) = key_for(&owner, later);
    let rotating = b
        .accounts
        .rotate_key(&old.prefix, &new, overlap_end)
        .await
        .unwrap();
    // The old key is not revoked: it keeps working until the overlap ends.
    assert_eq!(rotating.revoked_at, None, "{}", b.name);
    assert_eq!(rotating.expires_at, Some(overlap_end), "{}", b.name);
    let (found, _) = b
        .accounts
        .key_by_hash(&old.hash)
        .await
        .unwrap()
        .expect("old key still stored");
    assert_eq!(found.expires_at, Some(overlap_end), "{}", b.name);
    let keys = b.accounts.keys(Some(owner.id.clone())).await.unwrap();
    assert_eq!(keys.len(), 2);
    assert!(
        keys.iter()
            .any(|k| k.id == new.id && k.revoked_at.is_none() && k.expires_at.is_none())
    );
    // Rotated once: not again, and its end stays.
    let (_, again) = key_for(&owner, later);
    assert!(matches!(
        b.accounts
            .rotate_key(&old.prefix, &again, overlap_end + Duration::hours(1))
            .await,
        Err(KeyError::AlreadyRotated)
    ));
    // Revoked during the overlap: it stops now, and cannot be rotated.
    let revoked = b.accounts.revoke_key(&old.prefix, later).await.unwrap();
    assert_eq!(
        (revoked.revoked_at, revoked.expires_at),
        (Some(later), Some(overlap_end)),
        "{}",
        b.name
    );
    let (_, third) = key_for(&owner, later);
    assert!(matches!(
        b.accounts.revoke_key(&new.prefix, later).await.map(|_| ()),
        Ok(())
    ));
    assert!(matches!(
        b.accounts
            .rotate_key(&new.prefix, &third, overlap_end)
            .await,
        Err(KeyError::AlreadyRevoked)
    ));
    let after = b.accounts.keys(Some(owner.id.clone())).await.unwrap();
    assert_eq!(
        after.len(),
        2,
        "{}: a refused rotation stored a key",
        b.name
    );
}

pub async fn key_uses_are_recorded_and_never_go_back(b: &Backend) {
    let owner = new_account(b, "human@example.com").await;
    let (_, key) = key_for(&owner, t0());
    b.accounts.insert_key(&key).await.unwrap();
    let used = t0() + Duration::minutes(5);
    b.accounts.touch_key(&key.id, used).await.unwrap();
    let earlier = t0() + Duration::minutes(1);
    b.accounts.touch_key(&key.id, earlier).await.unwrap();
    let (found, _) = b.accounts.key_by_hash(&key.hash).await.unwrap().unwrap();
    assert_eq!(found.last_used_at, Some(used), "{}", b.name);
    let listed = b.accounts.keys(Some(owner.id.clone())).await.unwrap();
    assert_eq!(listed[0].last_used_at, Some(used), "{}", b.name);
    // An unknown key: nothing to record, no error.
    let (_, stranger) = key_for(&owner, t0());
    b.accounts.touch_key(&stranger.id, used).await.unwrap();
}

pub async fn challenges_stop_at_the_cap_even_when_racing(b: &Backend) {
    let hour_ago = t0() - Duration::hours(1);
    let expires = t0() + Duration::minutes(10);
    let racing: Vec<EmailChallenge> = (0..10)
        .map(|_| challenge("racing@example.com", expires))
        .collect();
    let stored = join_all(
        racing
            .iter()
            .map(|c| b.identity.insert_challenge_within(c, hour_ago, 3)),
    )
    .await
    .into_iter()
    .filter(|r| *r.as_ref().unwrap())
    .count();
    assert_eq!(stored, 3, "{}: stored past the cap", b.name);
    let kept = join_all(racing.iter().map(|c| b.identity.challenge(&c.id))).await;
    assert_eq!(
        kept.iter()
            .filter(|c| c.as_ref().unwrap().is_some())
            .count(),
        3,
        "{}",
        b.name
    );
    // Another purpose, another address and a window that starts later count apart.
    let mut sign_in = challenge("racing@example.com", expires);
    sign_in.purpose = ChallengePurpose::SignIn;
    let other = challenge("other@example.com", expires);
    let later = challenge("racing@example.com", expires);
    for (c, since) in [
        (&sign_in, hour_ago),
        (&other, hour_ago),
        (&later, t0() + Duration::seconds(1)),
    ] {
        assert!(
            b.identity
                .insert_challenge_within(c, since, 3)
                .await
                .unwrap(),
            "{}",
            b.name
        );
    }
    assert!(matches!(
        b.identity
            .insert_challenge_within(&later, hour_ago, 100)
            .await,
        Err(IdentityError::Duplicate)
    ));
}

pub async fn known_browsers_are_kept_until_they_expire(b: &Backend) {
    let known = KnownBrowser {
        token_hash: KeyHash::of("known-browser-token"),
        email: Email::parse("human@example.com").unwrap(),
        created_at: t0(),
        expires_at: t0() + Duration::days(180),
    };
    b.identity.insert_known_browser(&known).await.unwrap();
    assert!(
        matches!(
            b.identity.insert_known_browser(&known).await,
            Err(IdentityError::Duplicate)
        ),
        "{}",
        b.name
    );
    assert_eq!(
        b.identity
            .known_browser(&known.token_hash, t0() + Duration::days(179))
            .await
            .unwrap(),
        Some(known.clone()),
        "{}",
        b.name
    );
    assert_eq!(
        b.identity
            .known_browser(&known.token_hash, known.expires_at)
            .await
            .unwrap(),
        None,
        "{}: at its expiry",
        b.name
    );
    assert_eq!(
        b.identity
            .known_browser(&KeyHash::of("another-token"), t0())
            .await
            .unwrap(),
        None
    );
}

pub async fn identity_purge_removes_only_expired_records(b: &Backend) {
    let owner = new_account(b, "human@example.com").await;
    let old = device_grant(t0() - Duration::minutes(1));
    let fresh = device_grant(t0() + Duration::minutes(15));
    b.identity.insert_device_grant(&old).await.unwrap();
    b.identity.insert_device_grant(&fresh).await.unwrap();
    let old_c = challenge("human@example.com", t0() - Duration::minutes(1));
    let fresh_c = challenge("human@example.com", t0() + Duration::minutes(10));
    b.identity.insert_challenge(&old_c).await.unwrap();
    b.identity.insert_challenge(&fresh_c).await.unwrap();
    let w = |token: &str, expires_at| WebSession {
        token_hash: KeyHash::of(token),
        account_id: owner.id.clone(),
        reach: SessionReach::Account,
        created_at: t0() - Duration::days(8),
        expires_at,
    };
    b.identity
        .insert_session(&w("old", t0() - Duration::days(1)))
        .await
        .unwrap();
    b.identity
        .insert_session(&w("fresh", t0() + Duration::days(1)))
        .await
        .unwrap();
    let browser = |token: &str, expires_at| KnownBrowser {
        token_hash: KeyHash::of(token),
        email: owner.email.clone(),
        created_at: t0() - Duration::days(181),
        expires_at,
    };
    b.identity
        .insert_known_browser(&browser("old-browser", t0() - Duration::days(1)))
        .await
        .unwrap();
    b.identity
        .insert_known_browser(&browser("fresh-browser", t0() + Duration::days(1)))
        .await
        .unwrap();
    assert_eq!(
        b.identity.purge_identity(t0()).await.unwrap(),
        4,
        "{}",
        b.name
    );
    assert_eq!(
        b.identity
            .device_grant_by_code(&old.device_code_hash)
            .await
            .unwrap(),
        None
    );
    assert!(
        b.identity
            .device_grant_by_code(&fresh.device_code_hash)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(b.identity.challenge(&old_c.id).await.unwrap(), None);
    assert!(b.identity.challenge(&fresh_c.id).await.unwrap().is_some());
    assert!(
        b.identity
            .session(&KeyHash::of("fresh"), t0())
            .await
            .unwrap()
            .is_some()
    );
    // An expired mark is never answered, so only the purge's count shows the old one went.
    assert!(
        b.identity
            .known_browser(&KeyHash::of("fresh-browser"), t0())
            .await
            .unwrap()
            .is_some()
    );
}
