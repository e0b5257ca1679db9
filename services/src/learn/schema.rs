//! Schemas: made self-contained draft 2020-12 (local `$ref`s inlined, the OpenAPI 3.0 dialect
//! translated), their top-level shape, and the verification rules and outputs a response schema
//! gives.

use serde_json::{Map, Value, json};
use svc_ports::actions::{JsonRule, OutputField, OutputSource};

use super::openapi_doc::local_target;

const SCHEMA_DEPTH: usize = 40;

/// Makes a schema self-contained draft 2020-12: local refs inlined, OpenAPI 3.0 dialect
/// translated, unknown keywords (and ill-formed known ones) dropped.
pub(super) struct Inliner<'a> {
    pub(super) root: &'a Value,
    pub(super) budget: usize,
    /// Refs being inlined: a ref to one of them is a cycle and becomes `{}`.
    pub(super) stack: Vec<String>,
}

const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const STRING_KEYWORDS: &[&str] = &[
    "format",
    "title",
    "description",
    "pattern",
    "contentEncoding",
    "contentMediaType",
];
const COUNT_KEYWORDS: &[&str] = &[
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "maxContains",
    "minContains",
];
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

impl Inliner<'_> {
    pub(super) fn schema(&mut self, v: &Value, depth: usize) -> Value {
        if depth > SCHEMA_DEPTH || self.budget == 0 {
            return json!({});
        }
        self.budget -= 1;
        let obj = match v {
            Value::Bool(b) => return Value::Bool(*b),
            Value::Object(o) => o,
            _ => return json!({}),
        };
        let Some(Value::String(reference)) = obj.get("$ref") else {
            return Value::Object(self.keywords(obj, depth));
        };
        let root = self.root;
        let mut resolved = match local_target(root, reference) {
            Some(target) if !self.stack.contains(reference) => {
                self.stack.push(reference.clone());
                let s = self.schema(target, depth + 1);
                self.stack.pop();
                s
            }
            _ => json!({}),
        };
        let siblings: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| k.as_str() != "$ref")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !siblings.is_empty() {
            let extra = self.keywords(&siblings, depth);
            match &mut resolved {
                Value::Object(o) => o.extend(extra),
                Value::Bool(true) => resolved = Value::Object(extra),
                _ => {}
            }
        }
        resolved
    }

    fn keywords(&mut self, obj: &Map<String, Value>, depth: usize) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in obj {
            let key = k.as_str();
            if key == "items" {
                match v {
                    Value::Array(list) if !list.is_empty() => {
                        let list = list.iter().map(|s| self.schema(s, depth + 1)).collect();
                        out.insert("prefixItems".into(), Value::Array(list));
                    }
                    Value::Array(_) => {}
                    other => {
                        out.insert("items".into(), self.schema(other, depth + 1));
                    }
                }
            } else if SCHEMA_KEYWORDS.contains(&key) {
                out.insert(k.clone(), self.schema(v, depth + 1));
            } else if SCHEMA_MAPS.contains(&key) {
                if let Value::Object(m) = v {
                    let m = m
                        .iter()
                        .map(|(name, s)| (name.clone(), self.schema(s, depth + 1)))
                        .collect();
                    out.insert(k.clone(), Value::Object(m));
                }
            } else if SCHEMA_LISTS.contains(&key) {
                if let Value::Array(list) = v
                    && !list.is_empty()
                    && !out.contains_key(key)
                {
                    let list = list.iter().map(|s| self.schema(s, depth + 1)).collect();
                    out.insert(k.clone(), Value::Array(list));
                }
            } else if STRING_KEYWORDS.contains(&key) {
                if v.is_string() {
                    out.insert(k.clone(), v.clone());
                }
            } else if COUNT_KEYWORDS.contains(&key) {
                if v.as_u64().is_some() {
                    out.insert(k.clone(), v.clone());
                }
            } else {
                let keep = match key {
                    "enum" => v.as_array().is_some_and(|a| !a.is_empty()),
                    "const" | "default" => true,
                    "examples" => v.is_array(),
                    "readOnly" | "writeOnly" | "deprecated" | "uniqueItems" => v.is_boolean(),
                    "multipleOf" => v.as_f64().is_some_and(|n| n > 0.0),
                    "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => {
                        v.is_number()
                    }
                    _ => false,
                };
                if keep {
                    out.insert(k.clone(), v.clone());
                    continue;
                }
                match key {
                    "type" => {
                        if let Some(t) = schema_type(v) {
                            out.insert(k.clone(), t);
                        }
                    }
                    "example" if !obj.contains_key("examples") => {
                        out.insert("examples".into(), json!([v]));
                    }
                    "required" => {
                        if let Value::Array(list) = v {
                            let mut names: Vec<Value> = Vec::new();
                            for name in list.iter().filter(|n| n.is_string()) {
                                if !names.contains(name) {
                                    names.push(name.clone());
                                }
                            }
                            out.insert(k.clone(), Value::Array(names));
                        }
                    }
                    "dependentRequired" => {
                        if let Value::Object(m) = v {
                            let m: Map<String, Value> = m
                                .iter()
                                .filter_map(|(name, list)| {
                                    let mut names: Vec<Value> = Vec::new();
                                    for n in list.as_array()?.iter().filter(|n| n.is_string()) {
                                        if !names.contains(n) {
                                            names.push(n.clone());
                                        }
                                    }
                                    Some((name.clone(), Value::Array(names)))
                                })
                                .collect();
                            out.insert(k.clone(), Value::Object(m));
                        }
                    }
                    _ => {}
                }
            }
        }
        // OpenAPI 3.0: boolean exclusive bounds qualify `minimum` / `maximum`.
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if obj.get(exclusive) == Some(&Value::Bool(true))
                && let Some(b) = out.remove(bound)
            {
                out.insert(exclusive.into(), b);
            }
        }
        // OpenAPI 3.0: `nullable: true` allows null.
        if obj.get("nullable") == Some(&Value::Bool(true)) {
            match out.get_mut("type") {
                Some(Value::String(t)) if t != "null" => {
                    let t = t.clone();
                    out.insert("type".into(), json!([t, "null"]));
                }
                Some(Value::Array(list)) if !list.iter().any(|t| t == "null") => {
                    list.push(json!("null"));
                }
                _ => {}
            }
            if let Some(Value::Array(values)) = out.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        out
    }
}

