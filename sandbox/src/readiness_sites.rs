//! Sites for the readiness scan: one wiremock server that answers, by `Host`, for an
//! agent-ready site (`ready.sandbox.test`) and for one site per check that lacks exactly that
//! thing (`lacks-llms-txt.sandbox.test`, ...). A scan of the ready site passes every check; a
//! scan of a lacking site fails exactly the check named in its host.

use std::net::SocketAddr;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

pub const READY_HOST: &str = "ready.sandbox.test";

/// What each lacking site leaves out, by the id of the check that must fail.
pub const LACKING: &[&str] = &[
    "robots_txt",
    "sitemap",
    "llms_txt",
    "llms_full_txt",
    "openapi",
    "mcp_discovery",
    "mcp_probe",
    "a2a_agent_card",
    "oauth_protected_resource",
    "markdown",
    "structured_data",
    "forms",
    "commerce_files",
];

/// The host of the site that lacks what `check` looks for.
pub fn lacking_host(check: &str) -> String {
    format!("lacks-{}.sandbox.test", check.replace('_', "-"))
}

pub struct ReadinessSites {
    server: MockServer,
}

impl ReadinessSites {
    pub async fn start() -> Self {
        let server = MockServer::builder()
            .disable_request_recording()
            .start()
            .await;
        Mock::given(any()).respond_with(Site).mount(&server).await;
        Self { server }
    }

    pub fn address(&self) -> SocketAddr {
        *self.server.address()
    }

    /// Every host this server answers for.
    pub fn hosts(&self) -> Vec<String> {
        std::iter::once(READY_HOST.to_owned())
            .chain(LACKING.iter().map(|c| lacking_host(c)))
            .collect()
    }

    /// `http://{host}:{port}` of one of the hosts.
    pub fn origin(&self, host: &str) -> String {
        format!("http://{host}:{}", self.address().port())
    }
}

struct Site;

fn text(status: u16, content_type: &str, body: impl Into<String>) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body.into().into_bytes(), content_type)
}

