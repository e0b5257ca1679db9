//! The webhooks page (`/account/webhooks`, linked from the account page): the signed-in human
//! registers endpoints (the secret shown once), deletes them, reads the delivery log and
//! replays a delivery. Web-session POSTs with CSRF; the decisions are the hook service's.

use askama::Template;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use poem::{
    Request, Response, Route,
    http::StatusCode,
    web::{Data, Form, Query},
};
use serde::Deserialize;
use svc_ports::{Account, DeliveryRecord, DeliveryStatus, HookEventType, WebhookEndpoint};
use svc_services::{
    IdentityFailure,
    hooks::{HookFailure, NewEndpoint},
};

use super::{Visit, check_post, signin_redirect};

const PAGE: &str = "/account/webhooks";

pub(crate) struct EndpointRow {
    id: String,
    url: String,
    events: String,
    description: String,
    created_at: String,
}

impl EndpointRow {
    fn of(e: &WebhookEndpoint) -> Self {
        Self {
            id: e.id.to_string(),
            url: e.url.clone(),
            events: e
                .events
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            description: e.description.clone(),
            created_at: when(e.created_at),
        }
    }
}

pub(crate) struct DeliveryRow {
    id: String,
    event_id: String,
    event_type: &'static str,
    endpoint_url: String,
    status: &'static str,
    attempts: u32,
    /// One sentence on where it stands.
    summary: String,
    created_at: String,
    replayable: bool,
}

impl DeliveryRow {
    fn of(d: &DeliveryRecord) -> Self {
        let answer = match (d.last_status_code, &d.last_error) {
            (Some(code), None) => format!("The endpoint answered HTTP {code}."),
            (_, Some(e)) => format!("Last attempt failed: {e}."),
            (None, None) => "Not attempted yet.".to_owned(),
        };
        let summary = match (d.status, d.next_attempt_at) {
            (DeliveryStatus::Pending, Some(next)) if d.attempts > 0 => {
                format!("{answer} Next try at {}.", when(next))
            }
            (DeliveryStatus::Failed, _) => {
                format!("{answer} Given up: no success within 72 hours.")
            }
            (DeliveryStatus::Canceled, _) => "Canceled: its endpoint was deleted.".to_owned(),
            _ => answer,
        };
        Self {
            id: d.id.to_string(),
            event_id: d.event_id.to_string(),
            event_type: d.event_type.as_str(),
            endpoint_url: d.endpoint_url.clone(),
            status: d.status.as_str(),
            attempts: d.attempts,
            summary,
            created_at: when(d.created_at),
            replayable: d.status != DeliveryStatus::Canceled,
        }
    }
}

fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    signed_in_as: Option<String>,
    csrf: String,
    notice: Option<String>,
    error: Option<String>,
    endpoints: Vec<EndpointRow>,
    deliveries: Vec<DeliveryRow>,
    event_types: Vec<&'static str>,
    /// What the add form held when it was refused.
    url: String,
    description: String,
}

#[derive(Template)]
#[template(path = "webhook_created.html")]
struct CreatedPage {
    signed_in_as: Option<String>,
    csrf: String,
    url: String,
    secret: String,
}

#[derive(Deserialize)]
struct PageQuery {
    notice: Option<String>,
}

async fn render(
    visit: Visit,
    ctx: &AppContext,
    account: &Account,
    notice: Option<String>,
    error: Option<String>,
    form: (String, String),
) -> Response {
    let hooks = &ctx.services.hooks;
    let (endpoints, deliveries) = match (
        hooks.endpoints(&account.id).await,
        hooks.deliveries(&account.id, 50).await,
    ) {
        (Ok(e), Ok(d)) => (e, d),
        (Err(e), _) | (_, Err(e)) => {
            return visit.failure(IdentityFailure::Internal(anyhow::Error::new(e)));
        }
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let page = WebhooksPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        notice,
        error,
        endpoints: endpoints.iter().map(EndpointRow::of).collect(),
        deliveries: deliveries.iter().map(DeliveryRow::of).collect(),
        event_types: HookEventType::ALL.iter().map(|t| t.as_str()).collect(),
        url: form.0,
        description: form.1,
    };
    visit.page(status, &page)
}

