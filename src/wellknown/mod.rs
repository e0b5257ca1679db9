//! Discovery files, generated from the same registries the faces use so they cannot drift.

use serde_json::{Value, json};

use crate::{context::AppContext, mcp::tools};

/// `/.well-known/mcp/tools.json`: the same tools, with the same schemas, as `tools/list`.
pub fn tools_manifest(ctx: &AppContext) -> Value {
    let listed: Vec<Value> = tools::registry()
        .iter()
        .map(|spec| {
            let mut tool = serde_json::to_value(spec.to_tool()).unwrap_or(Value::Null);
            if let Some(obj) = tool.as_object_mut() {
                obj.insert("requiresApiKey".into(), json!(spec.needs_api_key));
            }
            tool
        })
        .collect();
    json!({
        "server": {
            "name": "svc",
            "version": env!("CARGO_PKG_VERSION"),
            "url": ctx.origins.mcp_url,
            "transport": "streamable-http",
            "protocolVersions": ["2025-06-18", "2025-11-25", "2026-07-28"],
        },
        "authentication": {
            "type": "bearer",
            "header": "Authorization",
            "format": "Bearer svc_<API_KEY>",
        },
        "tools": listed,
    })
}

/// RFC 8414 metadata: the device flow's endpoints.
pub fn oauth_authorization_server(ctx: &AppContext) -> Value {
    let base = &ctx.origins.base_url;
    let site = &ctx.origins.site_url;
    let scopes: Vec<String> = svc_ports::Scopes::default_for_new_key()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    json!({
        "issuer": base,
        "device_authorization_endpoint": format!("{base}/agent/identity"),
        "token_endpoint": format!("{base}/oauth2/token"),
        "grant_types_supported": [crate::http::signup::DEVICE_CODE_GRANT],
        "response_types_supported": [],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": scopes,
        "service_documentation": format!("{site}/llms.txt"),
        "op_policy_uri": format!("{site}/privacy"),
        "op_tos_uri": format!("{site}/terms"),
    })
}

/// RFC 9728 metadata of the API as a protected resource: where keys come from and how they
/// are sent. The 401 challenge points here.
pub fn oauth_protected_resource(ctx: &AppContext) -> Value {
    let base = &ctx.origins.base_url;
    let scopes: Vec<String> = svc_ports::Scopes::default_for_new_key()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    json!({
        "resource": base,
        "authorization_servers": [base],
        "bearer_methods_supported": ["header"],
        "scopes_supported": scopes,
        "resource_name": "Agent action and commerce service",
        "resource_documentation": format!("{}/openapi.json", base),
    })
}
