//! What the served OpenAPI document adds to poem-openapi's output so that it says exactly what
//! the server enforces: constraints poem-openapi cannot express on the handlers' types (required
//! OAuth form fields the handler answers in RFC 6749's shape, the `Idempotency-Key` syntax,
//! selector, URL, e-mail and scope syntax, NUL-free event strings), the failure catalog as an
//! enum, the agent traffic event schema as the telemetry body, OpenAPI links from the
//! operations that create a resource to those that read it, and the site's `/api/billing/*`
//! JSON endpoints (served by the web face, described here so one document covers them).
//!
//! Each pattern is the server's own rule written as a regular expression; `tests/api/openapi.rs`
//! sends values on both sides of each and fails if one is dropped.

mod billing;

use billing::billing;
use serde_json::{Map, Value, json};
use svc_ports::FailureClass;

use kit::context::AppContext;
use kit::wire::signup::DEVICE_CODE_GRANT;

// Whitespace as Rust's `str::trim` has it (Unicode White_Space), and a character that is
// neither that nor a control character.
macro_rules! ws {
    () => {
        r"[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    };
}
macro_rules! solid {
    () => {
        concat!("[^", solid_excluded!(), "]")
    };
}
macro_rules! solid_excluded {
    () => {
        r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
    };
}
/// The server trims whitespace, then refuses an empty value or any control character left.
pub const PRINTABLE_NOT_BLANK: &str = concat!(
    "^",
    ws!(),
    r"*[^\x00-\x1f\x7f-\x9f]*",
    solid!(),
    ws!(),
    "*$"
);
// What draws nothing or turns the text around it (`svc_ports::text::hides_or_reorders`). The
// planes above the first have no escape that every regex dialect reads (`\u{E0000}` is
// ECMAScript's, `\U000E0000` Python's, `\x{E0000}` Rust's and PCRE's), so their ranges are
// the characters themselves, which ECMAScript's Unicode mode (JSON Schema's dialect), Python
// and Rust all read as code points.
macro_rules! hidden {
    () => {
        concat!(
            r"\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8",
            "\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}"
        )
    };
}
/// A name a person is shown and asked to trust (an agent's client id and name, an account to
/// connect): [`PRINTABLE_NOT_BLANK`] without invisible or direction-changing characters.
pub const SHOWN_NOT_BLANK: &str = concat!(
    "^",
    ws!(),
    r"*[^\x00-\x1f\x7f-\x9f",
    hidden!(),
    "]*[^",
    solid_excluded!(),
    hidden!(),
    "]",
    ws!(),
    "*$"
);
/// The same for an optional value: blank means absent.
pub const SHOWN: &str = concat!(
    "^",
    ws!(),
    r"*(?:[^\x00-\x1f\x7f-\x9f",
    hidden!(),
    "]*[^",
    solid_excluded!(),
    hidden!(),
    "])?",
    ws!(),
    "*$"
);
/// The same for an optional value: blank means absent.
pub const PRINTABLE: &str = concat!(
    "^",
    ws!(),
    r"*(?:[^\x00-\x1f\x7f-\x9f]*",
    solid!(),
    ")?",
    ws!(),
    "*$"
);
/// Scopes a signup may ask for, separated by spaces or commas (after the trim); blank means
/// the default set.
pub const SIGNUP_SCOPES: &str = concat!(
    "^",
    ws!(),
    r"*[ ,]*(?:(?:read|discover|execute)(?:[ ,]+(?:read|discover|execute))*)?[ ,]*",
    ws!(),
    "*$"
);
/// Scopes the device flow may ask for: a signup's, and `execute:consequential`, which the
/// human sees apart and grants only by ticking it.
pub const DEVICE_SCOPES: &str = concat!(
    "^",
    ws!(),
    r"*[ ,]*(?:(?:read|discover|execute:consequential|execute)(?:[ ,]+(?:read|discover|execute:consequential|execute))*)?[ ,]*",
    ws!(),
    "*$"
);
/// 1-255 visible ASCII characters, spaces only inside (HTTP drops them at the ends).
pub const IDEMPOTENCY_KEY: &str = r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$";
/// An absolute `http` or `https` URL (anything else is 422 `url_refused`).
pub const HTTP_URL: &str = r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s]+$";
/// What `Email::parse` adds to `format: email`: one `@`, a local part of at most 64
/// characters, a dotted domain with no empty label, no whitespace or control character.
pub const EMAIL: &str =
    r"^[^@\s\x00-\x1f\x7f-\x9f]{1,64}@[^@\s.\x00-\x1f\x7f-\x9f]+(?:\.[^@\s.\x00-\x1f\x7f-\x9f]+)+$";