fn json_answer(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn not_found() -> ResponseTemplate {
    text(404, "text/plain", "not found")
}

impl Respond for Site {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let host_header = request
            .headers
            .get("host")
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let host = host_header.split(':').next().unwrap_or_default();
        let lacks = host
            .strip_prefix("lacks-")
            .and_then(|h| h.strip_suffix(".sandbox.test"))
            .map(|c| c.replace('-', "_"))
            .unwrap_or_default();
        if host != READY_HOST && !LACKING.contains(&lacks.as_str()) {
            return not_found();
        }
        let origin = format!("http://{host_header}");
        let lacking = |check: &str| lacks == check;
        let accept = request
            .headers
            .get("accept")
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let method = request.method.as_str();
        match (method, request.url.path()) {
            ("GET", "/robots.txt") if !lacking("robots_txt") => {
                let sitemap = if lacking("sitemap") {
                    String::new()
                } else {
                    format!("Sitemap: {origin}/sitemap.xml\n")
                };
                text(
                    200,
                    "text/plain",
                    format!(
                        "User-agent: GPTBot\nUser-agent: ClaudeBot\nAllow: /\n\nUser-agent: *\nDisallow: /private\n\n{sitemap}"
                    ),
                )
            }
            ("GET", "/sitemap.xml") if !lacking("sitemap") => text(
                200,
                "application/xml",
                format!(
                    "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>{origin}/</loc></url><url><loc>{origin}/pricing</loc></url></urlset>"
                ),
            ),
            ("GET", "/llms.txt") if !lacking("llms_txt") => text(
                200,
                "text/plain",
                format!(
                    "# Example Tea Shop\n\n> Loose-leaf tea, sold online and through agents.\n\n## API\n\n- [OpenAPI]({origin}/openapi.json): the shop's API\n- [MCP server card]({origin}/.well-known/mcp/server-card.json)\n\n## Optional\n\n- [Everything]({origin}/llms-full.txt)\n"
                ),
            ),
            ("GET", "/llms-full.txt") if !lacking("llms_full_txt") => text(
                200,
                "text/plain",
                format!(
                    "# Example Tea Shop\n\n> Loose-leaf tea.\n\n## Search\n\nGET {origin}/api/products?q=... lists teas by name. Each has a sku, a name, a price in cents and whether it is in stock.\n\n## Order\n\nPOST {origin}/api/orders with a sku and a quantity places an order, paid on delivery.\n"
                ),
            ),
            ("GET", "/openapi.json") if !lacking("openapi") => json_answer(json!({
                "openapi": "3.1.0",
                "info": {"title": "Example Tea Shop", "version": "1.0.0"},
                "servers": [{"url": origin}],
                "paths": {"/api/products": {"get": {
                    "operationId": "searchProducts",
                    "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "Matching teas"}}
                }}}
            })),
            ("GET", "/.well-known/mcp/server-card.json") if !lacking("mcp_discovery") => {
                json_answer(json!({
                    "serverInfo": {"name": "tea-shop", "version": "1.0.0"},
                    "transport": {"type": "streamable-http", "url": format!("{origin}/mcp")},
                    "capabilities": {"tools": {}}
                }))
            }
            ("GET", "/.well-known/mcp/tools.json") if !lacking("mcp_discovery") => json_answer(
                json!({"tools": [{"name": "search_teas", "description": "Search teas"}]}),
            ),
            ("POST", "/mcp") if !lacking("mcp_probe") => mcp(request),
            ("GET", "/.well-known/agent-card.json" | "/.well-known/agent.json")
                if !lacking("a2a_agent_card") =>
            {
                json_answer(json!({
                    "name": "Example Tea Shop",
                    "description": "Finds teas",
                    "url": format!("{origin}/a2a"),
                    "version": "1.0.0",
                    "skills": [{"id": "search", "name": "Search teas"}]
                }))
            }
            ("GET", "/.well-known/oauth-protected-resource")
                if !lacking("oauth_protected_resource") =>
            {
                json_answer(json!({"resource": origin, "authorization_servers": [origin]}))
            }
            ("GET", "/.well-known/agent-commerce.json" | "/.well-known/payment-protocols.json")
                if !lacking("commerce_files") =>
            {
                json_answer(json!({"merchant": "Example Tea Shop", "currencies": ["usd"]}))
            }
            ("GET", "/") if accept.contains("text/markdown") && !lacking("markdown") => text(
                200,
                "text/markdown; charset=utf-8",
                "# Example Tea Shop\n\nLoose-leaf tea.\n",
            ),
            ("GET", "/") => text(200, "text/html; charset=utf-8", home_page(&lacks)),
            _ => not_found(),
        }
    }
}

fn home_page(lacks: &str) -> String {
    let json_ld = if lacks == "structured_data" {
        ""
    } else {
        r#"<script type="application/ld+json">{"@context":"https://schema.org","@type":"Store","name":"Example Tea Shop"}</script>"#
    };
    let form = if lacks == "forms" {
        // Script-driven inputs: no names, no labels, nothing an agent could fill.
        r#"<form onsubmit="return send()"><input type="text" placeholder="?"><input type="text"><div onclick="send()">Go</div></form>"#
    } else {
        r#"<form method="get" action="/search"><label for="q">Tea name</label><input id="q" name="q" type="search"><button type="submit">Search</button></form>"#
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Example Tea Shop</title>{json_ld}</head><body><h1>Example Tea Shop</h1><p>Loose-leaf tea, sold online.</p>{form}</body></html>"
    )
}

/// A minimal Streamable HTTP MCP server: `initialize`, `notifications/initialized` and
/// `tools/list`; anything else is a JSON-RPC error.
fn mcp(request: &Request) -> ResponseTemplate {
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return text(400, "text/plain", "not JSON");
    };
    let id = message.get("id").cloned();
    match message["method"].as_str() {
        Some("initialize") => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tea-shop", "version": "1.0.0"}
        }}))
        .insert_header("mcp-session-id", "sandbox-session"),
        Some("notifications/initialized") => ResponseTemplate::new(202),
        Some("tools/list") => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
            "tools": [{"name": "search_teas", "description": "Search teas",
                       "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
        }})),
        _ => json_answer(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}})),
    }
}
