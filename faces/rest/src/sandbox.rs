//! The sandbox's own routes: its outbox (`GET /sandbox/outbox`) and a checkout for QA
//! (`POST /sandbox/checkouts`). Startup mounts them only in the sandbox.

use std::sync::Arc;

use poem::{
    Response, handler,
    http::{StatusCode, header},
    web::Data,
};

use kit::{context::AppContext, problem::ApiProblem};

/// `POST /sandbox/checkouts` (sandbox only, test key): opens a checkout for the key's account
/// as the signed-in customer would, so QA scenarios can drive the provider's events.
#[handler]
pub async fn sandbox_checkout(req: &poem::Request, ctx: Data<&AppContext>) -> Response {
    let principal = match ctx
        .services
        .auth
        .authenticate_header(req.header(header::AUTHORIZATION))
        .await
    {
        Ok(p) => p,
        Err(e) => return ApiProblem::from(e).render("Bearer"),
    };
    // A key past visible ASCII is not dropped (a retry would open a second checkout): the
    // service refuses it (checkout keys are printable ASCII).
    let key = match kit::headers::idempotency_key(req) {
        Ok(Some(key)) => key,
        Ok(None) => format!("qa-{}", ulid::Ulid::new()),
        Err(refused) => return refused.render("Bearer"),
    };
    match ctx
        .services
        .billing
        .create_checkout(
            &principal.account,
            "starter",
            Some(&key),
            "sandbox_checkout",
        )
        .await
    {
        Ok(started) => Response::builder()
            .status(StatusCode::CREATED)
            .content_type("application/json")
            .body(
                serde_json::json!({
                    "checkout_id": started.checkout.id.as_str(),
                    "checkout_url": started.checkout.checkout_url,
                    "provider_session_id": started.checkout.provider_session_id,
                })
                .to_string(),
            ),
        Err(e) => ApiProblem::from(e).render("Bearer"),
    }
}

#[derive(serde::Deserialize)]
struct OutboxQuery {
    to: Option<String>,
}

/// The sandbox's outbox, newest first; `?to=` keeps one recipient's mail.
#[handler]
pub fn sandbox_outbox(
    outbox: Data<&Arc<dyn svc_ports::Outbox>>,
    query: poem::web::Query<OutboxQuery>,
) -> Response {
    let messages: Vec<_> = outbox
        .sent()
        .into_iter()
        .filter(|m| {
            query
                .to
                .as_deref()
                .is_none_or(|to| m.to.eq_ignore_ascii_case(to.trim()))
        })
        .collect();
    let body = serde_json::json!({ "messages": messages });
    Response::builder()
        .status(StatusCode::OK)
        .content_type("application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(body.to_string())
}
