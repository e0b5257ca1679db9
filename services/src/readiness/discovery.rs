//! The well-known discovery files: the MCP server card, catalog and tools manifest, the A2A
//! agent card, OAuth protected-resource metadata and the agent commerce files.

use serde_json::Value;
use svc_ports::{CheckId, CheckResult, CheckStatus};
use url::Url;

use super::{Got, missing, result};

/// The MCP endpoint a server card, catalog or tools manifest names.
pub fn mcp_endpoint(card: &Got, catalog: &Got, manifest: &Got) -> Option<String> {
    let url_at = |v: &Value, pointers: &[&str]| {
        pointers.iter().find_map(|p| {
            v.pointer(p)
                .and_then(Value::as_str)
                .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                .map(str::to_owned)
        })
    };
    card.json_object()
        .and_then(|c| {
            url_at(
                &c,
                &[
                    "/transport/url",
                    "/url",
                    "/endpoint",
                    "/remotes/0/url",
                    "/endpoints/0/url",
                ],
            )
        })
        .or_else(|| {
            catalog
                .json_object()
                .and_then(|c| url_at(&c, &["/servers/0/url"]))
        })
        .or_else(|| {
            manifest
                .json_object()
                .and_then(|m| url_at(&m, &["/server/url", "/url", "/endpoint"]))
        })
}

fn card_is_valid(card: &Value) -> bool {
    let named = card
        .pointer("/serverInfo/name")
        .or_else(|| card.get("name"));
    named.and_then(Value::as_str).is_some_and(|n| !n.is_empty())
}

pub fn judge_mcp_discovery(card: &Got, catalog: &Got, manifest: &Got) -> CheckResult {
    const ADVICE: &str = "Publish an MCP server card at /.well-known/mcp/server-card.json (name, transport URL) and a tools manifest at /.well-known/mcp/tools.json.";
    let card_ok = card.json_object().is_some_and(|c| card_is_valid(&c))
        || catalog
            .json_object()
            .and_then(|c| c["servers"].as_array().map(|s| !s.is_empty()))
            .unwrap_or(false);
    let tools = manifest
        .json_object()
        .and_then(|m| m["tools"].as_array().map(Vec::len))
        .unwrap_or(0);
    let evidence = vec![card.evidence(), catalog.evidence(), manifest.evidence()];
    match (card_ok, tools > 0) {
        (true, true) => result(
            CheckId::McpDiscovery,
            CheckStatus::Pass,
            format!("MCP server card and a tools manifest of {tools} tools"),
            evidence,
            None,
        ),
        (true, false) => result(
            CheckId::McpDiscovery,
            CheckStatus::Warn,
            "MCP server card, but no tools manifest listing tools",
            evidence,
            Some(ADVICE),
        ),
        (false, true) => result(
            CheckId::McpDiscovery,
            CheckStatus::Warn,
            format!("tools manifest of {tools} tools, but no MCP server card"),
            evidence,
            Some(ADVICE),
        ),
        (false, false) => result(
            CheckId::McpDiscovery,
            CheckStatus::Fail,
            "no MCP server card, catalog or tools manifest",
            evidence,
            Some(ADVICE),
        ),
    }
}

fn agent_card_is_valid(card: &Value) -> bool {
    card["name"].as_str().is_some_and(|n| !n.is_empty())
        && (card["url"].is_string() || card["supportedInterfaces"].is_array())
        && card["skills"].is_array()
}

pub fn judge_agent_cards(card: &Got, legacy: &Got) -> CheckResult {
    const ADVICE: &str = "Publish an A2A agent card (name, url, skills) at /.well-known/agent-card.json, and the same at /.well-known/agent.json for older clients.";
    let valid = |g: &Got| g.json_object().is_some_and(|c| agent_card_is_valid(&c));
    let evidence = vec![card.evidence(), legacy.evidence()];
    match (valid(card), valid(legacy)) {
        (true, true) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Pass,
            "A2A agent card at /.well-known/agent-card.json and /.well-known/agent.json",
            evidence,
            None,
        ),
        (true, false) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Warn,
            "A2A agent card at /.well-known/agent-card.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, true) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Warn,
            "A2A agent card at the older /.well-known/agent.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, false) => result(
            CheckId::A2aAgentCard,
            CheckStatus::Fail,
            "no valid A2A agent card at either path",
            evidence,
            Some(ADVICE),
        ),
    }
}

