//! Activity on the account page: the newest tasks (each with its artifact and a verify link)
//! and the usage chart of the last 30 days; `/account/activity` pages through every task;
//! `/account/activity/{task_id}/artifact` serves a task's signed artifact and `.../verify`
//! checks its signature on the server. All plain links and pages: nothing needs a script.

use askama::Template;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use poem::{
    Request, Response, Route, get, handler,
    http::StatusCode,
    web::{Data, Path, Query},
};
use serde::Deserialize;
use svc_ports::{Account, TaskStatus};
use svc_services::{
    IdentityFailure, TaskListRequest,
    activity::{ActivityError, ActivityTask},
};

use super::{Visit, signin_redirect, usage_chart::UsageChart};

/// Tasks the account page shows; the rest are a link away.
const ON_ACCOUNT_PAGE: u32 = 10;
/// Tasks per page of `/account/activity`.
const PER_PAGE: u32 = 25;

/// One task as the activity list shows it.
pub(crate) struct ActivityRow {
    pub task_id: String,
    pub when: String,
    /// Machine-readable time for `<time datetime>`.
    pub datetime: String,
    pub domain: String,
    pub action: String,
    pub status: &'static str,
    /// "1 credit charged", "1 credit refunded", "1 credit held", "free".
    pub credits: String,
    pub key_prefix: String,
    /// Links, when the task has settled and so has an artifact.
    pub artifact_url: Option<String>,
    pub verify_url: Option<String>,
}

impl ActivityRow {
    fn of(t: &ActivityTask) -> Self {
        let task = &t.task;
        let n = task.cost;
        let amount = if n == 1 {
            "1 credit".to_owned()
        } else {
            format!("{n} credits")
        };
        let credits = match task.status {
            _ if n == 0 => "free".to_owned(),
            TaskStatus::Completed => format!("{amount} charged"),
            TaskStatus::Failed => format!("{amount} refunded"),
            TaskStatus::InFlight => format!("{amount} held"),
        };
        let settled = task.artifact.is_some();
        let link = |what: &str| settled.then(|| format!("/account/activity/{}/{what}", task.id));
        Self {
            task_id: task.id.to_string(),
            when: task.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            datetime: task.created_at.to_rfc3339(),
            domain: task.domain.clone(),
            action: task.action.clone(),
            status: task.status.as_str(),
            credits,
            key_prefix: t
                .key_prefix
                .as_ref()
                .map_or(String::new(), |p| format!("{p}…")),
            artifact_url: link("artifact"),
            verify_url: link("verify"),
        }
    }
}

/// The account page's activity section (`account_activity.html`).
pub(crate) struct ActivitySection {
    pub rows: Vec<ActivityRow>,
    /// Where the older tasks are, when there are more than shown.
    pub more_url: Option<String>,
    pub chart: UsageChart,
}

/// The section for `account`: its newest tasks, and its usage over the last 30 days.
pub(crate) async fn section(
    ctx: &AppContext,
    account: &Account,
    cursor: Option<String>,
    per_page: u32,
) -> Result<ActivitySection, ActivityError> {
    let activity = &ctx.services.activity;
    let page = activity
        .list_tasks(
            &account.id,
            TaskListRequest {
                cursor: cursor.clone(),
                limit: Some(per_page),
                ..TaskListRequest::default()
            },
        )
        .await?;
    let history = activity.usage_history(&account.id, None, None).await?;
    Ok(ActivitySection {
        rows: page.tasks.iter().map(ActivityRow::of).collect(),
        more_url: page
            .next_cursor
            .map(|c| format!("/account/activity?cursor={c}")),
        chart: UsageChart::of(&history),
    })
}

/// The account page's section: the newest tasks, a link to the rest.
pub(crate) async fn account_section(
    ctx: &AppContext,
    account: &Account,
) -> Result<ActivitySection, ActivityError> {
    let mut s = section(ctx, account, None, ON_ACCOUNT_PAGE).await?;
    if s.more_url.is_some() {
        s.more_url = Some("/account/activity".into());
    }
    Ok(s)
}

fn internal(e: ActivityError) -> IdentityFailure {
    IdentityFailure::Internal(anyhow::Error::new(e))
}

