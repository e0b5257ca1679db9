//! The payment provider: hosted checkout and usage meters. Its webhooks come back signed with
//! Standard Webhooks (see [`crate::webhooks`]); nothing it answers here grants credits.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{
    account::Email,
    billing::{Currency, MeterEvent},
    ids::CheckoutId,
};

/// What to sell, for how much, and where the customer's browser goes afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutRequest {
    /// Our checkout id, sent as the provider's `client_reference_id` and echoed in its events.
    pub checkout_id: CheckoutId,
    pub sku: String,
    pub description: String,
    /// Minor units.
    pub amount: i64,
    pub currency: Currency,
    pub customer_email: Email,
    /// Where the browser lands after paying: a page that grants nothing.
    pub success_url: String,
    pub cancel_url: String,
    /// Passed on, so a retried request does not open a second hosted checkout.
    pub idempotency_key: String,
}

/// A hosted checkout page the provider opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedCheckout {
    pub session_id: String,
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider refused the request (bad key, bad request): retrying will not help.
    #[error("the payment provider refused the request: {0}")]
    Rejected(String),
    /// It could not be reached, timed out or failed on its side.
    #[error("the payment provider is unavailable: {0}")]
    Unavailable(String),
}

/// A hosted-checkout payment provider. Implementations MUST NOT log API keys or card data,
/// MUST return [`ProviderError::Rejected`] for a 4xx answer and [`ProviderError::Unavailable`]
/// for timeouts, connection failures and 5xx answers.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait PaymentProvider: Send + Sync {
    /// Its name, the scope of its `webhook-id`s (`sandbox`, `provider`).
    fn name(&self) -> &str;

    async fn create_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<HostedCheckout, ProviderError>;

    async fn report_meter_event(&self, event: &MeterEvent) -> Result<(), ProviderError>;
}