fn schema_type(v: &Value) -> Option<Value> {
    match v {
        Value::String(t) if TYPES.contains(&t.as_str()) => Some(v.clone()),
        Value::Array(list) => {
            let mut types: Vec<Value> = Vec::new();
            for t in list {
                if t.as_str().is_some_and(|t| TYPES.contains(&t)) && !types.contains(t) {
                    types.push(t.clone());
                }
            }
            (!types.is_empty()).then_some(Value::Array(types))
        }
        _ => None,
    }
}

/// The top-level properties of an (inlined) object schema, `allOf` members merged.
pub(super) struct Shape {
    pub(super) props: Vec<(String, Value)>,
    pub(super) required: Vec<String>,
}

pub(super) fn shape(schema: &Value, depth: usize) -> Option<Shape> {
    let obj = schema.as_object()?;
    let object_type = match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(list)) => list.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !object_type {
        return None;
    }
    let mut props: Vec<(String, Value)> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    if let Some(Value::Object(p)) = obj.get("properties") {
        props.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(Value::Array(r)) = obj.get("required") {
        required.extend(r.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if depth < 8
        && let Some(Value::Array(members)) = obj.get("allOf")
    {
        for member in members {
            if let Some(s) = shape(member, depth + 1) {
                for (k, v) in s.props {
                    if !props.iter().any(|(p, _)| *p == k) {
                        props.push((k, v));
                    }
                }
                required.extend(s.required);
            }
        }
    }
    if props.is_empty() {
        return None;
    }
    required.retain(|r| props.iter().any(|(p, _)| p == r));
    required.sort();
    required.dedup();
    Some(Shape { props, required })
}

/// Whether a schema says null is a value it expects (not merely one it does not exclude).
fn explicitly_nullable(s: &Value) -> bool {
    let Some(o) = s.as_object() else {
        return false;
    };
    let typed_null = match o.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(list)) => list.iter().any(|t| t == "null"),
        _ => false,
    };
    typed_null
        || o.get("const") == Some(&Value::Null)
        || o.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || ["anyOf", "oneOf"].iter().any(|k| {
            o.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|list| list.iter().any(explicitly_nullable))
        })
}

fn or_null(s: Value) -> Value {
    let anything = s == Value::Bool(true) || s.as_object().is_some_and(Map::is_empty);
    if anything || explicitly_nullable(&s) {
        s
    } else {
        json!({"anyOf": [s, {"type": "null"}]})
    }
}

