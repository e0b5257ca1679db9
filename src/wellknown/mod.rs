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

/// `/.well-known/action-catalog.json`: which action families the service runs and which it
/// never does, and the catalog of failure classes.
pub fn action_catalog() -> Value {
    use svc_ports::{ActionFamily, FailureClass};
    let family = |f: &ActionFamily| {
        json!({
            "family": f.as_str(),
            "description": f.about(),
            "consequential": f.always_consequential(),
        })
    };
    let allowed: Vec<Value> = ActionFamily::ALL
        .iter()
        .filter(|f| f.allowed())
        .map(family)
        .collect();
    let disallowed: Vec<Value> = ActionFamily::ALL
        .iter()
        .filter(|f| !f.allowed())
        .map(family)
        .collect();
    let failures: Vec<Value> = FailureClass::ALL
        .iter()
        .map(|c| {
            json!({
                "failure_class": c.as_str(),
                "status": c.http_status(),
                "retryable": c.retryable(),
                "title": c.title(),
                "hint": c.hint(),
            })
        })
        .collect();
    json!({
        "allowed_families": allowed,
        "disallowed_families": disallowed,
        "consequential_scope": svc_ports::actions::CONSEQUENTIAL_SCOPE,
        "failure_classes": failures,
    })
}

/// `/.well-known/payment-artifact.schema.json`: the verification artifact, draft 2020-12.
pub fn payment_artifact_schema(ctx: &AppContext) -> Value {
    let mut schema = crate::http::json_schema_of::<crate::http::actions::VerificationArtifactDoc>();
    if let Some(o) = schema.as_object_mut() {
        o.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        o.insert(
            "$id".into(),
            json!(format!(
                "{}/.well-known/payment-artifact.schema.json",
                ctx.origins.site_url
            )),
        );
        o.insert("title".into(), json!("Verification artifact"));
        o.insert(
            "description".into(),
            json!("Returned with every settled task. `status` tells a started payment, a completed payment and a verified business action apart. The signature is Ed25519 over the artifact without `signature`, as RFC 8785 canonical JSON; keys at /.well-known/jwks.json."),
        );
    }
    schema
}
