//! The well-known discovery files: the MCP server card, catalog and tools manifest, the A2A
//! agent card, OAuth protected-resource metadata and the agent commerce files.

use std::sync::LazyLock;

use serde_json::Value;
use svc_ports::{CheckId, CheckResult, CheckStatus};
use url::Url;

use super::{Got, missing, result};

/// The MCP endpoint a server card (the first found), catalog or tools manifest names.
pub fn mcp_endpoint(cards: &[Got], catalog: &Got, manifest: &Got) -> Option<String> {
    let url_at = |v: &Value, pointers: &[&str]| {
        pointers.iter().find_map(|p| {
            v.pointer(p)
                .and_then(Value::as_str)
                .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                .map(str::to_owned)
        })
    };
    cards
        .iter()
        .filter_map(Got::json_object)
        .find_map(|c| {
            url_at(
                &c,
                &[
                    "/remotes/0/url",
                    "/transport/url",
                    "/url",
                    "/endpoint",
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

fn card_name(card: &Value) -> Option<&str> {
    card.get("name")
        .or_else(|| card.pointer("/serverInfo/name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

static REVERSE_DNS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(/[A-Za-z0-9._-]+)?$")
        .expect("static regex")
});

/// What a card lacks of the SEP-2127 server card shape (`$schema`, a reverse-DNS `name`,
/// `version`, `capabilities`, `remotes` with URLs); empty when it has it all.
pub fn server_card_gaps(card: &Value) -> Vec<&'static str> {
    let mut gaps = Vec::new();
    if !card["$schema"].is_string() {
        gaps.push("`$schema`");
    }
    if !card["name"]
        .as_str()
        .is_some_and(|n| REVERSE_DNS.is_match(n))
    {
        gaps.push("a reverse-DNS `name`");
    }
    if !card["version"].is_string() {
        gaps.push("`version`");
    }
    if !card["capabilities"].is_object() {
        gaps.push("`capabilities`");
    }
    let remotes = card["remotes"].as_array().is_some_and(|r| {
        !r.is_empty()
            && r.iter()
                .all(|x| x["url"].as_str().is_some_and(|u| Url::parse(u).is_ok()))
    });
    if !remotes {
        gaps.push("`remotes` with URLs");
    }
    gaps
}

/// Passes on a SEP-2127 card at any of the card paths; an older card (a `serverInfo` or a
/// catalog) warns with what it lacks.
pub fn judge_mcp_server_card(cards: &[Got], catalog: &Got, manifest: &Got) -> CheckResult {
    const ADVICE: &str = "Publish an MCP server card (SEP-2127: $schema, reverse-DNS name, version, capabilities, remotes with your Streamable HTTP URL) at /.well-known/mcp/server-card.json, /.well-known/mcp/server-card and /.well-known/mcp.json.";
    let mut evidence: Vec<_> = cards.iter().map(Got::evidence).collect();
    evidence.push(catalog.evidence());
    evidence.push(manifest.evidence());
    let tools = manifest
        .json_object()
        .and_then(|m| m["tools"].as_array().map(Vec::len))
        .unwrap_or(0);
    let tools_note = if tools > 0 {
        format!("; a tools manifest of {tools} tools")
    } else {
        String::new()
    };
    let found: Vec<(&Got, Value)> = cards
        .iter()
        .filter_map(|g| {
            g.json_object()
                .filter(|c| card_name(c).is_some())
                .map(|c| (g, c))
        })
        .collect();
    let complete: Vec<String> = found
        .iter()
        .filter(|(_, c)| server_card_gaps(c).is_empty())
        .map(|(g, _)| path_of(&g.url))
        .collect();
    if !complete.is_empty() {
        let name = found
            .iter()
            .find_map(|(_, c)| card_name(c).map(str::to_owned))
            .unwrap_or_default();
        return result(
            CheckId::McpServerCard,
            CheckStatus::Pass,
            format!(
                "MCP server card \"{name}\" at {}{tools_note}",
                complete.join(", ")
            ),
            evidence,
            None,
        );
    }
    if let Some((got, card)) = found.first() {
        return result(
            CheckId::McpServerCard,
            CheckStatus::Warn,
            format!(
                "MCP server card at {} lacks {}{tools_note}",
                path_of(&got.url),
                server_card_gaps(card).join(", ")
            ),
            evidence,
            Some(ADVICE),
        );
    }
    let catalogued = catalog
        .json_object()
        .and_then(|c| c["servers"].as_array().map(|s| !s.is_empty()))
        .unwrap_or(false);
    if catalogued || tools > 0 {
        return result(
            CheckId::McpServerCard,
            CheckStatus::Warn,
            format!("no MCP server card, only an MCP catalog or tools manifest{tools_note}"),
            evidence,
            Some(ADVICE),
        );
    }
    result(
        CheckId::McpServerCard,
        CheckStatus::Fail,
        "no MCP server card at any of the well-known paths",
        evidence,
        Some(ADVICE),
    )
}

fn path_of(url: &str) -> String {
    Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.path().to_owned())
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

pub fn judge_commerce(commerce: &Got, protocols: &Got, signals: &[String]) -> CheckResult {
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
        (false, false) => super::commerce::absent(
            CheckId::CommerceFiles,
            "no agent commerce files",
            evidence,
            signals,
            ADVICE,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn a_server_card_at_the_older_mcp_json_alone_passes() {
        let card = r#"{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json","name":"com.example/shop","version":"1.0.0","capabilities":{"tools":{}},"remotes":[{"type":"streamable-http","url":"https://e.com/mcp"}]}"#;
        // What the scan fetched at each card path, in its order: only /.well-known/mcp.json
        // answers.
        let cards: Vec<Got> = crate::readiness::site::CARD_PATHS
            .iter()
            .map(|path| {
                let mut g = if *path == "/.well-known/mcp.json" {
                    got(200, "application/json", card)
                } else {
                    got(404, "text/plain", "not found")
                };
                g.url = format!("https://e.com{path}");
                g
            })
            .collect();
        assert_eq!(cards.len(), 3);
        let none = got(404, "text/plain", "");
        let r = judge_mcp_server_card(&cards, &none, &none);
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        assert_eq!(
            r.summary,
            "MCP server card \"com.example/shop\" at /.well-known/mcp.json"
        );
        assert_eq!(
            mcp_endpoint(&cards, &none, &none).as_deref(),
            Some("https://e.com/mcp")
        );
    }

    #[test]
    fn discovery_files_are_judged_by_what_they_hold() {
        let card = got(
            200,
            "application/json",
            r#"{"serverInfo":{"name":"s"},"transport":{"url":"https://e.com/mcp"}}"#,
        );
        let manifest = got(200, "application/json", r#"{"tools":[{"name":"a"}]}"#);
        let none = got(404, "text/plain", "");
        let sep = got(
            200,
            "application/json",
            r#"{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json","name":"com.example/shop","version":"1.0.0","capabilities":{"tools":{}},"remotes":[{"type":"streamable-http","url":"https://e.com/mcp2"}]}"#,
        );
        assert_eq!(
            mcp_endpoint(std::slice::from_ref(&card), &none, &manifest).as_deref(),
            Some("https://e.com/mcp")
        );
        assert_eq!(
            mcp_endpoint(&[none.clone(), sep.clone()], &none, &none).as_deref(),
            Some("https://e.com/mcp2")
        );
        // SEP-2127 at any path passes; an older card warns with what it lacks.
        let r = judge_mcp_server_card(&[none.clone(), sep.clone(), none.clone()], &none, &manifest);
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        let r = judge_mcp_server_card(&[card.clone(), none.clone(), none.clone()], &none, &none);
        assert_eq!(r.status, CheckStatus::Warn);
        assert!(r.summary.contains("reverse-DNS"), "{}", r.summary);
        let not_dns = got(
            200,
            "application/json",
            &sep.body.replace("com.example/shop", "shop"),
        );
        assert_eq!(
            server_card_gaps(&not_dns.json_object().unwrap()),
            vec!["a reverse-DNS `name`"]
        );
        assert_eq!(
            judge_mcp_server_card(std::slice::from_ref(&none), &none, &manifest).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_mcp_server_card(&[none.clone(), none.clone()], &none, &none).status,
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
        let sells = vec!["a price".to_owned()];
        assert_eq!(judge_commerce(&obj, &obj, &sells).status, CheckStatus::Pass);
        assert_eq!(
            judge_commerce(&none, &obj, &sells).status,
            CheckStatus::Warn
        );
        let html = got(200, "text/html", "<html>");
        assert_eq!(
            judge_commerce(&html, &none, &sells).status,
            CheckStatus::Fail
        );
        // A site that sells nothing is not judged on commerce files.
        assert_eq!(
            judge_commerce(&html, &none, &[]).status,
            CheckStatus::Neutral
        );
    }
}
