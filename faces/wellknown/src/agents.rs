//! The agent-facing discovery documents beyond the contract's list: the API catalog (RFC 9727),
//! the MCP server card in SEP-2127's shape at every path clients look, the agent-skills index
//! with its skills as files (each digest computed from the bytes served), and the Web Bot Auth
//! key directory.

use poem::{
    EndpointExt, Request, Response, Route, get, handler,
    http::{HeaderValue, StatusCode, header},
    web::Data,
};
use serde_json::{Value, json};
use sha2::Digest;

use kit::{context::AppContext, wire::discovery::McpListing};

use crate::files::{StaticFile, serve_static};

/// RFC 9727's media type of the API catalog, with the profile it asks for.
pub const LINKSET: &str =
    "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"";
/// The Web Bot Auth key directory's media type.
pub const DIRECTORY: &str = "application/http-message-signatures-directory+json";
/// The MCP protocol versions the server speaks (the same list the tools manifest gives).
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];

/// `/.well-known/api-catalog` (RFC 9727): one linkset entry per API this site offers, each
/// anchored at the API and linking its machine-readable description and its documentation.
pub fn api_catalog(ctx: &AppContext) -> Value {
    let (site, base, mcp) = (
        &ctx.origins.site_url,
        &ctx.origins.base_url,
        &ctx.origins.mcp_url,
    );
    let doc = |path: &str| json!([{"href": format!("{site}{path}"), "type": "text/markdown"}]);
    json!({
        "linkset": [
            {
                "anchor": format!("{base}/api"),
                "service-desc": [{"href": format!("{base}/openapi.json"), "type": "application/vnd.oai.openapi+json;version=3.1"}],
                "service-doc": doc("/llms.txt"),
                "service-meta": [{"href": format!("{base}/.well-known/oauth-protected-resource"), "type": "application/json"}],
                "status": [{"href": format!("{base}/health"), "type": "application/json"}]
            },
            {
                "anchor": mcp,
                "service-desc": [{"href": format!("{site}/.well-known/mcp/server-card.json"), "type": "application/json"}],
                "service-doc": doc("/llms-full.txt"),
                "service-meta": [{"href": format!("{site}/.well-known/mcp/tools.json"), "type": "application/json"}]
            },
            {
                "anchor": format!("{base}/a2a"),
                "service-desc": [{"href": format!("{site}/.well-known/agent-card.json"), "type": "application/json"}],
                "service-doc": doc("/llms.txt")
            }
        ]
    })
}

/// The `Link` header value every page carries (RFC 8288): where an agent finds the catalog,
/// the API description, its documentation and the MCP server card.
pub fn page_links(ctx: &AppContext) -> String {
    let (site, base) = (&ctx.origins.site_url, &ctx.origins.base_url);
    [
        format!("<{site}/.well-known/api-catalog>; rel=\"api-catalog\""),
        format!(
            "<{base}/openapi.json>; rel=\"service-desc\"; type=\"application/vnd.oai.openapi+json;version=3.1\""
        ),
        format!("<{site}/llms.txt>; rel=\"service-doc\"; type=\"text/markdown\""),
        format!(
            "<{site}/.well-known/mcp/server-card.json>; rel=\"describedby\"; type=\"application/json\""
        ),
        format!("<{site}/index.md>; rel=\"alternate\"; type=\"text/markdown\""),
    ]
    .join(", ")
}

/// The server card's reverse-DNS namespace: the site's host reversed
/// (`svc.example.com` -> `com.example.svc`); a host that is not a dotted name (an address,
/// `localhost`) falls back to `local.svc`.
fn reverse_dns(site: &str) -> String {
    let host = url::Url::parse(site)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default();
    let dotted = host.contains('.') && host.parse::<std::net::IpAddr>().is_err();
    if !dotted {
        return "local.svc".into();
    }
    host.rsplit('.').collect::<Vec<_>>().join(".")
}

