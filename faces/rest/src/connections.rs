//! Target-site connections over REST: status, start (the link to show the human) and poll.
//! The MCP tools `svc_connection_status`, `svc_start_connection` and `svc_poll_connection`
//! answer with the same bodies.

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::JsonBody;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::connections::*;
use poem_openapi::{ApiResponse, OpenApi, param::Path, param::Query, payload::Json};

#[derive(ApiResponse)]
pub enum StatusResponse {
    #[oai(status = 200)]
    Ok(Json<ConnectionStatus>),
}

#[derive(ApiResponse)]
pub enum StartResponse {
    /// Pending: show `connect_url` to the human.
    #[oai(status = 201)]
    Started(Json<ConnectionStarted>),
}

pub struct ConnectionsApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Connections")]
impl ConnectionsApi {
    /// Whether the account is connected to a provider
    ///
    /// `provider` is exactly an `auth_provider` that a published action declares (from
    /// discover or list_actions); anything else does not exist here: 404 `unknown_provider`.
    #[oai(path = "/api/connections/:provider", method = "get")]
    async fn status(
        &self,
        auth: ApiKeyAuth,
        provider: Path<String>,
    ) -> Result<StatusResponse, ApiProblem> {
        let view = self
            .ctx
            .services
            .connections
            .status(&auth.0.account.id, &provider.0)
            .await?;
        Ok(StatusResponse::Ok(Json(view.into())))
    }

    /// Start a connection
    ///
    /// Creates a pending connection and returns `connect_url`: show it to the human (it lives
    /// 10 minutes). They sign in here as this account and approve at the provider; then poll.
    /// Nothing is created for a `provider` that no published action declares.
    #[oai(path = "/api/connections/:provider/start", method = "post")]
    async fn start(
        &self,
        auth: ApiKeyAuth,
        provider: Path<String>,
        /// `{}`, or the account the human should connect.
        body: JsonBody<StartConnectionBody>,
    ) -> Result<StartResponse, ApiProblem> {
        let expected = body.0.expected_account;
        let started = self
            .ctx
            .services
            .connections
            .start(&auth.0.account.id, &provider.0, expected.as_deref())
            .await?;
        Ok(StartResponse::Started(Json(started_body(started))))
    }

    /// Poll a connection
    ///
    /// Answers at once with the state, or holds the request up to `wait_ms` (at most 10,000)
    /// for a pending connection to change. A final state (`expired`, `refused`,
    /// `wrong_account`) means stop; `connected=true` means the actions can run.
    #[oai(path = "/api/connections/:provider/poll", method = "get")]
    async fn poll(
        &self,
        auth: ApiKeyAuth,
        provider: Path<String>,
        /// Longest wait for a change, in milliseconds (default 0).
        #[oai(validator(minimum(value = "0"), maximum(value = "10000")))]
        wait_ms: Query<Option<u64>>,
    ) -> Result<StatusResponse, ApiProblem> {
        let view = self
            .ctx
            .services
            .connections
            .poll(
                &auth.0.account.id,
                &provider.0,
                std::time::Duration::from_millis(wait_ms.0.unwrap_or(0)),
            )
            .await?;
        Ok(StatusResponse::Ok(Json(view.into())))
    }
}
