//! Tool schemas in plain, portable JSON Schema 2020-12. schemars and poem-openapi write a few
//! things clients lint or ignore: home-made integer formats (`uint16`, `int64`), `type: [X,
//! "null"]`, `allOf` wrappers that only carry a description, and bare `{}` for free-form JSON.
//! Every tool's input and output schema goes through [`portable`] once, when the router is built,
//! so `tools/list`, the published manifest and argument checking all see the same schema.

use serde_json::{Map, Value, json};

/// Keywords that constrain a value; a schema with none of them accepts anything.
const VALIDATING: &[&str] = &[
    "type",
    "enum",
    "const",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "properties",
    "items",
    "prefixItems",
    "additionalProperties",
];

/// Keywords that only annotate.
const ANNOTATIONS: &[&str] = &["description", "title", "default", "examples", "deprecated"];

/// Free-form JSON fields of the wire types (`serde_json::Value`), by property name: what they
/// hold. Each is a JSON object; JSON-LD blocks are objects or arrays (JSON-LD 1.1 section 9).
fn free_form(property: &str) -> Option<Value> {
    match property {
        // Schemas of an action (checked to be objects when a map is imported), the evidence of
        // an artifact and the typed result of a completed action (the object of its outputs).
        "params_schema" | "output_schema" | "evidence" | "result" => {
            Some(json!({"type": "object", "additionalProperties": true}))
        }
        "json_ld[]" => Some(json!({"anyOf": [
            {"type": "object", "additionalProperties": true},
            {"type": "array"}
        ]})),
        _ => None,
    }
}

/// Rewrites a tool schema in place into its portable form.
pub fn portable(schema: &mut Map<String, Value>) {
    let mut root = Value::Object(std::mem::take(schema));
    walk(&mut root, Place::Required, None);
    if let Value::Object(map) = root {
        *schema = map;
    }
}

/// Whether `null` is a value the field really takes: an optional property is simply left out
/// instead (every optional field is skipped when empty), a required one may be `null`.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Optional,
    Required,
}

fn walk(node: &mut Value, place: Place, property: Option<&str>) {
    let Value::Object(map) = node else { return };
    integer_format(map);
    // Children, each with its own place.
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, child) in props.iter_mut() {
            let place = if required.contains(name) {
                Place::Required
            } else {
                Place::Optional
            };
            walk(child, place, Some(name));
        }
    }
    if let Some(items) = map.get_mut("items") {
        let name = property.map(|p| format!("{p}[]"));
        walk(items, Place::Required, name.as_deref());
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            for child in defs.values_mut() {
                walk(child, Place::Required, None);
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(branches)) = map.get_mut(key) {
            for child in branches {
                walk(child, Place::Required, None);
            }
        }
    }
    if let Some(extra @ Value::Object(_)) = map.get_mut("additionalProperties") {
        walk(extra, Place::Required, None);
    }
    nullable(map, place);
    annotated_ref(map);
    if !map.keys().any(|k| VALIDATING.contains(&k.as_str()))
        && let Some(Value::Object(what)) = property.and_then(free_form)
    {
        map.extend(what);
    }
}

/// `format: uint16` and the like: the range as `minimum`/`maximum` instead.
fn integer_format(map: &mut Map<String, Value>) {
    let Some(format) = map.get("format").and_then(Value::as_str) else {
        return;
    };
    let (min, max): (Option<i64>, Option<u64>) = match format {
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint" => (Some(0), None),
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX as u64)),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX as u64)),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX as u64)),
        "int64" | "int" | "float" | "double" => (None, None),
        _ => return,
    };
    map.remove("format");
    if let Some(min) = min {
        map.entry("minimum").or_insert(min.into());
    }
    if let Some(max) = max {
        map.entry("maximum").or_insert(max.into());
    }
}

/// `type: [X, "null"]` and `anyOf: [A, {type: null}]`: the plain `X` (or `A`) where the field is
/// optional; where `null` is a real value, one `anyOf` branch per type.
fn nullable(map: &mut Map<String, Value>, place: Place) {
    if let Some(Value::Array(types)) = map.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() == types.len() {
            return;
        }
        let single = match rest.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(rest),
        };
        if place == Place::Optional {
            map.insert("type".into(), single);
        } else {
            let mut branch = Map::new();
            for (k, v) in std::mem::take(map) {
                if ANNOTATIONS.contains(&k.as_str()) {
                    map.insert(k, v);
                } else if k != "type" {
                    branch.insert(k, v);
                }
            }
            branch.insert("type".into(), single);
            map.insert(
                "anyOf".into(),
                json!([Value::Object(branch), {"type": "null"}]),
            );
        }
        return;
    }
    if place != Place::Optional {
        return;
    }
    let Some(Value::Array(branches)) = map.get("anyOf") else {
        return;
    };
    let is_null = |b: &Value| {
        b.get("type") == Some(&json!("null")) && b.as_object().is_some_and(|o| o.len() == 1)
    };
    if branches.len() != 2 || !branches.iter().any(is_null) {
        return;
    }
    let Some(Value::Object(keep)) = branches.iter().find(|b| !is_null(b)).cloned() else {
        return;
    };
    map.remove("anyOf");
    for (k, v) in keep {
        map.entry(k).or_insert(v);
    }
}

