//! The REST face (poem + poem-openapi), the OpenAPI 3.1 document, and the app that mounts
//! every face behind the edge middleware.

pub mod actions;
pub mod auth;
pub mod authority;
pub mod connections;
pub mod limits;
pub mod meta;
pub mod middleware;
pub mod openapi31;
pub mod problem;
pub mod read;
pub mod readiness;
pub mod signup;
pub mod telemetry;
pub mod types;
pub mod usage;

use std::sync::Arc;

use poem::{
    Endpoint, EndpointExt, IntoEndpoint, Response, Route, get, handler,
    http::{HeaderValue, StatusCode, header},
    web::Data,
};
use poem_openapi::OpenApiService;
use serde_json::Value;
use svc_ports::FailureClass;

use crate::{context::AppContext, mcp, wellknown};
use limits::RateLimits;
use middleware::{AllowedMethods, Edge};

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
    /// Delegated payment authorities: read them, check one at its revocation URL, revoke it.
    PaymentAuthorities,
    /// Agent traffic events and the conversion funnel.
    Telemetry,
    /// Public audits of a site's readiness for agents.
    Readiness,
    /// The human's accounts on target sites, connected for actions that need them.
    Connections,
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
        ),
        "Agent action and commerce service",
        env!("CARGO_PKG_VERSION"),
    )
    .description(api_description(ctx))
    .server(ctx.origins.base_url.clone())
}

/// Request bodies declared `#[oai(deny_unknown_fields)]`: poem-openapi rejects extra fields
/// but does not say so in the schema, so the document adds `additionalProperties: false`.
const CLOSED_REQUEST_BODIES: &[&str] = &[
    "ReadBody",
    "RegisterBody",
    "VerifyBody",
    "DeviceAuthorizationJson",
    "DiscoverBody",
    "ExecuteBody",
    "ScanBody",
    "StartConnectionBody",
];

/// The served OpenAPI 3.1 document.
pub fn openapi_document(ctx: &AppContext) -> Value {
    let generated: Value =
        serde_json::from_str(&openapi_service(ctx).spec()).unwrap_or(Value::Null);
    let mut doc = openapi31::to_openapi_31(generated);
    for name in CLOSED_REQUEST_BODIES {
        if let Some(schema) = doc
            .pointer_mut(&format!("/components/schemas/{name}"))
            .and_then(Value::as_object_mut)
        {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    doc
}

/// A self-contained JSON Schema (2020-12, definitions under `$defs`) of a poem-openapi type:
/// MCP `outputSchema`s and the served schema files come from the same types as the REST API.
pub fn json_schema_of<T: poem_openapi::types::Type>() -> Value {
    let mut registry = poem_openapi::registry::Registry::new();
    T::register(&mut registry);
    let defs: serde_json::Map<String, Value> = registry
        .schemas
        .iter()
        .map(|(name, schema)| {
            (
                name.clone(),
                serde_json::to_value(schema).unwrap_or_default(),
            )
        })
        .collect();
    let root = serde_json::to_value(T::schema_ref()).unwrap_or_default();
    let mut schema = serde_json::json!({
        "type": "object",
        "allOf": [root],
        "$defs": defs,
    });
    openapi31::to_json_schema(&mut schema);
    schema
}

/// A discovery file rendered once at start; `Bytes` makes each answer a reference-count bump.
#[derive(Clone)]
struct StaticFile {
    body: bytes::Bytes,
    content_type: &'static str,
    /// The discovery surface a read of this file stands for, in the funnel.
    surface: Option<&'static str>,
    /// Strong validator: SHA-256 of the body.
    etag: HeaderValue,
}

impl StaticFile {
    fn new(body: Vec<u8>, content_type: &'static str) -> Self {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&body);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            body: bytes::Bytes::from(body),
            content_type,
            surface: None,
            etag: HeaderValue::from_str(&format!("\"{hex}\""))
                .unwrap_or(HeaderValue::from_static("\"0\"")),
        }
    }
}

/// Discovery files: cacheable (`ETag`, `Cache-Control`, 304 on a matching `If-None-Match`) and
/// readable from any origin (CORS).
#[handler]
fn serve_static(req: &poem::Request, file: Data<&StaticFile>, ctx: Data<&AppContext>) -> Response {
    if let Some(surface) = file.surface {
        let who = middleware::client_ip_of(req, ctx.limits.trust_forwarded_for)
            .map(|ip| ip.to_string())
            .unwrap_or_default();
        ctx.services.telemetry.record(
            crate::services::telemetry::FunnelStep::new(
                crate::services::telemetry::Face::File(surface),
                "discovered",
                "discovery",
                &who,
            )
            .capability(req.uri().path()),
        );
    }
    let matches = req.header(header::IF_NONE_MATCH).is_some_and(|v| {
        v.split(',')
            .any(|t| t.trim() == file.etag || t.trim() == "*")
    });
    let builder = Response::builder()
        .header(header::ETAG, file.etag.clone())
        .header(header::CACHE_CONTROL, "public, max-age=300")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(header::ACCESS_CONTROL_EXPOSE_HEADERS, "ETag");
    if matches {
        return builder.status(StatusCode::NOT_MODIFIED).finish();
    }
    builder
        .status(StatusCode::OK)
        .content_type(file.content_type)
        .body(file.body.clone())
}

/// `POST /sandbox/checkouts` (sandbox only, test key): opens a checkout for the key's account
/// as the signed-in customer would, so QA scenarios can drive the provider's events.
#[handler]
async fn sandbox_checkout(req: &poem::Request, ctx: Data<&AppContext>) -> Response {
    let principal = match ctx
        .services
        .auth
        .authenticate_header(req.header(header::AUTHORIZATION))
        .await
    {
        Ok(p) => p,
        Err(e) => return problem::ApiProblem::from(e).render("Bearer"),
    };
    let key = req
        .header("idempotency-key")
        .map(str::to_owned)
        .unwrap_or_else(|| format!("qa-{}", ulid::Ulid::new()));
    match ctx
        .services
        .billing
        .create_checkout(&principal.account, "starter", Some(&key))
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
        Err(e) => problem::ApiProblem::from(e).render("Bearer"),
    }
}

