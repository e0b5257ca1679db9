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

/// A string that is always present and may be `null` (`type: [string, null]`): for fields
/// that are signed, whose absence and `null` would differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullableString(pub Option<String>);

impl Type for NullableString {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "string_or_null".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            nullable: true,
            ..MetaSchema::new("string")
        }))
    }

    fn as_raw_value(&self) -> Option<&Self> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
        Box::new(std::iter::once(self))
    }
}

impl ParseFromJSON for NullableString {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value.unwrap_or_default() {
            Value::Null => Ok(Self(None)),
            Value::String(s) => Ok(Self(Some(s))),
            other => Err(ParseError::expected_type(other)),
        }
    }
}

impl ToJSON for NullableString {
    fn to_json(&self) -> Option<Value> {
        Some(self.0.clone().map(Value::String).unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_strings_stay_present_as_null() {
        let none = NullableString::parse_from_json(Some(Value::Null)).unwrap();
        assert_eq!(none.to_json(), Some(Value::Null));
        assert!(NullableString::parse_from_json(Some(serde_json::json!(1))).is_err());
    }

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
