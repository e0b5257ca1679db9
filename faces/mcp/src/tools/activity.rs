//! `svc_list_tasks` and `svc_usage_history`: the account's tasks a page at a time and its
//! credits per day, the same JSON as `GET /api/tasks` and `GET /api/usage/history`.

use chrono::{DateTime, NaiveDate, Utc};
use kit::{
    problem::ApiProblem,
    wire::activity::{TaskList, TaskStatusName, UsageHistoryDoc},
};
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use svc_ports::FailureClass;
use svc_services::TaskListRequest;

use super::{principal, tool_error, wire, wire_answer};
use crate::SvcMcp;

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusArg {
    /// Credits held, still running.
    InFlight,
    /// Completed and charged.
    Completed,
    /// Failed and refunded.
    Failed,
}

impl From<StatusArg> for TaskStatusName {
    fn from(s: StatusArg) -> Self {
        match s {
            StatusArg::InFlight => TaskStatusName::InFlight,
            StatusArg::Completed => TaskStatusName::Completed,
            StatusArg::Failed => TaskStatusName::Failed,
        }
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// Only tasks in this state.
    pub status: Option<StatusArg>,
    /// Only tasks on this site (its host name).
    #[schemars(length(min = 1, max = 253))]
    pub domain: Option<String>,
    /// Only tasks begun at or after this instant (RFC 3339, e.g. 2026-11-01T00:00:00Z).
    #[schemars(length(min = 1, max = 64))]
    pub since: Option<String>,
    /// Only tasks begun before this instant (RFC 3339).
    #[schemars(length(min = 1, max = 64))]
    pub until: Option<String>,
    /// next_cursor of the previous page, exactly as it came.
    #[schemars(length(min = 1, max = 200))]
    pub cursor: Option<String>,
    /// Tasks per page, 1 to 100 (20 when absent).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageHistoryArgs {
    /// First day, YYYY-MM-DD (UTC); 29 days before `to` when absent.
    #[schemars(length(min = 10, max = 10))]
    pub from: Option<String>,
    /// Last day, YYYY-MM-DD (UTC); today when absent.
    #[schemars(length(min = 10, max = 10))]
    pub to: Option<String>,
}

fn invalid(detail: String) -> ApiProblem {
    ApiProblem::new(FailureClass::InvalidRequest, detail)
}

fn instant(name: &str, value: Option<String>) -> Result<Option<DateTime<Utc>>, ApiProblem> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(&v)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| invalid(format!("{name} must be an RFC 3339 date-time, not {v:?}.")))
        })
        .transpose()
}

fn day(name: &str, value: Option<String>) -> Result<Option<NaiveDate>, ApiProblem> {
    value
        .map(|v| {
            NaiveDate::parse_from_str(&v, "%Y-%m-%d")
                .map_err(|_| invalid(format!("{name} must be a date as YYYY-MM-DD, not {v:?}.")))
        })
        .transpose()
}

#[tool_router(router = activity_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "svc_list_tasks",
        title = "List the account's tasks",
        description = "Lists the tasks of your account (every key of it), newest first, a page at a time: each with \
            its domain, action, status (in_flight, completed, failed), the key that ran it, the credits charged or \
            refunded, its artifact id and task_url. Filter by status, domain, since and until (RFC 3339). Pass \
            next_cursor as cursor to get the next page until it is null; tasks begun meanwhile never make a page \
            repeat or skip one. Needs an API key.",
        output_schema = wire::<TaskList>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_list_tasks(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<ListTasksArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let request = match (instant("since", args.since), instant("until", args.until)) {
            (Ok(since), Ok(until)) => TaskListRequest {
                status: args.status.map(|s| TaskStatusName::from(s).into()),
                domain: args.domain,
                since,
                until,
                cursor: args.cursor,
                limit: args.limit,
            },
            (Err(p), _) | (_, Err(p)) => return Ok(tool_error(&p)),
        };
        Ok(
            match self
                .ctx
                .services
                .activity
                .list_tasks(&principal.account.id, request)
                .await
            {
                Ok(page) => wire_answer(&TaskList::of(&page, &self.ctx.origins.base_url)),
                Err(e) => tool_error(&ApiProblem::from(e)),
            },
        )
    }

    #[tool(
        name = "svc_usage_history",
        title = "Usage per day",
        description = "Your account's credits per UTC day from `from` to `to` (YYYY-MM-DD, both included; by default \
            the 30 days up to today, at most 366): charged for completed actions, refunded for failed ones (also per \
            API key prefix), bought, granted, taken back by a payment's refund or dispute and given back by a dispute \
            won, with totals. Needs an API key.",
        output_schema = wire::<UsageHistoryDoc>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_usage_history(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<UsageHistoryArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let (from, to) = match (day("from", args.from), day("to", args.to)) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(p), _) | (_, Err(p)) => return Ok(tool_error(&p)),
        };
        Ok(
            match self
                .ctx
                .services
                .activity
                .usage_history(&principal.account.id, from, to)
                .await
            {
                Ok(history) => wire_answer(&UsageHistoryDoc::from(&history)),
                Err(e) => tool_error(&ApiProblem::from(e)),
            },
        )
    }
}
