//! `GET`/`POST /api/discover`, `GET /api/domains`, `POST /api/execute` and `GET /api/tasks/{task_id}`. The wire
//! types here are also the JSON of the MCP tools `discover`, `list_actions` and `execute`.

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::JsonBody;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::actions::*;
use poem_openapi::{
    ApiResponse, OpenApi,
    param::{Header, Path, Query},
    payload::Json,
    types::ParseFromJSON,
};
use svc_ports::FailureClass;
use svc_services::telemetry::Face;
use svc_services::{ExecuteRequest, Executed, Principal};

const REPLAYED: &str = "true";

#[derive(ApiResponse)]
pub enum DiscoverResponse {
    /// The domain's published actions.
    #[oai(status = 200)]
    Ok(Json<DiscoverResult>),
}

#[derive(ApiResponse)]
pub enum DomainsResponse {
    /// Every domain with a published Agent Map.
    #[oai(status = 200)]
    Ok(Json<SupportedDomains>),
}

#[allow(clippy::large_enum_variant)]
#[derive(ApiResponse)]
pub enum ExecuteResponse {
    /// Completed and verified: charged, with its typed result and artifact.
    #[oai(status = 200)]
    Completed(
        Json<ExecutionResult>,
        /// `true` when this answer is the stored one for a repeated `Idempotency-Key`.
        #[oai(header = "Idempotent-Replayed")]
        Option<String>,
    ),
    /// The site did not confirm the action, answered garbage or was unreachable: refunded.
    #[oai(status = 502, content_type = "application/problem+json")]
    Failed(
        Json<ExecutionFailure>,
        #[oai(header = "Idempotent-Replayed")] Option<String>,
    ),
    /// The site timed out: refunded.
    #[oai(status = 504, content_type = "application/problem+json")]
    TimedOut(
        Json<ExecutionFailure>,
        #[oai(header = "Idempotent-Replayed")] Option<String>,
    ),
}

#[derive(ApiResponse)]
pub enum TaskResponse {
    #[oai(status = 200)]
    Ok(Json<TaskView>),
}

#[derive(ApiResponse)]
pub enum VerifyTaskResponse {
    /// Verified now, or before (the stored verification, unchanged).
    #[oai(status = 200)]
    Verified(Json<TaskVerification>),
}

/// The settled answer as the typed REST response (the same JSON either way).
pub fn execute_response(executed: Executed) -> Result<ExecuteResponse, ApiProblem> {
    let replayed = executed.replayed.then(|| REPLAYED.to_owned());
    if executed.completed {
        let body = ExecutionResult::parse_from_json(Some(executed.body))
            .map_err(|e| ApiProblem::internal(e.into_message()))?;
        return Ok(ExecuteResponse::Completed(Json(body), replayed));
    }
    let body = ExecutionFailure::parse_from_json(Some(executed.body))
        .map_err(|e| ApiProblem::internal(e.into_message()))?;
    Ok(if executed.status == 504 {
        ExecuteResponse::TimedOut(Json(body), replayed)
    } else {
        ExecuteResponse::Failed(Json(body), replayed)
    })
}

pub struct ActionsApi {
    pub ctx: AppContext,
}

impl ActionsApi {
    async fn discover(
        &self,
        principal: &Principal,
        domain: &str,
    ) -> Result<DiscoverResponse, ApiProblem> {
        let map = self
            .ctx
            .services
            .actions
            .discover(principal, domain, Face::Rest)
            .await?;
        Ok(DiscoverResponse::Ok(Json(DiscoverResult::from(
            map.as_ref(),
        ))))
    }
}

#[OpenApi(tag = "Tags::Actions")]
impl ActionsApi {
    /// Discover a domain's actions
    ///
    /// The published Agent Map of a domain: exact action names, parameter keys and types,
    /// auth provider, whether each is consequential, the scopes and the credits it needs.
    #[oai(path = "/api/discover", method = "get")]
    async fn discover_get(
        &self,
        auth: ApiKeyAuth,
        /// The site's host name, e.g. `shop.example.com`.
        #[oai(validator(min_length = 1, max_length = 253))]
        domain: Query<String>,
    ) -> Result<DiscoverResponse, ApiProblem> {
        self.discover(&auth.0, &domain.0).await
    }

    /// Discover a domain's actions (JSON body)
    #[oai(path = "/api/discover", method = "post")]
    async fn discover_post(
        &self,
        auth: ApiKeyAuth,
        body: JsonBody<DiscoverBody>,
    ) -> Result<DiscoverResponse, ApiProblem> {
        self.discover(&auth.0, body.domain.as_str()).await
    }