/// The MCP server card in SEP-2127's shape (`$schema`, reverse-DNS `name`, `version`,
/// `remotes`, `capabilities`, static `tools`), served at `/.well-known/mcp/server-card`,
/// `/.well-known/mcp/server-card.json`, `/.well-known/mcp.json` and `{mcp_url}/server-card`.
pub fn mcp_server_card(ctx: &AppContext, mcp: &McpListing) -> Value {
    let tools: Vec<Value> = mcp.tools.iter().map(|t| t.tool.clone()).collect();
    let without_key: Vec<&str> = mcp
        .tools
        .iter()
        .filter(|t| !t.requires_api_key)
        .map(|t| t.name.as_str())
        .collect();
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
        "name": format!("{}/mcp", reverse_dns(&ctx.origins.site_url)),
        "version": env!("CARGO_PKG_VERSION"),
        "title": "Agent action and commerce service",
        "description": "Read public web pages, discover the actions learned for a site, execute one with a signed verification artifact, sign up for a key and buy credits.",
        "websiteUrl": ctx.origins.site_url,
        "remotes": [{
            "type": "streamable-http",
            "url": ctx.origins.mcp_url,
            "supportedProtocolVersions": PROTOCOL_VERSIONS,
            "headers": [{
                "name": "Authorization",
                "description": "Bearer svc_<API_KEY>; the signup tools and svc_auth_status work without it",
                "isRequired": false,
                "isSecret": true
            }],
            "authentication": {"required": false, "schemes": ["bearer"]}
        }],
        "capabilities": {"tools": {"listChanged": false}, "resources": {"listChanged": false}},
        "tools": tools,
        "_meta": {
            "io.svc/withoutKey": without_key,
            "io.svc/protectedResourceMetadata": format!("{}/.well-known/oauth-protected-resource", ctx.origins.base_url),
            "io.svc/documentation": format!("{}/llms.txt", ctx.origins.site_url),
            "io.svc/instructions": mcp.instructions,
        }
    })
}

/// One skill: its name (the directory under `/.well-known/agent-skills/`), what it is for,
/// and its `SKILL.md`.
struct Skill {
    name: &'static str,
    description: &'static str,
    body: String,
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    // The description as a double-quoted (JSON) string: valid YAML whatever it holds.
    let description = serde_json::to_string(description).unwrap_or_default();
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}")
}