/// `allOf: [{$ref}, {description}]` (how a described reference is written for older drafts):
/// in 2020-12 the reference and its description sit side by side.
fn annotated_ref(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("allOf") else {
        return;
    };
    let annotation_only = |b: &Value| {
        b.as_object()
            .is_some_and(|o| o.keys().all(|k| ANNOTATIONS.contains(&k.as_str())))
    };
    let validating: Vec<&Value> = branches.iter().filter(|b| !annotation_only(b)).collect();
    let [only] = validating.as_slice() else {
        return;
    };
    let Some(only) = only.as_object().cloned() else {
        return;
    };
    if only
        .keys()
        .any(|k| map.contains_key(k) && k != "description")
    {
        return;
    }
    let annotations: Vec<Map<String, Value>> = branches
        .iter()
        .filter(|b| annotation_only(b))
        .filter_map(|b| b.as_object().cloned())
        .collect();
    map.remove("allOf");
    for (k, v) in only.into_iter().chain(annotations.into_iter().flatten()) {
        map.entry(k).or_insert(v);
    }
}

/// Every place in `schema` that a strict linter flags: a home-made format, a type array, a
/// schema without a validating keyword. Empty for a portable schema.
pub fn lint(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    lint_at(schema, "", &mut found);
    found
}

fn lint_at(node: &Value, path: &str, found: &mut Vec<String>) {
    let Value::Object(map) = node else { return };
    if map.get("type").is_some_and(Value::is_array) {
        found.push(format!("{path}: type array"));
    }
    if let Some(f) = map.get("format").and_then(Value::as_str)
        && !matches!(
            f,
            "date-time" | "date" | "time" | "duration" | "email" | "uri" | "uri-reference" | "uuid"
        )
    {
        found.push(format!("{path}: format {f}"));
    }
    if !map.keys().any(|k| VALIDATING.contains(&k.as_str())) {
        found.push(format!("{path}: no validation keyword"));
    }
    for (k, v) in map {
        match (k.as_str(), v) {
            ("properties" | "$defs" | "definitions", Value::Object(children)) => {
                for (name, child) in children {
                    lint_at(child, &format!("{path}/{k}/{name}"), found);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    lint_at(child, &format!("{path}/{k}/{i}"), found);
                }
            }
            ("items" | "additionalProperties" | "not", child @ Value::Object(_)) => {
                lint_at(child, &format!("{path}/{k}"), found);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(v: Value) -> Value {
        let mut map = v.as_object().cloned().unwrap();
        portable(&mut map);
        Value::Object(map)
    }

    #[test]
    fn integer_formats_become_ranges() {
        let s = fixed(json!({"type": "object", "properties": {
            "a": {"type": "integer", "format": "uint16"},
            "b": {"type": "integer", "format": "int64"},
            "c": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": 10}}}));
        assert_eq!(
            s["properties"]["a"],
            json!({"type": "integer", "minimum": 0, "maximum": 65535})
        );
        assert_eq!(s["properties"]["b"], json!({"type": "integer"}));
        assert_eq!(
            s["properties"]["c"],
            json!({"type": "integer", "minimum": 0, "maximum": 10})
        );
        assert!(lint(&s).is_empty(), "{:?}", lint(&s));
    }

    #[test]
    fn optional_fields_drop_null_and_required_ones_keep_it_as_a_branch() {
        let s = fixed(json!({"type": "object", "required": ["r"], "properties": {
            "o": {"type": ["string", "null"], "maxLength": 3, "description": "d"},
            "e": {"anyOf": [{"$ref": "#/$defs/E"}, {"type": "null"}], "description": "d"},
            "r": {"type": ["string", "null"], "maxLength": 3, "description": "d"}},
            "$defs": {"E": {"type": "string", "enum": ["x"]}}}));
        assert_eq!(
            s["properties"]["o"],
            json!({"type": "string", "maxLength": 3, "description": "d"})
        );
        assert_eq!(
            s["properties"]["e"],
            json!({"$ref": "#/$defs/E", "description": "d"})
        );
        assert_eq!(
            s["properties"]["r"],
            json!({"description": "d", "anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]})
        );
        assert!(lint(&s).is_empty(), "{:?}", lint(&s));
    }

    #[test]
    fn described_references_and_free_form_values_get_validation_keywords() {
        let s = fixed(json!({"type": "object", "properties": {
            "p": {"allOf": [{"$ref": "#/$defs/P"}, {"description": "d"}], "description": "d"},
            "evidence": {"description": "what was seen"},
            "json_ld": {"type": "array", "items": {}}},
            "$defs": {"P": {"type": "object"}}}));
        assert_eq!(
            s["properties"]["p"],
            json!({"$ref": "#/$defs/P", "description": "d"})
        );
        assert_eq!(s["properties"]["evidence"]["type"], "object");
        assert!(s["properties"]["json_ld"]["items"]["anyOf"].is_array());
        assert!(lint(&s).is_empty(), "{:?}", lint(&s));
    }

    #[test]
    fn an_unknown_free_form_field_is_flagged() {
        let s = fixed(json!({"type": "object", "properties": {"mystery": {"description": "?"}}}));
        assert_eq!(lint(&s), vec!["/properties/mystery: no validation keyword"]);
    }
}
