//! The HTTP request an action makes: its map's templates filled with the params.

use serde_json::{Map, Value};
use svc_ports::{ActionRequest, ActionSpec, actions::BodyTemplate};

/// A param's value as it goes into a URL, header or form field.
fn param_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn fill(template: &str, params: &Map<String, Value>, encode: bool) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end)
                if after[..end]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && end > 0 =>
            {
                let value = params
                    .get(&after[..end])
                    .map(param_text)
                    .unwrap_or_default();
                if encode {
                    out.extend(url::form_urlencoded::byte_serialize(value.as_bytes()));
                } else {
                    out.push_str(&value);
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn fill_json(template: &Value, params: &Map<String, Value>) -> Value {
    match template {
        Value::String(s) => {
            let whole = s
                .strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .filter(|n| {
                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                });
            match whole {
                Some(name) => params.get(name).cloned().unwrap_or(Value::Null),
                None => Value::String(fill(s, params, false)),
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| fill_json(x, params)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), fill_json(v, params)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The HTTP request an action makes with these params.
pub fn build_request(
    base_url: &str,
    action: &ActionSpec,
    params: &Map<String, Value>,
) -> ActionRequest {
    let url = format!("{base_url}{}", fill(&action.request.path, params, true));
    let headers = action
        .request
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), fill(v, params, false).replace(['\r', '\n'], " ")))
        .collect();
    let body = action.request.body.as_ref().map(|b| match b {
        BodyTemplate::Json { value } => (
            "application/json".to_owned(),
            serde_json::to_vec(&fill_json(value, params)).unwrap_or_default(),
        ),
        BodyTemplate::Form { fields } => {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in fields {
                form.append_pair(k, &fill(v, params, false));
            }
            (
                "application/x-www-form-urlencoded".to_owned(),
                form.finish().into_bytes(),
            )
        }
    });
    ActionRequest {
        method: action.request.method,
        url,
        headers,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use svc_ports::actions::HttpMethod;

    fn action(request: Value) -> ActionSpec {
        serde_json::from_value(json!({
            "name": "place_order",
            "description": "Order.",
            "family": "order",
            "params_schema": {"type": "object"},
            "consequential": true,
            "request": request,
            "verify": {"status": [201]},
            "output_schema": {"type": "object"}
        }))
        .unwrap()
    }

    #[test]
    fn requests_fill_paths_encoded_and_json_bodies_typed() {
        let a = action(json!({
            "method": "POST",
            "path": "/orders/{sku}?note={note}",
            "headers": {"X-Ref": "ref-{sku}"},
            "body": {"type": "json", "value": {"sku": "{sku}", "quantity": "{qty}", "label": "qty {qty}"}}
        }));
        let params = json!({"sku": "a b/c", "qty": 3, "note": "x&y"});
        let r = build_request("https://shop.example.com", &a, params.as_object().unwrap());
        assert_eq!(r.method, HttpMethod::Post);
        assert_eq!(r.url, "https://shop.example.com/orders/a+b%2Fc?note=x%26y");
        assert_eq!(
            r.headers,
            vec![("X-Ref".to_owned(), "ref-a b/c".to_owned())]
        );
        let (ct, body) = r.body.unwrap();
        assert_eq!(ct, "application/json");
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"sku": "a b/c", "quantity": 3, "label": "qty 3"})
        );
    }

    #[test]
    fn form_bodies_are_urlencoded_and_headers_cannot_break_lines() {
        let a = action(json!({
            "method": "POST",
            "path": "/contact",
            "headers": {"X-Name": "{name}"},
            "body": {"type": "form", "fields": {"message": "{text}"}}
        }));
        let params = json!({"text": "hi & bye", "name": "a\r\nInjected: 1"});
        let r = build_request("https://x.example", &a, params.as_object().unwrap());
        assert_eq!(r.headers[0].1, "a  Injected: 1");
        let (ct, body) = r.body.unwrap();
        assert_eq!(ct, "application/x-www-form-urlencoded");
        assert_eq!(String::from_utf8(body).unwrap(), "message=hi+%26+bye");
    }
}
