//! MCP resources: what an agent reads before acting. The llms.txt guide, the OpenAPI document and
//! (in the sandbox) the sandbox guide are fixed documents the composition root hands this face;
//! each domain's published Agent Map is a resource template read through the same service as
//! `discover`.
//!
//! URIs: the fixed documents keep the https URL they are served at, since a client can fetch
//! them from the web itself, as the MCP spec asks of `https://` resource URIs. An Agent Map has
//! no such URL (reading one needs an API key with the discover scope, like `discover`), so its
//! template uses this service's own scheme: `svc://maps/{domain}`.

use kit::{context::AppContext, problem::ApiProblem, wire::actions::discover_json};
use poem_openapi::types::ToJSON;
use rmcp::{
    ErrorData as McpError,
    model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate},
};
use serde_json::{Value, json};
use svc_services::telemetry::Face;

/// The documents served as resources, handed over by the composition root (faces never import
/// one another).
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// The text of `/llms.txt`.
    pub llms_txt: String,
    /// The REST face's OpenAPI 3.1 document.
    pub openapi: Value,
    /// `/.well-known/sandbox.json`; only in the sandbox.
    pub sandbox: Option<Value>,
}

/// The template of a domain's Agent Map.
pub const MAP_TEMPLATE: &str = "svc://maps/{domain}";
const MAP_PREFIX: &str = "svc://maps/";

struct Fixed {
    uri: String,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    mime: &'static str,
    text: String,
}

fn fixed(ctx: &AppContext, docs: &Documents) -> Vec<Fixed> {
    let mut out = vec![
        Fixed {
            uri: format!("{}/llms.txt", ctx.origins.site_url),
            name: "llms.txt",
            title: "Guide for agents",
            description: "What this service does, how to get an API key, and the files and endpoints an \
                agent needs; read it first.",
            mime: "text/markdown",
            text: docs.llms_txt.clone(),
        },
        Fixed {
            uri: format!("{}/openapi.json", ctx.origins.base_url),
            name: "openapi.json",
            title: "OpenAPI 3.1 contract",
            description: "Every REST endpoint, request and answer, with the errors each can give.",
            mime: "application/json",
            text: docs.openapi.to_string(),
        },
    ];
    if let Some(sandbox) = &docs.sandbox {
        out.push(Fixed {
            uri: format!("{}/.well-known/sandbox.json", ctx.origins.site_url),
            name: "sandbox.json",
            title: "Sandbox guide",
            description: "This sandbox's limits, its seeded account and the demo sites to practise on \
                (reading, actions, connections, failures).",
            mime: "application/json",
            text: sandbox.to_string(),
        });
    }
    out
}

/// `resources/list`.
pub fn list(ctx: &AppContext, docs: &Documents) -> Vec<Resource> {
    fixed(ctx, docs)
        .into_iter()
        .map(|f| {
            let size = f.text.len() as u64;
            Resource::new(f.uri, f.name)
                .with_title(f.title)
                .with_description(f.description)
                .with_mime_type(f.mime)
                .with_size(size)
        })
        .collect()
}

/// `resources/templates/list`.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(MAP_TEMPLATE, "agent-map")
            .with_title("A domain's published Agent Map")
            .with_description(
                "The actions a site publishes, as discover returns them: exact names, parameter keys \
                 and types, auth_provider, consequential, scopes and cost. {domain} is the site's host \
                 name. Needs an API key with the discover scope.",
            )
            .with_mime_type("application/json"),
    ]
}

/// `resources/read`.
pub async fn read(
    ctx: &AppContext,
    docs: &Documents,
    uri: &str,
    parts: Option<&http::request::Parts>,
) -> Result<ReadResourceResult, McpError> {
    if let Some(domain) = uri.strip_prefix(MAP_PREFIX) {
        return read_map(ctx, domain, uri, parts).await;
    }
    let found = fixed(ctx, docs).into_iter().find(|f| f.uri == uri);
    match found {
        Some(f) => Ok(ReadResourceResult::new(vec![
            ResourceContents::text(f.text, f.uri).with_mime_type(f.mime),
        ])),
        None => Err(McpError::resource_not_found(
            format!(
                "No resource at {uri}: resources/list names the documents, and Agent Maps are at \
                 {MAP_TEMPLATE}."
            ),
            Some(json!({"uri": uri})),
        )),
    }
}

async fn read_map(
    ctx: &AppContext,
    domain: &str,
    uri: &str,
    parts: Option<&http::request::Parts>,
) -> Result<ReadResourceResult, McpError> {
    let empty = http::Request::new(()).into_parts().0;
    let principal = crate::tools::authenticate(ctx, parts.unwrap_or(&empty))
        .await
        .map_err(|p| problem_error(&p, uri))?;
    let map = ctx
        .services
        .actions
        .discover(&principal, domain, Face::Mcp)
        .await
        .map_err(|e| problem_error(&ApiProblem::from(e), uri))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(discover_json(&map).to_string(), uri)
            .with_mime_type("application/json"),
    ]))
}

/// A refused read as a JSON-RPC error carrying the problem: "resource not found" (-32002) for a
/// domain with no published map, "invalid request" otherwise (a missing key or scope).
fn problem_error(problem: &ApiProblem, uri: &str) -> McpError {
    let body = problem.body();
    let message = format!("{} {}", body.detail, body.hint);
    let mut data = body.to_json().unwrap_or_default();
    data["uri"] = json!(uri);
    if problem.class == svc_ports::FailureClass::UnknownDomain {
        McpError::resource_not_found(message, Some(data))
    } else {
        McpError::invalid_request(message, Some(data))
    }
}