/// Printable ASCII without spaces.
pub const VISIBLE_ASCII: &str = r"^[\x21-\x7e]+$";
/// `acct_` and a ULID.
pub const ACCOUNT_ID: &str = r"^acct_[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$";
/// No NUL character: no store keeps one in text, so every event string refuses it.
pub const NO_NUL: &str = r"^[^\x00]*$";

/// Applies every addition to the generated document.
pub fn complete(doc: &mut Value, ctx: &AppContext) {
    constrain_requests(doc);
    optional_may_be_null(doc);
    upstream_failures(doc);
    failure_class_enums(doc);
    telemetry_body(doc, &ctx.origins.site_url);
    links(doc);
    crate::keys::document(doc);
    let skus = ctx
        .services
        .billing
        .catalog()
        .skus
        .iter()
        .filter(|s| matches!(s.offer, svc_services::billing::Offer::Checkout { .. }))
        .map(|s| s.id.clone())
        .collect();
    billing(doc, &ctx.origins.site_url, skus);
}

/// The API's JSON request bodies (read through `kit::JsonBody`, each `deny_unknown_fields`):
/// the document marks them closed, and the server takes `null` for an optional field as its
/// absence. `tests/api/openapi.rs` checks that every JSON body of the document is in here.
pub(crate) const JSON_BODIES: &[&str] = &[
    "ReadBody",
    "ReadBatchBody",
    "RegisterBody",
    "VerifyBody",
    "DeviceAuthorizationJson",
    "DiscoverBody",
    "ExecuteBody",
    "ScanBody",
    "StartConnectionBody",
    "CreateKeyBody",
    "CreateWebhookEndpointBody",
];

fn optional_may_be_null(doc: &mut Value) {
    for name in JSON_BODIES {
        let Some(schema) = doc.pointer_mut(&format!("/components/schemas/{name}")) else {
            continue;
        };
        let required: Vec<Value> = schema["required"].as_array().cloned().unwrap_or_default();
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (field, prop) in props.iter_mut() {
            if required.contains(&Value::from(field.as_str())) {
                continue;
            }
            if let Some(t) = prop.get("type").and_then(Value::as_str) {
                prop["type"] = json!([t, "null"]);
            } else if prop.get("$ref").is_some() {
                let inner = std::mem::take(prop);
                *prop = json!({"anyOf": [inner, {"type": "null"}]});
            }
        }
    }
}

/// Merges `patch` into the object at `pointer` (objects merged key by key, the rest replaced).
pub(crate) fn merge(doc: &mut Value, pointer: &str, patch: Value) {
    if let Some(target) = doc.pointer_mut(pointer) {
        merge_value(target, patch);
    }
}

