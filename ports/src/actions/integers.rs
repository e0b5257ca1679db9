//! Numbers an action's schema types as integers, written as integers before they are sent.
//!
//! JSON Schema counts `1.0` (and `1e0`) as the integer 1, so such a value passes the schema,
//! but it would be sent as written and a site reading an integer may refuse it: a review saw
//! `"quantity": 1.0` stored as a task, refused by the site with 422, and refunded.

use serde_json::Value;

/// How deep `$ref`s and nested schemas are followed (a schema may refer to itself).
const MAX_DEPTH: usize = 32;

/// Rewrites, in place, each number of `value` that `schema` types as `integer` and that has no
/// fraction, as that integer. The schema is followed through `properties`,
/// `additionalProperties`, `items`, `prefixItems`, `allOf`, local `$ref`s (`#/...`), and
/// `anyOf`/`oneOf` where every branch that names a type names `integer` (or `null`).
/// Everything else is left as it is: the schema was checked before, this only changes how a
/// number is written, never which number it is.
pub fn write_integers_as_integers(schema: &Value, value: &mut Value) {
    rewrite(schema, schema, value, 0);
}

fn rewrite(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(root, schema, depth);
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) && integer(root, schema, depth) => {
            // Whole values within i64 convert exactly (an f64 holds none between 2^53 and
            // 2^63 that is not an integer).
            if let Some(whole) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18) {
                *value = Value::from(whole as i64);
            }
        }
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                for sub in subschemas(root, schema, depth) {
                    let named = sub.get("properties").and_then(|p| p.get(name.as_str()));
                    if let Some(field_schema) =
                        named.or_else(|| sub.get("additionalProperties").filter(|a| a.is_object()))
                    {
                        rewrite(root, field_schema, field, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                for sub in subschemas(root, schema, depth) {
                    let positional = sub.get("prefixItems").and_then(|p| p.get(i));
                    if let Some(item_schema) =
                        positional.or_else(|| sub.get("items").filter(|s| s.is_object()))
                    {
                        rewrite(root, item_schema, item, depth + 1);
                    }
                }
            }
        }
        _ => {}
    }
}

/// `schema` itself and the `allOf` branches it holds (each resolved).
fn subschemas<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Vec<&'a Value> {
    let mut out = vec![schema];
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        out.extend(all.iter().map(|s| resolve(root, s, depth + 1)));
    }
    out
}

/// Whether a value `schema` accepts, if it is a number, must be an integer.
fn integer(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let schema = resolve(root, schema, depth);
    if typed_as(schema, "integer") {
        return true;
    }
    let in_all = schema
        .get("allOf")
        .and_then(Value::as_array)
        .is_some_and(|all| all.iter().any(|s| integer(root, s, depth + 1)));
    let every_branch = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                let typed: Vec<&Value> = branches
                    .iter()
                    .map(|s| resolve(root, s, depth + 1))
                    .filter(|s| !typed_as(s, "null"))
                    .collect();
                !typed.is_empty() && typed.iter().all(|s| integer(root, s, depth + 1))
            })
    };
    in_all || every_branch("anyOf") || every_branch("oneOf")
}

/// The schema a local `$ref` (`#/$defs/x`, `#/definitions/x`) points at, followed to the end;
/// anything else as it is.
fn resolve<'a>(root: &'a Value, mut schema: &'a Value, depth: usize) -> &'a Value {
    for _ in depth..MAX_DEPTH {
        let Some(pointer) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// Whether `schema`'s `type` is `name`, or a list that holds it.
fn typed_as(schema: &Value, name: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some(name)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "$defs": {"count": {"type": "integer", "minimum": 0}},
          "properties": {
            "quantity": {"type": "integer"},
            "price": {"type": "number"},
            "either": {"type": ["integer", "null"]},
            "bounded": {"allOf": [{"type": "integer"}, {"minimum": 1}]},
            "referred": {"$ref": "#/$defs/count"},
            "choice": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "mixed": {"anyOf": [{"type": "integer"}, {"type": "number"}]},
            "lines": {"type": "array", "items": {"type": "object", "properties": {
                "count": {"type": "integer"}}}},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}]},
            "tally": {"type": "object", "additionalProperties": {"type": "integer"}},
            "loop": {"$ref": "#/properties/loop"}
        }})
    }

    fn rewritten(text: &str) -> String {
        let mut params: Value = serde_json::from_str(text).unwrap();
        write_integers_as_integers(&schema(), &mut params);
        params.to_string()
    }

    #[test]
    fn whole_numbers_typed_as_integers_are_written_as_integers() {
        assert_eq!(
            rewritten(
                r#"{"quantity": 1.0, "price": 2.0, "either": 3e0, "bounded": 4.0, "referred": 5.0,
                    "choice": 6.0, "mixed": 7.0, "lines": [{"count": 8.0}, {"count": 9}],
                    "pair": [10.0, 11.0], "tally": {"a": 12.0}, "other": 13.0, "loop": 14.0,
                    "big": 1e300}"#
            ),
            json!({"quantity": 1, "price": 2.0, "either": 3, "bounded": 4, "referred": 5,
                "choice": 6, "mixed": 7.0, "lines": [{"count": 8}, {"count": 9}],
                "pair": [10, 11.0], "tally": {"a": 12}, "other": 13.0, "loop": 14.0,
                "big": 1e300})
            .to_string()
        );
        // A fraction is not an integer: left for the schema to have refused.
        assert_eq!(rewritten(r#"{"quantity": 1.5}"#), r#"{"quantity":1.5}"#);
        assert_eq!(rewritten(r#"{"quantity": -0.0}"#), r#"{"quantity":0}"#);
        assert_eq!(
            rewritten(r#"{"quantity": 1e16}"#),
            r#"{"quantity":10000000000000000}"#
        );
    }

    proptest! {
        /// A whole number written as a float comes out as that integer; a fraction stays.
        #[test]
        fn the_number_never_changes(whole in -(1i64 << 53)..(1i64 << 53), fraction in 0.0f64..1.0) {
            let written = whole as f64;
            let mut params = json!({"quantity": written, "price": written});
            write_integers_as_integers(&schema(), &mut params);
            prop_assert_eq!(params["quantity"].as_i64(), Some(whole));
            prop_assert!(params["price"].is_f64());
            let with_fraction = written + fraction;
            if with_fraction.fract() != 0.0 {
                let mut params = json!({"quantity": with_fraction});
                write_integers_as_integers(&schema(), &mut params);
                prop_assert_eq!(params["quantity"].as_f64(), Some(with_fraction));
            }
        }
    }
}
