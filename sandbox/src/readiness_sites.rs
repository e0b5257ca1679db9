//! Sites for the readiness scan: one wiremock server that answers, by `Host`, for a complete
//! agent-ready shop (`ready.sandbox.test`), for one site per check that lacks exactly that
//! thing (`lacks-llms-txt.sandbox.test`, ...), and for a site that never answers
//! (`never.sandbox.test`), and for a tea blog that sells nothing (`blog.sandbox.test`). A scan
//! of the ready site passes every scored check; a scan of a lacking site fails exactly the
//! check named in its host (an informational check is neutral there instead); a scan of the
//! blog passes every check but the commerce ones, which are neutral (not scored).

use std::{net::SocketAddr, time::Duration};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

pub const READY_HOST: &str = "ready.sandbox.test";
/// Accepts connections and answers nothing for a minute.
pub const NEVER_HOST: &str = "never.sandbox.test";
/// The ready site as a blog: no prices, cart or schema.org store on its home page, and none of
/// the commerce files or answers (agent commerce files, x402, UCP, ACP, AP2).
pub const BLOG_HOST: &str = "blog.sandbox.test";

/// The checks scored only on a site whose home page sells; the blog serves none of them.
const COMMERCE: &[&str] = &["commerce_files", "x402", "ucp", "acp", "ap2"];