fn merge_value(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge_value(t.entry(k).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

/// The parameter `name` of the operation at `op` (a JSON pointer to it).
pub(crate) fn parameter_schema(doc: &mut Value, op: &str, name: &str) -> Option<String> {
    let params = doc.pointer(&format!("{op}/parameters"))?.as_array()?;
    let i = params.iter().position(|p| p["name"] == name)?;
    Some(format!("{op}/parameters/{i}/schema"))
}

fn constrain_requests(doc: &mut Value) {
    let schemas = "/components/schemas";
    // RFC 8628 §3.4: the token request needs both fields (the handler answers their absence
    // in RFC 6749's shape, so the Rust type keeps them optional).
    merge(
        doc,
        &format!("{schemas}/TokenForm"),
        json!({
            "required": ["grant_type", "device_code"],
            "properties": {
                "grant_type": {"enum": [DEVICE_CODE_GRANT]},
                "device_code": {"minLength": 1},
            }
        }),
    );
    merge(
        doc,
        &format!("{schemas}/DeviceAuthorizationForm"),
        json!({
            "required": ["client_id"],
            "properties": {
                "client_id": {"maxLength": 128, "pattern": SHOWN_NOT_BLANK},
                "scope": {"maxLength": 256, "pattern": DEVICE_SCOPES},
            }
        }),
    );
    // JSON: `client_id`, or else `agent_name`, names the client.
    merge(
        doc,
        &format!("{schemas}/DeviceAuthorizationJson"),
        json!({
            "properties": {
                "client_id": {"pattern": SHOWN_NOT_BLANK},
                "agent_name": {"pattern": SHOWN},
                "scope": {"pattern": DEVICE_SCOPES},
            },
            "anyOf": [
                {"required": ["client_id"], "properties": {"client_id": {"type": "string"}}},
                {"required": ["agent_name"], "properties": {"agent_name": {"type": "string", "pattern": SHOWN_NOT_BLANK}}},
            ],
        }),
    );
    merge(
        doc,
        &format!("{schemas}/RegisterBody"),
        json!({
            "properties": {
                "email": {"format": "email", "pattern": EMAIL},
                "agent_name": {"pattern": SHOWN},
                "scope": {"pattern": SIGNUP_SCOPES},
            }
        }),
    );
    // A bare domain gets `https://`; blank is refused.
    merge(
        doc,
        &format!("{schemas}/ScanBody"),
        json!({"properties": {"url": {"minLength": 1, "pattern": r"\S", "examples": ["https://example.com"]}}}),
    );
    merge(
        doc,
        &format!("{schemas}/ExecuteBody"),
        json!({"properties": {"params": {"type": "object"}}}),
    );
    merge(
        doc,
        &format!("{schemas}/StartConnectionBody"),
        json!({"properties": {"expected_account": {"pattern": SHOWN}}}),
    );
    // Event types are the six names; the description is printable; the URL http(s).
    merge(
        doc,
        &format!("{schemas}/CreateWebhookEndpointBody"),
        json!({
            "properties": {
                "url": {"format": "uri", "pattern": HTTP_URL, "examples": ["https://example.com/webhooks"]},
                "events": {"uniqueItems": true, "items": {"enum": svc_ports::HookEventType::ALL.map(|t| t.as_str())}},
                "description": {"pattern": PRINTABLE},
            }
        }),
    );
    let after = "/paths/~1api~1webhook-events/get";
    if let Some(p) = parameter_schema(doc, after, "after") {
        merge(
            doc,
            &p,
            json!({"pattern": r"^\s*(?:evt_[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25})?\s*$"}),
        );
    }
    let selector = json!({"items": {"minLength": 1, "pattern": r"\S"}});
    merge(
        doc,
        &format!("{schemas}/ReadBody"),
        json!({
            "properties": {
                "url": {"format": "uri", "pattern": HTTP_URL, "examples": ["https://example.com/"]},
                "include_selectors": selector,
                "exclude_selectors": selector,
            }
        }),
    );
    merge(
        doc,
        &format!("{schemas}/ReadBatchBody"),
        json!({
            "properties": {
                // Each URL is answered on its own (a malformed one as an `error` item), so
                // the items are any string, not only what the guard would fetch.
                "urls": {"examples": [["https://example.com/"]]},
                "include_selectors": selector,
                "exclude_selectors": selector,
            }
        }),
    );
    let read = "/paths/~1api~1read/get";
    for (name, patch) in [
        (
            "url",
            json!({"format": "uri", "pattern": HTTP_URL, "examples": ["https://example.com/"]}),
        ),
        ("include_selectors", selector.clone()),
        ("exclude_selectors", selector),
    ] {
        if let Some(p) = parameter_schema(doc, read, name) {
            merge(doc, &p, patch);
        }
    }
    let execute = "/paths/~1api~1execute/post";
    if let Some(p) = parameter_schema(doc, execute, "Idempotency-Key") {
        merge(
            doc,
            &p,
            json!({"minLength": 1, "maxLength": 255, "pattern": IDEMPOTENCY_KEY}),
        );
    }
    // The scopes that exist: any other is 422 (the service's list, so the two cannot differ).
    let scopes: Vec<String> = svc_services::keys::grantable_scopes()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    if let Some(items) =
        doc.pointer_mut("/components/schemas/CreateKeyBody/properties/scopes/items")
    {
        items["enum"] = json!(scopes);
    }
}

/// Operations that fetch a site answer its failure (502 `upstream_unreachable`, 504
/// `upstream_timeout`) beside the problems every operation can answer.
fn upstream_failures(doc: &mut Value) {
    for op in [
        "/paths/~1api~1readiness~1scan/post",
        "/paths/~1api~1tasks~1{task_id}~1verify/post",
    ] {
        for (status, description) in [
            (
                "502",
                "The site failed or could not be reached (`upstream_unreachable`, `action_failed`).",
            ),
            (
                "504",
                "The site did not answer in time (`upstream_timeout`).",
            ),
        ] {
            if let Some(responses) = doc
                .pointer_mut(&format!("{op}/responses"))
                .and_then(Value::as_object_mut)
            {
                responses
                    .entry(status)
                    .or_insert_with(|| problem(description));
            }
        }
    }
}

/// `failure_class` everywhere is one value of the published catalog.
fn failure_class_enums(doc: &mut Value) {
    let all: Vec<Value> = FailureClass::ALL
        .iter()
        .map(|c| Value::from(c.as_str()))
        .collect();
    for schema in [
        "Problem",
        "ExecutionFailure",
        "OAuthError",
        "ReadBatchError",
    ] {
        merge(
            doc,
            &format!("/components/schemas/{schema}/properties/failure_class"),
            json!({"enum": all}),
        );
    }
    let mut nullable = all;
    nullable.push(Value::Null);
    merge(
        doc,
        "/components/schemas/VerificationArtifactDoc/properties/failure_class",
        json!({"enum": nullable}),
    );
}

/// The telemetry body is the served agent traffic event schema (the same JSON, under
/// `components`), with the one rule the store adds: no string holds a NUL.
fn telemetry_body(doc: &mut Value, site_url: &str) {
    let mut event = svc_services::telemetry::event_schema(site_url);
    let served = event
        .as_object_mut()
        .and_then(|e| {
            e.remove("$schema");
            e.remove("$id")
        })
        .and_then(|id| id.as_str().map(str::to_owned))
        .unwrap_or_default();
    no_nul_strings(&mut event);
    // Extra properties are allowed (the spec's schema restricts none), but no string in them,
    // key or value, may hold a NUL either.
    event["propertyNames"] = json!({"pattern": NO_NUL});
    event["additionalProperties"] = json!({"$ref": "#/components/schemas/JsonWithoutNul"});
    if let Some(e) = event.as_object_mut() {
        e.insert(
            "externalDocs".into(),
            json!({"description": "The schema as served", "url": served}),
        );
    }
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        schemas.insert("AgentTrafficEvent".into(), event);
        schemas.insert(
            "JsonWithoutNul".into(),
            json!({
                "description": "Any JSON value in which no string (and no object key) holds a NUL.",
                "anyOf": [
                    {"type": ["null", "boolean", "number"]},
                    {"type": "string", "pattern": NO_NUL},
                    {"type": "array", "items": {"$ref": "#/components/schemas/JsonWithoutNul"}},
                    {"type": "object", "propertyNames": {"pattern": NO_NUL},
                        "additionalProperties": {"$ref": "#/components/schemas/JsonWithoutNul"}},
                ],
            }),
        );
    }
    if let Some(content) = doc
        .pointer_mut("/paths/~1telemetry~1agent-event/post/requestBody/content")
        .and_then(Value::as_object_mut)
    {
        for media in content.values_mut() {
            media["schema"] = json!({"$ref": "#/components/schemas/AgentTrafficEvent"});
        }
    }
}

/// Every string property (and array item) of an event refuses a NUL.
fn no_nul_strings(schema: &mut Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for prop in props.values_mut() {
        let target = if prop["type"] == "array" {
            &mut prop["items"]
        } else {
            prop
        };
        if target["type"] == "string" && target.get("enum").is_none() {
            target["pattern"] = json!(NO_NUL);
        }
    }
}

/// OpenAPI links: where an answer names a resource, the operation that reads it.
fn links(doc: &mut Value) {
    let task = |op: &str, description: &str| {
        json!({
            "operationRef": format!("#/paths/~1api~1tasks~1{{task_id}}{op}"),
            "parameters": {"task_id": "$response.body#/task_id"},
            "description": description,
        })
    };
    let task_links = json!({
        "GetTask": task("/get", "The task this execution created, with its artifact."),
        "VerifyTask": task("~1verify/post", "Verify the business outcome of this task's payment."),
    });
    for status in ["200", "502", "504"] {
        add_links(
            doc,
            "/paths/~1api~1execute/post",
            status,
            task_links.clone(),
        );
    }
    add_links(
        doc,
        "/paths/~1api~1tasks~1{task_id}/get",
        "200",
        json!({"VerifyTask": task("~1verify/post", "Verify the business outcome of this task's payment.")}),
    );
    add_links(
        doc,
        "/paths/~1api~1readiness~1scan/post",
        "200",
        json!({"GetScan": {
            "operationRef": "#/paths/~1api~1readiness~1scans~1{scan_id}/get",
            "parameters": {"scan_id": "$response.body#/scan_id"},
            "description": "The stored report of this scan.",
        }}),
    );
    let provider = |op: &str, description: &str| {
        json!({
            "operationRef": format!("#/paths/~1api~1connections~1{{provider}}{op}"),
            "parameters": {"provider": "$response.body#/provider"},
            "description": description,
        })
    };
    add_links(
        doc,
        "/paths/~1api~1connections~1{provider}~1start/post",
        "201",
        json!({
            "PollConnection": provider("~1poll/get", "Poll until the connection reaches a final state."),
            "ConnectionStatus": provider("/get", "Where the connection stands."),
        }),
    );
    add_links(
        doc,
        "/paths/~1api~1webhook-endpoints/post",
        "201",
        json!({"DeleteEndpoint": {
            "operationRef": "#/paths/~1api~1webhook-endpoints~1{endpoint_id}/delete",
            "parameters": {"endpoint_id": "$response.body#/endpoint/id"},
            "description": "Delete this endpoint.",
        }}),
    );
    add_links(
        doc,
        "/paths/~1api~1webhook-deliveries~1{delivery_id}~1replay/post",
        "202",
        json!({"ReplayAgain": {
            "operationRef": "#/paths/~1api~1webhook-deliveries~1{delivery_id}~1replay/post",
            "parameters": {"delivery_id": "$response.body#/replay_of"},
            "description": "Replay the original delivery again.",
        }}),
    );
    let authority = |op: &str, description: &str| {
        json!({
            "operationRef": format!("#/paths/~1api~1payment-authorities~1{{authority_id}}{op}"),
            "parameters": {"authority_id": "$response.body#/authority_id"},
            "description": description,
        })
    };
    add_links(
        doc,
        "/paths/~1api~1payment-authorities~1{authority_id}~1revocation/post",
        "200",
        json!({
            "GetAuthority": authority("/get", "The revoked authority."),
            "CheckAuthority": authority("~1revocation/get", "Its status at its revocation URL."),
        }),
    );
}

pub(crate) fn add_links(doc: &mut Value, op: &str, status: &str, links: Value) {
    if let Some(resp) = doc
        .pointer_mut(&format!("{op}/responses/{status}"))
        .and_then(Value::as_object_mut)
    {
        let existing = resp
            .entry("links")
            .or_insert_with(|| Value::Object(Map::new()));
        merge_value(existing, links);
    }
}

fn problem(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
    })
}