/// Verification rules, outputs and output schema from a success response's schema.
pub(super) fn outputs_for(schema: Option<Value>) -> (Vec<JsonRule>, Vec<OutputField>, Value) {
    let status_only = || {
        (
            Vec::new(),
            vec![OutputField {
                name: "http_status".into(),
                source: OutputSource::Status,
            }],
            json!({"type": "object", "properties": {"http_status": {"type": "integer"}}}),
        )
    };
    let Some(schema) = schema else {
        return status_only();
    };
    match shape(&schema, 0) {
        Some(shape) => {
            let mut rules = Vec::new();
            let mut outputs = Vec::new();
            let mut properties = Map::new();
            for (name, s) in shape.props {
                let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
                let required = shape.required.contains(&name);
                if required && !explicitly_nullable(&s) {
                    rules.push(JsonRule {
                        pointer: pointer.clone(),
                        equals: None,
                    });
                }
                outputs.push(OutputField {
                    name: name.clone(),
                    source: OutputSource::Json { pointer },
                });
                // Outputs the site leaves out are null in the result.
                properties.insert(name, if required { s } else { or_null(s) });
            }
            let mut out = json!({"type": "object", "properties": properties});
            let required: Vec<&String> = shape
                .required
                .iter()
                .filter(|r| out["properties"].get(r.as_str()).is_some())
                .collect();
            if !required.is_empty() {
                out["required"] = json!(required);
            }
            if let Some(d) = schema.get("description").filter(|d| d.is_string()) {
                out["description"] = d.clone();
            }
            (rules, outputs, out)
        }
        None => {
            let substantive = schema.as_object().is_some_and(|o| {
                ["type", "items", "anyOf", "oneOf", "allOf", "enum", "const"]
                    .iter()
                    .any(|k| o.contains_key(*k))
            });
            if !substantive {
                return status_only();
            }
            let name = if schema.get("type").and_then(Value::as_str) == Some("array") {
                "items"
            } else {
                "body"
            };
            (
                Vec::new(),
                vec![OutputField {
                    name: name.into(),
                    source: OutputSource::Json {
                        pointer: String::new(),
                    },
                }],
                json!({"type": "object", "required": [name], "properties": {name: schema}}),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::fixtures::*;
    use svc_ports::actions::{BodyTemplate, HttpMethod};

    #[test]
    fn openapi_3_0_dialect_becomes_draft_2020_12() {
        let doc = json!({
            "openapi": "3.0.3",
            "paths": {
                "/items/{item-id}": {
                    "patch": {
                        "operationId": "update item (v2)",
                        "parameters": [{"name": "item-id", "in": "path", "required": true, "schema": {"type": "string"}}],
                        "requestBody": {"content": {"application/merge-patch+json": {"schema": {
                            "type": "object",
                            "x-internal": true,
                            "properties": {
                                "price": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "nullable": true, "example": 3.5},
                                "kind": {"type": "string", "enum": ["a", "b"], "nullable": true},
                                "photo": {"type": "file"},
                                "remote": {"$ref": "https://schemas.example.org/x.json"},
                                "missing": {"$ref": "#/components/schemas/Nope", "description": "Gone."},
                                "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                                "item-id": {"type": "string"}
                            },
                            "required": ["price", "price", 7],
                            "discriminator": {"propertyName": "kind"}
                        }}}},
                        "responses": {"2XX": {"description": "ok"}}
                    }
                }
            }
        });
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let a = action(&draft, "update_item_v2");
        assert_eq!(a.request.method, HttpMethod::Patch);
        assert_eq!(a.request.path, "/items/{item_id}");
        assert_eq!(a.verify.status, vec![200, 201, 202, 204]);
        let props = &a.params_schema["properties"];
        assert_eq!(
            props["price"],
            json!({"type": ["number", "null"], "exclusiveMinimum": 0, "examples": [3.5]})
        );
        assert_eq!(
            props["kind"],
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
        assert_eq!(props["photo"], json!({}));
        assert_eq!(props["remote"], json!({}));
        assert_eq!(props["missing"], json!({"description": "Gone."}));
        assert_eq!(
            props["tuple"],
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(
            props["item_id_2"],
            json!({"type": "string"}),
            "a body field named like a path param"
        );
        assert_eq!(
            a.params_schema["required"],
            json!(["item_id"]),
            "the body is optional"
        );
        assert_eq!(
            a.request.body,
            Some(BodyTemplate::Json {
                value: json!({"price": "{price}", "kind": "{kind}", "photo": "{photo}", "remote": "{remote}", "missing": "{missing}", "tuple": "{tuple}", "item-id": "{item_id_2}"})
            })
        );
    }

    #[test]
    fn cyclic_and_exploding_refs_are_bounded() {
        let mut schemas = Map::new();
        schemas.insert("Loop".into(), json!({"$ref": "#/components/schemas/Loop"}));
        schemas.insert("Self".into(), json!({"$ref": "#"}));
        // Each level refers to the next twice: 2^30 nodes if inlined naively.
        for i in 0..30 {
            schemas.insert(
                format!("L{i}"),
                json!({"type": "object", "properties": {
                    "a": {"$ref": format!("#/components/schemas/L{}", i + 1)},
                    "b": {"$ref": format!("#/components/schemas/L{}", i + 1)}
                }}),
            );
        }
        schemas.insert("L30".into(), json!({"type": "string"}));
        let doc = json!({
            "openapi": "3.1.0",
            "components": {"schemas": schemas},
            "paths": {"/x": {"post": {
                "operationId": "explode",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                    "loop": {"$ref": "#/components/schemas/Loop"},
                    "self": {"$ref": "#/components/schemas/Self"},
                    "tree": {"$ref": "#/components/schemas/L0"}
                }}}}},
                "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}}}
            }}}
        });
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let a = action(&draft, "explode");
        assert_eq!(a.params_schema["properties"]["loop"], json!({}));
        let size = serde_json::to_string(&a.params_schema).unwrap().len();
        assert!(size < 1_000_000, "{size} bytes");
    }
}
