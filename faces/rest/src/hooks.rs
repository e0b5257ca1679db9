//! Webhooks to the customer's systems over REST: register, list and delete endpoints, read
//! the delivery log and replay a delivery, and page through the account's events (what
//! `svc listen` forwards to a local server).

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::JsonBody;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::hooks::*;
use poem_openapi::{
    ApiResponse, OpenApi,
    param::{Path, Query},
    payload::Json,
};
use svc_services::hooks::NewEndpoint;

#[derive(ApiResponse)]
pub enum EndpointListResponse {
    #[oai(status = 200)]
    Ok(Json<WebhookEndpointList>),
}

#[derive(ApiResponse)]
pub enum CreatedResponse {
    /// Registered; `secret` is shown only now.
    #[oai(status = 201)]
    Created(Json<CreatedWebhookEndpoint>),
}

#[derive(ApiResponse)]
pub enum DeletedResponse {
    /// Deleted; its pending deliveries are canceled.
    #[oai(status = 204)]
    Deleted,
}

#[derive(ApiResponse)]
pub enum DeliveryListResponse {
    #[oai(status = 200)]
    Ok(Json<WebhookDeliveryList>),
}

#[derive(ApiResponse)]
pub enum ReplayResponse {
    /// A new delivery of the same event (same `webhook-id`), sent at once.
    #[oai(status = 202)]
    Accepted(Json<WebhookDeliveryView>),
}

#[derive(ApiResponse)]
pub enum EventListResponse {
    #[oai(status = 200)]
    Ok(Json<WebhookEventList>),
}

pub struct HooksApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Webhooks")]
impl HooksApi {
    /// The account's webhook endpoints
    #[oai(path = "/api/webhook-endpoints", method = "get")]
    async fn list(&self, auth: ApiKeyAuth) -> Result<EndpointListResponse, ApiProblem> {
        let endpoints = self
            .ctx
            .services
            .hooks
            .endpoints(&auth.0.account.id)
            .await?;
        Ok(EndpointListResponse::Ok(Json(WebhookEndpointList {
            endpoints: endpoints.iter().map(WebhookEndpointView::of).collect(),
            event_types: event_types(),
        })))
    }

    /// Register a webhook endpoint
    ///
    /// Events of the chosen types are POSTed to `url`, signed per Standard Webhooks
    /// (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<HMAC-SHA256 of
    /// id.timestamp.body>` with the secret answered here, shown only once). A delivery that
    /// gets no 2xx is retried with backoff (5 s, 5 min, 30 min, 2 h, 5 h, then every 10 h)
    /// for 72 hours, then given up. At most 16 endpoints per account (10,000 in the sandbox).
    #[oai(path = "/api/webhook-endpoints", method = "post")]
    async fn create(
        &self,
        auth: ApiKeyAuth,
        body: JsonBody<CreateWebhookEndpointBody>,
    ) -> Result<CreatedResponse, ApiProblem> {
        let body = body.0;
        let events = body.events.unwrap_or_default();
        let created = self
            .ctx
            .services
            .hooks
            .create_endpoint(
                &auth.0.account.id,
                NewEndpoint {
                    url: &body.url,
                    description: body.description.as_deref(),
                    events: &events,
                },
            )
            .await?;
        Ok(CreatedResponse::Created(Json(CreatedWebhookEndpoint {
            endpoint: WebhookEndpointView::of(&created.endpoint),
            secret: created.secret,
        })))
    }

    /// Delete a webhook endpoint
    ///
    /// Nothing more is sent to it; its pending deliveries are canceled. Idempotent: deleting
    /// it again answers 204 too. An unknown id, or another account's endpoint, is 404.
    #[oai(path = "/api/webhook-endpoints/:endpoint_id", method = "delete")]
    async fn delete(
        &self,
        auth: ApiKeyAuth,
        /// `we_...`
        endpoint_id: Path<String>,
    ) -> Result<DeletedResponse, ApiProblem> {
        self.ctx
            .services
            .hooks
            .delete_endpoint(&auth.0.account.id, &endpoint_id.0)
            .await?;
        Ok(DeletedResponse::Deleted)
    }

    /// The account's webhook deliveries
    ///
    /// The delivery log, newest first: each delivery's status, attempts, the endpoint's last
    /// answer and when it is tried next.
    #[oai(path = "/api/webhook-deliveries", method = "get")]
    async fn deliveries(
        &self,
        auth: ApiKeyAuth,
        /// At most this many (1 to 100, default 50).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Result<DeliveryListResponse, ApiProblem> {
        let list = self
            .ctx
            .services
            .hooks
            .deliveries(&auth.0.account.id, limit.0.unwrap_or(50))
            .await?;
        Ok(DeliveryListResponse::Ok(Json(WebhookDeliveryList {
            deliveries: list.iter().map(WebhookDeliveryView::of).collect(),
        })))
    }

    /// Replay a webhook delivery
    ///
    /// Sends the delivery's event to its endpoint again, as a new delivery with the same
    /// `webhook-id` (a receiver that deduplicates on it sees the event once). Another
    /// account's delivery, or one whose endpoint was deleted, is 404. An endpoint has at most
    /// 100 replays waiting to be sent; past that, 429 `rate_limited` until some are sent.
    #[oai(path = "/api/webhook-deliveries/:delivery_id/replay", method = "post")]
    async fn replay(
        &self,
        auth: ApiKeyAuth,
        /// `whd_...`
        delivery_id: Path<String>,
    ) -> Result<ReplayResponse, ApiProblem> {
        let replay = self
            .ctx
            .services
            .hooks
            .replay(&auth.0.account.id, &delivery_id.0)
            .await?;
        Ok(ReplayResponse::Accepted(Json(WebhookDeliveryView::of(
            &replay,
        ))))
    }

    /// The account's events
    ///
    /// Every event recorded for the account (whether or not an endpoint subscribes), oldest
    /// first, after `after`. `svc listen --forward-to URL` polls this and forwards each
    /// event, signed, to a local server.
    #[oai(path = "/api/webhook-events", method = "get")]
    async fn events(
        &self,
        auth: ApiKeyAuth,
        /// Only events after this one (`evt_...`); absent: from the first.
        #[oai(validator(max_length = 64))]
        after: Query<Option<String>>,
        /// At most this many (1 to 100, default 50).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Result<EventListResponse, ApiProblem> {
        let events = self
            .ctx
            .services
            .hooks
            .events_after(
                &auth.0.account.id,
                after.0.as_deref(),
                limit.0.unwrap_or(50),
            )
            .await?;
        let next_after = events
            .last()
            .map(|e| e.id.to_string())
            .or(after.0.filter(|a| !a.trim().is_empty()));
        Ok(EventListResponse::Ok(Json(WebhookEventList {
            events: events.iter().map(WebhookEventView::of).collect(),
            next_after,
        })))
    }
}
