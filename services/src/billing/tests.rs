//! The billing service over mocked ports.
use std::sync::Mutex;

use svc_ports::{
    BillingError, Email, Environment, HostedCheckout, Plan, StoreError,
    payments::MockPaymentProvider,
    store::{MockAccountStore, MockBillingStore, MockLedgerStore},
    system::{MockClock, MockEntropy},
};
use ulid::Ulid;

use super::*;

fn account() -> Account {
    Account {
        id: AccountId::from_ulid(Ulid::from_parts(1, 7)),
        email: Email::parse("a@example.com").unwrap(),
        plan: Plan::Free,
        environment: Environment::Test,
        created_at: Utc::now(),
    }
}

/// A retry with the same key after the provider opened a session (the answer was lost, or the
/// insert failed) is answered by the provider with that first session, which names the first
/// attempt's checkout: the retry must store the checkout under that id, or the payment names
/// a checkout the service never kept and is refused.
#[tokio::test]
async fn every_attempt_with_one_key_opens_the_same_checkout() {
    let asked: Arc<Mutex<Vec<CheckoutRequest>>> = Arc::default();
    let mut provider = MockPaymentProvider::new();
    let seen = asked.clone();
    provider.expect_create_checkout().returning(move |request| {
        seen.lock().unwrap().push(request.clone());
        Ok(HostedCheckout {
            session_id: "cs_1".into(),
            url: "https://pay.example/cs_1".into(),
            expires_at: Utc::now(),
        })
    });
    let stored: Arc<Mutex<Vec<CheckoutRecord>>> = Arc::default();
    let mut store = MockBillingStore::new();
    store.expect_checkout_by_key().returning(|_, _| Ok(None));
    let kept = stored.clone();
    let mut attempt = 0;
    store.expect_insert_checkout().returning(move |record| {
        attempt += 1;
        if attempt == 1 {
            return Err(BillingError::from(StoreError::from(anyhow::anyhow!(
                "gone"
            ))));
        }
        kept.lock().unwrap().push(record.clone());
        Ok(CheckoutOutcome::Created(record.clone()))
    });
    let mut clock = MockClock::new();
    clock.expect_now().returning(Utc::now);
    let mut entropy = MockEntropy::new();
    entropy.expect_ulid().returning(Ulid::new);
    let billing = BillingService::new(
        Arc::new(store),
        Arc::new(MockAccountStore::new()),
        Arc::new(MockLedgerStore::new()),
        Some(Arc::new(provider)),
        Arc::new(clock),
        Arc::new(entropy),
        BillingSettings {
            catalog: Catalog::new(900, "usd", 100, "https://example.com/contact").unwrap(),
            webhook_secrets: Vec::new(),
            internal_token: None,
            site_url: "https://svc.example".into(),
        },
    );
    let account = account();
    assert!(
        billing
            .create_checkout(&account, "starter", Some("buy-1"), "test")
            .await
            .is_err()
    );
    let started = billing
        .create_checkout(&account, "starter", Some("buy-1"), "test")
        .await
        .unwrap();
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].checkout_id, asked[1].checkout_id);
    assert_eq!(asked[0].success_url, asked[1].success_url);
    assert_eq!(started.checkout.id, asked[0].checkout_id);
    assert_eq!(stored.lock().unwrap()[0].id, asked[0].checkout_id);
    // Another key, or another account's same key, is another checkout.
    let other = billing
        .create_checkout(&account, "starter", Some("buy-2"), "test")
        .await
        .unwrap();
    assert_ne!(other.checkout.id, started.checkout.id);
    assert_ne!(
        checkout_id_for(&AccountId::from_ulid(Ulid::from_parts(2, 7)), "buy-1"),
        started.checkout.id
    );
}
