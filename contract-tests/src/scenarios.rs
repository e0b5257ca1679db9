//! The scenarios. Each takes a fresh backend and asserts what the port documentation promises.

use std::{future::Future, pin::Pin, sync::Arc};

use chrono::{DateTime, Duration, TimeZone, Utc};
use futures_util::future::join_all;
use proptest::prelude::*;
use svc_ports::{
    Account, AccountId, ApiKeyId, ApiKeyRecord, ApiKeySecret, CreditAmount, Email, Environment,
    FetchedPage, GrantOutcome, LedgerEntryId, Plan, RobotsDecision, Scopes,
    ledger::{EntryKind, Grant},
    store::{AccountError, KeyError, LedgerError},
};
use ulid::Ulid;

use crate::Backend;

pub(crate) fn t0() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_780_000_000_123).unwrap()
}

fn account(email: &str, env: Environment) -> Account {
    Account {
        id: AccountId::from_ulid(Ulid::new()),
        email: Email::parse(email).unwrap(),
        plan: Plan::Free,
        environment: env,
        created_at: t0(),
    }
}

pub(crate) async fn new_account(b: &Backend, email: &str) -> Account {
    let a = account(email, Environment::Live);
    b.accounts.create_account(&a).await.unwrap();
    a
}

fn random_body() -> String {
    // The random (last 16) characters of two ULIDs: 32 valid base62 characters whose first 8
    // (the listed prefix) differ between calls, even within one millisecond.
    let (a, b) = (Ulid::new().to_string(), Ulid::new().to_string());
    format!("{}{}", &a[10..], &b[10..])
}

pub(crate) fn key_for(account: &Account, at: DateTime<Utc>) -> (ApiKeySecret, ApiKeyRecord) {
    let secret = ApiKeySecret::from_random(account.environment, &random_body()).unwrap();
    let record = ApiKeyRecord {
        id: ApiKeyId::from_ulid(Ulid::new()),
        account_id: account.id.clone(),
        prefix: secret.prefix(),
        hash: secret.hash(),
        scopes: Scopes::default_for_new_key(),
        label: "contract".into(),
        created_at: at,
        revoked_at: None,
        expires_at: None,
        last_used_at: None,
    };
    (secret, record)
}

fn grant(account: &AccountId, amount: i64, reference: Option<&str>) -> Grant {
    Grant {
        id: LedgerEntryId::from_ulid(Ulid::new()),
        account_id: account.clone(),
        amount: CreditAmount::new(amount).unwrap(),
        reference: reference.map(str::to_owned),
        memo: "contract grant".into(),
        at: t0(),
    }
}

async fn assert_balance_matches_entries(b: &Backend, account: &AccountId) -> i64 {
    let balance = b.ledger.balance(account).await.unwrap();
    let entries = b.ledger.entries(account, 10_000).await.unwrap();
    let sum: i64 = entries.iter().map(|e| e.delta).sum();
    assert_eq!(
        balance.spendable, sum,
        "{}: balance differs from the sum of entries",
        b.name
    );
    if let Some(newest) = entries.first() {
        assert_eq!(
            newest.balance_after, balance.spendable,
            "{}: newest entry's balance_after",
            b.name
        );
    }
    balance.spendable
}

pub async fn create_and_read_account(b: &Backend) {
    let a = new_account(b, "ada@example.com").await;
    assert_eq!(b.accounts.account(&a.id).await.unwrap(), Some(a.clone()));
    let by_email = b
        .accounts
        .account_by_email(Environment::Live, &a.email)
        .await
        .unwrap();
    assert_eq!(by_email, Some(a));
}

pub async fn email_is_unique_per_environment(b: &Backend) {
    new_account(b, "bob@example.com").await;
    let again = account("bob@example.com", Environment::Live);
    assert!(matches!(
        b.accounts.create_account(&again).await,
        Err(AccountError::EmailTaken)
    ));
    assert_eq!(
        b.accounts.account(&again.id).await.unwrap(),
        None,
        "{}: refused account stored",
        b.name
    );
    let test_twin = account("bob@example.com", Environment::Test);
    b.accounts.create_account(&test_twin).await.unwrap();
    let found = b
        .accounts
        .account_by_email(Environment::Test, &test_twin.email)
        .await
        .unwrap();
    assert_eq!(found.map(|a| a.id), Some(test_twin.id));
}