pub fn judge_protected_resource(got: &Got) -> CheckResult {
    const ADVICE: &str = "Publish OAuth protected-resource metadata (RFC 9728) at /.well-known/oauth-protected-resource naming `resource` and its `authorization_servers`.";
    let Some(doc) = got.json_object() else {
        return missing(
            CheckId::OauthProtectedResource,
            got,
            "OAuth protected-resource metadata",
            ADVICE,
        );
    };
    match doc["resource"].as_str() {
        Some(resource) if Url::parse(resource).is_ok() => result(
            CheckId::OauthProtectedResource,
            CheckStatus::Pass,
            format!("protected resource {resource}"),
            vec![got.evidence()],
            None,
        ),
        _ => result(
            CheckId::OauthProtectedResource,
            CheckStatus::Warn,
            "metadata without a `resource` URL (required by RFC 9728)",
            vec![got.evidence()],
            Some(ADVICE),
        ),
    }
}

pub fn judge_commerce(commerce: &Got, protocols: &Got) -> CheckResult {
    const ADVICE: &str = "Publish /.well-known/agent-commerce.json (plans, prices, how an agent starts a purchase) and /.well-known/payment-protocols.json (the payment protocols you accept).";
    let evidence = vec![commerce.evidence(), protocols.evidence()];
    match (
        commerce.json_object().is_some(),
        protocols.json_object().is_some(),
    ) {
        (true, true) => result(
            CheckId::CommerceFiles,
            CheckStatus::Pass,
            "agent-commerce.json and payment-protocols.json",
            evidence,
            None,
        ),
        (true, false) => result(
            CheckId::CommerceFiles,
            CheckStatus::Warn,
            "agent-commerce.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, true) => result(
            CheckId::CommerceFiles,
            CheckStatus::Warn,
            "payment-protocols.json only",
            evidence,
            Some(ADVICE),
        ),
        (false, false) => result(
            CheckId::CommerceFiles,
            CheckStatus::Fail,
            "no agent commerce files",
            evidence,
            Some(ADVICE),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn discovery_files_are_judged_by_what_they_hold() {
        let card = got(
            200,
            "application/json",
            r#"{"serverInfo":{"name":"s"},"transport":{"url":"https://e.com/mcp"}}"#,
        );
        let manifest = got(200, "application/json", r#"{"tools":[{"name":"a"}]}"#);
        let none = got(404, "text/plain", "");
        assert_eq!(
            mcp_endpoint(&card, &none, &manifest).as_deref(),
            Some("https://e.com/mcp")
        );
        assert_eq!(
            judge_mcp_discovery(&card, &none, &manifest).status,
            CheckStatus::Pass
        );
        assert_eq!(
            judge_mcp_discovery(&card, &none, &none).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_mcp_discovery(&none, &none, &none).status,
            CheckStatus::Fail
        );

        let a2a = got(
            200,
            "application/json",
            r#"{"name":"a","url":"https://e.com/a2a","skills":[]}"#,
        );
        assert_eq!(judge_agent_cards(&a2a, &a2a).status, CheckStatus::Pass);
        assert_eq!(judge_agent_cards(&a2a, &none).status, CheckStatus::Warn);
        let nameless = got(
            200,
            "application/json",
            r#"{"url":"https://e.com/a2a","skills":[]}"#,
        );
        assert_eq!(
            judge_agent_cards(&nameless, &none).status,
            CheckStatus::Fail
        );

        let prm = got(
            200,
            "application/json",
            r#"{"resource":"https://e.com","authorization_servers":["https://e.com"]}"#,
        );
        assert_eq!(judge_protected_resource(&prm).status, CheckStatus::Pass);
        assert_eq!(
            judge_protected_resource(&got(200, "application/json", "{}")).status,
            CheckStatus::Warn
        );
        assert_eq!(judge_protected_resource(&none).status, CheckStatus::Fail);

        let obj = got(200, "application/json", "{}");
        assert_eq!(judge_commerce(&obj, &obj).status, CheckStatus::Pass);
        assert_eq!(judge_commerce(&none, &obj).status, CheckStatus::Warn);
        assert_eq!(
            judge_commerce(&got(200, "text/html", "<html>"), &none).status,
            CheckStatus::Fail
        );
    }
}
