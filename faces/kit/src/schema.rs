//! poem-openapi writes OpenAPI 3.0.0; the service serves 3.1.0. This rewrites the generated
//! document: `nullable` becomes a `null` type (and joins a nullable `enum`), boolean exclusive
//! bounds become numeric ones, `naive-date` becomes `date`, and the version becomes 3.1.0.

use serde_json::{Map, Value, json};

pub fn to_openapi_31(mut doc: Value) -> Value {
    rewrite(&mut doc);
    if let Some(root) = doc.as_object_mut() {
        root.insert("openapi".into(), json!("3.1.0"));
    }
    doc
}

/// Makes a poem-openapi schema with its definitions under `$defs` a JSON Schema 2020-12
/// document: the 3.1 rewrite, references pointed at `$defs`, and OpenAPI-only keywords
/// (`discriminator`, `readOnly` stays: it is 2020-12 too) removed.
pub fn to_json_schema(schema: &mut Value) {
    rewrite(schema);
    point_refs_at_defs(schema);
}

fn point_refs_at_defs(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map
                .get("discriminator")
                .is_some_and(|d| d.get("propertyName").is_some())
            {
                map.remove("discriminator");
            }
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                *r = format!("#/$defs/{name}");
            }
            map.values_mut().for_each(point_refs_at_defs);
        }
        Value::Array(items) => items.iter_mut().for_each(point_refs_at_defs),
        _ => {}
    }
}

fn rewrite(v: &mut Value) {
    match v {
        Value::Object(map) => {
            // Parent first: poem's `{nullable: true}` marker inside `allOf` belongs to it.
            rewrite_schema(map);
            for child in map.values_mut() {
                rewrite(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

fn is_nullable_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.get("nullable") == Some(&Value::Bool(true)) && m.len() == 1)
}

fn rewrite_schema(map: &mut Map<String, Value>) {
    // poem-openapi names chrono's `NaiveDate` `naive-date`; it is RFC 3339's `full-date`,
    // which JSON Schema and OpenAPI call `date`.
    if map.get("format").and_then(Value::as_str) == Some("naive-date") {
        map.insert("format".into(), json!("date"));
    }
    exclusive_bound(map, "exclusiveMinimum", "minimum");
    exclusive_bound(map, "exclusiveMaximum", "maximum");

    // `allOf: [{$ref}, {nullable: true}]` (poem's nullable reference) -> anyOf with null.
    if let Some(Value::Array(all)) = map.get_mut("allOf") {
        let before = all.len();
        all.retain(|s| !is_nullable_marker(s));
        if all.len() != before {
            let rest = std::mem::take(all);
            map.remove("allOf");
            let mut any: Vec<Value> = if rest.len() == 1 {
                rest
            } else {
                vec![json!({ "allOf": rest })]
            };
            any.push(json!({ "type": "null" }));
            map.insert("anyOf".into(), Value::Array(any));
        }
    }

    if map.remove("nullable") != Some(Value::Bool(true)) {
        return;
    }
    match map.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
        }
        _ => {
            // A nullable schema without a type (a bare $ref or combinator): wrap it.
            let inner = std::mem::take(map);
            map.insert(
                "anyOf".into(),
                json!([Value::Object(inner), { "type": "null" }]),
            );
            return;
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// 3.0 `exclusiveMinimum: true` + `minimum: n` becomes 3.1 `exclusiveMinimum: n`.
fn exclusive_bound(map: &mut Map<String, Value>, exclusive: &str, bound: &str) {
    match map.get(exclusive) {
        Some(Value::Bool(true)) => {
            if let Some(n) = map.remove(bound) {
                map.insert(exclusive.into(), n);
            } else {
                map.remove(exclusive);
            }
        }
        Some(Value::Bool(false)) => {
            map.remove(exclusive);
        }
        _ => {}
    }
}

/// A self-contained JSON Schema (2020-12, definitions under `$defs`) of a poem-openapi type:
/// MCP `outputSchema`s and the served schema files come from the same types as the REST API.
pub fn json_schema_of<T: poem_openapi::types::Type>() -> Value {
    let mut registry = poem_openapi::registry::Registry::new();
    T::register(&mut registry);
    let defs: serde_json::Map<String, Value> = registry
        .schemas
        .iter()
        .map(|(name, schema)| {
            (
                name.clone(),
                serde_json::to_value(schema).unwrap_or_default(),
            )
        })
        .collect();
    let root = serde_json::to_value(T::schema_ref()).unwrap_or_default();
    let mut schema = serde_json::json!({
        "type": "object",
        "allOf": [root],
        "$defs": defs,
    });
    to_json_schema(&mut schema);
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_version() {
        assert_eq!(
            to_openapi_31(json!({"openapi": "3.0.0"}))["openapi"],
            "3.1.0"
        );
    }

    #[test]
    fn nullable_type_becomes_a_type_array_and_enum_gains_null() {
        let out =
            to_openapi_31(json!({"s": {"type": "string", "nullable": true, "enum": ["a", "b"]}}));
        assert_eq!(
            out["s"],
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
    }

    #[test]
    fn nullable_ref_becomes_any_of_with_null() {
        let out = to_openapi_31(
            json!({"p": {"allOf": [{"$ref": "#/c/X"}, {"nullable": true}], "description": "d"}}),
        );
        assert_eq!(
            out["p"],
            json!({"anyOf": [{"$ref": "#/c/X"}, {"type": "null"}], "description": "d"})
        );
    }

    #[test]
    fn untyped_nullable_is_wrapped() {
        let out = to_openapi_31(json!({"p": {"$ref": "#/c/X", "nullable": true}}));
        assert_eq!(
            out["p"],
            json!({"anyOf": [{"$ref": "#/c/X"}, {"type": "null"}]})
        );
    }

    #[test]
    fn exclusive_bounds_become_numbers() {
        let out = to_openapi_31(
            json!({"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true,
            "maximum": 9, "exclusiveMaximum": false}}),
        );
        assert_eq!(
            out["n"],
            json!({"type": "integer", "exclusiveMinimum": 0, "maximum": 9})
        );
    }

    #[test]
    fn non_nullable_schemas_are_left_alone() {
        let s =
            json!({"type": "object", "properties": {"a": {"type": "string", "nullable": false}}});
        let out = to_openapi_31(s);
        assert_eq!(out["properties"]["a"], json!({"type": "string"}));
    }
}