#[derive(Template)]
#[template(path = "activity.html")]
struct ActivityPage {
    signed_in_as: Option<String>,
    csrf: String,
    activity: ActivitySection,
    /// Whether this is a later page (then it links back to the first).
    later: bool,
}

#[derive(Deserialize)]
struct PageQuery {
    cursor: Option<String>,
}

#[handler]
async fn activity_page(req: &Request, ctx: Data<&AppContext>, q: Query<PageQuery>) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, "/account/activity");
    };
    match section(&ctx, &account, q.cursor.clone(), PER_PAGE).await {
        Ok(activity) => {
            let page = ActivityPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                activity,
                later: q.cursor.is_some(),
            };
            visit.page(StatusCode::OK, &page)
        }
        Err(ActivityError::Invalid(_)) => visit.message(
            StatusCode::BAD_REQUEST,
            "Page not found",
            "This link to older activity is not one this site made; start again from the newest tasks.",
            Some(("/account/activity", "Newest tasks")),
        ),
        Err(e) => visit.failure(internal(e)),
    }
}

#[derive(Template)]
#[template(path = "artifact_check.html")]
struct VerifyPage {
    signed_in_as: Option<String>,
    csrf: String,
    task_id: String,
    domain: String,
    action: String,
    artifact_id: String,
    artifact_status: String,
    kid: String,
    /// Whether the signature holds, and the sentence that says so.
    valid: bool,
    verdict: String,
    /// The same for a payment's later `verified` artifact.
    verification: Option<(bool, String)>,
    artifact_url: String,
    artifact_json: String,
    jwks_url: String,
}

fn verdict(v: &Result<(), String>) -> (bool, String) {
    match v {
        Ok(()) => (
            true,
            "The signature is valid: this artifact was signed by this service's key and has not been altered.".into(),
        ),
        Err(why) => (false, format!("The signature does not verify: {why}.")),
    }
}

fn not_found(visit: Visit) -> Response {
    visit.message(
        StatusCode::NOT_FOUND,
        "Not found",
        "Your account has no settled task with that id.",
        Some(("/account#activity", "Your activity")),
    )
}

#[handler]
async fn verify_page(req: &Request, ctx: Data<&AppContext>, task_id: Path<String>) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, "/account#activity");
    };
    let check = match ctx
        .services
        .activity
        .check_artifact(&account.id, &task_id)
        .await
    {
        Ok(Some(c)) => c,
        Ok(None) => return not_found(visit),
        Err(e) => return visit.failure(internal(e)),
    };
    let text = |p: &str| {
        check
            .artifact
            .pointer(p)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let (valid, sentence) = verdict(&check.verdict);
    let page = VerifyPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        task_id: check.task.id.to_string(),
        domain: check.task.domain.clone(),
        action: check.task.action.clone(),
        artifact_id: text("/artifact_id"),
        artifact_status: text("/status"),
        kid: text("/signature/kid"),
        valid,
        verdict: sentence,
        verification: check.verification.as_ref().map(|(_, v)| verdict(v)),
        artifact_url: format!("/account/activity/{}/artifact", check.task.id),
        artifact_json: serde_json::to_string_pretty(&check.artifact).unwrap_or_default(),
        jwks_url: format!(
            "{}/.well-known/jwks.json",
            ctx.origins.site_url.trim_end_matches('/')
        ),
    };
    visit.page(StatusCode::OK, &page)
}

/// The signed artifact as JSON, exactly as stored (what `svc artifacts verify` takes).
#[handler]
async fn artifact(req: &Request, ctx: Data<&AppContext>, task_id: Path<String>) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, "/account#activity");
    };
    match ctx
        .services
        .activity
        .check_artifact(&account.id, &task_id)
        .await
    {
        Ok(Some(c)) => {
            let body = c.task.artifact.unwrap_or_default();
            let resp = Response::builder()
                .status(StatusCode::OK)
                .content_type("application/json")
                .header(
                    "content-disposition",
                    format!("inline; filename=\"artifact-{}.json\"", c.task.id),
                )
                .body(body);
            visit.finish(resp)
        }
        Ok(None) => not_found(visit),
        Err(e) => visit.failure(internal(e)),
    }
}

pub(super) fn mount(route: Route) -> Route {
    route
        .at("/account/activity", get(activity_page))
        .at("/account/activity/:task_id/artifact", get(artifact))
        .at("/account/activity/:task_id/verify", get(verify_page))
}
