//! Request field types stricter than poem-openapi's defaults.

use std::borrow::Cow;

use poem_openapi::{
    registry::{MetaSchema, MetaSchemaRef},
    types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type},
};
use serde_json::Value;

/// A JSON string and nothing else. poem-openapi's `String` also takes numbers and booleans
/// (turning `false` into `"false"`); a body that breaks its schema must be refused instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictString(pub String);

impl StrictString {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for StrictString {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Type for StrictString {
    const IS_REQUIRED: bool = true;
    type RawValueType = String;
    type RawElementValueType = String;

    fn name() -> Cow<'static, str> {
        "string".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema::new("string")))
    }

    fn as_raw_value(&self) -> Option<&String> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        Box::new(std::iter::once(&self.0))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl ParseFromJSON for StrictString {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value.unwrap_or_default() {
            Value::String(s) => Ok(Self(s)),
            other => Err(ParseError::expected_type(other)),
        }
    }
}

impl ToJSON for StrictString {
    fn to_json(&self) -> Option<Value> {
        Some(Value::String(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_strings_parse() {
        assert_eq!(
            StrictString::parse_from_json(Some(Value::String("a".into()))).unwrap(),
            StrictString("a".into())
        );
        for bad in [
            Value::Bool(false),
            serde_json::json!(5),
            Value::Null,
            serde_json::json!([]),
        ] {
            assert!(StrictString::parse_from_json(Some(bad)).is_err());
        }
    }
}
