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