fn skills(ctx: &AppContext) -> Vec<Skill> {
    let (site, base, mcp) = (
        &ctx.origins.site_url,
        &ctx.origins.base_url,
        &ctx.origins.mcp_url,
    );
    let auth =
        "Send `Authorization: Bearer svc_<API_KEY>`. No key yet? Use the `sign-up` skill first.";
    vec![
        Skill {
            name: "read-web-pages",
            description: "Read a public web page as clean Markdown or text with its links, forms and metadata. Use when you need a page's content without running a browser.",
            body: format!(
                "# Read a web page\n\n{auth}\n\n\
                 - REST: `GET {base}/api/read?url=https://example.com/` (or `POST {base}/api/read` with `{{\"url\": ...}}`); \
                 options `format` (`markdown`, `text`, `html`), `main_content_only`, `include_selectors`, `exclude_selectors`, `max_age` (seconds).\n\
                 - MCP: the tool `read_page` at {mcp}.\n\n\
                 The answer has `markdown`, `text`, `links`, `forms`, `metadata`, a content hash and the cache state. A page that is a captcha, \
                 a sign-in wall, refused by robots.txt, an error status or not text comes back as `outcome: \"blocked\"` with a `reason`: \
                 never treat it as page text. robots.txt is always honoured and private addresses are refused.\n\n\
                 Errors are problem+json with `failure_class`, `retryable`, `hint` and `next_action`; follow `next_action`.\n"
            ),
        },
        Skill {
            name: "discover-actions",
            description: "Find which actions (search, order, book...) the service has learned for a website, with their parameters. Use before executing an action on a site.",
            body: format!(
                "# Discover a site's actions\n\n{auth}\n\n\
                 1. `GET {base}/api/domains` lists every domain with a published Agent Map (MCP: `list_domains`).\n\
                 2. `GET {base}/api/discover?domain=shop.example` gives the domain's actions, each with its JSON Schema of params, \
                 whether it is consequential, its cost and its `auth_provider` if it needs a connected account (MCP: `discover`, `list_actions`).\n\n\
                 An `unknown_domain` answer means no map is published for it: read the site instead (`read-web-pages`). \
                 An action with an `auth_provider` needs the human to connect that account first: `POST {base}/api/connections/{{provider}}/start`, \
                 show them `connect_url`, poll `GET {base}/api/connections/{{provider}}/poll`.\n"
            ),
        },
        Skill {
            name: "execute-actions",
            description: "Run one mapped action on a website (search, add to cart, place an order) and get a typed result with an Ed25519-signed verification artifact. Use after discover-actions.",
            body: format!(
                "# Execute an action\n\n{auth}\n\n\
                 `POST {base}/api/execute` with `{{\"domain\": ..., \"action\": ..., \"params\": {{...}}}}` and an `Idempotency-Key` header \
                 (MCP: `execute`). Params are checked against the action's schema; the outcome is verified by the map's rules, never assumed.\n\n\
                 - Completed: about one credit is charged; the answer holds the typed result and a signed `artifact` \
                 (verify it with the keys at {site}/.well-known/jwks.json).\n\
                 - Failed: nothing is charged; the answer holds the problem and the failure's artifact.\n\
                 - Retries with the same `Idempotency-Key` never charge twice.\n\
                 - Consequential actions (orders, bookings, payments) need the `execute:consequential` scope, which only a human grants; \
                 actions that pay need `authority_id`, a payment authority the human creates at {site}/account.\n\
                 - `GET {base}/api/tasks/{{task_id}}` returns a task and its artifact later.\n"
            ),
        },
        Skill {
            name: "sign-up",
            description: "Get an API key for this service: the one-link device flow (a human approves once) or an email-code fallback. Use when you have no key or a call answers 401.",
            body: format!(
                "# Sign up for an API key\n\n\
                 Show the human the terms ({site}/terms) and privacy policy ({site}/privacy) first.\n\n\
                 ## Preferred: one link\n\n\
                 1. MCP tool `svc_start_claim_link_signup` at {mcp}, or `POST {base}/agent/identity` (RFC 8628 device authorization).\n\
                 2. Show the human only `verification_uri_complete`.\n\
                 3. Poll `svc_poll_claim_link_signup` with `deviceCode`, or `POST {base}/oauth2/token` with \
                 `grant_type=urn:ietf:params:oauth:grant-type:device_code`, while the answer is `authorization_pending`.\n\
                 4. Store the key securely; send the `welcome_message` in the conversation.\n\n\
                 ## Fallback: email code\n\n\
                 `POST {base}/api/register` with the human's email, then `POST {base}/api/verify` with the code they received \
                 (MCP: `svc_start_api_key_signup`, `svc_complete_api_key_signup`).\n\n\
                 A new account gets free credits to try an action. More credits: the MCP tool `svc_create_checkout_session` returns a \
                 `handoff_url` for the human; credits arrive once the payment provider's signed webhook is verified.\n\n\
                 Metadata: {base}/.well-known/oauth-authorization-server and {base}/.well-known/oauth-protected-resource.\n"
            ),
        },
    ]
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `/.well-known/agent-skills/index.json` (Agent Skills Discovery 0.2.0) and the skills' files:
/// each entry's `digest` is the SHA-256 of the very bytes served at its `url`.
fn skills_index(ctx: &AppContext, skills: &[(Skill, Vec<u8>)]) -> Value {
    let entries: Vec<Value> = skills
        .iter()
        .map(|(skill, bytes)| {
            json!({
                "name": skill.name,
                "type": "skill-md",
                "description": skill.description,
                "url": format!("{}/.well-known/agent-skills/{}/SKILL.md", ctx.origins.site_url, skill.name),
                "digest": format!("sha256:{}", sha256_hex(bytes)),
            })
        })
        .collect();
    json!({
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": entries,
    })
}

/// `/.well-known/http-message-signatures-directory`: the keys that sign the service's
/// outbound requests, with one possession proof per key over the authority it was fetched at.
#[handler]
fn bot_directory(req: &Request, ctx: Data<&AppContext>) -> Response {
    // Mounted only when a directory exists (see `mount`).
    let Some(directory) = ctx.bot_directory.as_ref() else {
        return Response::builder().status(StatusCode::NOT_FOUND).finish();
    };
    let body = directory.jwks();
    let authority = req
        .header(header::HOST)
        .map(str::to_ascii_lowercase)
        .or_else(|| {
            req.uri()
                .authority()
                .map(|a| a.as_str().to_ascii_lowercase())
        })
        .unwrap_or_default();
    let created = ctx.services.clock.now().timestamp().max(0) as u64;
    let proof = directory.proof(&authority, &body, created);
    let mut builder = Response::builder()
        .status(StatusCode::OK)
        .content_type(DIRECTORY)
        .header(header::CACHE_CONTROL, "public, max-age=3600")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(header::VARY, "Host");
    for (name, value) in [
        ("content-digest", proof.content_digest),
        ("signature-input", proof.signature_input),
        ("signature", proof.signature),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            builder = builder.header(name, v);
        }
    }
    builder.body(body)
}

