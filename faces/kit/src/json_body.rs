//! A JSON request body held to the type its published schema gives each value.
//!
//! poem-openapi's `String` takes a number or a boolean and makes it text (`[true]` becomes
//! `["true"]`), so a body the OpenAPI document refuses would be served (schemathesis found
//! `exclude_selectors: [true]` answered 200). `JsonBody<T>` is poem-openapi's `Json<T>` with one
//! step before `T` parses the value: every value the schema types as a string must be one.
//! Numbers and booleans are the only values poem coerces; the other types already refuse.

use std::{
    any::TypeId,
    collections::HashMap,
    ops::Deref,
    sync::{OnceLock, RwLock},
};

use poem::{FromRequest, Request, RequestBody, Result};
use poem_openapi::{
    error::ParseRequestPayloadError,
    payload::{ParsePayload, Payload},
    registry::{MetaSchema, MetaSchemaRef, Registry},
    types::{ParseFromJSON, Type},
};
use serde_json::Value;

/// A JSON request body; see the module docs for how it differs from `Json<T>`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonBody<T>(pub T);

impl<T> Deref for JsonBody<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Type> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn check_content_type(content_type: &str) -> bool {
        poem_openapi::payload::Json::<T>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: ParseFromJSON + 'static> ParsePayload for JsonBody<T> {
    const IS_REQUIRED: bool = T::IS_REQUIRED;

    async fn from_request(request: &Request, body: &mut RequestBody) -> Result<Self> {
        let data = Vec::<u8>::from_request(request, body).await?;
        let value = if data.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice::<Unique>(&data)
                .map_err(|err| ParseRequestPayloadError {
                    reason: err.to_string(),
                })?
                .0
        };
        if let Some(at) = not_a_string::<T>(&value) {
            return Err(ParseRequestPayloadError {
                reason: format!("`{at}` must be a string, as the schema says"),
            }
            .into());
        }
        let value = T::parse_from_json(Some(value)).map_err(|err| ParseRequestPayloadError {
            reason: err.into_message(),
        })?;
        Ok(Self(value))
    }
}

poem_openapi::impl_apirequest_for_payload!(JsonBody<T>, T: ParseFromJSON + 'static);

pub use svc_ports::json::Unique;

/// Where in `value` a number or boolean stands where `T`'s schema asks for a string.
pub fn not_a_string<T: Type + 'static>(value: &Value) -> Option<String> {
    let registry = registry_of::<T>();
    let mut at = String::new();
    coerced(registry, &T::schema_ref(), value, &mut at).then_some(at)
}

/// `T`'s schemas, registered once per type (registering walks every nested type).
fn registry_of<T: Type + 'static>() -> &'static Registry {
    static REGISTRIES: OnceLock<RwLock<HashMap<TypeId, &'static Registry>>> = OnceLock::new();
    let registries = REGISTRIES.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    if let Some(found) = registries.read().ok().and_then(|r| r.get(&id).copied()) {
        return found;
    }
    let mut registry = Registry::new();
    T::register(&mut registry);
    // Leaked once per request body type: a handful, for the life of the process.
    let registry: &'static Registry = Box::leak(Box::new(registry));
    let mut registries = registries.write().unwrap_or_else(|e| e.into_inner());
    registries.entry(id).or_insert(registry)
}

fn coerced(registry: &Registry, schema: &MetaSchemaRef, value: &Value, at: &mut String) -> bool {
    match schema {
        MetaSchemaRef::Inline(schema) => coerced_in(registry, schema, value, at),
        MetaSchemaRef::Reference(name) => registry
            .schemas
            .get(name)
            .is_some_and(|schema| coerced_in(registry, schema, value, at)),
    }
}

fn coerced_in(registry: &Registry, schema: &MetaSchema, value: &Value, at: &mut String) -> bool {
    if schema.ty == "string" && matches!(value, Value::Number(_) | Value::Bool(_)) {
        return true;
    }
    if schema
        .all_of
        .iter()
        .any(|s| coerced(registry, s, value, at))
    {
        return true;
    }
    let len = at.len();
    let found = match value {
        Value::Object(fields) => fields.iter().any(|(name, field)| {
            let declared = schema.properties.iter().find(|(p, _)| p == name);
            let Some(sub) = declared
                .map(|(_, s)| s)
                .or(schema.additional_properties.as_deref())
            else {
                return false;
            };
            at.truncate(len);
            if !at.is_empty() {
                at.push('.');
            }
            at.push_str(name);
            coerced(registry, sub, field, at)
        }),
        Value::Array(items) => schema.items.as_deref().is_some_and(|sub| {
            items.iter().enumerate().any(|(i, item)| {
                at.truncate(len);
                at.push_str(&format!("[{i}]"));
                coerced(registry, sub, item, at)
            })
        }),
        _ => false,
    };
    if !found {
        at.truncate(len);
    }
    found
}

#[cfg(test)]
mod tests {
    use poem_openapi::Object;
    use serde_json::json;

    use super::*;

    #[derive(Object)]
    struct Inner {
        name: String,
    }

    #[derive(Object)]
    struct Outer {
        url: String,
        note: Option<String>,
        selectors: Option<Vec<String>>,
        count: Option<u32>,
        inner: Option<Inner>,
        labels: Option<HashMap<String, String>>,
    }

    #[test]
    fn strings_pass_and_every_coercible_place_is_named() {
        let good = json!({"url": "u", "note": "n", "selectors": ["a"], "count": 3,
            "inner": {"name": "x"}, "labels": {"k": "v"}});
        assert_eq!(not_a_string::<Outer>(&good), None);
        for (body, at) in [
            (json!({"url": 5}), "url"),
            (json!({"url": "u", "note": true}), "note"),
            (
                json!({"url": "u", "selectors": ["a", true]}),
                "selectors[1]",
            ),
            (json!({"url": "u", "inner": {"name": 1.5}}), "inner.name"),
            (json!({"url": "u", "labels": {"k": false}}), "labels.k"),
        ] {
            assert_eq!(not_a_string::<Outer>(&body).as_deref(), Some(at), "{body}");
        }
    }

    #[test]
    fn other_types_are_left_to_their_own_parsers() {
        // A string where a number belongs, null, or an unknown field: not this check's call.
        let body = json!({"url": "u", "count": "3", "note": null, "extra": 5});
        assert_eq!(not_a_string::<Outer>(&body), None);
        assert!(
            Outer::parse_from_json(Some(json!({"url": 5}))).is_ok(),
            "poem still coerces"
        );
    }
}