#[poem::handler]
async fn show(req: &Request, ctx: Data<&AppContext>, q: Query<PageQuery>) -> Response {
    let visit = visit!(req, &ctx);
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, PAGE);
    };
    let notice = match q.notice.as_deref() {
        Some("deleted") => Some("The endpoint was deleted; nothing more is sent to it.".into()),
        Some("replayed") => {
            Some("The delivery is being sent again, with the same webhook-id.".into())
        }
        _ => None,
    };
    render(visit, &ctx, &account, notice, None, Default::default()).await
}

/// The add form: `url`, `description` and one `event` per ticked box.
#[poem::handler]
async fn create(
    req: &Request,
    ctx: Data<&AppContext>,
    form: Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let visit = visit!(req, &ctx);
    if let Err(refusal) = check_post(req, &ctx, &visit, &field("csrf")) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, PAGE);
    };
    let (url, description) = (field("url"), field("description"));
    let events: Vec<String> = form
        .iter()
        .filter(|(k, _)| k == "event")
        .map(|(_, v)| v.clone())
        .collect();
    let refuse = |visit, message: String| {
        let form = (url.clone(), description.clone());
        render(visit, &ctx, &account, None, Some(message), form)
    };
    if events.is_empty() {
        return refuse(visit, "Choose at least one event to send.".into()).await;
    }
    let new = NewEndpoint {
        url: url.trim(),
        description: Some(&description),
        events: &events,
    };
    match ctx.services.hooks.create_endpoint(&account.id, new).await {
        Ok(created) => {
            let page = CreatedPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                url: created.endpoint.url,
                secret: created.secret,
            };
            visit.page(StatusCode::CREATED, &page)
        }
        Err(HookFailure::UrlRefused(r)) => {
            let message = format!(
                "That URL cannot be called from here ({r}). Give a public http or https address."
            );
            refuse(visit, message).await
        }
        Err(
            e @ (HookFailure::Invalid(_) | HookFailure::NotFound | HookFailure::TooManyReplays(_)),
        ) => refuse(visit, e.to_string()).await,
        Err(HookFailure::Internal(e)) => visit.failure(IdentityFailure::Internal(e)),
    }
}

#[derive(Deserialize)]
struct IdForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
}

#[poem::handler]
async fn delete(req: &Request, ctx: Data<&AppContext>, form: Form<IdForm>) -> Response {
    act(req, &ctx, &form, false).await
}

#[poem::handler]
async fn replay(req: &Request, ctx: Data<&AppContext>, form: Form<IdForm>) -> Response {
    act(req, &ctx, &form, true).await
}

async fn act(req: &Request, ctx: &AppContext, form: &IdForm, again: bool) -> Response {
    let visit = visit!(req, ctx);
    if let Err(refusal) = check_post(req, ctx, &visit, &form.csrf) {
        return visit.finish(*refusal);
    }
    let Some(account) = visit.account.clone() else {
        return signin_redirect(visit, PAGE);
    };
    let hooks = &ctx.services.hooks;
    let (done, to) = if again {
        (
            hooks.replay(&account.id, &form.id).await.map(|_| ()),
            "/account/webhooks?notice=replayed#deliveries",
        )
    } else {
        (
            hooks.delete_endpoint(&account.id, &form.id).await,
            "/account/webhooks?notice=deleted#endpoints",
        )
    };
    match done {
        Ok(()) => visit.redirect(to),
        Err(HookFailure::Internal(e)) => visit.failure(IdentityFailure::Internal(e)),
        Err(e) => {
            render(
                visit,
                ctx,
                &account,
                None,
                Some(e.to_string()),
                Default::default(),
            )
            .await
        }
    }
}

pub(super) fn mount(route: Route) -> Route {
    route
        .at(PAGE, poem::get(show).post(create))
        .at("/account/webhooks/delete", poem::post(delete))
        .at("/account/webhooks/replay", poem::post(replay))
}
