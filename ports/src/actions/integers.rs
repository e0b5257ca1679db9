//! Numbers an action's schema types as integers, written as integers before they are sent.
//!
//! JSON Schema counts `1.0` (and `1e0`) as the integer 1, so such a value passes the schema,
//! but it would be sent as written and a site reading an integer may refuse it: a review saw
//! `"quantity": 1.0` stored as a task, refused by the site with 422, and refunded.

use serde_json::Value;

/// Rewrites, in place, each number of `value` that `schema` (its `properties`, `items`,
/// nested) types as `integer` and that has no fraction, as that integer. Everything else is
/// left as it is (the schema was checked before: this only changes how a number is written).
pub fn write_integers_as_integers(schema: &Value, value: &mut Value) {
    match value {
        Value::Number(n) if typed_as(schema, "integer") && !(n.is_i64() || n.is_u64()) => {
            if let Some(whole) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                // Below 2^53 in magnitude: exact.
                *value = Value::from(whole as i64);
            }
        }
        Value::Object(fields) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, field) in fields.iter_mut() {
                    if let Some(field_schema) = properties.get(name) {
                        write_integers_as_integers(field_schema, field);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    write_integers_as_integers(item_schema, item);
                }
            }
        }
        _ => {}
    }
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
        json!({"type": "object", "properties": {
            "quantity": {"type": "integer"},
            "price": {"type": "number"},
            "either": {"type": ["integer", "null"]},
            "lines": {"type": "array", "items": {"type": "object", "properties": {
                "count": {"type": "integer"}}}}
        }})
    }

    #[test]
    fn whole_numbers_typed_as_integers_are_written_as_integers() {
        let mut params: Value = serde_json::from_str(
            r#"{"quantity": 1.0, "price": 2.0, "either": 3e0, "lines": [{"count": 4.0}, {"count": 5}],
                "other": 6.0}"#,
        )
        .unwrap();
        write_integers_as_integers(&schema(), &mut params);
        assert_eq!(
            params.to_string(),
            json!({"quantity": 1, "price": 2.0, "either": 3, "lines": [{"count": 4}, {"count": 5}],
                "other": 6.0})
            .to_string()
        );
        // A fraction is not an integer: left for the schema to have refused.
        let mut half: Value = serde_json::from_str(r#"{"quantity": 1.5}"#).unwrap();
        write_integers_as_integers(&schema(), &mut half);
        assert_eq!(half.to_string(), r#"{"quantity":1.5}"#);
    }

    proptest! {
        /// Only how a number is written changes: the value is the same number.
        #[test]
        fn the_number_never_changes(n in -1.0e15f64..1.0e15f64) {
            let mut params = json!({"quantity": n});
            write_integers_as_integers(&schema(), &mut params);
            prop_assert_eq!(params["quantity"].as_f64(), Some(n));
            if n.fract() == 0.0 {
                prop_assert!(params["quantity"].is_i64());
            }
        }
    }
}
