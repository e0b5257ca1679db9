//! Numbers an action's schema types as integers, written as integers before they are sent.
//!
//! JSON Schema counts `1.0` (and `1e0`) as the integer 1, so such a value passes the schema,
//! but it would be sent as written and a site reading an integer may refuse it: a review saw
//! `"quantity": 1.0` stored as a task, refused by the site with 422, and refunded.

use std::collections::HashMap;

use serde_json::Value;

/// How deep `$ref`s and nested schemas are followed (a schema may refer to itself).
const MAX_DEPTH: usize = 32;
/// How many schema nodes one rewrite may visit: schemas that share `$ref`s under `anyOf`
/// would otherwise cost twice as much per level. Past it, what is left stays as written.
const MAX_STEPS: usize = 10_000;

/// Rewrites, in place, each number of `value` that `schema` types as `integer` and that has no
/// fraction, as that integer. The schema is followed through `properties`,
/// `additionalProperties` (where no `patternProperties` could apply), `items`, `prefixItems`,
/// `allOf`, local `$ref`s (`#/...`, with their sibling keywords), and `anyOf`/`oneOf` where
/// every branch but a `null` one is an integer. A `type` list counts only if it holds nothing
/// but `integer` and `null`. Everything else is left as it is: the schema was checked before,
/// and this only changes how a number is written, never which number it is.
pub fn write_integers_as_integers(schema: &Value, value: &mut Value) {
    let mut walk = Walk {
        root: schema,
        steps: MAX_STEPS,
        judged: HashMap::new(),
    };
    walk.rewrite(schema, value, 0);
}

struct Walk<'a> {
    root: &'a Value,
    steps: usize,
    /// Members already judged, by address: a `$ref` shared by many branches is judged once.
    judged: HashMap<*const Value, bool>,
}

impl<'a> Walk<'a> {
    fn rewrite(&mut self, schema: &'a Value, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let members = self.members(schema, depth);
        match value {
            Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
                let integer = members.iter().any(|m| self.integer_member(m, depth));
                // Whole values within i64 convert exactly (an f64 holds none between 2^53
                // and 2^63 that is not an integer).
                if let Some(whole) = n
                    .as_f64()
                    .filter(|f| integer && f.fract() == 0.0 && f.abs() < 9.2e18)
                {
                    *value = Value::from(whole as i64);
                }
            }
            Value::Object(fields) => {
                for (name, field) in fields.iter_mut() {
                    for member in &members {
                        let named = member.get("properties").and_then(|p| p.get(name.as_str()));
                        let other = member
                            .get("additionalProperties")
                            .filter(|a| a.is_object() && member.get("patternProperties").is_none());
                        if let Some(field_schema) = named.or(other) {
                            self.rewrite(field_schema, field, depth + 1);
                        }
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    for member in &members {
                        let positional = member.get("prefixItems").and_then(|p| p.get(i));
                        if let Some(item_schema) =
                            positional.or_else(|| member.get("items").filter(|s| s.is_object()))
                        {
                            self.rewrite(item_schema, item, depth + 1);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// `schema` and what applies with it: its local `$ref`'s target and its `allOf`
    /// members, each with theirs.
    fn members(&mut self, schema: &'a Value, depth: usize) -> Vec<&'a Value> {
        let mut out = Vec::new();
        self.gather(schema, depth, &mut out);
        out
    }

    fn gather(&mut self, schema: &'a Value, depth: usize, out: &mut Vec<&'a Value>) {
        if depth > MAX_DEPTH || self.steps == 0 {
            return;
        }
        self.steps -= 1;
        out.push(schema);
        let target = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.root.pointer(pointer));
        if let Some(target) = target {
            self.gather(target, depth + 1, out);
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for member in all {
                self.gather(member, depth + 1, out);
            }
        }
    }

    /// Whether this one member says a number it accepts must be an integer.
    fn integer_member(&mut self, member: &'a Value, depth: usize) -> bool {
        if depth > MAX_DEPTH || self.steps == 0 {
            return false;
        }
        if let Some(known) = self.judged.get(&std::ptr::from_ref(member)) {
            return *known;
        }
        let integer = integer_type(member) || self.integer_branches(member, depth);
        self.judged.insert(std::ptr::from_ref(member), integer);
        integer
    }

    /// Whether `member`'s `anyOf` or `oneOf` has integer branches alone (but `null`).
    fn integer_branches(&mut self, member: &'a Value, depth: usize) -> bool {
        ["anyOf", "oneOf"].into_iter().any(|key| {
            let Some(branches) = member.get(key).and_then(Value::as_array) else {
                return false;
            };
            let mut any = false;
            for branch in branches {
                if branch.get("type").and_then(Value::as_str) == Some("null") {
                    continue;
                }
                let members = self.members(branch, depth + 1);
                if !members.iter().any(|m| self.integer_member(m, depth + 1)) {
                    return false;
                }
                any = true;
            }
            any
        })
    }
}

/// Whether `schema`'s `type` is `integer`, or a list of `integer` and `null` alone.
fn integer_type(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(ts)) => {
            ts.iter().any(|t| t.as_str() == Some("integer"))
                && ts
                    .iter()
                    .all(|t| matches!(t.as_str(), Some("integer" | "null")))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object",
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
            "loop": {"$ref": "#/properties/loop"},
            "wide": {"type": ["integer", "number"]},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": ["number", "null"]}]},
            "patterned": {"type": "object", "patternProperties": {"^p_": {"type": "number"}},
                "additionalProperties": {"type": "integer"}},
            "sibling": {"$ref": "#/$defs/object", "properties": {"qty": {"type": "integer"}}}
        }, "$defs": {"count": {"type": "integer", "minimum": 0}, "object": {"type": "object"}}})
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
                    "big": 1e300, "wide": 15.0, "maybe": 16.0, "patterned": {"p_x": 17.0},
                    "sibling": {"qty": 18.0}}"#
            ),
            json!({"quantity": 1, "price": 2.0, "either": 3, "bounded": 4, "referred": 5,
                "choice": 6, "mixed": 7.0, "lines": [{"count": 8}, {"count": 9}],
                "pair": [10, 11.0], "tally": {"a": 12}, "other": 13.0, "loop": 14.0,
                "big": 1e300, "wide": 15.0, "maybe": 16.0, "patterned": {"p_x": 17.0},
                "sibling": {"qty": 18}})
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

    /// Schemas that share `$ref`s under `anyOf`, level after level: each judged once, so
    /// thirty levels cost thirty judgements (judged again per branch, they took hours).
    #[test]
    fn shared_refs_are_followed_within_a_bounded_walk() {
        let chain = |levels: usize| {
            let mut defs = serde_json::Map::new();
            defs.insert("d0".into(), json!({"type": "integer"}));
            for k in 1..=levels {
                let below = format!("#/$defs/d{}", k - 1);
                defs.insert(
                    format!("d{k}"),
                    json!({"anyOf": [{"$ref": below}, {"$ref": below}]}),
                );
            }
            let top = format!("#/$defs/d{levels}");
            json!({"$defs": defs, "properties": {"n": {"$ref": top}}})
        };
        let mut params = json!({"n": 1.0});
        write_integers_as_integers(&chain(3), &mut params);
        assert_eq!(params, json!({"n": 1}));
        let mut params = json!({"n": 1.0});
        write_integers_as_integers(&chain(30), &mut params);
        assert_eq!(params, json!({"n": 1}));
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
