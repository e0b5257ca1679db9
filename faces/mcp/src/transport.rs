//! The Streamable HTTP rules checked in front of rmcp, each refusal a JSON-RPC error object (rmcp
//! answers these in plain text, and a malformed body with 415):
//!
//! - a POST must accept both `application/json` and `text/event-stream` (406) and send
//!   `Content-Type: application/json` (415);
//! - a body that is not JSON is a parse error: 400 with `-32700`; JSON that is not a JSON-RPC
//!   message is 400 with `-32600`;
//! - an `MCP-Protocol-Version` header naming a revision this server does not serve is 400 with
//!   `-32022` and the supported list (MCP 2025-06-18 and later: "invalid or unsupported ... MUST
//!   respond with 400"). rmcp would accept every revision it knows, `2024-11-05` and
//!   `2025-03-26` included. An absent header is allowed: the spec keeps it for clients that
//!   predate the header, and this stateless server has no session whose version it could
//!   assume otherwise.

use kit::headers;
use poem::{Request, Response, http::StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, ProtocolVersion};
use serde_json::{Value, json};

use crate::PROTOCOL_VERSIONS;

/// Checks `req`, putting its body back when it passes; the refusal otherwise.
pub async fn check(req: &mut Request, max_body_bytes: usize) -> Result<(), Box<Response>> {
    let header = req
        .headers()
        .get("mcp-protocol-version")
        .map(|v| v.to_str().unwrap_or("(not text)").to_owned());
    if req.method() != http::Method::POST {
        return match header {
            Some(version) => check_version(&version, &Value::Null),
            None => Ok(()),
        };
    }
    if !accepts_both(req) {
        return Err(refuse(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            ErrorData::invalid_request(
                "Not Acceptable: the Accept header must list both application/json and \
                 text/event-stream.",
                None,
            ),
        ));
    }
    if !headers::is(headers::content_type(req), "application/json") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &Value::Null,
            ErrorData::invalid_request(
                "Unsupported Media Type: send the JSON-RPC message with Content-Type: \
                 application/json.",
                None,
            ),
        ));
    }
    let body = match req.take_body().into_bytes_limit(max_body_bytes).await {
        Ok(b) => b,
        Err(poem::error::ReadBodyError::PayloadTooLarge) => {
            return Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                ErrorData::invalid_request(
                    format!("Payload Too Large: the body exceeds {max_body_bytes} bytes."),
                    None,
                ),
            ));
        }
        Err(e) => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                ErrorData::parse_error(format!("Parse error: {e}"), None),
            ));
        }
    };
    let value: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                ErrorData::parse_error(format!("Parse error: the body is not JSON ({e})."), None),
            ));
        }
    };
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    // A key given twice, anywhere (a tool's arguments too), is refused rather than read as its
    // last; rmcp, reading the bytes, refused some of them with a plain-text 415.
    if let Some(why) = kit::json_body::Unique::refused(&body) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            &id,
            ErrorData::invalid_request(format!("Invalid Request: {why}."), None),
        ));
    }
    // rmcp reads a `tools/call` request whose params are not `{name, arguments}` as a method
    // of its own, and answers -32601 (method not found): JSON-RPC's word for it is -32602.
    // Only a JSON-RPC 2.0 request (with an id) is answered so; the rest is judged below.
    if value.get("method").and_then(Value::as_str) == Some("tools/call")
        && value.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && !id.is_null()
    {
        let params = value.get("params").and_then(Value::as_object);
        let well_formed = params.is_some_and(|p| {
            p.get("name").is_some_and(Value::is_string)
                && p.get("arguments")
                    .is_none_or(|a| a.is_object() || a.is_null())
        });
        if !well_formed {
            return Err(refuse(
                StatusCode::OK,
                &id,
                ErrorData::invalid_params(
                    "Invalid params: tools/call takes {\"name\": string, \"arguments\": object}.",
                    None,
                ),
            ));
        }
    }
    if let Err(e) = serde_json::from_value::<ClientJsonRpcMessage>(value) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            &id,
            ErrorData::invalid_request(
                format!("Invalid Request: the body is not one JSON-RPC 2.0 message ({e})."),
                None,
            ),
        ));
    }
    if let Some(version) = header {
        check_version(&version, &id)?;
    }
    req.set_body(body);
    Ok(())
}

fn check_version(version: &str, id: &Value) -> Result<(), Box<Response>> {
    if PROTOCOL_VERSIONS.iter().any(|v| v.as_str() == version) {
        return Ok(());
    }
    let supported: Vec<&str> = PROTOCOL_VERSIONS
        .iter()
        .map(ProtocolVersion::as_str)
        .collect();
    let error = ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported MCP-Protocol-Version {version}: this server speaks {}.",
            supported.join(", ")
        ),
        Some(json!({"requested": version, "supported": supported})),
    );
    Err(refuse(StatusCode::BAD_REQUEST, id, error))
}

fn accepts_both(req: &Request) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in req.headers().get_all(http::header::ACCEPT) {
        for item in value.to_str().unwrap_or_default().split(',') {
            json |= headers::is(Some(item), "application/json");
            sse |= headers::is(Some(item), "text/event-stream");
        }
    }
    json && sse
}

fn refuse(status: StatusCode, id: &Value, error: ErrorData) -> Box<Response> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    Box::new(
        Response::builder()
            .status(status)
            .content_type("application/json")
            .body(body.to_string()),
    )
}