pub async fn an_account_and_its_opening_grant_are_one_write(b: &Backend) {
    let a = account("cleo@example.com", Environment::Live);
    let opening = grant(&a.id, 25, Some("free-credits"));
    b.accounts
        .create_account_with_grant(&a, &opening)
        .await
        .unwrap();
    assert_eq!(b.accounts.account(&a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(
        assert_balance_matches_entries(b, &a.id).await,
        25,
        "{}",
        b.name
    );
    let entries = b.ledger.entries(&a.id, 10).await.unwrap();
    assert_eq!(
        entries,
        [opening.entry(25)],
        "{}: the opening entry",
        b.name
    );
    // The opening grant's reference is taken: granting it again changes nothing.
    let again = b
        .ledger
        .grant(&grant(&a.id, 25, Some("free-credits")))
        .await
        .unwrap();
    assert!(
        matches!(again, GrantOutcome::AlreadyApplied(_)),
        "{}",
        b.name
    );
    assert_eq!(b.ledger.balance(&a.id).await.unwrap().spendable, 25);

    // The address is taken: neither the account nor its credits are stored.
    let twin = account("cleo@example.com", Environment::Live);
    let refused = b
        .accounts
        .create_account_with_grant(&twin, &grant(&twin.id, 25, Some("free-credits")))
        .await;
    assert!(
        matches!(refused, Err(AccountError::EmailTaken)),
        "{}",
        b.name
    );
    assert_eq!(b.accounts.account(&twin.id).await.unwrap(), None);
    assert!(b.ledger.entries(&twin.id, 10).await.unwrap().is_empty());

    // An entry that cannot be stored (its id is taken) takes the account with it.
    let other = account("dora@example.com", Environment::Live);
    let mut clash = grant(&other.id, 25, Some("free-credits"));
    clash.id = opening.id.clone();
    let failed = b.accounts.create_account_with_grant(&other, &clash).await;
    assert!(failed.is_err(), "{}: a taken entry id was stored", b.name);
    assert_eq!(
        b.accounts.account(&other.id).await.unwrap(),
        None,
        "{}: the account was stored without its credits",
        b.name
    );
    assert!(matches!(
        b.ledger.balance(&other.id).await,
        Err(LedgerError::UnknownAccount)
    ));
    // Once it can be stored, it is.
    b.accounts
        .create_account_with_grant(&other, &grant(&other.id, 25, Some("free-credits")))
        .await
        .unwrap();
    assert_eq!(assert_balance_matches_entries(b, &other.id).await, 25);
}

pub async fn unknown_accounts_read_as_none(b: &Backend) {
    assert_eq!(
        b.accounts
            .account(&AccountId::from_ulid(Ulid::new()))
            .await
            .unwrap(),
        None
    );
    let nobody = Email::parse("nobody@example.com").unwrap();
    assert_eq!(
        b.accounts
            .account_by_email(Environment::Live, &nobody)
            .await
            .unwrap(),
        None
    );
    let secret = ApiKeySecret::from_random(Environment::Live, &random_body()).unwrap();
    assert!(
        b.accounts
            .key_by_hash(&secret.hash())
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn keys_are_found_by_hash_with_their_account(b: &Backend) {
    let a = new_account(b, "carol@example.com").await;
    let (secret, record) = key_for(&a, t0());
    b.accounts.insert_key(&record).await.unwrap();
    let (found, owner) = b
        .accounts
        .key_by_hash(&secret.hash())
        .await
        .unwrap()
        .expect("key found");
    assert_eq!(found, record);
    assert_eq!(owner, a);
    let other = ApiKeySecret::from_random(Environment::Live, &random_body()).unwrap();
    assert!(
        b.accounts
            .key_by_hash(&other.hash())
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn duplicate_keys_are_refused(b: &Backend) {
    let a = new_account(b, "dan@example.com").await;
    let (_, record) = key_for(&a, t0());
    b.accounts.insert_key(&record).await.unwrap();
    let mut same_hash = key_for(&a, t0()).1;
    same_hash.hash = record.hash;
    assert!(matches!(
        b.accounts.insert_key(&same_hash).await,
        Err(KeyError::Duplicate)
    ));
    let mut same_prefix = key_for(&a, t0()).1;
    same_prefix.prefix = record.prefix.clone();
    assert!(matches!(
        b.accounts.insert_key(&same_prefix).await,
        Err(KeyError::Duplicate)
    ));
    assert_eq!(
        b.accounts.keys(Some(a.id)).await.unwrap().len(),
        1,
        "{}: a refused key was stored",
        b.name
    );
}

pub async fn keys_need_an_existing_account(b: &Backend) {
    let ghost = account("ghost@example.com", Environment::Live);
    let (_, record) = key_for(&ghost, t0());
    assert!(matches!(
        b.accounts.insert_key(&record).await,
        Err(KeyError::UnknownAccount)
    ));
    assert!(b.accounts.keys(None).await.unwrap().is_empty());
}

pub async fn keys_are_listed_oldest_first(b: &Backend) {
    let a = new_account(b, "erin@example.com").await;
    let other = new_account(b, "frank@example.com").await;
    let (_, k2) = key_for(&a, t0() + Duration::seconds(2));
    let (_, k1) = key_for(&a, t0() + Duration::seconds(1));
    let (_, k3) = key_for(&other, t0());
    for k in [&k2, &k1, &k3] {
        b.accounts.insert_key(k).await.unwrap();
    }
    let mine: Vec<_> = b
        .accounts
        .keys(Some(a.id.clone()))
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(mine, vec![k1.id.clone(), k2.id.clone()]);
    let all: Vec<_> = b
        .accounts
        .keys(None)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(all, vec![k3.id, k1.id, k2.id]);
}

pub async fn revocation_happens_once(b: &Backend) {
    let a = new_account(b, "gina@example.com").await;
    let (secret, record) = key_for(&a, t0());
    b.accounts.insert_key(&record).await.unwrap();
    let at = t0() + Duration::minutes(5);
    let revoked = b.accounts.revoke_key(&record.prefix, at).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(at));
    let again = b
        .accounts
        .revoke_key(&record.prefix, at + Duration::minutes(1))
        .await;
    assert!(matches!(again, Err(KeyError::AlreadyRevoked)));
    let (found, _) = b
        .accounts
        .key_by_hash(&secret.hash())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        found.revoked_at,
        Some(at),
        "{}: first revocation time must stay",
        b.name
    );
    let unknown = ApiKeySecret::from_random(Environment::Live, &random_body())
        .unwrap()
        .prefix();
    assert!(matches!(
        b.accounts.revoke_key(&unknown, at).await,
        Err(KeyError::NotFound)
    ));
}

pub async fn balance_starts_at_zero_and_unknown_accounts_have_none(b: &Backend) {
    let a = new_account(b, "hal@example.com").await;
    let balance = b.ledger.balance(&a.id).await.unwrap();
    assert_eq!((balance.spendable, balance.held), (0, 0));
    let ghost = AccountId::from_ulid(Ulid::new());
    assert!(matches!(
        b.ledger.balance(&ghost).await,
        Err(LedgerError::UnknownAccount)
    ));
    assert!(b.ledger.entries(&ghost, 10).await.unwrap().is_empty());
}

pub async fn grants_add_credits_and_record_entries(b: &Backend) {
    let a = new_account(b, "ivy@example.com").await;
    let first = b.ledger.grant(&grant(&a.id, 100, None)).await.unwrap();
    let GrantOutcome::Applied(e1) = first else {
        panic!("{}: first grant not applied", b.name)
    };
    assert_eq!(
        (e1.kind, e1.delta, e1.balance_after),
        (EntryKind::Grant, 100, 100)
    );
    let GrantOutcome::Applied(e2) = b.ledger.grant(&grant(&a.id, 25, None)).await.unwrap() else {
        panic!("second grant not applied")
    };
    assert_eq!(e2.balance_after, 125);
    assert_eq!(assert_balance_matches_entries(b, &a.id).await, 125);
}

pub async fn grant_references_apply_once(b: &Backend) {
    let a = new_account(b, "jay@example.com").await;
    let GrantOutcome::Applied(original) = b
        .ledger
        .grant(&grant(&a.id, 50, Some("evt_1")))
        .await
        .unwrap()
    else {
        panic!("{}: first grant not applied", b.name)
    };
    let replay = b
        .ledger
        .grant(&grant(&a.id, 999, Some("evt_1")))
        .await
        .unwrap();
    assert_eq!(replay, GrantOutcome::AlreadyApplied(original.clone()));
    // The same reference on another account is another grant.
    let other = new_account(b, "kim@example.com").await;
    assert!(matches!(
        b.ledger
            .grant(&grant(&other.id, 5, Some("evt_1")))
            .await
            .unwrap(),
        GrantOutcome::Applied(_)
    ));
    assert_eq!(assert_balance_matches_entries(b, &a.id).await, 50);
    assert_eq!(b.ledger.entries(&a.id, 10).await.unwrap(), vec![original]);
}

pub async fn grants_to_unknown_accounts_change_nothing(b: &Backend) {
    let ghost = AccountId::from_ulid(Ulid::new());
    assert!(matches!(
        b.ledger.grant(&grant(&ghost, 10, Some("r"))).await,
        Err(LedgerError::UnknownAccount)
    ));
    assert!(b.ledger.entries(&ghost, 10).await.unwrap().is_empty());
}

pub async fn entries_are_newest_first_and_limited(b: &Backend) {
    let a = new_account(b, "lee@example.com").await;
    for n in 1..=5 {
        b.ledger.grant(&grant(&a.id, n, None)).await.unwrap();
    }
    let newest_three: Vec<i64> = b
        .ledger
        .entries(&a.id, 3)
        .await
        .unwrap()
        .iter()
        .map(|e| e.delta)
        .collect();
    assert_eq!(newest_three, vec![5, 4, 3]);
    assert_eq!(b.ledger.entries(&a.id, 0).await.unwrap().len(), 0);
}

pub async fn concurrent_grants_with_one_reference_apply_once(b: &Backend) {
    let a = new_account(b, "max@example.com").await;
    let ledger = b.ledger.clone();
    let attempts = (0..20).map(|_| {
        let ledger = Arc::clone(&ledger);
        let g = grant(&a.id, 7, Some("evt_race"));
        tokio::spawn(async move { ledger.grant(&g).await })
    });
    let outcomes: Vec<_> = join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.unwrap().unwrap())
        .collect();
    let applied = outcomes
        .iter()
        .filter(|o| matches!(o, GrantOutcome::Applied(_)))
        .count();
    assert_eq!(
        applied, 1,
        "{}: a referenced grant applied {applied} times",
        b.name
    );
    let ids: std::collections::HashSet<_> = outcomes.iter().map(|o| o.entry().id.clone()).collect();
    assert_eq!(
        ids.len(),
        1,
        "{}: replays must return the original entry",
        b.name
    );
    assert_eq!(assert_balance_matches_entries(b, &a.id).await, 7);
}

pub async fn concurrent_distinct_grants_all_apply(b: &Backend) {
    let a = new_account(b, "ned@example.com").await;
    let ledger = b.ledger.clone();
    let attempts = (1..=40).map(|n| {
        let ledger = Arc::clone(&ledger);
        let g = grant(&a.id, n, None);
        tokio::spawn(async move { ledger.grant(&g).await })
    });
    for r in join_all(attempts).await {
        assert!(matches!(r.unwrap().unwrap(), GrantOutcome::Applied(_)));
    }
    assert_eq!(
        assert_balance_matches_entries(b, &a.id).await,
        (1..=40).sum::<i64>()
    );
    // Each entry's balance_after is a distinct step of the running total.
    let mut afters: Vec<i64> = b
        .ledger
        .entries(&a.id, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.balance_after)
        .collect();
    afters.sort();
    afters.dedup();
    assert_eq!(
        afters.len(),
        40,
        "{}: two grants saw the same balance",
        b.name
    );
}

pub async fn timestamps_keep_millisecond_precision(b: &Backend) {
    let mut a = account("ola@example.com", Environment::Live);
    a.created_at = Utc.timestamp_millis_opt(1_234_567_890_987).unwrap();
    b.accounts.create_account(&a).await.unwrap();
    assert_eq!(
        b.accounts.account(&a.id).await.unwrap().unwrap().created_at,
        a.created_at
    );
}

fn page(url: &str, body: &str, fetched_at: DateTime<Utc>) -> FetchedPage {
    FetchedPage {
        requested_url: url.to_owned(),
        final_url: format!("{url}final"),
        status: 200,
        content_type: Some("text/html; charset=utf-8".into()),
        headers: Vec::new(),
        charset: "utf-8".into(),
        body: body.to_owned(),
        raw: None,
        truncated: false,
        redirects: vec![url.to_owned()],
        robots: RobotsDecision {
            checked: true,
            allowed: true,
            robots_url: "https://example.com/robots.txt".into(),
            basis: "rules".into(),
        },
        fetched_at,
    }
}

pub async fn cached_pages_round_trip_whole(b: &Backend) {
    // A NUL in a page is kept (Postgres TEXT refused it, and the read failed: issue 15).
    let mut p = page(
        "https://example.com/a",
        "<p>héllo ✓ 你好 \u{0} end</p>",
        t0(),
    );
    p.truncated = true;
    p.content_type = None;
    p.status = 404;
    b.pages.put_page("k1", &p).await.unwrap();
    assert_eq!(
        b.pages.fresh_page("k1", t0()).await.unwrap(),
        Some(p),
        "{}: page changed in the store",
        b.name
    );
    assert_eq!(b.pages.fresh_page("missing", t0()).await.unwrap(), None);

    // A PDF is kept as its bytes, which are not UTF-8.
    let mut pdf = page("https://example.com/a.pdf", "", t0());
    pdf.content_type = Some("application/pdf".into());
    pdf.charset = "binary".into();
    pdf.raw = Some(b"%PDF-1.7\n\x00\xff\xfe\x80 binary".to_vec());
    b.pages.put_page("k2", &pdf).await.unwrap();
    assert_eq!(
        b.pages.fresh_page("k2", t0()).await.unwrap(),
        Some(pdf),
        "{}: a PDF's bytes changed in the store",
        b.name
    );
}

pub async fn cached_pages_honour_age_and_replacement(b: &Backend) {
    b.pages
        .put_page("k", &page("https://example.com/", "old", t0()))
        .await
        .unwrap();
    let later = t0() + Duration::seconds(60);
    assert_eq!(
        b.pages.fresh_page("k", later).await.unwrap(),
        None,
        "{}: a stale page was served",
        b.name
    );
    b.pages
        .put_page("k", &page("https://example.com/", "new", later))
        .await
        .unwrap();
    let fresh = b.pages.fresh_page("k", later).await.unwrap().unwrap();
    assert_eq!(fresh.body, "new");
    assert_eq!(fresh.fetched_at, later);
}

pub async fn purging_removes_only_older_pages(b: &Backend) {
    for (i, age) in [0i64, 10, 20, 30].iter().enumerate() {
        let at = t0() + Duration::seconds(*age);
        b.pages
            .put_page(&format!("p{i}"), &page("https://example.com/", "x", at))
            .await
            .unwrap();
    }
    let purged = b
        .pages
        .purge_pages(t0() + Duration::seconds(20))
        .await
        .unwrap();
    assert_eq!(purged, 2, "{}: purge count", b.name);
    assert!(b.pages.fresh_page("p1", t0()).await.unwrap().is_none());
    assert!(b.pages.fresh_page("p2", t0()).await.unwrap().is_some());
    assert!(b.pages.fresh_page("p3", t0()).await.unwrap().is_some());
}

pub type BackendFuture = Pin<Box<dyn Future<Output = Backend> + Send>>;

#[derive(Debug, Clone)]
enum LedgerOp {
    Grant {
        account: usize,
        amount: i64,
    },
    GrantRef {
        account: usize,
        amount: i64,
        reference: u8,
    },
}

fn ledger_op() -> impl Strategy<Value = LedgerOp> {
    prop_oneof![
        (0..3usize, 1..1_000i64).prop_map(|(account, amount)| LedgerOp::Grant { account, amount }),
        (0..3usize, 1..1_000i64, 0..4u8).prop_map(|(account, amount, reference)| {
            LedgerOp::GrantRef {
                account,
                amount,
                reference,
            }
        }),
    ]
}

/// Random sequences of grants (some repeating a reference) on three accounts: each balance
/// equals the sum of its entries and of the grants that were applied, and no reference applies
/// twice.
pub fn ledger_property(make: impl Fn() -> BackendFuture) {
    let (runtime, mut runner) = crate::property::runner(crate::property::config(12));
    runner
        .run(&proptest::collection::vec(ledger_op(), 1..40), |ops| {
            runtime.block_on(async {
                let b = make().await;
                let mut accounts = Vec::new();
                for i in 0..3 {
                    accounts.push(new_account(&b, &format!("p{i}@example.com")).await);
                }
                let mut expected = [0i64; 3];
                let mut seen = std::collections::HashSet::new();
                for op in &ops {
                    let (i, amount, reference) = match op {
                        LedgerOp::Grant { account, amount } => (*account, *amount, None),
                        LedgerOp::GrantRef {
                            account,
                            amount,
                            reference,
                        } => (*account, *amount, Some(format!("ref_{reference}"))),
                    };
                    let outcome = b
                        .ledger
                        .grant(&grant(&accounts[i].id, amount, reference.as_deref()))
                        .await
                        .unwrap();
                    let fresh = reference
                        .as_ref()
                        .is_none_or(|r| seen.insert((i, r.clone())));
                    prop_assert_eq!(matches!(outcome, GrantOutcome::Applied(_)), fresh);
                    if fresh {
                        expected[i] += amount;
                    }
                }
                for (i, a) in accounts.iter().enumerate() {
                    prop_assert_eq!(assert_balance_matches_entries(&b, &a.id).await, expected[i]);
                }
                Ok(())
            })
        })
        .unwrap();
}