/// What each lacking site leaves out, by the id of the check that must fail (every check).
pub const LACKING: &[&str] = &[
    "robots_txt",
    "sitemap",
    "link_headers",
    "robots_ai_rules",
    "content_signals",
    "web_bot_auth",
    "markdown_negotiation",
    "markdown_mirror",
    "llms_txt",
    "llms_txt_links",
    "llms_full_txt",
    "structured_data",
    "forms",
    "api_catalog",
    "openapi",
    "mcp_server_card",
    "mcp_probe",
    "a2a_agent_card",
    "agent_skills",
    "oauth_discovery",
    "oauth_protected_resource",
    "web_mcp",
    "commerce_files",
    "x402",
    "ucp",
    "acp",
    "ap2",
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
        [READY_HOST, NEVER_HOST, BLOG_HOST]
            .into_iter()
            .map(str::to_owned)
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

fn typed_json(content_type: &str, body: Value) -> ResponseTemplate {
    text(200, content_type, body.to_string())
}

fn not_found() -> ResponseTemplate {
    text(404, "text/plain", "not found")
}

/// The one skill the shop describes, and its index entry's digest.
const SKILL: &str = "---\nname: order-tea\ndescription: Search the shop's teas and order one.\n---\n\n# Order tea\n\n1. GET /api/products?q=sencha lists teas with a sku and a price.\n2. POST /api/orders with the sku and a quantity.\n";

fn skill_digest() -> String {
    let digest = Sha256::digest(SKILL.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl Respond for Site {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let host_header = request
            .headers
            .get("host")
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let host = host_header.split(':').next().unwrap_or_default();
        if host == NEVER_HOST {
            return not_found().set_delay(Duration::from_secs(60));
        }
        let lacks = host
            .strip_prefix("lacks-")
            .and_then(|h| h.strip_suffix(".sandbox.test"))
            .map(|c| c.replace('-', "_"))
            .unwrap_or_default();
        let blog = host == BLOG_HOST;
        if host != READY_HOST && !blog && !LACKING.contains(&lacks.as_str()) {
            return not_found();
        }
        let origin = format!("http://{host_header}");
        let has = |check: &str| lacks != check && !(blog && COMMERCE.contains(&check));
        let accept = request
            .headers
            .get("accept")
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let method = request.method.as_str();
        match (method, request.url.path()) {
            ("GET", "/robots.txt") => robots(&origin, &lacks),
            ("GET", "/sitemap.xml") if has("sitemap") => text(
                200,
                "application/xml",
                format!(
                    "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>{origin}/</loc></url><url><loc>{origin}/pricing</loc></url></urlset>"
                ),
            ),
            ("GET", "/llms.txt") if has("llms_txt") => {
                let broken = if has("llms_txt_links") {
                    String::new()
                } else {
                    format!("- [Old guide]({origin}/docs/gone): moved away\n")
                };
                text(
                    200,
                    "text/plain",
                    format!(
                        "# Example Tea Shop\n\n> Loose-leaf tea, sold online and through agents.\n\n## Docs\n\n- [API guide]({origin}/docs): the shop's API\n- [Pricing](/pricing)\n{broken}"
                    ),
                )
            }
            ("GET", "/llms-full.txt") if has("llms_full_txt") => text(
                200,
                "text/plain",
                format!(
                    "# Example Tea Shop\n\n> Loose-leaf tea.\n\n## Search\n\nGET {origin}/api/products?q=... lists teas by name. Each has a sku, a name, a price in cents and whether it is in stock.\n\n## Order\n\nPOST {origin}/api/orders with a sku and a quantity places an order, paid on delivery.\n"
                ),
            ),
            ("GET", "/docs" | "/pricing") => text(
                200,
                "text/html; charset=utf-8",
                "<!doctype html><title>Example Tea Shop</title><h1>Teas from $4</h1>",
            ),
            ("GET", "/index.md") if has("markdown_mirror") => markdown(blog),
            ("GET", "/openapi.json") if has("openapi") => json_answer(openapi(&origin)),
            ("GET", "/.well-known/api-catalog") if has("api_catalog") => typed_json(
                "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"",
                json!({"linkset": [{
                    "anchor": format!("{origin}/api"),
                    "service-desc": [{"href": format!("{origin}/openapi.json"), "type": "application/openapi+json"}],
                    "service-doc": [{"href": format!("{origin}/docs"), "type": "text/html"}]
                }]}),
            ),
            (
                "GET",
                "/.well-known/mcp/server-card.json"
                | "/.well-known/mcp/server-card"
                | "/.well-known/mcp.json",
            ) if has("mcp_server_card") => json_answer(json!({
                "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
                "name": "test.sandbox/tea-shop",
                "title": "Example Tea Shop",
                "version": "1.0.0",
                "capabilities": {"tools": {}},
                "remotes": [{"type": "streamable-http", "url": format!("{origin}/mcp")}]
            })),
            ("GET", "/.well-known/mcp/tools.json") if has("mcp_server_card") => json_answer(
                json!({"tools": [{"name": "search_teas", "description": "Search teas"}]}),
            ),
            ("POST", "/mcp") if has("mcp_probe") => mcp(request),
            ("GET", "/.well-known/agent-card.json" | "/.well-known/agent.json")
                if has("a2a_agent_card") =>
            {
                json_answer(agent_card(&origin, has("ap2")))
            }
            ("GET", "/.well-known/agent-skills/index.json") if has("agent_skills") => {
                json_answer(json!({
                    "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
                    "skills": [{
                        "name": "order-tea",
                        "type": "skill-md",
                        "description": "Search the shop's teas and order one.",
                        "url": "/.well-known/agent-skills/order-tea/SKILL.md",
                        "digest": skill_digest()
                    }]
                }))
            }
            ("GET", "/.well-known/agent-skills/order-tea/SKILL.md") => {
                text(200, "text/markdown; charset=utf-8", SKILL)
            }
            ("GET", "/.well-known/oauth-authorization-server") if has("oauth_discovery") => {
                json_answer(json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}/oauth/authorize"),
                    "token_endpoint": format!("{origin}/oauth/token"),
                    "grant_types_supported": ["authorization_code"]
                }))
            }
            ("GET", "/.well-known/oauth-protected-resource")
                if has("oauth_protected_resource") =>
            {
                json_answer(json!({"resource": origin, "authorization_servers": [origin]}))
            }
            ("GET", "/.well-known/http-message-signatures-directory") if has("web_bot_auth") => {
                typed_json(
                    "application/http-message-signatures-directory+json",
                    json!({"keys": [{"kty": "OKP", "crv": "Ed25519",
                        "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}),
                )
            }
            ("GET", "/.well-known/agent-commerce.json" | "/.well-known/payment-protocols.json")
                if has("commerce_files") =>
            {
                json_answer(json!({"merchant": "Example Tea Shop", "currencies": ["usd"]}))
            }
            ("GET", "/api") if has("x402") => ResponseTemplate::new(402).set_body_json(json!({
                "x402Version": 1,
                "error": "payment required",
                "accepts": [{
                    "scheme": "exact", "network": "base-sepolia", "maxAmountRequired": "1000",
                    "resource": format!("{origin}/api"), "description": "One API call",
                    "mimeType": "application/json", "payTo": "0x0000000000000000000000000000000000000001",
                    "maxTimeoutSeconds": 60, "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
                }]
            })),
            ("GET", "/.well-known/ucp") if has("ucp") => json_answer(json!({"ucp": {
                "version": "2026-01-11",
                "services": {"dev.ucp.shopping": {"version": "2026-01-11",
                    "rest": {"endpoint": format!("{origin}/ucp")}}},
                "capabilities": [{"name": "dev.ucp.shopping.checkout", "version": "2026-01-11"}]
            }})),
            ("GET", "/.well-known/acp.json") if has("acp") => json_answer(json!({
                "version": "2025-09-29",
                "checkout_sessions": format!("{origin}/acp/checkout_sessions")
            })),
            ("GET", "/") if accept.contains("text/markdown") && has("markdown_negotiation") => {
                markdown(blog)
            }
            ("GET", "/") => {
                let body = if blog {
                    blog_home_page()
                } else {
                    home_page(&lacks)
                };
                let mut page = text(200, "text/html; charset=utf-8", body)
                    .insert_header("vary", "Accept");
                if has("link_headers") {
                    page = page.insert_header(
                        "link",
                        "</.well-known/api-catalog>; rel=\"api-catalog\", </openapi.json>; rel=\"service-desc\", </llms.txt>; rel=\"describedby\"",
                    );
                }
                page
            }
            _ => not_found(),
        }
    }
}

fn markdown(blog: bool) -> ResponseTemplate {
    let body = if blog {
        "# Example Tea Notes\n\nNotes on brewing loose-leaf tea.\n"
    } else {
        "# Example Tea Shop\n\nLoose-leaf tea. Sencha, $12.50.\n"
    };
    text(200, "text/markdown; charset=utf-8", body)
        .insert_header("vary", "Accept")
        .insert_header("x-markdown-tokens", "14")
}

fn robots(origin: &str, lacks: &str) -> ResponseTemplate {
    let sitemap = if lacks == "sitemap" {
        String::new()
    } else {
        format!("Sitemap: {origin}/sitemap.xml\n")
    };
    let signal = if lacks == "content_signals" {
        ""
    } else {
        "Content-Signal: search=yes, ai-input=yes, ai-train=no\n"
    };
    let body = match lacks {
        // Every AI agent is kept off the whole site (the rules name them, with a signal).
        "robots_txt" => {
            let named: String = BLOCKED_AGENTS
                .iter()
                .map(|a| format!("User-agent: {a}\n"))
                .collect();
            format!("User-agent: *\n{signal}Allow: /\n\n{named}Disallow: /\n\n{sitemap}")
        }
        // Rules only for a search engine: none apply to AI crawlers.
        "robots_ai_rules" => format!("User-agent: Googlebot\n{signal}Allow: /\n\n{sitemap}"),
        _ => format!(
            "User-agent: *\n{signal}Disallow: /private\n\nUser-agent: GPTBot\nUser-agent: ClaudeBot\nAllow: /\n\n{sitemap}"
        ),
    };
    text(200, "text/plain", body)
}

/// The AI agents whose access the scan's robots_txt check decides (its `AI_AGENTS`).
const BLOCKED_AGENTS: &[&str] = &[
    "GPTBot",
    "ChatGPT-User",
    "OAI-SearchBot",
    "ClaudeBot",
    "Claude-User",
    "Claude-SearchBot",
    "PerplexityBot",
    "Google-Extended",
    "Applebot-Extended",
    "CCBot",
    "Meta-ExternalAgent",
];

fn openapi(origin: &str) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Example Tea Shop", "version": "1.0.0"},
        "servers": [{"url": origin}],
        "paths": {"/api/products": {"get": {
            "operationId": "searchProducts",
            "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "Matching teas"}}
        }}}
    })
}

