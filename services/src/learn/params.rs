//! An action's params and the keys its request template names them by.

use serde_json::{Map, Value, json};

use super::names::{fit, words};

/// An action's params: each gets a key a template placeholder can name (`[A-Za-z0-9_]+`).
#[derive(Default)]
pub(super) struct Params {
    props: Map<String, Value>,
    required: Vec<String>,
}

impl Params {
    /// Declares a param for `wanted` (a parameter, property or field name) and returns its key:
    /// the name itself when a placeholder can name it, else its words joined by `_`; `_2`,
    /// `_3`, ... when taken.
    pub(super) fn add(&mut self, wanted: &str, schema: Value, required: bool) -> String {
        let base = if !wanted.is_empty()
            && wanted.len() <= 64
            && wanted
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            wanted.to_owned()
        } else {
            let joined = fit(&words(wanted).join("_"), 64);
            if joined.is_empty() {
                "param".to_owned()
            } else {
                joined
            }
        };
        let mut key = base.clone();
        let mut n = 2;
        while self.props.contains_key(&key) {
            key = format!("{base}_{n}");
            n += 1;
        }
        self.props.insert(key.clone(), schema);
        if required {
            self.required.push(key.clone());
        }
        key
    }

    pub(super) fn schema(&self) -> Value {
        let mut s = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": self.props,
        });
        if !self.required.is_empty() {
            s["required"] = json!(self.required);
        }
        s
    }
}

pub(super) fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
