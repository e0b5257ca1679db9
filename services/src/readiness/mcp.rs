//! The live MCP probe: `initialize`, `notifications/initialized` and `tools/list` at the
//! endpoint the discovery files name (or `/mcp`), read as JSON or SSE.

use serde_json::{Value, json};
use svc_ports::{ActionRequest, CheckId, CheckResult, CheckStatus, actions::HttpMethod};

use super::{Got, Site, mcp_endpoint, result};

/// The MCP revision the probe asks for; servers answer with the one they speak.
const MCP_PROTOCOL: &str = "2025-06-18";

impl Site<'_> {
    /// One JSON-RPC message to an MCP endpoint; the answer may be JSON or an SSE stream.
    async fn mcp_post(&self, endpoint: &str, body: Value, session: Option<&str>) -> Got {
        let mut headers = vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("mcp-protocol-version".to_owned(), MCP_PROTOCOL.to_owned()),
        ];
        if let Some(s) = session {
            headers.push(("mcp-session-id".to_owned(), s.to_owned()));
        }
        let request = ActionRequest {
            method: HttpMethod::Post,
            url: endpoint.to_owned(),
            headers,
            body: Some(("application/json".into(), body.to_string().into_bytes())),
        };
        let _slot = self.slot(endpoint).await;
        let sent =
            tokio::time::timeout(self.svc.probe_deadline, self.svc.transport.send(&request)).await;
        match sent.unwrap_or(Err(svc_ports::FetchError::Timeout {
            seconds: self.svc.probe_deadline.as_secs(),
        })) {
            Ok(r) => Got {
                url: r.url,
                status: Some(r.status),
                content_type: r.content_type,
                headers: r.headers,
                body: r.body,
                ..Got::default()
            },
            Err(e) => Got {
                url: endpoint.to_owned(),
                timed_out: matches!(e, svc_ports::FetchError::Timeout { .. }),
                error: Some(e.to_string()),
                ..Got::default()
            },
        }
    }

    /// `initialize`, `notifications/initialized` and `tools/list`: nothing else is called.
    pub(super) async fn mcp_probe(&self) -> CheckResult {
        let declared = mcp_endpoint(
            self.server_cards().await,
            self.mcp_catalog().await,
            self.tools_manifest().await,
        );
        let endpoint = declared.clone().unwrap_or_else(|| self.at("/mcp"));
        // The site's own endpoint is probed as its own files are read; one of another origin,
        // which the site's files merely name, only as that origin's robots.txt allows.
        if !self.is_own(&endpoint)
            && let Some(why) = self.robots_refusal(&endpoint).await
        {
            return result(
                CheckId::McpProbe,
                CheckStatus::Warn,
                "MCP endpoint of another origin not probed: its robots.txt does not allow it",
                vec![svc_ports::Evidence {
                    url: endpoint,
                    status: None,
                    excerpt: why,
                }],
                Some(
                    "Let the MCP endpoint's origin allow it in its robots.txt (or serve it from the scanned origin), so that scanners and agents that honour robots.txt can reach it.",
                ),
            );
        }
        let initialize = self
            .mcp_post(
                &endpoint,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": MCP_PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "svc-readiness-scan", "version": env!("CARGO_PKG_VERSION")}
                }}),
                None,
            )
            .await;
        let init = rpc_result(&initialize, 1);
        let mut listed = None;
        if init.is_some() {
            let session = initialize.header("mcp-session-id").map(str::to_owned);
            let _ = self
                .mcp_post(
                    &endpoint,
                    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                    session.as_deref(),
                )
                .await;
            listed = Some(
                self.mcp_post(
                    &endpoint,
                    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
                    session.as_deref(),
                )
                .await,
            );
        }
        judge_mcp_probe(
            declared.is_some(),
            &initialize,
            init.as_ref(),
            listed.as_ref(),
        )
    }
}

/// The JSON-RPC message with `id` in an answer that is JSON or an SSE stream.
pub fn rpc_message(got: &Got, id: u64) -> Option<Value> {
    if !got.ok() {
        return None;
    }
    let matches = |v: &Value| v.get("id").and_then(Value::as_u64) == Some(id);
    let sse = got
        .content_type
        .as_deref()
        .is_some_and(|c| c.contains("text/event-stream"));
    if sse {
        got.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(matches)
    } else {
        serde_json::from_str::<Value>(&got.body)
            .ok()
            .filter(matches)
    }
}

fn rpc_result(got: &Got, id: u64) -> Option<Value> {
    rpc_message(got, id).and_then(|m| m.get("result").cloned())
}

pub fn judge_mcp_probe(
    declared: bool,
    initialize: &Got,
    init: Option<&Value>,
    listed: Option<&Got>,
) -> CheckResult {
    const ADVICE: &str = "Serve MCP over Streamable HTTP at the URL your server card names, answering initialize and tools/list without credentials so agents can see what you offer before signing up.";
    let mut evidence = vec![initialize.evidence()];
    let guessed = if declared {
        ""
    } else {
        " (no endpoint declared; tried /mcp)"
    };
    let Some(init) = init else {
        let status = if initialize.status == Some(401) || initialize.status == Some(403) {
            CheckStatus::Warn
        } else {
            CheckStatus::Fail
        };
        return result(
            CheckId::McpProbe,
            status,
            format!("MCP initialize failed{guessed}"),
            evidence,
            Some(ADVICE),
        );
    };
    let server = format!(
        "{} {} (protocol {})",
        init.pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("unnamed server"),
        init.pointer("/serverInfo/version")
            .and_then(Value::as_str)
            .unwrap_or(""),
        init["protocolVersion"].as_str().unwrap_or("?")
    );
    let tools: Vec<String> = listed
        .and_then(|l| {
            evidence.push(l.evidence());
            rpc_result(l, 2)
        })
        .and_then(|r| {
            r["tools"].as_array().map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    if tools.is_empty() {
        return result(
            CheckId::McpProbe,
            CheckStatus::Warn,
            format!("{server} initialized{guessed}, but tools/list gave no tools"),
            evidence,
            Some(ADVICE),
        );
    }
    if let Some(first) = evidence.get_mut(0) {
        first.excerpt = format!("{server}; tools: {}", tools.join(", "));
    }
    result(
        CheckId::McpProbe,
        CheckStatus::Pass,
        format!(
            "{server} answered initialize and listed {} tools{guessed}",
            tools.len()
        ),
        evidence,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn mcp_answers_are_read_as_json_or_sse() {
        let json_answer = got(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#,
        );
        assert!(rpc_result(&json_answer, 1).is_some());
        assert!(rpc_result(&json_answer, 2).is_none());
        let sse = got(
            200,
            "text/event-stream",
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"a\"}]}}\n\n",
        );
        assert_eq!(rpc_result(&sse, 2).unwrap()["tools"][0]["name"], "a");
        let init =
            json!({"protocolVersion": "2025-06-18", "serverInfo": {"name": "s", "version": "1"}});
        assert_eq!(
            judge_mcp_probe(true, &json_answer, Some(&init), Some(&sse)).status,
            CheckStatus::Pass
        );
        let empty = got(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#,
        );
        assert_eq!(
            judge_mcp_probe(true, &json_answer, Some(&init), Some(&empty)).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_mcp_probe(false, &got(404, "text/plain", ""), None, None).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_mcp_probe(true, &got(401, "application/json", "{}"), None, None).status,
            CheckStatus::Warn
        );
    }
}