/// Mounts the documents of this module on `route`.
pub fn mount(route: Route, ctx: &AppContext) -> Route {
    let skills: Vec<(Skill, Vec<u8>)> = skills(ctx)
        .into_iter()
        .map(|s| {
            let bytes = skill_md(s.name, s.description, &s.body).into_bytes();
            (s, bytes)
        })
        .collect();
    let index = serde_json::to_vec_pretty(&skills_index(ctx, &skills)).unwrap_or_default();
    // RFC 9727 section 3: the catalog names itself with `rel="api-catalog"`, so a HEAD finds it.
    let itself = format!(
        "<{}/.well-known/api-catalog>; rel=\"api-catalog\"",
        ctx.origins.site_url
    );
    let mut route = route.at(
        "/.well-known/api-catalog",
        get(serve_static)
            .data(StaticFile::new(
                serde_json::to_vec_pretty(&api_catalog(ctx)).unwrap_or_default(),
                LINKSET,
            ))
            .with(poem::middleware::SetHeader::new().overriding(header::LINK, itself)),
    );
    // With `SVC_WEB_BOT_AUTH=off` nothing is signed, so no key set is claimed either.
    if ctx.bot_directory.is_some() {
        route = route.at(
            "/.well-known/http-message-signatures-directory",
            get(bot_directory),
        );
    }
    for path in [
        "/.well-known/agent-skills/index.json",
        "/.well-known/skills/index.json",
    ] {
        route = route.at(
            path,
            get(serve_static).data(StaticFile::new(index.clone(), "application/json")),
        );
    }
    for (skill, bytes) in &skills {
        for prefix in ["/.well-known/agent-skills", "/.well-known/skills"] {
            route = route.at(
                format!("{prefix}/{}/SKILL.md", skill.name),
                get(serve_static).data(StaticFile::new(
                    bytes.clone(),
                    "text/markdown; charset=utf-8",
                )),
            );
        }
    }
    route
}

#[cfg(test)]
mod tests {
    use super::reverse_dns;

    #[test]
    fn the_card_name_is_the_site_host_reversed() {
        assert_eq!(reverse_dns("https://svc.example.com"), "com.example.svc");
        assert_eq!(
            reverse_dns("http://svc.sandbox.test:8080"),
            "test.sandbox.svc"
        );
        assert_eq!(reverse_dns("http://127.0.0.1:8080"), "local.svc");
        assert_eq!(reverse_dns("http://localhost:8080"), "local.svc");
    }
}
