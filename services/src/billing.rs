//! Billing: the catalog, hosted checkout for a signed-in customer (or through a one-time
//! handoff link an agent asks for), payment-provider webhooks verified before anything is
//! applied, the billing account, and internal meter events.
//!
//! Nothing a browser or an agent says grants credits: only a provider event whose Standard
//! Webhooks signature verifies over the raw body, naming a checkout this service created, for
//! exactly its price.

use crate::telemetry::{Face, FunnelStep};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use subtle::ConstantTimeEq;
use svc_ports::{
    Account, AccountId, AccountStore, Balance, BillingStore, CheckoutHandoff, CheckoutId,
    CheckoutOutcome, CheckoutRecord, CheckoutRequest, Clock, Currency, Entropy, EventOutcome,
    KeyHash, LedgerStore, MeterEvent, MeterEventId, MeterOutcome, PaymentEvent, PaymentFact,
    PaymentProvider, Plan, ProviderError, Receipt,
    webhooks::{self, WebhookHeaders, WebhookRejection, WebhookSecret},
};

/// How long a checkout handoff link works.
pub const HANDOFF_TTL_MINUTES: i64 = 10;
const HANDOFF_TOKEN_LEN: usize = 32;
/// Longest accepted `Idempotency-Key`.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// What a SKU offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// Sold by hosted checkout.
    Checkout {
        amount: i64,
        currency: Currency,
        credits: i64,
    },
    /// Sales-led: a link to talk to sales.
    Contact { url: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sku {
    pub id: String,
    pub name: String,
    pub plan: Plan,
    pub description: String,
    pub offer: Offer,
}

/// The server-side catalog: prices and credits never come from a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    pub skus: Vec<Sku>,
}

impl Catalog {
    /// Starter by checkout at `amount` minor units of `currency` for `credits`; Enterprise by
    /// `contact_url`.
    pub fn new(
        amount: i64,
        currency: &str,
        credits: i64,
        contact_url: &str,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(amount > 0, "the Starter price must be positive");
        anyhow::ensure!(
            (1..=svc_ports::ledger::MAX_GRANT).contains(&credits),
            "Starter credits must be between 1 and {}",
            svc_ports::ledger::MAX_GRANT
        );
        Ok(Self {
            skus: vec![
                Sku {
                    id: "starter".into(),
                    name: "Starter".into(),
                    plan: Plan::Starter,
                    description: format!("{credits} action credits"),
                    offer: Offer::Checkout {
                        amount,
                        currency: Currency::parse_iso4217(currency)?,
                        credits,
                    },
                },
                Sku {
                    id: "enterprise".into(),
                    name: "Enterprise".into(),
                    plan: Plan::Enterprise,
                    description: "Volume pricing, custom maps and support, by agreement".into(),
                    offer: Offer::Contact {
                        url: contact_url.to_owned(),
                    },
                },
            ],
        })
    }

    pub fn sku(&self, id: &str) -> Option<&Sku> {
        self.skus.iter().find(|s| s.id == id)
    }
}

#[derive(Clone)]
pub struct BillingSettings {
    pub catalog: Catalog,
    /// Active webhook secrets (two while rotating).
    pub webhook_secrets: Vec<WebhookSecret>,
    /// Token of `/api/billing/report-meter-event`; without one the endpoint is closed.
    pub internal_token: Option<String>,
    pub site_url: String,
}

/// A checkout handoff link as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffOffer {
    /// The account it signs in, as `j***@example.com`.
    pub masked_email: String,
    /// That account: a page compares it with the visitor's own.
    pub account_id: svc_ports::AccountId,
    pub sku: String,
    pub state: HandoffState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandoffState {
    Usable,
    /// Already opened a checkout: the link signs nobody in again.
    Used,
    Expired,
}

