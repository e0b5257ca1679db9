//! The app: every face mounted behind the edge middleware. The one place that knows all faces;
//! it hands each the others' published documents (OpenAPI, MCP tools, the A2A card).

use std::sync::Arc;

use kit::{
    context::AppContext,
    edge::{self, AllowedMethods, Edge},
    limits::RateLimits,
};
use poem::{Endpoint, EndpointExt, Route, get};

/// Every route of the service behind the edge middleware. `/metrics` is mounted only with a
/// token (`SVC_INTERNAL_TOKEN` when no `SVC_METRICS_BIND` is set), and answers only to it.
pub fn app(
    ctx: AppContext,
    mcp_config: mcp::McpConfig,
    metrics_token: Option<&str>,
) -> poem::endpoint::BoxEndpoint<'static> {
    let published = wellknown::Published {
        openapi: rest::openapi_document(&ctx),
        mcp: mcp::listing(),
        agent_card: a2a::agent_card(&ctx),
    };
    let allowed = Arc::new(AllowedMethods::from_openapi(&published.openapi));
    let limits = RateLimits::new(
        ctx.limits.rate_limit_per_ip,
        ctx.limits.rate_limit_per_key,
        ctx.services.clock.clone(),
    );
    super::jobs::spawn_housekeeping(limits.clone());
    let edge = Edge {
        limits: limits.clone(),
        max_body_bytes: ctx.limits.max_body_bytes,
        proxies: ctx.proxies.clone(),
        www_authenticate: format!(
            "Bearer realm=\"svc\", resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            ctx.origins.base_url
        )
        .into(),
        allowed,
        html_error: Some(web::error_page),
        page_links: Some(wellknown::agents::page_links(&ctx).into()),
    };
    // Probes and metrics: plain routes, not in the public OpenAPI document.
    let mut routes = web::mount(Route::new())
        .at("/health/live", get(rest::meta::live))
        .at("/health/ready", get(rest::meta::ready));
    if let Some(token) = metrics_token {
        routes = routes.at(
            "/metrics",
            get(super::metrics::MetricsEndpoint::guarded(
                ctx.services.clone(),
                token,
            )),
        );
    }
    if let Some(outbox) = ctx.outbox.clone() {
        routes = routes.at(
            "/sandbox/outbox",
            get(rest::sandbox::sandbox_outbox).data(outbox),
        );
    }
    if ctx.environment == svc_ports::Environment::Test {
        routes = routes.at(
            "/sandbox/checkouts",
            poem::post(rest::sandbox::sandbox_checkout),
        );
    }
    routes = routes.at("/index.md", web::index_md(wellknown::llms_text(&ctx)));
    let home = Arc::new(web::home(wellknown::llms_text(&ctx)));
    let mcp_documents = mcp::resources::Documents {
        llms_txt: wellknown::llms_text(&ctx),
        openapi: published.openapi.clone(),
        sandbox: (ctx.environment == svc_ports::Environment::Test)
            .then(|| wellknown::sandbox_limits(&ctx)),
    };
    a2a::mount(wellknown::mount(routes, &ctx, &published))
        .at(
            "/mcp",
            mcp::endpoint(ctx.clone(), mcp_config, mcp_documents),
        )
        // A nest at `/` answers `/` itself (poem's catch-all wins over an exact `/` route), so
        // the landing page is picked out in front of the API.
        .nest(
            "/",
            rest::api(&ctx).around(move |api, req| {
                let home = home.clone();
                async move {
                    if req.uri().path() == "/" {
                        home.call(req).await
                    } else {
                        api.call(req).await.map(poem::IntoResponse::into_response)
                    }
                }
            }),
        )
        .around(edge::edge)
        .data(ctx)
        .data(limits)
        .data(edge)
        .map_to_response()
        .boxed()
}
