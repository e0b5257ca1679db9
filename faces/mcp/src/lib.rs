//! The MCP face: Streamable HTTP through rmcp, mounted in poem at `/mcp`. Protocol revisions
//! 2025-06-18 and 2025-11-25 (with `initialize`) and the stateless 2026-07-28 are served; the
//! server keeps no session state, so any instance can answer any request.

mod arguments;
pub mod resources;
pub mod schema;
pub mod tools;
mod transport;

use std::{borrow::Cow, sync::Arc};

use poem::{Endpoint, EndpointExt, endpoint::TowerCompatExt};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult,
        ListResourcesResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool_handler,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

use kit::context::AppContext;

/// Host and Origin checks of the MCP endpoint (DNS-rebinding protection).
#[derive(Debug, Clone)]
pub struct McpConfig {
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub disable_host_check: bool,
    pub max_body_bytes: usize,
}

fn authority(url: &str) -> Option<(String, String, Option<u16>)> {
    let (scheme, rest) = url.split_once("://")?;
    let auth = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let (host, port) = match auth.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || auth.starts_with('[') => match p.parse() {
            Ok(p) => (h.to_owned(), Some(p)),
            Err(_) => (auth.to_owned(), None),
        },
        _ => (auth.to_owned(), None),
    };
    Some((
        scheme.to_owned(),
        host.trim_matches(['[', ']']).to_owned(),
        port,
    ))
}

impl McpConfig {
    /// Whether a `Host` header names an allowed host (DNS-rebinding protection).
    pub fn host_allowed(&self, host: &str) -> bool {
        if self.disable_host_check {
            return true;
        }
        let host = host.trim();
        let name = if let Some(rest) = host.strip_prefix('[') {
            rest.split(']').next().unwrap_or_default()
        } else {
            host.rsplit_once(':').map_or(host, |(h, _)| h)
        };
        self.allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Whether a browser `Origin` is allowed (`scheme://host:port`, or `scheme://host:*`).
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let Some((scheme, host, port)) = authority(origin) else {
            return false;
        };
        let port = port.unwrap_or(if scheme == "https" { 443 } else { 80 });
        let host_part = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_ascii_lowercase()
        };
        let exact = format!("{scheme}://{host_part}:{port}");
        let any_port = format!("{scheme}://{host_part}:*");
        self.allowed_origins
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&exact) || a.eq_ignore_ascii_case(&any_port))
    }

    /// Loopback and the configured public origins are always allowed; `extra_hosts` and
    /// `extra_origins` (settings) add more.
    pub fn new(
        origins: &kit::Origins,
        extra_hosts: &[String],
        extra_origins: &[String],
        disable_host_check: bool,
        max_body_bytes: usize,
    ) -> Self {
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let mut allowed_origins: Vec<String> = vec![
            "http://localhost:*".into(),
            "http://127.0.0.1:*".into(),
            "http://[::1]:*".into(),
        ];
        for url in [&origins.base_url, &origins.site_url, &origins.mcp_url] {
            if let Some((scheme, host, port)) = authority(url) {
                hosts.push(host.clone());
                let default = if scheme == "https" { 443 } else { 80 };
                let host_part = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host
                };
                allowed_origins.push(format!(
                    "{scheme}://{host_part}:{}",
                    port.unwrap_or(default)
                ));
            }
        }
        hosts.extend(extra_hosts.iter().cloned());
        allowed_origins.extend(extra_origins.iter().cloned());
        hosts.sort();
        hosts.dedup();
        allowed_origins.sort();
        allowed_origins.dedup();
        Self {
            allowed_hosts: hosts,
            allowed_origins,
            disable_host_check,
            max_body_bytes,
        }
    }
}

/// One MCP server value per request; it holds only the shared context and documents.
#[derive(Clone)]
pub struct SvcMcp {
    ctx: AppContext,
    docs: Arc<resources::Documents>,
}

/// The protocol revisions served: `initialize` offers these, and an `MCP-Protocol-Version`
/// header naming any other is refused.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

#[tool_handler(router = tools::router())]
impl ServerHandler for SvcMcp {
    fn get_info(&self) -> ServerConfig {
        // Logging: declared because 2025 clients may set a level; no tool emits log messages,
        // so every threshold is honoured. (Deprecated by SEP-2577 for 2026-07-28 only.)
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("svc", env!("CARGO_PKG_VERSION"))
                    .with_title("Agent action and commerce service"),
            )
            .with_instructions(tools::INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::list(
            &self.ctx, &self.docs,
        )))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let parts = context.extensions.get::<http::request::Parts>();
        resources::read(&self.ctx, &self.docs, &request.uri, parts)
            .await
            .map(Into::into)
    }

    /// Dispatches through the router; an argument the tool's schema refuses comes back as a
    /// tool error carrying the problem (`invalid_request`, its detail and hint), so the model
    /// can correct the call.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(problem) = arguments::problem(&request.name, request.arguments.as_ref()) {
            return Ok(tools::tool_error(&problem).into());
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let response = tools::router().call(call).await?;
        Ok(tools::argument_problem(response))
    }
}