#[derive(Debug, thiserror::Error)]
pub enum BillingFailure {
    #[error("billing is not configured on this service (no payment provider)")]
    NotConfigured,
    #[error("unknown SKU `{0}`; see /.well-known/agent-commerce.json")]
    UnknownSku(String),
    #[error("{name} is sales-led and not sold by checkout; contact sales at {url}")]
    ContactSales { name: String, url: String },
    #[error("an Idempotency-Key header is required")]
    IdempotencyKeyRequired,
    #[error("this Idempotency-Key was used for a checkout of another SKU")]
    IdempotencyConflict,
    #[error("{0}")]
    InvalidRequest(String),
    #[error("this handoff link is unknown, used or expired; ask the agent for a new one")]
    HandoffUnusable,
    #[error("the internal token is missing or wrong")]
    InternalOnly,
    #[error("{0}")]
    Provider(ProviderError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<svc_ports::StoreError> for BillingFailure {
    fn from(e: svc_ports::StoreError) -> Self {
        BillingFailure::Internal(anyhow::Error::new(e))
    }
}

impl From<svc_ports::BillingError> for BillingFailure {
    fn from(e: svc_ports::BillingError) -> Self {
        match e {
            svc_ports::BillingError::UnknownAccount => {
                BillingFailure::InvalidRequest("the account does not exist".into())
            }
            svc_ports::BillingError::Store(e) => e.into(),
        }
    }
}

/// A checkout for the caller, and whether it was made by an earlier request with the same key.
#[derive(Debug, Clone)]
pub struct CheckoutStarted {
    pub checkout: CheckoutRecord,
    pub replayed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// A check failed (logged with which); nothing was stored.
    #[error("webhook not verified: {0}")]
    Rejected(WebhookRejection),
    /// Verified, but the store failed: the provider should deliver it again.
    #[error("the webhook could not be stored now")]
    Unavailable,
}

/// What became of one webhook delivery.
#[derive(Debug, Clone)]
pub struct WebhookReceived {
    pub webhook_id: String,
    pub event_type: String,
    pub outcome: EventOutcome,
}

#[derive(Debug, Clone)]
pub struct BillingAccount {
    pub account: Account,
    pub balance: Balance,
    pub receipts: Vec<Receipt>,
}

/// A meter event as recorded, and whether the provider has it.
#[derive(Debug, Clone)]
pub struct MeterRecorded {
    pub event: MeterEvent,
    pub replayed: bool,
}

/// `credits.added` for a receipt that added spendable credits, from the receipt alone (so the
/// sweep writes the same as the webhook that credited it).
async fn credits_added(hooks: &crate::hooks::HookService, r: &svc_ports::Receipt) {
    hooks
        .emit(
            &r.account_id,
            svc_ports::HookEventType::CreditsAdded,
            r.reference.clone(),
            serde_json::json!({
                "credits": r.spendable_delta,
                "kind": r.kind.as_str(),
                "receipt_id": r.id.as_str(),
                "payment_id": r.payment_id,
                "checkout_id": r.checkout_id.as_ref().map(|c| c.as_str()),
                "amount": r.amount,
                "currency": r.currency.as_ref().map(|c| c.to_string()),
            }),
        )
        .await;
}

pub struct BillingService {
    store: Arc<dyn BillingStore>,
    accounts: Arc<dyn AccountStore>,
    ledger: Arc<dyn LedgerStore>,
    provider: Option<Arc<dyn PaymentProvider>>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    settings: BillingSettings,
    funnel: crate::telemetry::Funnel,
    /// Where `credits.added` is recorded for the account's webhooks.
    hooks: Option<Arc<crate::hooks::HookService>>,
}

/// The id of the account's checkout under `key`, the same for every attempt: the provider
/// answers a retry (or a racing double-click) with the session of the first attempt, and that
/// session names the first attempt's id as its reference and in its return address. An id
/// drawn afresh for each attempt named no stored checkout, and that payment was refused.
fn checkout_id_for(account: &AccountId, key: &str) -> CheckoutId {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("checkout\n{account}\n{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    CheckoutId::from_ulid(ulid::Ulid::from_bytes(bytes))
}

fn valid_idempotency_key(key: Option<&str>) -> Result<&str, BillingFailure> {
    let key = key.map(str::trim).filter(|k| !k.is_empty());
    match key {
        None => Err(BillingFailure::IdempotencyKeyRequired),
        Some(k)
            if k.len() > MAX_IDEMPOTENCY_KEY_LEN || !k.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Err(BillingFailure::InvalidRequest(format!(
                "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} printable ASCII characters"
            )))
        }
        Some(k) => Ok(k),
    }
}

impl BillingService {
    pub fn new(
        store: Arc<dyn BillingStore>,
        accounts: Arc<dyn AccountStore>,
        ledger: Arc<dyn LedgerStore>,
        provider: Option<Arc<dyn PaymentProvider>>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        settings: BillingSettings,
    ) -> Self {
        Self {
            store,
            accounts,
            ledger,
            provider,
            clock,
            entropy,
            settings,
            funnel: Default::default(),
            hooks: None,
        }
    }

    /// Records the funnel's payment steps.
    pub fn with_telemetry(mut self, telemetry: Arc<crate::telemetry::TelemetryService>) -> Self {
        self.funnel = crate::telemetry::Funnel::new(telemetry);
        self
    }

    /// Records `credits.added` for the account's webhooks when a payment credits it.
    pub fn with_hooks(mut self, hooks: Arc<crate::hooks::HookService>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    fn payment_started(&self, account: &AccountId, face: Face, via: &str) {
        self.funnel.record(
            FunnelStep::of_account(face, "payment_started", "checkout", account).capability(via),
        );
    }

    pub fn catalog(&self) -> &Catalog {
        &self.settings.catalog
    }

    pub fn is_configured(&self) -> bool {
        self.provider.is_some() && !self.settings.webhook_secrets.is_empty()
    }

    /// The SKU, if checkout sells it.
    pub fn checkout_sku(&self, sku: &str) -> Result<(&Sku, i64, &Currency, i64), BillingFailure> {
        let found = self
            .settings
            .catalog
            .sku(sku)
            .ok_or_else(|| BillingFailure::UnknownSku(sku.chars().take(64).collect()))?;
        match &found.offer {
            Offer::Checkout {
                amount,
                currency,
                credits,
            } => Ok((found, *amount, currency, *credits)),
            Offer::Contact { url } => Err(BillingFailure::ContactSales {
                name: found.name.clone(),
                url: url.clone(),
            }),
        }
    }

    /// Opens (or, for a key used before, returns) a hosted checkout for a signed-in customer.
    /// Opens hosted checkout from the human's signed-in web session (`via` names the page or
    /// link it came from, for the funnel).
    pub async fn create_checkout(
        &self,
        account: &Account,
        sku: &str,
        idempotency_key: Option<&str>,
        via: &str,
    ) -> Result<CheckoutStarted, BillingFailure> {
        let key = valid_idempotency_key(idempotency_key)?;
        let (found, amount, currency, credits) = self.checkout_sku(sku)?;
        let provider = self
            .provider
            .as_ref()
            .ok_or(BillingFailure::NotConfigured)?;
        if let Some(existing) = self.store.checkout_by_key(&account.id, key).await? {
            return if existing.sku == found.id {
                Ok(CheckoutStarted {
                    checkout: existing,
                    replayed: true,
                })
            } else {
                Err(BillingFailure::IdempotencyConflict)
            };
        }
        let now = self.clock.now();
        let checkout_id = checkout_id_for(&account.id, key);
        let site = &self.settings.site_url;
        let request = CheckoutRequest {
            checkout_id: checkout_id.clone(),
            sku: found.id.clone(),
            description: format!("{}: {}", found.name, found.description),
            amount,
            currency: currency.clone(),
            customer_email: account.email.clone(),
            success_url: format!("{site}/billing/return?checkout={checkout_id}"),
            cancel_url: format!("{site}/account?notice=checkout-cancelled"),
            // Scoped to the account, so two customers' keys never meet at the provider.
            idempotency_key: format!("{}:{key}", account.id),
        };
        let hosted = provider.create_checkout(&request).await.map_err(|e| {
            // What the provider said is for the operators (a refused request is a key or a
            // setting of ours); the customer is told only that it failed.
            tracing::warn!(account_id = %account.id, error = %e, "the payment provider did not open a checkout");
            BillingFailure::Provider(e)
        })?;
        let record = CheckoutRecord {
            id: checkout_id,
            account_id: account.id.clone(),
            sku: found.id.clone(),
            plan: found.plan,
            credits,
            amount,
            currency: currency.clone(),
            provider_session_id: hosted.session_id,
            checkout_url: hosted.url,
            idempotency_key: Some(key.to_owned()),
            created_at: now,
            expires_at: hosted.expires_at,
        };
        let outcome = self.store.insert_checkout(&record).await?;
        tracing::info!(account_id = %account.id, checkout_id = %record.id, sku = %record.sku, "checkout opened");
        if matches!(outcome, CheckoutOutcome::Created(_)) {
            self.payment_started(&account.id, Face::Web, via);
        }
        Ok(match outcome {
            CheckoutOutcome::Created(checkout) => CheckoutStarted {
                checkout,
                replayed: false,
            },
            // Lost a race with the same key: the first one stands.
            CheckoutOutcome::Existing(checkout) => CheckoutStarted {
                checkout,
                replayed: true,
            },
        })
    }

    pub async fn checkout(&self, id: &str) -> Result<Option<CheckoutRecord>, BillingFailure> {
        let Ok(id) = CheckoutId::parse(id) else {
            return Ok(None);
        };
        Ok(self.store.checkout(&id).await?)
    }

    /// A one-time link (10 minutes) that signs the account's human in and starts checkout for
    /// `sku`. Returns the URL and when it stops working.
    pub async fn create_handoff(
        &self,
        account: &AccountId,
        sku: &str,
        face: Face,
    ) -> Result<(String, DateTime<Utc>), BillingFailure> {
        let (found, ..) = self.checkout_sku(sku)?;
        if self.provider.is_none() {
            return Err(BillingFailure::NotConfigured);
        }
        let token = self.entropy.base62(HANDOFF_TOKEN_LEN);
        let now = self.clock.now();
        let handoff = CheckoutHandoff {
            token_hash: KeyHash::of(&token),
            account_id: account.clone(),
            sku: found.id.clone(),
            created_at: now,
            expires_at: now + Duration::minutes(HANDOFF_TTL_MINUTES),
        };
        self.store.insert_handoff(&handoff).await?;
        self.payment_started(account, face, "svc_create_checkout_session");
        Ok((
            format!("{}/billing/handoff?token={token}", self.settings.site_url),
            handoff.expires_at,
        ))
    }

    /// Takes a handoff token (once): its account and SKU.
    /// What a handoff link stands for, without taking it: the account it would sign in and
    /// whether it can still be used. An unknown or malformed token is `HandoffUnusable`.
    pub async fn handoff_offer(&self, token: &str) -> Result<HandoffOffer, BillingFailure> {
        if token.is_empty() || token.len() > 128 {
            return Err(BillingFailure::HandoffUnusable);
        }
        let (handoff, taken) = self
            .store
            .handoff(&KeyHash::of(token))
            .await?
            .ok_or(BillingFailure::HandoffUnusable)?;
        let account = self
            .accounts
            .account(&handoff.account_id)
            .await?
            .ok_or(BillingFailure::HandoffUnusable)?;
        let state = if taken {
            HandoffState::Used
        } else if handoff.expires_at <= self.clock.now() {
            HandoffState::Expired
        } else {
            HandoffState::Usable
        };
        Ok(HandoffOffer {
            masked_email: account.email.masked(),
            account_id: account.id.clone(),
            sku: handoff.sku,
            state,
        })
    }

    pub async fn take_handoff(&self, token: &str) -> Result<(Account, String), BillingFailure> {
        if token.is_empty() || token.len() > 128 {
            return Err(BillingFailure::HandoffUnusable);
        }
        let handoff = self
            .store
            .take_handoff(&KeyHash::of(token), self.clock.now())
            .await?
            .ok_or(BillingFailure::HandoffUnusable)?;
        let account = self
            .accounts
            .account(&handoff.account_id)
            .await?
            .ok_or(BillingFailure::HandoffUnusable)?;
        Ok((account, handoff.sku))
    }

    /// Verifies a delivery against the raw body and applies it. A rejection is logged with the
    /// check that failed and changes nothing.
    pub async fn receive_webhook(
        &self,
        headers: &WebhookHeaders<'_>,
        body: &[u8],
    ) -> Result<WebhookReceived, WebhookError> {
        let Some(provider) = &self.provider else {
            tracing::warn!(
                check = "configuration",
                "webhook rejected: billing is not configured"
            );
            metrics::counter!(crate::metrics::WEBHOOKS, "result" => "not_configured").increment(1);
            return Err(WebhookError::Rejected(WebhookRejection::NoSecret));
        };
        let now = self.clock.now();
        let webhook_id = match webhooks::verify(
            &self.settings.webhook_secrets,
            headers,
            body,
            now.timestamp(),
        ) {
            Ok(id) => {
                metrics::counter!(crate::metrics::WEBHOOKS, "result" => "verified").increment(1);
                id.to_owned()
            }
            Err(rejection) => {
                let (check, result) = match &rejection {
                    WebhookRejection::MissingHeader(_) => ("missing header", "missing_header"),
                    WebhookRejection::MalformedHeader(_) => ("header format", "malformed_header"),
                    WebhookRejection::OutsideWindow { .. } => {
                        ("timestamp window", "outside_window")
                    }
                    WebhookRejection::BadSignature => ("signature", "bad_signature"),
                    WebhookRejection::NoSecret => ("secret configuration", "not_configured"),
                };
                metrics::counter!(crate::metrics::WEBHOOKS, "result" => result).increment(1);
                tracing::warn!(check, reason = %rejection, "webhook rejected");
                return Err(WebhookError::Rejected(rejection));
            }
        };
        let (event_type, fact) = PaymentFact::from_payload(body);
        let event = PaymentEvent {
            provider: provider.name().to_owned(),
            webhook_id: webhook_id.clone(),
            event_type: event_type.clone(),
            fact,
            body: body.to_vec(),
            received_at: now,
        };
        let outcome = match self.store.apply_payment_event(&event).await {
            Ok(o) => o,
            Err(e) => {
                // Not the sender's fault: answered 5xx, so the provider delivers it again.
                tracing::error!(error = %e, webhook_id, "webhook could not be stored");
                return Err(WebhookError::Unavailable);
            }
        };
        if let EventOutcome::Applied(receipts) = &outcome
            && let Some(purchase) = receipts
                .iter()
                .find(|r| r.kind == svc_ports::ReceiptKind::Purchase)
        {
            self.funnel.record(
                FunnelStep::of_account(
                    Face::Provider,
                    "payment_completed",
                    "checkout",
                    &purchase.account_id,
                )
                .capability("payment_webhook"),
            );
        }
        if let (EventOutcome::Applied(receipts), Some(hooks)) = (&outcome, &self.hooks) {
            for r in receipts.iter().filter(|r| r.spendable_delta > 0) {
                credits_added(hooks, r).await;
            }
        }
        match &outcome {
            EventOutcome::Rejected(reason) => {
                tracing::warn!(webhook_id, event_type, reason, "verified webhook refused")
            }
            o => tracing::info!(
                webhook_id,
                event_type,
                outcome = o.status(),
                "webhook received"
            ),
        }
        Ok(WebhookReceived {
            webhook_id,
            event_type,
            outcome,
        })
    }

    /// Records the `credits.added` of payments whose process died between crediting the account
    /// and recording the event (once per receipt, so a live process recording it too adds
    /// nothing). Answers how many.
    pub async fn recover_credit_events(&self) -> Result<usize, svc_ports::StoreError> {
        let Some(hooks) = &self.hooks else {
            return Ok(0);
        };
        let run = hooks.sweep("credit_events").await?;
        let missing = hooks
            .credits_missing_events(run.since, crate::hooks::SWEEP_LIMIT)
            .await?;
        for r in &missing {
            credits_added(hooks, r).await;
        }
        hooks.end_sweep(run, &[missing.len()]).await?;
        Ok(missing.len())
    }

    pub async fn billing_account(
        &self,
        account: &Account,
        limit: u32,
    ) -> Result<BillingAccount, BillingFailure> {
        let balance = self
            .ledger
            .balance(&account.id)
            .await
            .map_err(|e| BillingFailure::Internal(anyhow::Error::new(e)))?;
        let receipts = self.store.receipts(&account.id, limit).await?;
        // The plan may have changed with a purchase since the session was read.
        let account = self
            .accounts
            .account(&account.id)
            .await?
            .unwrap_or_else(|| account.clone());
        Ok(BillingAccount {
            account,
            balance,
            receipts,
        })
    }

    /// Checks the internal token (constant time).
    pub fn check_internal_token(&self, presented: Option<&str>) -> Result<(), BillingFailure> {
        match (&self.settings.internal_token, presented) {
            (Some(expected), Some(given))
                if bool::from(expected.as_bytes().ct_eq(given.as_bytes())) =>
            {
                Ok(())
            }
            _ => Err(BillingFailure::InternalOnly),
        }
    }

    /// Records a meter event once per identifier and forwards it to the provider (again, when
    /// an earlier forward failed).
    pub async fn report_meter_event(
        &self,
        identifier: &str,
        event_name: &str,
        account: Option<&str>,
        value: i64,
        occurred_at: Option<DateTime<Utc>>,
    ) -> Result<MeterRecorded, BillingFailure> {
        let provider = self
            .provider
            .as_ref()
            .ok_or(BillingFailure::NotConfigured)?;
        let printable = |s: &str, max: usize| {
            !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_graphic())
        };
        if !printable(identifier, 255) {
            return Err(BillingFailure::InvalidRequest(
                "`identifier` must be 1 to 255 printable ASCII characters".into(),
            ));
        }
        if !printable(event_name, 100) {
            return Err(BillingFailure::InvalidRequest(
                "`event_name` must be 1 to 100 printable ASCII characters".into(),
            ));
        }
        if !(0..=1_000_000_000).contains(&value) {
            return Err(BillingFailure::InvalidRequest(
                "`value` must be between 0 and 1000000000".into(),
            ));
        }
        let account_id = account
            .map(AccountId::parse)
            .transpose()
            .map_err(|e| BillingFailure::InvalidRequest(format!("`account_id`: {e}")))?;
        let now = self.clock.now();
        let event = MeterEvent {
            id: MeterEventId::from_ulid(self.entropy.ulid()),
            identifier: identifier.to_owned(),
            event_name: event_name.to_owned(),
            account_id,
            value,
            occurred_at: occurred_at.unwrap_or(now),
            recorded_at: now,
            forwarded_at: None,
        };
        let (mut event, replayed) = match self.store.record_meter_event(&event).await? {
            MeterOutcome::Recorded(e) => (e, false),
            MeterOutcome::Existing(e) => (e, true),
        };
        if event.forwarded_at.is_none() {
            match provider.report_meter_event(&event).await {
                Ok(()) => {
                    let at = self.clock.now();
                    self.store.mark_meter_forwarded(&event.id, at).await?;
                    event.forwarded_at = Some(at);
                }
                Err(e) => {
                    tracing::warn!(error = %e, meter_event = %event.id, "meter event not forwarded yet")
                }
            }
        }
        Ok(MeterRecorded { event, replayed })
    }
}

#[cfg(test)]
mod tests;
