//! `GET /api/tasks` and `GET /api/usage/history`: the calling key's account's tasks a page at
//! a time, and its credits per UTC day. The service decides defaults, bounds and the cursor;
//! this turns query parameters into its request and its answer into the wire types.

use chrono::{DateTime, NaiveDate, Utc};
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::activity::*;
use poem_openapi::{ApiResponse, OpenApi, param::Query, payload::Json};
use serde_json::{Value, json};
use svc_services::TaskListRequest;

use crate::Tags;
use crate::auth::ApiKeyAuth;

#[derive(ApiResponse)]
pub enum TaskListResponse {
    /// A page of the account's tasks, newest first, and the cursor of the next.
    #[oai(status = 200)]
    Ok(Json<TaskList>),
}

#[derive(ApiResponse)]
pub enum UsageHistoryResponse {
    /// Every day of the range with its credits.
    #[oai(status = 200)]
    Ok(Json<UsageHistoryDoc>),
}

pub struct ActivityApi {
    pub ctx: AppContext,
}

#[OpenApi]
impl ActivityApi {
    /// List the account's tasks
    ///
    /// The tasks of the calling key's account (every key of it, never another account's),
    /// newest first by when they began, a page at a time: pass `next_cursor` as `cursor` for
    /// the next page until it is null. Pages are cut on (begin time, task id), not counted, so
    /// tasks begun while paging never make a page repeat or skip one. Filters combine; a
    /// cursor must come with the same filters. A cursor this service did not give, or `since`
    /// after `until`, is 422 `invalid_request`; a malformed parameter is 400.
    #[oai(
        path = "/api/tasks",
        method = "get",
        operation_id = "listTasks",
        tag = "Tags::Actions"
    )]
    #[allow(clippy::too_many_arguments)]
    async fn list_tasks(
        &self,
        auth: ApiKeyAuth,
        /// Only tasks in this state.
        status: Query<Option<TaskStatusName>>,
        /// Only tasks on this site (its host name, exactly as execute took it).
        #[oai(validator(min_length = 1, max_length = 253))]
        domain: Query<Option<String>>,
        /// Only tasks begun at or after this instant (RFC 3339).
        since: Query<Option<DateTime<Utc>>>,
        /// Only tasks begun before this instant (RFC 3339).
        until: Query<Option<DateTime<Utc>>>,
        /// `next_cursor` of the previous page, exactly as it came.
        #[oai(validator(min_length = 1, max_length = 200))]
        cursor: Query<Option<String>>,
        /// Tasks per page (1 to 100; 20 when absent).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Result<TaskListResponse, ApiProblem> {
        let page = self
            .ctx
            .services
            .activity
            .list_tasks(
                &auth.0.account.id,
                TaskListRequest {
                    status: status.0.map(Into::into),
                    domain: domain.0,
                    since: since.0,
                    until: until.0,
                    cursor: cursor.0,
                    limit: limit.0,
                },
            )
            .await?;
        Ok(TaskListResponse::Ok(Json(TaskList::of(
            &page,
            &self.ctx.origins.base_url,
        ))))
    }

    /// Usage per day
    ///
    /// The calling key's account's credits per UTC day from `from` to `to` (both included;
    /// by default the 30 days up to today, at most 366): charged for completed actions and
    /// refunded for failed ones (on the day they settled, also per API key), bought, granted,
    /// taken back by a payment's refund or dispute and given back by a dispute won. Each
    /// figure is the sum of its ledger entries, so a day's figures explain its balance.
    /// `from` after `to` or a longer range is 422 `invalid_request`; a malformed date is 400.
    #[oai(
        path = "/api/usage/history",
        method = "get",
        operation_id = "getUsageHistory",
        tag = "Tags::Usage"
    )]
    async fn usage_history(
        &self,
        auth: ApiKeyAuth,
        /// First day (`YYYY-MM-DD`, UTC); 29 days before `to` when absent.
        from: Query<Option<NaiveDate>>,
        /// Last day (`YYYY-MM-DD`, UTC); today when absent.
        to: Query<Option<NaiveDate>>,
    ) -> Result<UsageHistoryResponse, ApiProblem> {
        let history = self
            .ctx
            .services
            .activity
            .usage_history(&auth.0.account.id, from.0, to.0)
            .await?;
        Ok(UsageHistoryResponse::Ok(Json(UsageHistoryDoc::from(
            &history,
        ))))
    }
}

/// What the handlers' types cannot say: the default page size, and the links from a page to
/// its tasks and to the next page.
pub(crate) fn document(doc: &mut Value) {
    let list = "/paths/~1api~1tasks/get";
    if let Some(params) = doc
        .pointer_mut(&format!("{list}/parameters"))
        .and_then(Value::as_array_mut)
    {
        for p in params.iter_mut() {
            if p["name"] == "limit" {
                p["schema"]["default"] = json!(20);
            }
        }
    }
    if let Some(resp) = doc
        .pointer_mut(&format!("{list}/responses/200"))
        .and_then(Value::as_object_mut)
    {
        resp.insert(
            "links".into(),
            json!({
                "NextPage": {
                    "operationId": "listTasks",
                    "parameters": {"cursor": "$response.body#/next_cursor"},
                    "description": "The next page (same filters), while next_cursor is not null.",
                },
                "GetFirstTask": {
                    "operationRef": "#/paths/~1api~1tasks~1{task_id}/get",
                    "parameters": {"task_id": "$response.body#/tasks/0/task_id"},
                    "description": "A listed task with its signed artifact (any task_id of the page).",
                },
            }),
        );
    }
}