fn agent_card(origin: &str, ap2: bool) -> Value {
    let extensions = if ap2 {
        json!([{"uri": "https://github.com/google-agentic-commerce/ap2/tree/v0.1",
                "description": "Pays through AP2 mandates", "required": false}])
    } else {
        json!([])
    };
    json!({
        "name": "Example Tea Shop",
        "description": "Finds teas",
        "url": format!("{origin}/a2a"),
        "version": "1.0.0",
        "capabilities": {"extensions": extensions},
        "skills": [{"id": "search", "name": "Search teas"}]
    })
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
    let web_mcp = if lacks == "web_mcp" {
        ""
    } else {
        r#"<script>if (navigator.modelContext) { navigator.modelContext.registerTool({name: "search_teas", description: "Search teas", inputSchema: {type: "object", properties: {q: {type: "string"}}}, execute: async ({q}) => (await fetch("/api/products?q=" + encodeURIComponent(q))).json()}); }</script>"#
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Example Tea Shop</title>{json_ld}</head><body><h1>Example Tea Shop</h1><p>Loose-leaf tea, sold online. Sencha, $12.50 <button>Add to cart</button></p>{form}{web_mcp}</body></html>"
    )
}

/// The blog's home page: the ready site's agent affordances (JSON-LD, a labelled search form,
/// WebMCP), and nothing that reads as commerce (no price, cart, checkout or schema.org store).
fn blog_home_page() -> String {
    let json_ld = r#"<script type="application/ld+json">{"@context":"https://schema.org","@type":"Blog","name":"Example Tea Notes"}</script>"#;
    let form = r#"<form method="get" action="/search"><label for="q">Search the notes</label><input id="q" name="q" type="search"><button type="submit">Search</button></form>"#;
    let web_mcp = r#"<script>if (navigator.modelContext) { navigator.modelContext.registerTool({name: "search_notes", description: "Search the notes", inputSchema: {type: "object", properties: {q: {type: "string"}}}, execute: async ({q}) => ({q})}); }</script>"#;
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Example Tea Notes</title>{json_ld}</head><body><h1>Example Tea Notes</h1><p>How long to steep a sencha, and why water temperature matters.</p>{form}{web_mcp}</body></html>"
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