fn json_file(value: &Value) -> impl Endpoint + use<> {
    let bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    get(serve_static).data(StaticFile::new(bytes, "application/json"))
}

/// A discovery file whose reads count in the funnel under `surface`.
fn discovery_file(value: &Value, surface: &'static str) -> impl Endpoint + use<> {
    let bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    let mut file = StaticFile::new(bytes, "application/json");
    file.surface = Some(surface);
    get(serve_static).data(file)
}

fn text_file(text: String) -> impl Endpoint + use<> {
    get(serve_static).data(StaticFile::new(
        text.into_bytes(),
        "text/plain; charset=utf-8",
    ))
}

/// Every route of the service behind the edge middleware.
pub fn app(
    ctx: AppContext,
    mcp_config: mcp::McpConfig,
) -> impl Endpoint<Output = Response> + use<> {
    let document = openapi_document(&ctx);
    let allowed = Arc::new(AllowedMethods::from_openapi(&document));
    let limits = RateLimits::with_scans(
        ctx.limits.rate_limit_per_ip,
        ctx.limits.rate_limit_per_key,
        ctx.limits.scan_rate_limit_per_ip,
    );
    spawn_housekeeping(limits.clone());
    let edge = Edge {
        limits: limits.clone(),
        max_body_bytes: ctx.limits.max_body_bytes,
        trust_forwarded_for: ctx.limits.trust_forwarded_for,
        www_authenticate: format!(
            "Bearer realm=\"svc\", resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            ctx.origins.base_url
        )
        .into(),
        allowed,
    };
    let tools_manifest = wellknown::tools_manifest(&ctx);
    let authorization_server = wellknown::oauth_authorization_server(&ctx);
    let protected_resource = wellknown::oauth_protected_resource(&ctx);
    let agent_card = crate::a2a::agent_card(&ctx);
    let jwks = ctx.services.actions.jwks();
    let action_catalog = wellknown::action_catalog();
    let artifact_schema = wellknown::payment_artifact_schema(&ctx);
    let llms = wellknown::llms_txt(&ctx);
    let llms_full = wellknown::llms_full_txt(&ctx, &document);
    let server_card = wellknown::mcp_server_card(&ctx);
    let mcp_server_card_path = format!(
        "{}/server-card",
        ctx.origins
            .mcp_url
            .strip_prefix(&ctx.origins.base_url)
            .filter(|p| p.starts_with('/'))
            .unwrap_or("/mcp")
    );
    let mut routes = crate::web::mount(Route::new());
    if let Some(outbox) = ctx.outbox.clone() {
        routes = routes.at("/sandbox/outbox", get(sandbox_outbox).data(outbox));
    }
    if ctx.environment == svc_ports::Environment::Test {
        routes = routes.at("/sandbox/checkouts", poem::post(sandbox_checkout));
    }
    routes
        .at("/openapi.json", discovery_file(&document, "openapi_spec"))
        .at(
            "/.well-known/openapi.json",
            discovery_file(&document, "openapi_spec"),
        )
        .at(
            "/.well-known/mcp/tools.json",
            discovery_file(&tools_manifest, "mcp_registry"),
        )
        .at(
            "/.well-known/oauth-authorization-server",
            json_file(&authorization_server),
        )
        .at(
            "/.well-known/oauth-protected-resource",
            json_file(&protected_resource),
        )
        .at("/mcp", mcp::endpoint(ctx.clone(), mcp_config))
        .at("/a2a", crate::a2a::endpoint())
        .at(
            "/.well-known/agent-card.json",
            discovery_file(&agent_card, "a2a_agent_card"),
        )
        .at(
            "/.well-known/agent.json",
            discovery_file(&agent_card, "a2a_agent_card"),
        )
        .at("/.well-known/jwks.json", json_file(&jwks))
        .at("/llms.txt", {
            let mut file = StaticFile::new(llms.into_bytes(), "text/plain; charset=utf-8");
            file.surface = Some("llms_txt");
            get(serve_static).data(file)
        })
        .at("/robots.txt", text_file(wellknown::robots_txt(&ctx)))
        .at(
            "/sitemap.xml",
            get(serve_static).data(StaticFile::new(
                wellknown::sitemap_xml(&ctx).into_bytes(),
                "application/xml",
            )),
        )
        .at("/llms-full.txt", text_file(llms_full))
        .at(
            "/.well-known/mcp/server-card.json",
            discovery_file(&server_card, "mcp_registry"),
        )
        .at(
            &mcp_server_card_path,
            discovery_file(&server_card, "mcp_registry"),
        )
        .at(
            "/.well-known/mcp/catalog.json",
            discovery_file(&wellknown::mcp_catalog(&ctx), "mcp_registry"),
        )
        .at(
            "/.well-known/mcp/apps.json",
            json_file(&wellknown::mcp_apps(&ctx)),
        )
        .at(
            "/.well-known/sandbox.json",
            json_file(&wellknown::sandbox_limits(&ctx)),
        )
        .at(
            "/.well-known/agent-traffic-event.schema.json",
            json_file(&wellknown::agent_traffic_event_schema(&ctx)),
        )
        .at(
            "/.well-known/payment-authority.schema.json",
            json_file(&wellknown::payment_authority_schema(&ctx)),
        )
        .at(
            "/.well-known/action-catalog.json",
            json_file(&action_catalog),
        )
        .at(
            "/.well-known/agent-commerce.json",
            discovery_file(&wellknown::agent_commerce(&ctx), "agents_json"),
        )
        .at(
            "/.well-known/payment-protocols.json",
            json_file(&wellknown::payment_protocols(&ctx)),
        )
        .at(
            "/.well-known/payment-artifact.schema.json",
            json_file(&artifact_schema),
        )
        // A nest at `/` answers `/` itself (poem's catch-all wins over an exact `/` route), so
        // the landing page is picked out in front of the API.
        .nest(
            "/",
            openapi_service(&ctx)
                .into_endpoint()
                .around(|api, req| async move {
                    if req.uri().path() == "/" {
                        crate::web::home().call(req).await
                    } else {
                        api.call(req).await.map(poem::IntoResponse::into_response)
                    }
                }),
        )
        .around(middleware::edge)
        .data(ctx)
        .data(limits)
        .data(edge)
        .map_to_response()
        .into_endpoint()
}

#[derive(serde::Deserialize)]
struct OutboxQuery {
    to: Option<String>,
}

/// The sandbox's outbox, newest first; `?to=` keeps one recipient's mail.
#[handler]
fn sandbox_outbox(
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

fn spawn_housekeeping(limits: RateLimits) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                tick.tick().await;
                limits.housekeep();
            }
        });
    }
}
