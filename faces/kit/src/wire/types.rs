//! Request field types stricter than poem-openapi's defaults.

use std::borrow::Cow;

use poem_openapi::{
    registry::{MetaSchema, MetaSchemaRef},
    types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type},
};
use serde_json::Value;

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
}