    /// List the supported domains
    ///
    /// Every domain with a published Agent Map, by name: the domains `discover` and `execute`
    /// accept. Needs an API key with the `discover` scope.
    #[oai(path = "/api/domains", method = "get")]
    async fn domains(&self, auth: ApiKeyAuth) -> Result<DomainsResponse, ApiProblem> {
        let maps = self.ctx.services.actions.supported_domains(&auth.0).await?;
        Ok(DomainsResponse::Ok(Json(SupportedDomains::of(&maps))))
    }

    /// Execute one mapped action
    ///
    /// Runs the action through the guarded client and verifies the outcome by the map's rules.
    /// Completed: about one credit (the action's cost) is charged and the typed result comes
    /// with a signed artifact. Failed: refunded, with a problem and an artifact of the failure.
    /// The same `Idempotency-Key` (at most 255 characters, kept 24 h) never charges twice: a
    /// repeat returns the stored answer with `Idempotent-Replayed: true`, 409 while the first
    /// runs, 422 for a different request under the same key.
    #[oai(path = "/api/execute", method = "post")]
    async fn execute(
        &self,
        auth: ApiKeyAuth,
        body: JsonBody<ExecuteBody>,
        /// Makes retries safe: the same key is the same billing task.
        #[oai(name = "Idempotency-Key")]
        idempotency_key: Header<Option<String>>,
        req: &poem::Request,
    ) -> Result<ExecuteResponse, ApiProblem> {
        // Declared above for the document; read raw, as sent (poem hands a key past visible
        // ASCII over as absent, and run without its key a retry would be charged again).
        let _ = idempotency_key;
        let idempotency_key = kit::headers::idempotency_key(req)?;
        let request = ExecuteRequest {
            domain: body.domain.as_str().to_owned(),
            action: body.action.as_str().to_owned(),
            authority_id: body.authority_id.as_ref().map(|a| a.as_str().to_owned()),
            params: body.0.params,
            idempotency_key,
        };
        // Apart from the request, so a client that hangs up does not stop it: it is settled by
        // what happened, and the retry with the same key replays that.
        let services = self.ctx.services.clone();
        let principal = auth.0;
        let run = async move {
            services
                .actions
                .execute(&principal, request, Face::Rest)
                .await
        };
        let executed = kit::detach::detached(&self.ctx, run)
            .await
            .map_err(|e| ApiProblem::internal(format!("the execution's task ended: {e}")))??;
        execute_response(executed)
    }

    /// A task and its artifact
    #[oai(path = "/api/tasks/:task_id", method = "get")]
    async fn task(
        &self,
        auth: ApiKeyAuth,
        /// `task_...` as execute returned it.
        task_id: Path<String>,
    ) -> Result<TaskResponse, ApiProblem> {
        match self.ctx.services.actions.task(&auth.0, &task_id.0).await {
            Ok(Some(t)) => Ok(TaskResponse::Ok(Json(TaskView::from_record(&t)))),
            Ok(None) => Err(ApiProblem::new(
                FailureClass::NotFound,
                "No task of this account has that id.",
            )),
            Err(e) => Err(ApiProblem::failure(e.as_ref())),
        }
    }

    /// Verify a payment's business outcome
    ///
    /// For a task of this account settled with a `payment_completed` artifact (a payment under
    /// an authority with `verification_required`): runs the payment action's confirm read
    /// through the guarded client and the map's rules, and when they hold stores and returns a
    /// second signed artifact with status `verified` (the original stays as it is). Not a new
    /// billing task: nothing is charged. Repeating it returns the stored verification. 409
    /// `verification_pending` (retryable, nothing stored) when the site does not confirm the
    /// outcome yet; 409 `not_verifiable` for any other task; 404 for another account's task.
    #[oai(path = "/api/tasks/:task_id/verify", method = "post")]
    async fn verify_task(
        &self,
        auth: ApiKeyAuth,
        /// `task_...` as execute returned it.
        task_id: Path<String>,
    ) -> Result<VerifyTaskResponse, ApiProblem> {
        let verified = self
            .ctx
            .services
            .actions
            .verify_task(&auth.0, &task_id.0)
            .await?;
        Ok(VerifyTaskResponse::Verified(Json(verification_view(
            &verified,
        )?)))
    }
}
