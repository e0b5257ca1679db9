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

/// How a placeholder's value is written where it stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// As it is (a header, a JSON string, a form field, which encode their own way).
    Raw,
    /// In a URL: a path segment before the template's `?` or `#`, a query value after it.
    Url,
}

/// Percent-encodes all but the unreserved characters (RFC 3986): a value stays within its
/// path segment, and a space is `%20` there (`+` is a plus in a path).
fn path_segment(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// The placeholders of a template in order: (where it starts, its name, whether it is in the
/// URL's path, the text after it).
fn placeholders(template: &str) -> Vec<(usize, &str, bool)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = template[at..].find('{').map(|s| at + s) {
        let after = &template[start + 1..];
        match after.find('}') {
            Some(end)
                if end > 0
                    && after[..end]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                let in_path = !template[..start].contains(['?', '#']);
                found.push((start, &after[..end], in_path));
                at = start + end + 2;
            }
            _ => at = start + 1,
        }
    }
    found
}

fn fill(template: &str, params: &Map<String, Value>, place: Place) -> String {
    let mut out = String::with_capacity(template.len());
    let mut copied = 0;
    for (start, name, in_path) in placeholders(template) {
        out.push_str(&template[copied..start]);
        let value = params.get(name).map(param_text).unwrap_or_default();
        match place {
            Place::Raw => out.push_str(&value),
            Place::Url if in_path => path_segment(&value, &mut out),
            Place::Url => out.extend(url::form_urlencoded::byte_serialize(value.as_bytes())),
        }
        copied = start + name.len() + 2;
    }
    out.push_str(&template[copied..]);
    out
}

/// Why these params cannot fill the action's path, if they cannot: a segment that the params
/// make `.` or `..` (one placeholder's value, or several side by side) would be read as "this"
/// or "the parent" folder, also percent-encoded, as URLs are parsed, and send the request to
/// a path the map never declared (`/orders/{id}/pay` with `..` is `/pay`).
pub fn path_refusal(action: &ActionSpec, params: &Map<String, Value>) -> Option<String> {
    let template = &action.request.path;
    let path = &template[..template.find(['?', '#']).unwrap_or(template.len())];
    // Values are encoded within their segment, so template and filled path have as many.
    let filled = fill(path, params, Place::Url);
    path.split('/')
        .zip(filled.split('/'))
        .find(|(t, f)| t != f && matches!(*f, "." | ".."))
        .map(|(t, f)| {
            format!("the params make the path segment `{t}` \"{f}\", which would step out of the action's path")
        })
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
                None => Value::String(fill(s, params, Place::Raw)),
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
    let url = format!(
        "{base_url}{}",
        fill(&action.request.path, params, Place::Url)
    );
    let headers = action
        .request
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                fill(v, params, Place::Raw).replace(['\r', '\n'], " "),
            )
        })
        .collect();
    let body = action.request.body.as_ref().map(|b| match b {
        BodyTemplate::Json { value } => (
            "application/json".to_owned(),
            serde_json::to_vec(&fill_json(value, params)).unwrap_or_default(),
        ),
        BodyTemplate::Form { fields } => {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in fields {
                form.append_pair(k, &fill(v, params, Place::Raw));
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
        assert_eq!(
            r.url,
            "https://shop.example.com/orders/a%20b%2Fc?note=x%26y"
        );
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

    /// A review: `..` as a whole path segment sent `/orders/{id}/pay` to `/pay` (URLs drop
    /// dot segments), and a space was a `+`, which a path reads as a plus.
    #[test]
    fn path_params_stay_in_their_segment_and_dot_segments_are_refused() {
        let a = action(json!({"method": "POST", "path": "/orders/{id}/pay?note={note}"}));
        let filled = |params: Value| {
            build_request("https://shop.example.com", &a, params.as_object().unwrap()).url
        };
        assert_eq!(
            filled(json!({"id": "a b+c/d?e#f%", "note": "a b"})),
            "https://shop.example.com/orders/a%20b%2Bc%2Fd%3Fe%23f%25/pay?note=a+b"
        );
        for id in [".", ".."] {
            let params = json!({"id": id, "note": ".."});
            let why = path_refusal(&a, params.as_object().unwrap());
            assert!(
                why.as_deref().is_some_and(|w| w.contains("`{id}`")),
                "{id}: {why:?}"
            );
        }
        // Dots inside a segment, and in the query, are values like any other.
        for params in [
            json!({"id": "...", "note": ".."}),
            json!({"id": "v1.2", "note": "."}),
        ] {
            assert_eq!(
                path_refusal(&a, params.as_object().unwrap()),
                None,
                "{params}"
            );
        }
        let glued = action(json!({"method": "GET", "path": "/files/v{id}"}));
        let params = json!({"id": ".."});
        assert_eq!(path_refusal(&glued, params.as_object().unwrap()), None);
        // Several placeholders that make a dot segment together (a review's bypass).
        for (path, params) in [
            ("/files/{name}.{ext}/pay", json!({"name": ".", "ext": ""})),
            ("/files/{name}.{ext}/pay", json!({"name": "", "ext": "."})),
            ("/orders/{a}{b}/pay", json!({"a": ".", "b": "."})),
        ] {
            let a = action(json!({"method": "GET", "path": path}));
            assert!(
                path_refusal(&a, params.as_object().unwrap()).is_some(),
                "{path} {params}"
            );
        }
        let a = action(json!({"method": "GET", "path": "/files/{name}.{ext}"}));
        let params = json!({"name": "report", "ext": "pdf"});
        assert_eq!(path_refusal(&a, params.as_object().unwrap()), None);
        // At the path's end, and before its query.
        for path in ["/orders/{id}", "/orders/{id}?x=1"] {
            let a = action(json!({"method": "GET", "path": path}));
            let params = json!({"id": ".."});
            assert!(
                path_refusal(&a, params.as_object().unwrap()).is_some(),
                "{path}"
            );
        }
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