fn retry_after(description: &str) -> Value {
    let mut p = problem(description);
    p["headers"] = json!({"Retry-After": {
        "description": "Seconds to wait before sending it again.",
        "required": true,
        "schema": {"type": "integer", "minimum": 1},
    }});
    p
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use regex::Regex;

    /// Each pattern against values on both sides of the server's rule (the comment of each
    /// constant says which rule).
    pub(crate) fn check(pattern: &str, accepted: &[&str], refused: &[&str]) {
        let re = Regex::new(pattern).expect(pattern);
        for v in accepted {
            assert!(
                re.is_match(v),
                "{pattern} refuses {v:?}, which the server takes"
            );
        }
        for v in refused {
            assert!(
                !re.is_match(v),
                "{pattern} takes {v:?}, which the server refuses"
            );
        }
    }

    #[test]
    fn shown_names_refuse_exactly_what_misleads_in_every_plane() {
        let re = Regex::new(SHOWN_NOT_BLANK).unwrap();
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let name = format!("a{c}b");
            assert_eq!(
                re.is_match(&name),
                !svc_ports::text::misleads(&name),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }

    #[test]
    fn the_patterns_are_the_servers_rules() {
        // Trimmed, then non-empty and without a control character.
        check(
            PRINTABLE_NOT_BLANK,
            &["a", " agent ", "\u{b}x", "a b", "é", "x\u{a0}"],
            &["", " ", "\u{a0}", "a\u{1}b", "\u{1c}a", "a\u{85}b", "\t"],
        );
        check(
            PRINTABLE,
            &["", " ", "a", "\u{b}z", "  x y  "],
            &["a\u{0}", "\u{1c}", "x\u{7f}y"],
        );
        // Names a person is asked to trust: also no invisible or direction-changing character
        // (`svc_ports::text::misleads`), in every plane.
        for (pattern, blank_ok) in [(SHOWN_NOT_BLANK, false), (SHOWN, true)] {
            let refused = [
                "a\u{ad}b",
                "\u{202e}cihporhtna",
                "shop\u{200b}agent",
                "x\u{feff}",
                "\u{2066}a",
                "a\u{1}",
                "tag\u{e0041}",
                "a\u{e07f8}",
                "\u{1d173}x",
                "\u{1bca0}",
            ];
            check(pattern, &["agent", " a b ", "é", "Claude Code"], &refused);
            for hidden in refused {
                assert!(svc_ports::text::misleads(hidden.trim()), "{hidden:?}");
            }
            check(
                pattern,
                if blank_ok { &["", " "] } else { &[] },
                if blank_ok { &[] } else { &["", " "] },
            );
        }
        check(
            SIGNUP_SCOPES,
            &[
                "",
                "read",
                "read discover,execute",
                " ,read,, execute \u{c}",
                "\t",
            ],
            &["discoverread", "write", "read\tdiscover", "read;execute"],
        );
        check(
            DEVICE_SCOPES,
            &[
                "",
                "read execute:consequential",
                "execute:consequential,execute",
                " execute:consequential ",
            ],
            &[
                "execute:consequentialread",
                "execute:",
                "admin",
                "read;execute",
            ],
        );
        check(
            IDEMPOTENCY_KEY,
            &["a", "order 42", "~!"],
            &["", " a", "a ", "a\tb", "é"],
        );
        check(
            HTTP_URL,
            &["https://example.com/", "HTTP://x"],
            &["example.com", "ftp://x", "https://"],
        );
        check(
            EMAIL,
            &["a@b.co", "a.b+c@x.y.z"],
            &[
                "a@b", "a@.b", "a@b.", "a@b..c", "a b@c.d", "@b.co", " a@b.co", "a@b@c.d",
            ],
        );
        check(NO_NUL, &["", "abc"], &["a\u{0}b"]);
        check(VISIBLE_ASCII, &["m-1", "~"], &["", "a b", "é"]);
    }

    #[test]
    fn optional_fields_of_json_bodies_take_null() {
        let mut doc = json!({"components": {"schemas": {"ReadBody": {
            "required": ["url"],
            "properties": {
                "url": {"type": "string"},
                "format": {"$ref": "#/components/schemas/ReadFormat"},
                "max_age": {"type": "number"},
            }
        }}}});
        optional_may_be_null(&mut doc);
        let props = &doc["components"]["schemas"]["ReadBody"]["properties"];
        assert_eq!(props["url"]["type"], "string");
        assert_eq!(props["max_age"]["type"], json!(["number", "null"]));
        assert_eq!(props["format"]["anyOf"][1], json!({"type": "null"}));
    }
}
