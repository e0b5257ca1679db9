//! JSON read as the service reads every body it judges: an object that names a key twice is
//! refused.

use serde_json::Value;

/// A JSON value whose objects name each key once. RFC 8259 leaves a repeated name to the
/// reader, and readers differ (a `Value` keeps the last, a proxy or a client's own check may
/// keep the first), so `{"email": "a@x", "email": "b@x"}` is refused rather than guessed at.
pub struct Unique(pub Value);

impl Unique {
    /// Why `bytes` is not JSON whose keys each appear once, if it is not.
    pub fn refused(bytes: &[u8]) -> Option<String> {
        serde_json::from_slice::<Unique>(bytes)
            .err()
            .map(|e| e.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{key}` is given twice"
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth() {
        let parse = |text: &str| serde_json::from_slice::<Unique>(text.as_bytes()).map(|u| u.0);
        let v = parse(r#"{"a": [1, -2, 2.5, true, null, "s", {"b": {}}], "c": {"a": 1}}"#).unwrap();
        assert_eq!(
            v,
            json!({"a": [1, -2, 2.5, true, null, "s", {"b": {}}], "c": {"a": 1}})
        );
        for twice in [
            r#"{"email": "a@x", "email": "b@x"}"#,
            r#"{"params": {"q": 1, "q": 2}}"#,
            r#"[{"k": 1, "k": 1}]"#,
        ] {
            let e = parse(twice).unwrap_err().to_string();
            assert!(e.contains("given twice"), "{twice}: {e}");
        }
        // serde_json's nesting limit still holds.
        assert!(parse(&"[".repeat(10_000)).is_err());
    }
}
