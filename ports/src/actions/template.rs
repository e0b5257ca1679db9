//! The HTTP request an action makes: its method, the path, header and body templates, and the
//! `{param}` placeholders they hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ActionSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }

    /// Safe in the RFC 9110 sense: asks, changes nothing.
    pub fn is_safe(self) -> bool {
        self == Self::Get
    }
}

/// The body an action sends. Templates: `{param}` is replaced by the param's value; in a JSON
/// body a string that is exactly `{param}` becomes the param's JSON value, type and all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BodyTemplate {
    Json { value: Value },
    Form { fields: BTreeMap<String, String> },
}

/// The HTTP request an action makes, relative to its map's `base_url`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestTemplate {
    pub method: HttpMethod,
    /// Path and query template, e.g. `/api/products/{id}` or `/search?q={query}`.
    pub path: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyTemplate>,
}

impl ActionSpec {
    /// The names of the params the request template uses.
    pub fn template_params(&self) -> Vec<String> {
        let mut names = placeholders(&self.request.path);
        for v in self.request.headers.values() {
            names.extend(placeholders(v));
        }
        match &self.request.body {
            Some(BodyTemplate::Form { fields }) => {
                for v in fields.values() {
                    names.extend(placeholders(v));
                }
            }
            Some(BodyTemplate::Json { value }) => json_placeholders(value, &mut names),
            None => {}
        }
        names.sort();
        names.dedup();
        names
    }
}

/// `{name}` placeholders of a template.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    out.push(name.to_owned());
                }
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

fn json_placeholders(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.extend(placeholders(s)),
        Value::Array(a) => a.iter().for_each(|x| json_placeholders(x, out)),
        Value::Object(o) => o.values().for_each(|x| json_placeholders(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::tests::sample_action;
    use serde_json::json;

    #[test]
    fn placeholders_are_found_in_every_part() {
        assert_eq!(placeholders("/a/{id}/b?x={q}&y={}"), vec!["id", "q"]);
        let mut a = sample_action();
        a.request.body = Some(BodyTemplate::Json {
            value: json!({"item": "{sku}", "n": ["{qty}"]}),
        });
        assert_eq!(a.template_params(), vec!["qty", "query", "sku"]);
    }
}