/// The `/mcp` endpoint.
pub fn endpoint(
    ctx: AppContext,
    config: McpConfig,
    docs: resources::Documents,
) -> poem::endpoint::BoxEndpoint<'static> {
    let mut server_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_origins(config.allowed_origins.clone());
    server_config = if config.disable_host_check {
        server_config.disable_allowed_hosts()
    } else {
        server_config.with_allowed_hosts(config.allowed_hosts.clone())
    };
    server_config.max_request_body_bytes = config.max_body_bytes;
    let proxies = ctx.proxies.clone();
    let docs = Arc::new(docs);
    let service = StreamableHttpService::new(
        move || {
            Ok(SvcMcp {
                ctx: ctx.clone(),
                docs: docs.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        server_config,
    );
    // The same Host and Origin rules, checked first so a refusal is a problem+json like every
    // other error (rmcp's own refusal is plain text); rmcp checks again behind it. The caller's
    // address as the limits count it travels to the tools in the request's extensions.
    let guard = Arc::new(config);
    service
        .compat()
        .around(move |ep, mut req| {
            let guard = guard.clone();
            let ip = kit::edge::client_ip_of(&req, &proxies);
            if let Some(ip) = ip {
                req.extensions_mut().insert(ip);
            }
            async move {
                let host = req.header(http::header::HOST).unwrap_or_default();
                if !guard.host_allowed(host) {
                    return Ok(kit::problem::ApiProblem::new(
                        svc_ports::FailureClass::HostNotAllowed,
                        "This Host is not one the MCP endpoint answers for.",
                    )
                    .render("Bearer"));
                }
                // An Origin that is not text is no allowed one (`header` would read it as
                // absent, and skip the check).
                let origin = req
                    .headers()
                    .get(http::header::ORIGIN)
                    .map(|v| v.to_str().unwrap_or("\u{fffd}"));
                if let Some(origin) = origin
                    && !guard.origin_allowed(origin)
                {
                    return Ok(kit::problem::ApiProblem::new(
                        svc_ports::FailureClass::HostNotAllowed,
                        "Requests from this browser Origin are not allowed.",
                    )
                    .render("Bearer"));
                }
                if let Err(refused) = transport::check(&mut req, guard.max_body_bytes).await {
                    return Ok(*refused);
                }
                let resp = ep.call(req).await.map(poem::IntoResponse::into_response)?;
                // rmcp's 405 (a GET or DELETE it does not serve) is plain text; every other
                // refusal here is problem+json.
                if resp.status() == http::StatusCode::METHOD_NOT_ALLOWED {
                    let mut problem = kit::problem::ApiProblem::new(
                        svc_ports::FailureClass::MethodNotAllowed,
                        "The MCP endpoint takes JSON-RPC messages by POST.",
                    );
                    problem.allow = Some("POST".into());
                    return Ok(problem.render("Bearer"));
                }
                Ok(resp)
            }
        })
        .boxed()
}

/// The tools as the discovery files list them (handed to the well-known face by startup).
pub fn listing() -> kit::wire::discovery::McpListing {
    kit::wire::discovery::McpListing {
        instructions: tools::INSTRUCTIONS.to_owned(),
        tools: tools::router()
            .list_all()
            .into_iter()
            .map(|tool| kit::wire::discovery::ToolListing {
                name: tool.name.to_string(),
                title: tool.title.clone().unwrap_or_default(),
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                requires_api_key: !tools::WITHOUT_KEY.contains(&tool.name.as_ref()),
                tool: serde_json::to_value(&tool).unwrap_or_default(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_parses_hosts_and_ports() {
        assert_eq!(
            authority("https://api.example.com/x"),
            Some(("https".into(), "api.example.com".into(), None))
        );
        assert_eq!(
            authority("http://127.0.0.1:8080"),
            Some(("http".into(), "127.0.0.1".into(), Some(8080)))
        );
        assert_eq!(
            authority("http://[::1]:9/mcp"),
            Some(("http".into(), "::1".into(), Some(9)))
        );
        assert_eq!(authority("nonsense"), None);
    }

    #[test]
    fn configured_origins_are_allowed() {
        let origins = kit::Origins {
            base_url: "https://api.example.com".into(),
            site_url: "https://example.com".into(),
            mcp_url: "https://mcp.example.com/mcp".into(),
        };
        let c = McpConfig::new(&origins, &[], &[], false, 1 << 20);
        assert!(c.allowed_hosts.contains(&"mcp.example.com".to_owned()));
        assert!(
            c.allowed_origins
                .contains(&"https://example.com:443".to_owned())
        );
        assert!(c.host_allowed("mcp.example.com"));
        assert!(c.host_allowed("127.0.0.1:8080") && c.host_allowed("[::1]:9"));
        assert!(!c.host_allowed("evil.example.net"));
        assert!(c.origin_allowed("https://example.com"));
        assert!(c.origin_allowed("http://localhost:5173"));
        assert!(!c.origin_allowed("https://evil.example.net"));
        assert!(!c.origin_allowed("null"));
    }
}
