//! The REST face: poem-openapi handlers, one module per capability, each turning a request into
//! a service call and the service's typed error into problem+json (through `kit`'s one table);
//! and the OpenAPI 3.1 document they describe.

pub mod actions;
pub mod activity;
pub mod auth;
pub mod authority;
pub mod connections;
pub mod document;
pub mod hooks;
pub mod keys;
pub mod meta;
pub mod read;
pub mod readiness;
pub mod sandbox;
pub mod signup;
pub mod telemetry;
pub mod usage;

use poem::IntoEndpoint;
use poem_openapi::OpenApiService;
use serde_json::Value;
use svc_ports::FailureClass;

use kit::{context::AppContext, schema};

#[derive(poem_openapi::Tags)]
pub enum Tags {
    /// Discovering a site's mapped actions and executing one, with signed artifacts.
    Actions,
    /// Reading public pages as clean content, links, forms and metadata.
    Read,
    /// Getting an API key: one-link device flow (RFC 8628) or an emailed code.
    Signup,
    /// Credits, plan and metering of the calling account.
    Usage,
    /// The account's API keys: list, create restricted keys, rotate with an overlap, revoke.
    Keys,
    /// Delegated payment authorities: read them, check one at its revocation URL, revoke it.
    PaymentAuthorities,
    /// Agent traffic events and the conversion funnel.
    Telemetry,
    /// Public audits of a site's readiness for agents.
    Readiness,
    /// The human's accounts on target sites, connected for actions that need them.
    Connections,
    /// Webhooks to the customer's systems: endpoints, the delivery log, the event feed.
    Webhooks,
    /// Health and service metadata.
    Meta,
}

fn api_description(ctx: &AppContext) -> String {
    let policy = ctx.services.usage.policy();
    let mut catalog = String::new();
    for c in FailureClass::ALL {
        catalog.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            c.as_str(),
            c.http_status(),
            c.retryable(),
            c.hint()
        ));
    }
    format!(
        "Agents read public pages, discover and execute mapped site actions, and manage access and credits.\n\n\
         Authenticate with `Authorization: Bearer svc_<API_KEY>`. Errors are RFC 9457 `application/problem+json` \
         with `failure_class`, `retryable`, `retry_after_ms`, `hint` and `next_action`.\n\n\
         Metering: {cost} credit per completed action, failed actions refunded, `Idempotency-Key` kept {hours} h.\n\n\
         Limits: request bodies up to {body} bytes (413 above); {ip} requests per minute per IP and {key} per API key \
         (429 with `Retry-After`).\n\n\
         | failure_class | status | retryable | hint |\n|---|---|---|---|\n{catalog}",
        cost = policy.cost_per_completed_action,
        hours = policy.idempotency_window_hours,
        body = ctx.limits.max_body_bytes,
        ip = ctx.limits.rate_limit_per_ip,
        key = ctx.limits.rate_limit_per_key,
    )
}

type Apis = (
    meta::MetaApi,
    usage::UsageApi,
    read::ReadApi,
    signup::SignupApi,
    actions::ActionsApi,
    telemetry::TelemetryApi,
    readiness::ReadinessApi,
    connections::ConnectionsApi,
    authority::AuthorityApi,
    activity::ActivityApi,
    keys::KeysApi,
    hooks::HooksApi,
);

fn openapi_service(ctx: &AppContext) -> OpenApiService<Apis, ()> {
    OpenApiService::new(
        (
            meta::MetaApi,
            usage::UsageApi { ctx: ctx.clone() },
            read::ReadApi { ctx: ctx.clone() },
            signup::SignupApi { ctx: ctx.clone() },
            actions::ActionsApi { ctx: ctx.clone() },
            telemetry::TelemetryApi { ctx: ctx.clone() },
            readiness::ReadinessApi { ctx: ctx.clone() },
            connections::ConnectionsApi { ctx: ctx.clone() },
            authority::AuthorityApi { ctx: ctx.clone() },
            activity::ActivityApi { ctx: ctx.clone() },
            keys::KeysApi { ctx: ctx.clone() },
            hooks::HooksApi { ctx: ctx.clone() },
        ),
        "Agent action and commerce service",
        env!("CARGO_PKG_VERSION"),
    )
    .description(api_description(ctx))
    .server(ctx.origins.base_url.clone())
}

/// The served OpenAPI 3.1 document.
pub fn openapi_document(ctx: &AppContext) -> Value {
    let generated: Value =
        serde_json::from_str(&openapi_service(ctx).spec()).unwrap_or(Value::Null);
    let mut doc = schema::to_openapi_31(generated);
    // Declared `#[oai(deny_unknown_fields)]`: poem-openapi rejects extra fields but does not say
    // so in the schema.
    for name in document::JSON_BODIES {
        if let Some(schema) = doc
            .pointer_mut(&format!("/components/schemas/{name}"))
            .and_then(Value::as_object_mut)
        {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    document::complete(&mut doc, ctx);
    activity::document(&mut doc);
    doc
}

/// The API's routes, as one endpoint (mounted at `/` by startup).
pub fn api(ctx: &AppContext) -> poem::endpoint::BoxEndpoint<'static> {
    poem::EndpointExt::boxed(poem::EndpointExt::map_to_response(
        openapi_service(ctx).into_endpoint(),
    ))
}
