//! Reading an OpenAPI 3.x or Swagger 2.0 document: local `$ref`s of parameters, bodies,
//! responses and path items, the servers (or `host` and `basePath`) on the map's origin,
//! parameter schemas and success responses.

use serde_json::{Map, Value, json};
use url::Url;

use super::{
    MAX_DESCRIPTION,
    names::{Part, one_line, path_parts},
    schema::Inliner,
};

/// Schema nodes one inlined schema may have: refs to refs to refs cannot blow up.
const SCHEMA_BUDGET: usize = 5_000;

pub(super) struct Api<'a> {
    pub(super) root: &'a Value,
    pub(super) v2: bool,
}

impl<'a> Api<'a> {
    /// Follows local `$ref`s of a non-schema object (parameter, body, response, path item).
    pub(super) fn deref(&self, v: &'a Value) -> Option<&'a Value> {
        let mut cur = v;
        for _ in 0..8 {
            match cur.get("$ref") {
                Some(Value::String(r)) => cur = local_target(self.root, r)?,
                _ => return Some(cur),
            }
        }
        None
    }

    pub(super) fn inline(&self, schema: &Value) -> Value {
        Inliner {
            root: self.root,
            budget: SCHEMA_BUDGET,
            stack: Vec::new(),
        }
        .schema(schema, 0)
    }

    /// The path prefix of the first server on the map's origin.
    pub(super) fn prefix(
        &self,
        op: &Map<String, Value>,
        item: &Map<String, Value>,
        base: &Url,
        origin: &str,
    ) -> Result<String, String> {
        let not_here = |other: Option<String>| {
            format!(
                "served from {}, not from {origin}",
                other.unwrap_or_else(|| "no usable server".into())
            )
        };
        if self.v2 {
            let base_path = self
                .root
                .get("basePath")
                .and_then(Value::as_str)
                .unwrap_or("/");
            let base_path = if base_path.starts_with('/') {
                base_path.to_owned()
            } else {
                format!("/{base_path}")
            };
            let prefix = base
                .join(&base_path)
                .map(|u| u.path().trim_end_matches('/').to_owned())
                .map_err(|_| {
                    format!("its basePath `{}` is not a path", one_line(&base_path, 80))
                })?;
            let Some(host) = self.root.get("host").and_then(Value::as_str) else {
                return Ok(prefix);
            };
            let schemes: Vec<&str> = self
                .root
                .get("schemes")
                .and_then(Value::as_array)
                .map(|s| s.iter().filter_map(Value::as_str).collect())
                .filter(|s: &Vec<&str>| !s.is_empty())
                .unwrap_or_else(|| vec![base.scheme()]);
            let mut other = None;
            for scheme in schemes {
                match Url::parse(&format!("{scheme}://{host}")) {
                    Ok(u) if u.origin() == base.origin() => return Ok(prefix),
                    Ok(u) => {
                        other.get_or_insert(u.origin().ascii_serialization());
                    }
                    Err(_) => {
                        other.get_or_insert(one_line(&format!("{scheme}://{host}"), 120));
                    }
                }
            }
            return Err(not_here(other));
        }
        let servers = [
            op.get("servers"),
            item.get("servers"),
            self.root.get("servers"),
        ]
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .find(|s| !s.is_empty());
        let Some(servers) = servers else {
            return Ok(String::new());
        };
        let mut other = None;
        for server in servers {
            let Some(raw) = server.get("url").and_then(Value::as_str) else {
                continue;
            };
            let url = match server_url(raw, server.get("variables")) {
                Ok(url) => url,
                Err(raw) => {
                    other.get_or_insert(raw);
                    continue;
                }
            };
            match base.join(&url) {
                Ok(u) if u.origin() == base.origin() => {
                    return Ok(u.path().trim_end_matches('/').to_owned());
                }
                Ok(u) => {
                    other.get_or_insert(u.origin().ascii_serialization());
                }
                Err(_) => {
                    other.get_or_insert(one_line(&url, 120));
                }
            }
        }
        Err(not_here(other))
    }

    /// A parameter's schema, with its description.
    pub(super) fn param_schema(&self, p: &Map<String, Value>) -> Value {
        let raw = if self.v2 {
            Some(Value::Object(p.clone()))
        } else {
            p.get("schema").cloned().or_else(|| {
                p.get("content")
                    .and_then(Value::as_object)
                    .and_then(|c| c.values().next())
                    .and_then(|m| m.get("schema"))
                    .cloned()
            })
        };
        let mut s = match raw {
            Some(raw) => self.inline(&raw),
            None => json!({"type": "string"}),
        };
        if let (Value::Object(o), Some(d)) = (&mut s, p.get("description").and_then(Value::as_str))
        {
            let d = one_line(d, MAX_DESCRIPTION);
            if !d.is_empty() && !o.contains_key("description") {
                o.insert("description".into(), Value::String(d));
            }
        }
        s
    }

    /// Whether a Swagger 2.0 operation's `consumes`/`produces` allows JSON.
    pub(super) fn v2_json(&self, op: &Map<String, Value>, key: &str) -> bool {
        match op
            .get(key)
            .or_else(|| self.root.get(key))
            .and_then(Value::as_array)
        {
            Some(list) => {
                let list: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
                list.is_empty() || list.iter().any(|m| is_json(m))
            }
            None => true,
        }
    }

    /// The 2xx statuses an operation documents (default `[200]`) and its success response.
    pub(super) fn success(&self, op: &'a Map<String, Value>) -> (Vec<u16>, Option<&'a Value>) {
        let Some(responses) = op.get("responses").and_then(Value::as_object) else {
            return (vec![200], None);
        };
        let mut status: Vec<u16> = Vec::new();
        let mut first: Option<(u16, &'a Value)> = None;
        for (code, response) in responses {
            let codes: Vec<u16> = match code.parse::<u16>() {
                Ok(c) if (200..300).contains(&c) => vec![c],
                _ if code.eq_ignore_ascii_case("2XX") => vec![200, 201, 202, 204],
                _ => continue,
            };
            let rank = codes[0] + u16::from(code.parse::<u16>().is_err()) * 1000;
            if first.is_none_or(|(r, _)| rank < r) {
                first = Some((rank, response));
            }
            status.extend(codes);
        }
        status.sort_unstable();
        status.dedup();
        if status.is_empty() {
            status.push(200);
        }
        (status, first.and_then(|(_, r)| self.deref(r)))
    }

    /// The JSON schema of a success response, if it documents one.
    pub(super) fn response_schema(
        &self,
        op: &Map<String, Value>,
        response: &'a Value,
    ) -> Option<&'a Value> {
        if self.v2 {
            return response
                .get("schema")
                .filter(|_| self.v2_json(op, "produces"));
        }
        response
            .get("content")
            .and_then(Value::as_object)?
            .iter()
            .find(|(m, _)| is_json(m))
            .and_then(|(_, media)| media.get("schema"))
    }
}

/// A server URL with its variables' defaults filled in; `Err` with the URL as written when a
/// variable has no default.
fn server_url(raw: &str, variables: Option<&Value>) -> Result<String, String> {
    path_parts(raw)
        .into_iter()
        .map(|part| match part {
            Part::Lit(text) => Ok(text),
            Part::Var(name) => variables
                .and_then(|v| v.get(&name))
                .and_then(|v| v.get("default"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| one_line(raw, 120)),
        })
        .collect()
}

pub(super) fn is_json(media: &str) -> bool {
    let m = media.trim().to_ascii_lowercase();
    m.starts_with("application/json") || m.contains("+json") || m == "*/*"
}

pub(super) fn local_target<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = percent_decode(reference.strip_prefix('#')?);
    if !(pointer.is_empty() || pointer.starts_with('/')) {
        return None;
    }
    root.pointer(&pointer)
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    };
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::LearnError;
    use crate::learn::fixtures::*;
    use svc_ports::{ActionFamily, actions::BodyTemplate};

