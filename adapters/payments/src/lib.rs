//! The payment provider over HTTP: a hosted-checkout API authorised by a secret key.
//!
//! `POST {base}/v1/checkout/sessions` opens a hosted checkout (our checkout id travels as
//! `client_reference_id` and comes back in the provider's signed events);
//! `POST {base}/v1/meter_events` reports usage. Both carry `Idempotency-Key`, so a retried
//! request never opens a second checkout or counts usage twice. The sandbox's provider speaks
//! the same API.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use svc_ports::{CheckoutRequest, HostedCheckout, MeterEvent, PaymentProvider, ProviderError};

pub struct HttpPaymentProvider {
    name: String,
    base_url: String,
    api_key: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for HttpPaymentProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPaymentProvider")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

#[derive(Deserialize)]
struct SessionAnswer {
    id: String,
    url: String,
    /// Unix seconds.
    expires_at: i64,
}

impl HttpPaymentProvider {
    /// `name` scopes the provider's webhook ids; `base_url` is its API origin.
    pub fn new(name: &str, base_url: &str, api_key: &str) -> Result<Self, ProviderError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ProviderError::Unavailable(format!("building the HTTP client: {e}")))?;
        Ok(Self {
            name: name.to_owned(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            http,
        })
    }

    async fn post(
        &self,
        path: &str,
        idempotency_key: &str,
        body: serde_json::Value,
    ) -> Result<reqwest::Response, ProviderError> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base_url))
            .bearer_auth(&self.api_key)
            .header("Idempotency-Key", idempotency_key)
            .json(&body)
            .send()
            .await
            .map_err(|e| ProviderError::Unavailable(without_url(e)))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let text: String = resp
            .text()
            .await
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        let what = format!("{path} answered {status}: {text}");
        // A timeout, a conflict with a retry still running, too early or too many requests
        // pass; any other 4xx is the provider refusing what we sent.
        let passing = matches!(status.as_u16(), 408 | 409 | 425 | 429);
        Err(if status.is_client_error() && !passing {
            ProviderError::Rejected(what)
        } else {
            ProviderError::Unavailable(what)
        })
    }
}

/// A transport error without the request URL's query or credentials.
fn without_url(e: reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    format!("{kind}: {}", e.without_url())
}

#[async_trait]
impl PaymentProvider for HttpPaymentProvider {
    fn name(&self) -> &str {
        &self.name
    }

    async fn create_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<HostedCheckout, ProviderError> {
        let body = json!({
            "client_reference_id": request.checkout_id.as_str(),
            "sku": request.sku,
            "description": request.description,
            "amount": request.amount,
            "currency": request.currency.as_str(),
            "customer_email": request.customer_email.as_str(),
            "success_url": request.success_url,
            "cancel_url": request.cancel_url,
        });
        let resp = self
            .post("/v1/checkout/sessions", &request.idempotency_key, body)
            .await?;
        let answer: SessionAnswer = resp.json().await.map_err(|e| {
            ProviderError::Unavailable(format!("unreadable checkout session: {}", e.without_url()))
        })?;
        if !answer.url.starts_with("https://") && !answer.url.starts_with("http://") {
            return Err(ProviderError::Unavailable(
                "the checkout session has no web address".into(),
            ));
        }
        Ok(HostedCheckout {
            session_id: answer.id,
            url: answer.url,
            expires_at: DateTime::<Utc>::from_timestamp(answer.expires_at, 0)
                .unwrap_or_else(Utc::now),
        })
    }

    async fn report_meter_event(&self, event: &MeterEvent) -> Result<(), ProviderError> {
        let body = json!({
            "identifier": event.identifier,
            "event_name": event.event_name,
            "account_id": event.account_id.as_ref().map(|a| a.as_str()),
            "value": event.value,
            "timestamp": event.occurred_at.timestamp(),
        });
        self.post("/v1/meter_events", &event.identifier, body)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::{CheckoutId, Currency, Email, MeterEventId};
    use wiremock::{
        Mock, MockServer, ResponseTemplate,
        matchers::{body_partial_json, header, method, path},
    };

    fn request() -> CheckoutRequest {
        CheckoutRequest {
            checkout_id: CheckoutId::from_ulid(ulid::Ulid::new()),
            sku: "starter".into(),
            description: "Starter".into(),
            amount: 900,
            currency: Currency::parse("usd").unwrap(),
            customer_email: Email::parse("a@example.com").unwrap(),
            success_url: "https://svc.example/billing/return".into(),
            cancel_url: "https://svc.example/account".into(),
            idempotency_key: "idem-1".into(),
        }
    }

    #[tokio::test]
    async fn opens_a_checkout_with_the_key_and_idempotency_key() {
        let server = MockServer::start().await;
        let req = request();
        Mock::given(method("POST"))
            .and(path("/v1/checkout/sessions"))
            .and(header("authorization", "Bearer sk_test_1"))
            .and(header("idempotency-key", "idem-1"))
            .and(body_partial_json(json!({
                "client_reference_id": req.checkout_id.as_str(), "amount": 900, "currency": "usd"
            })))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "cs_1", "url": "https://pay.example/cs_1", "expires_at": 1_900_000_000
            })))
            .expect(1)
            .mount(&server)
            .await;
        let provider = HttpPaymentProvider::new("provider", &server.uri(), "sk_test_1").unwrap();
        let hosted = provider.create_checkout(&req).await.unwrap();
        assert_eq!(hosted.session_id, "cs_1");
        assert_eq!(hosted.url, "https://pay.example/cs_1");
        assert_eq!(hosted.expires_at.timestamp(), 1_900_000_000);
        assert!(!format!("{provider:?}").contains("sk_test_1"));
    }

    #[tokio::test]
    async fn client_errors_are_rejections_and_server_errors_are_outages() {
        let server = MockServer::start().await;
        Mock::given(path("/v1/checkout/sessions"))
            .respond_with(ResponseTemplate::new(401).set_body_string("bad key"))
            .mount(&server)
            .await;
        Mock::given(path("/v1/meter_events"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;
        let provider = HttpPaymentProvider::new("provider", &server.uri(), "sk").unwrap();
        assert!(matches!(
            provider.create_checkout(&request()).await,
            Err(ProviderError::Rejected(_))
        ));
        let meter = MeterEvent {
            id: MeterEventId::from_ulid(ulid::Ulid::new()),
            identifier: "m1".into(),
            event_name: "actions".into(),
            account_id: None,
            value: 1,
            occurred_at: Utc::now(),
            recorded_at: Utc::now(),
            forwarded_at: None,
        };
        assert!(matches!(
            provider.report_meter_event(&meter).await,
            Err(ProviderError::Unavailable(_))
        ));
        let nowhere = HttpPaymentProvider::new("provider", "http://127.0.0.1:9", "sk").unwrap();
        assert!(matches!(
            nowhere.create_checkout(&request()).await,
            Err(ProviderError::Unavailable(_))
        ));
    }
}
