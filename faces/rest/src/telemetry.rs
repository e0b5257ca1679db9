//! `POST /telemetry/agent-event` (no credentials) and `GET /api/telemetry/funnel`.

use crate::Tags;
use crate::auth::FunnelAuth;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::telemetry::*;
use poem_openapi::{ApiResponse, OpenApi, param::Query, payload::Json};
use serde_json::Value;

#[derive(ApiResponse)]
pub enum EventResponse {
    /// Accepted; written within a few milliseconds.
    #[oai(status = 202)]
    Accepted(Json<EventAccepted>),
}

#[derive(ApiResponse)]
pub enum FunnelResponse {
    #[oai(status = 200)]
    Ok(Json<Funnel>),
}

pub struct TelemetryApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Telemetry")]
impl TelemetryApi {
    /// Record an agent traffic event
    ///
    /// The body is an agent traffic event (`/.well-known/agent-traffic-event.schema.json`:
    /// the required fields and enums are checked, extra properties are allowed). Raw prompts,
    /// payment credentials, secrets, email addresses and card-like numbers are removed before
    /// storage and each removal is named in `privacy_redactions`. 422 names the field at fault
    /// (also a string holding a NUL character). No credentials are needed; sent with an API
    /// key (`Authorization: Bearer svc_...`) the event also counts in that account's funnel.
    #[oai(path = "/telemetry/agent-event", method = "post")]
    async fn agent_event(
        &self,
        req: &poem::Request,
        body: kit::json_body::JsonBody<Value>,
    ) -> Result<EventResponse, ApiProblem> {
        let account = match super::auth::bearer_token(req) {
            Some(token) => self
                .ctx
                .services
                .auth
                .authenticate(token)
                .await
                .ok()
                .map(|p| p.account.id),
            None => None,
        };
        let accepted = self
            .ctx
            .services
            .telemetry
            .accept(body.0, account.as_ref())?;
        Ok(EventResponse::Accepted(Json(EventAccepted {
            event_id: accepted.event_id,
            record_id: accepted.record_id,
            privacy_redactions: accepted.privacy_redactions,
        })))
    }

    /// The conversion funnel by discovery surface
    ///
    /// With an API key: the events of the key's own account (those sent with one of its keys,
    /// and the steps the service recorded for it). With the operator's internal token
    /// (`SVC_INTERNAL_TOKEN`): every event of the service.
    #[oai(path = "/api/telemetry/funnel", method = "get")]
    async fn funnel(
        &self,
        auth: FunnelAuth,
        /// Hours back from now (default 24, at most 8760).
        #[oai(validator(minimum(value = "1"), maximum(value = "8760")))]
        hours: Query<Option<i64>>,
    ) -> Result<FunnelResponse, ApiProblem> {
        let hours = hours.0.unwrap_or(24);
        let cells = self
            .ctx
            .services
            .telemetry
            .funnel(hours, auth.0.as_ref())
            .await
            .map_err(|e| ApiProblem::failure(e.as_ref()))?
            .into_iter()
            .map(|c| FunnelCell {
                discovery_surface: c.discovery_surface,
                conversion_state: c.conversion_state,
                events: c.events,
            })
            .collect();
        Ok(FunnelResponse::Ok(Json(Funnel { hours, cells })))
    }
}
