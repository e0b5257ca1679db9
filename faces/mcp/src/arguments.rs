//! A tool's arguments checked against the input schema `tools/list` publishes, before the tool
//! runs: a wrong type (`{"url": 5}`), a missing or unknown field, a value out of range or `null`
//! where the schema says to leave the field out all come back as one tool error naming each
//! field, so the model can correct the call (MCP 2025-11-25: input validation errors are tool
//! results with `isError: true`, not protocol errors). serde alone would name no field.

use std::{collections::HashMap, sync::LazyLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use kit::problem::ApiProblem;
use serde_json::{Map, Value};

/// Per tool: its compiled validator, and the field names it takes when it refuses others.
struct Checker {
    validator: jsonschema::Validator,
    closed: Option<Vec<String>>,
}

static CHECKERS: LazyLock<HashMap<String, Checker>> = LazyLock::new(|| {
    crate::tools::router()
        .list_all()
        .into_iter()
        .filter_map(|tool| {
            let schema = Value::Object(tool.input_schema.as_ref().clone());
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&schema)
                .ok()?;
            let closed = (schema["additionalProperties"] == false).then(|| {
                schema["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default()
            });
            Some((tool.name.to_string(), Checker { validator, closed }))
        })
        .collect()
});

/// The problem with a call's arguments, if any; `None` for a tool this face does not have (the
/// router answers that as a protocol error).
pub fn problem(tool: &str, arguments: Option<&Map<String, Value>>) -> Option<ApiProblem> {
    let checker = CHECKERS.get(tool)?;
    let instance = Value::Object(arguments.cloned().unwrap_or_default());
    // Unknown fields named here: the validator reports them without their names.
    let mut found: Vec<String> = match (&checker.closed, arguments) {
        (Some(known), Some(args)) => args
            .keys()
            .filter(|k| !known.contains(k))
            .map(|k| format!("unknown field `{k}` (not in the input schema)"))
            .collect(),
        _ => Vec::new(),
    };
    found.extend(
        checker
            .validator
            .iter_errors(&instance)
            .filter(|e| {
                !matches!(
                    e.kind(),
                    ValidationErrorKind::FalseSchema
                        | ValidationErrorKind::AdditionalProperties { .. }
                )
            })
            .map(|e| say(&e)),
    );
    if found.is_empty() {
        return None;
    }
    found.dedup();
    found.truncate(5);
    Some(ApiProblem::new(
        svc_ports::FailureClass::InvalidRequest,
        format!(
            "The arguments do not match the tool's input schema: {}. Fix them as the inputSchema \
             in tools/list says and call the tool again.",
            found.join("; ")
        ),
    ))
}

/// One validation error in words, naming the field.
fn say(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str().trim_start_matches('/');
    let field = if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("`{}`", path.replace('/', "."))
    };
    let sub = |name: &str| {
        if path.is_empty() {
            format!("`{name}`")
        } else {
            format!("`{}.{name}`", path.replace('/', "."))
        }
    };
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let wanted = match kind {
                TypeKind::Single(t) => article(&t.to_string()),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| article(&t.to_string()))
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            let got = error.instance();
            if got.is_null() {
                format!("{field} must be {wanted}; leave it out instead of sending null")
            } else {
                format!("{field} must be {wanted}, not {}", kind_of(got))
            }
        }
        ValidationErrorKind::Required { property } => {
            format!("{} is required", sub(property.as_str().unwrap_or_default()))
        }
        _ => format!("{field}: {}", error.masked()),
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "object" | "array" => format!("an {t}"),
        "null" => "null".into(),
        _ => format!("a {t}"),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detail(tool: &str, args: Value) -> String {
        problem(tool, args.as_object())
            .map(|p| p.detail)
            .unwrap_or_default()
    }

    #[test]
    fn each_kind_of_mistake_names_the_field() {
        let d = detail("read_page", json!({"url": 5}));
        assert!(d.contains("`url` must be a string, not an integer"), "{d}");
        let d = detail("read_page", json!({}));
        assert!(d.contains("`url` is required"), "{d}");
        let d = detail(
            "read_page",
            json!({"url": "https://a.example", "colour": 1}),
        );
        assert!(d.contains("unknown field `colour`"), "{d}");
        let d = detail(
            "read_page",
            json!({"url": "https://a.example", "max_age": null}),
        );
        assert!(d.contains("leave it out instead of sending null"), "{d}");
        let d = detail(
            "read_page",
            json!({"url": "https://a.example", "max_age": 700000}),
        );
        assert!(
            d.starts_with("The arguments") && d.contains("`max_age`"),
            "{d}"
        );
    }

    #[test]
    fn good_arguments_and_unknown_tools_pass() {
        assert!(problem("read_page", json!({"url": "https://a.example"}).as_object()).is_none());
        assert!(problem("svc_auth_status", None).is_none());
        let d = detail("svc_auth_status", json!({"x": 1}));
        assert!(d.contains("unknown field `x`"), "{d}");
        assert!(problem("no_such_tool", None).is_none());
    }
}