    #[test]
    fn operations_on_another_origin_are_skipped() {
        let mut doc = petstore();
        doc["servers"] =
            json!([{"url": "https://api.example.net/v1"}, {"url": "http://shop.example.com"}]);
        let err = learn(Some(&doc), &[]).unwrap_err();
        let LearnError::NothingLearned { skipped } = &err else {
            panic!("{err}");
        };
        assert!(
            skipped
                .iter()
                .any(|s| s.contains("GET /pets: served from https://api.example.net"))
        );
        assert!(
            err.to_string()
                .starts_with("nothing the site publishes could be drafted as an action: ")
        );

        // Relative servers are on the site's origin; server variables take their defaults.
        doc["servers"] = json!([{"url": "{scheme}://other.example.org"}, {"url": "/{version}", "variables": {"version": {"default": "v3"}}}]);
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        assert_eq!(
            action(&draft, "list_pets").request.path,
            "/v3/pets?limit={limit}&tag={tag}"
        );

        // No servers at all: the paths are the origin's.
        doc.as_object_mut().unwrap().remove("servers");
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_eq!(
            action(&draft, "show_pet_by_id").request.path,
            "/pets/{petId}"
        );
    }

    #[test]
    fn swagger_2_paths_parameters_and_bodies_are_learned() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Swagger Petstore", "version": "1.0"},
            "host": "shop.example.com",
            "basePath": "/v2",
            "schemes": ["https"],
            "consumes": ["application/json"],
            "produces": ["application/json"],
            "securityDefinitions": {"petstore_auth": {"type": "oauth2"}},
            "definitions": {
                "Pet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"id": {"type": "integer", "format": "int64"}, "name": {"type": "string", "example": "doggie"}}
                }
            },
            "paths": {
                "/pet/findByStatus": {
                    "get": {
                        "operationId": "findPetsByStatus",
                        "parameters": [{"name": "status", "in": "query", "required": true, "type": "array", "items": {"type": "string", "enum": ["available", "sold"]}, "collectionFormat": "multi"}],
                        "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}}
                    }
                },
                "/pet": {
                    "post": {
                        "operationId": "addPet",
                        "security": [{"petstore_auth": ["write:pets"]}],
                        "parameters": [{"in": "body", "name": "body", "required": true, "schema": {"$ref": "#/definitions/Pet"}}],
                        "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}, "405": {"description": "invalid"}}
                    }
                },
                "/pet/{petId}": {
                    "get": {
                        "operationId": "getPetById",
                        "parameters": [{"name": "petId", "in": "path", "required": true, "type": "integer", "format": "int64"}],
                        "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}}
                    },
                    "post": {
                        "operationId": "updatePetWithForm",
                        "consumes": ["application/x-www-form-urlencoded"],
                        "parameters": [
                            {"name": "petId", "in": "path", "required": true, "type": "integer"},
                            {"name": "name", "in": "formData", "required": false, "type": "string"},
                            {"name": "status", "in": "formData", "required": false, "type": "string"}
                        ],
                        "responses": {"200": {"description": "ok"}}
                    }
                },
                "/pet/{petId}/uploadImage": {
                    "post": {
                        "operationId": "uploadFile",
                        "parameters": [
                            {"name": "petId", "in": "path", "required": true, "type": "integer"},
                            {"name": "file", "in": "formData", "required": true, "type": "file"}
                        ],
                        "responses": {"200": {"description": "ok"}}
                    }
                }
            }
        });
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let find = action(&draft, "find_pets_by_status");
        assert_eq!(find.family, ActionFamily::Search);
        assert_eq!(find.request.path, "/v2/pet/findByStatus?status={status}");
        assert_eq!(
            find.params_schema["properties"]["status"],
            json!({"type": "array", "items": {"type": "string", "enum": ["available", "sold"]}})
        );
        let add = action(&draft, "add_pet");
        assert_eq!(add.family, ActionFamily::FormSubmit);
        assert!(add.consequential);
        assert_eq!(add.auth_provider.as_deref(), Some("example-com"));
        assert_eq!(
            add.request.body,
            Some(BodyTemplate::Json {
                value: json!({"id": "{id}", "name": "{name}"})
            })
        );
        assert_eq!(add.params_schema["required"], json!(["name"]));
        assert_eq!(
            add.params_schema["properties"]["name"]["examples"],
            json!(["doggie"])
        );
        assert_eq!(add.verify.status, vec![200]);
        let get = action(&draft, "get_pet_by_id");
        assert_eq!(get.family, ActionFamily::Read);
        assert_eq!(get.request.path, "/v2/pet/{petId}");
        assert_eq!(
            get.params_schema["properties"]["petId"],
            json!({"type": "integer", "format": "int64"})
        );
        assert_eq!(get.verify.json.len(), 1);
        let update = action(&draft, "update_pet_with_form");
        assert_eq!(
            update.request.body,
            Some(BodyTemplate::Form {
                fields: [
                    ("name".to_owned(), "{name}".to_owned()),
                    ("status".to_owned(), "{status}".to_owned())
                ]
                .into()
            })
        );
        assert!(skipped_with(&draft, "POST /pet/{petId}/uploadImage").contains("uploads a file"));
        assert!(draft.document.description.contains("\"Swagger Petstore\""));

        // On another host, nothing of it is the site's.
        let mut elsewhere = doc.clone();
        elsewhere["host"] = json!("petstore.swagger.io");
        let err = learn(Some(&elsewhere), &[]).unwrap_err();
        assert!(
            err.to_string()
                .contains("served from https://petstore.swagger.io"),
            "{err}"
        );
    }
}
