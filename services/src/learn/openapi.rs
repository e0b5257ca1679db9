//! OpenAPI operations to actions: the walk over the document's paths, each operation's
//! parameters, request body, security and family, and its description.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};
use svc_ports::{
    ActionSpec,
    actions::{BodyTemplate, HttpMethod, RequestTemplate, VerifyRules, provider_id_ok},
};

use super::{
    Drafted, Learner, MAX_DESCRIPTION,
    classify::{changes_sign_in_details, classify, forbidden, sensitive_field, sensitive_nested},
    names::{Part, fallback_name, one_line, path_parts, snake_name, words},
    openapi_doc::{Api, is_json},
    params::{Params, encode},
    provider_id,
    schema::{outputs_for, shape},
};

const OPENAPI_NOTE: &str = "Learned from the OpenAPI document, which names no required response fields: verification only checks the status; add rules before publishing.";
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

impl Learner<'_> {
    /// Learns every operation of the document; returns ` "title"` for the map's description.
    pub(super) fn openapi(&mut self, doc: &Value) -> String {
        let label = "OpenAPI document";
        let v2 = match (
            doc.get("openapi").and_then(Value::as_str),
            doc.get("swagger").and_then(Value::as_str),
        ) {
            (Some(v), _) if v.starts_with("3.") => false,
            (_, Some(v)) if v.starts_with("2.") => true,
            _ => {
                self.skip(
                    label,
                    "not an OpenAPI 3.x or Swagger 2.0 document, so nothing was learned from it",
                );
                return String::new();
            }
        };
        let api = Api { root: doc, v2 };
        let title = doc
            .pointer("/info/title")
            .and_then(Value::as_str)
            .map(|t| one_line(t, 80))
            .filter(|t| !t.is_empty())
            .map(|t| format!(" \"{t}\""))
            .unwrap_or_default();
        let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
            self.skip(label, "it has no paths");
            return title;
        };
        for (path, item) in paths {
            if path.starts_with("x-") {
                continue;
            }
            let Some(item) = api.deref(item).and_then(Value::as_object) else {
                self.skip(
                    &format!("OpenAPI {}", one_line(path, 120)),
                    "the path item is not an object (or a $ref this document does not hold)",
                );
                continue;
            };
            for method in METHODS {
                let Some(op) = item.get(*method) else {
                    continue;
                };
                let label = format!(
                    "OpenAPI {} {}",
                    method.to_ascii_uppercase(),
                    one_line(path, 120)
                );
                match self.operation(&api, path, item, method, op) {
                    Ok(drafted) => self.accept(&label, drafted, true),
                    Err(why) => self.skip(&label, &why),
                }
            }
        }
        title
    }

    fn operation<'a>(
        &self,
        api: &Api<'a>,
        path: &str,
        item: &'a Map<String, Value>,
        method: &str,
        op: &'a Value,
    ) -> Result<Drafted, String> {
        let op = op.as_object().ok_or("the operation is not an object")?;
        let http = match method {
            "get" => HttpMethod::Get,
            "post" => HttpMethod::Post,
            "put" => HttpMethod::Put,
            "patch" => HttpMethod::Patch,
            "delete" => HttpMethod::Delete,
            other => {
                return Err(format!(
                    "{} is not a method actions make",
                    other.to_ascii_uppercase()
                ));
            }
        };
        if op.get("deprecated") == Some(&Value::Bool(true)) {
            return Err("the operation is deprecated".into());
        }
        if !path.starts_with('/') {
            return Err("the path does not start with /".into());
        }
        let op_id = op.get("operationId").and_then(Value::as_str).unwrap_or("");
        let summary = op.get("summary").and_then(Value::as_str).unwrap_or("");
        let about = op.get("description").and_then(Value::as_str).unwrap_or("");
        let mut ident = words(op_id);
        ident.extend(words(path));
        if let Some(why) = forbidden(&ident) {
            return Err(why.into());
        }
        if !http.is_safe() && changes_sign_in_details(&ident) {
            return Err("it changes a user's sign-in details (email, phone or username), which the action catalog forbids".into());
        }
        let prefix = api.prefix(op, item, &self.base, &self.origin)?;

        // Parameters: the path item's, overridden by the operation's (by name and location).
        let mut declared: Vec<(&'a str, &'a str, &'a Map<String, Value>)> = Vec::new();
        for list in [item.get("parameters"), op.get("parameters")]
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
        {
            for p in list {
                let Some(p) = api.deref(p).and_then(Value::as_object) else {
                    continue;
                };
                let (Some(name), Some(place)) = (
                    p.get("name").and_then(Value::as_str),
                    p.get("in").and_then(Value::as_str),
                ) else {
                    continue;
                };
                match declared.iter_mut().find(|d| d.0 == name && d.1 == place) {
                    Some(d) => d.2 = p,
                    None => declared.push((name, place, p)),
                }
            }
        }
        for (name, place, _) in &declared {
            if *place != "body"
                && let Some(why) = sensitive_field(name)
            {
                return Err(format!("its parameter `{name}` {why}"));
            }
        }

        let mut params = Params::default();
        let parts = path_parts(path);
        let mut request_path = prefix;
        let mut path_keys: HashMap<&str, String> = HashMap::new();
        for part in &parts {
            match part {
                Part::Lit(text) => request_path.push_str(text),
                Part::Var(name) => {
                    let key = match path_keys.get(name.as_str()) {
                        Some(key) => key.clone(),
                        None => {
                            let schema = declared
                                .iter()
                                .find(|d| d.0 == name && d.1 == "path")
                                .map(|d| api.param_schema(d.2))
                                .unwrap_or_else(|| json!({"type": "string"}));
                            let key = params.add(name, schema, true);
                            path_keys.insert(name, key.clone());
                            key
                        }
                    };
                    request_path.push('{');
                    request_path.push_str(&key);
                    request_path.push('}');
                }
            }
        }
        let mut query = Vec::new();
        let mut headers = BTreeMap::new();
        let mut form_fields = BTreeMap::new();
        let mut v2_body = None;
        for (name, place, p) in &declared {
            let required = p.get("required") == Some(&Value::Bool(true));
            match *place {
                "query" => {
                    let key = params.add(name, api.param_schema(p), required);
                    query.push(format!("{}={{{key}}}", encode(name)));
                }
                "header" => {
                    if ["accept", "content-type", "authorization"]
                        .contains(&name.to_ascii_lowercase().as_str())
                    {
                        continue;
                    }
                    let key = params.add(name, api.param_schema(p), required);
                    headers.insert((*name).to_owned(), format!("{{{key}}}"));
                }
                "cookie" if required => {
                    return Err(format!(
                        "it needs the cookie `{name}`, which maps cannot send"
                    ));
                }
                "body" if api.v2 => v2_body = Some((*p, required)),
                "formData" if api.v2 => {
                    if p.get("type").and_then(Value::as_str) == Some("file") {
                        if required {
                            return Err("it uploads a file, which maps cannot send".into());
                        }
                        continue;
                    }
                    let key = params.add(name, api.param_schema(p), required);
                    form_fields.insert((*name).to_owned(), format!("{{{key}}}"));
                }
                _ => {}
            }
        }
        if !query.is_empty() {
            request_path.push(if request_path.contains('?') { '&' } else { '?' });
            request_path.push_str(&query.join("&"));
        }

        let body = if api.v2 {
            if !form_fields.is_empty() {
                Some(BodyTemplate::Form {
                    fields: form_fields,
                })
            } else if let Some((p, required)) = v2_body {
                if api.v2_json(op, "consumes") {
                    Some(json_body(api, p.get("schema"), required, &mut params)?)
                } else if required {
                    return Err("its request body is not JSON, which maps cannot send".into());
                } else {
                    None
                }
            } else {
                None
            }
        } else {
            self.v3_body(api, op, &mut params)?
        };

        let (status, success) = api.success(op);
        let response_schema = success
            .and_then(|r| api.response_schema(op, r))
            .map(|s| api.inline(s));
        let (rules, outputs, output_schema) = outputs_for(response_schema);

        let security = op.get("security").or_else(|| api.root.get("security"));
        let auth_provider = if needs_auth(security) {
            let id = provider_id(self.domain);
            if !provider_id_ok(&id) {
                return Err(format!(
                    "it needs a signed-in user, and `{}` gives no valid connection provider id",
                    self.domain
                ));
            }
            Some(id)
        } else {
            None
        };

        let lookup = !parts.iter().any(|p| matches!(p, Part::Var(_))) && !query.is_empty();
        let mut all_words = ident.clone();
        all_words.extend(words(summary));
        let (family, consequential, unsafe_get) = classify(http, lookup, &ident, &all_words);

        let mut description = [summary, about]
            .iter()
            .map(|t| one_line(t, MAX_DESCRIPTION))
            .find(|t| !t.is_empty())
            .unwrap_or_else(|| format!("{} {}", http.as_str(), one_line(path, 120)));
        if !description.ends_with(['.', '!', '?', '…']) {
            description.push('.');
        }
        if unsafe_get {
            description
                .push_str(" Marked consequential: a GET whose name says it changes something.");
        }
        if rules.is_empty() {
            description.push(' ');
            description.push_str(OPENAPI_NOTE);
        }
        let base_name = snake_name(op_id).unwrap_or_else(|| fallback_name(method, path));
        Ok(Drafted {
            base_name,
            spec: ActionSpec {
                name: String::new(),
                description,
                family,
                params_schema: params.schema(),
                auth_provider,
                consequential,
                scopes: Vec::new(),
                cost: 1,
                request: RequestTemplate {
                    method: http,
                    path: request_path,
                    headers,
                    body,
                },
                verify: VerifyRules {
                    status,
                    json: rules,
                    css: Vec::new(),
                },
                outputs,
                output_schema,
                payment: None,
            },
        })
    }

    fn v3_body(
        &self,
        api: &Api,
        op: &Map<String, Value>,
        params: &mut Params,
    ) -> Result<Option<BodyTemplate>, String> {
        let Some(rb) = op
            .get("requestBody")
            .and_then(|b| api.deref(b))
            .and_then(Value::as_object)
        else {
            return Ok(None);
        };
        let required = rb.get("required") == Some(&Value::Bool(true));
        let Some(content) = rb.get("content").and_then(Value::as_object) else {
            return Ok(None);
        };
        if let Some((_, media)) = content.iter().find(|(m, _)| is_json(m)) {
            return json_body(api, media.get("schema"), required, params).map(Some);
        }
        if let Some((_, media)) = content.iter().find(|(m, _)| {
            m.to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        }) {
            let schema = api.inline(media.get("schema").unwrap_or(&Value::Null));
            if let Some(why) = sensitive_nested(&schema, 0) {
                return Err(why);
            }
            return match shape(&schema, 0) {
                Some(shape) => {
                    let mut fields = BTreeMap::new();
                    for (name, s) in shape.props {
                        let key = params.add(&name, s, required && shape.required.contains(&name));
                        fields.insert(name, format!("{{{key}}}"));
                    }
                    Ok(Some(BodyTemplate::Form { fields }))
                }
                None if required => Err("its form body has no properties to fill".into()),
                None => Ok(None),
            };
        }
        if required && !content.is_empty() {
            let kinds: Vec<&str> = content.keys().map(String::as_str).take(3).collect();
            return Err(format!(
                "its request body is {} only, which maps cannot send",
                kinds.join(", ")
            ));
        }
        Ok(None)
    }
}

/// A JSON request body: one param per top-level property, or the whole body as one param.
fn json_body(
    api: &Api,
    schema: Option<&Value>,
    required: bool,
    params: &mut Params,
) -> Result<BodyTemplate, String> {
    let schema = api.inline(schema.unwrap_or(&Value::Null));
    if let Some(why) = sensitive_nested(&schema, 0) {
        return Err(why);
    }
    match shape(&schema, 0) {
        Some(shape) => {
            let mut value = Map::new();
            for (name, s) in shape.props {
                if s.get("readOnly") == Some(&Value::Bool(true)) {
                    continue;
                }
                let key = params.add(&name, s, required && shape.required.contains(&name));
                value.insert(name, Value::String(format!("{{{key}}}")));
            }
            Ok(BodyTemplate::Json {
                value: Value::Object(value),
            })
        }
        None => {
            let key = params.add("body", schema, required);
            Ok(BodyTemplate::Json {
                value: Value::String(format!("{{{key}}}")),
            })
        }
    }
}

/// Whether the effective `security` needs a signed-in user: at least one requirement, and no
/// empty one (which would allow anonymous calls).
fn needs_auth(security: Option<&Value>) -> bool {
    let Some(Value::Array(requirements)) = security else {
        return false;
    };
    let objects: Vec<&Map<String, Value>> =
        requirements.iter().filter_map(Value::as_object).collect();
    !objects.is_empty() && objects.iter().all(|o| !o.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::fixtures::*;
    use crate::learn::{LearnError, LearnInput, draft_map};
    use svc_ports::{ActionFamily, Domain, actions::OutputSource};

    #[test]
    fn openapi_operations_become_actions_by_safety() {
        let doc = petstore();
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        assert!(
            draft.document.description.starts_with(
                "Learned from the site's OpenAPI document \"Petstore\" on shop.example.com"
            ),
            "{}",
            draft.document.description
        );
        assert!(
            draft
                .document
                .description
                .ends_with("review before publishing.")
        );

        // GET list with query params -> non-consequential search.
        let list = action(&draft, "list_pets");
        assert_eq!(list.family, ActionFamily::Search);
        assert!(!list.consequential);
        assert_eq!(
            list.auth_provider, None,
            "security: [] overrides the document"
        );
        assert_eq!(list.request.method, HttpMethod::Get);
        assert_eq!(list.request.path, "/api/v1/pets?limit={limit}&tag={tag}");
        assert_eq!(list.request.headers.len(), 1, "Accept is not a param");
        assert_eq!(list.request.headers["X-Request-ID"], "{x_request_id}");
        assert_eq!(
            list.description,
            "List all pets. ".to_owned() + OPENAPI_NOTE
        );
        assert_eq!(
            list.params_schema,
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "limit": {"type": "integer", "maximum": 100, "description": "How many at most."},
                    "tag": {"type": "string"},
                    "x_request_id": {"type": "string"}
                },
                "required": ["tag"]
            })
        );
        assert_eq!(list.verify.status, vec![200]);
        assert!(list.verify.json.is_empty());
        // An array response is one output: the whole body.
        assert_eq!(list.outputs.len(), 1);
        assert_eq!(list.outputs[0].name, "items");
        assert_eq!(
            list.outputs[0].source,
            OutputSource::Json {
                pointer: String::new()
            }
        );
        assert_eq!(list.output_schema["properties"]["items"]["type"], "array");
        assert_eq!(
            list.output_schema["properties"]["items"]["items"]["required"],
            json!(["id", "name"]),
            "refs are inlined"
        );

        // GET by id -> read; `[{}]` allows anonymous calls, so no connection is needed.
        let show = action(&draft, "show_pet_by_id");
        assert_eq!(show.family, ActionFamily::Read);
        assert!(!show.consequential);
        assert_eq!(show.auth_provider, None);
        assert_eq!(show.request.path, "/api/v1/pets/{petId}");
        assert_eq!(show.params_schema["required"], json!(["petId"]));
        assert_eq!(
            show.params_schema["properties"]["petId"],
            json!({"type": "integer", "description": "The pet's id."})
        );
        let pointers: Vec<&str> = show
            .verify
            .json
            .iter()
            .map(|r| r.pointer.as_str())
            .collect();
        assert_eq!(pointers, ["/id", "/name"]);
        let outputs: Vec<&str> = show.outputs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(outputs, ["category", "id", "name", "tag"]);
        assert_eq!(show.output_schema["required"], json!(["id", "name"]));
        assert_eq!(
            show.output_schema["properties"]["tag"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            "outputs the site leaves out are null"
        );
        // A recursive schema is cut where it would repeat.
        assert_eq!(
            show.output_schema["properties"]["category"]["anyOf"][0]["properties"]["parent"],
            json!({})
        );
        assert!(!show.description.contains("verification only checks"));

        // POST order -> consequential order with a JSON body; security inherited -> provider.
        let order = action(&draft, "place_order");
        assert_eq!(order.family, ActionFamily::Order);
        assert!(order.consequential);
        assert_eq!(order.auth_provider.as_deref(), Some("example-com"));
        assert_eq!(order.request.path, "/api/v1/store/order");
        assert_eq!(
            order.request.body,
            Some(BodyTemplate::Json {
                value: json!({"petId": "{petId}", "quantity": "{quantity}", "note": "{note}"})
            }),
            "read-only properties are not sent"
        );
        assert_eq!(
            order.params_schema["required"],
            json!(["petId", "quantity"])
        );
        assert_eq!(
            order.params_schema["properties"]["quantity"],
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(order.verify.status, vec![201]);
        let pointers: Vec<&str> = order
            .verify
            .json
            .iter()
            .map(|r| r.pointer.as_str())
            .collect();
        assert_eq!(
            pointers,
            ["/id", "/petId", "/quantity", "/status"],
            "allOf members merged; a nullable field needs no rule"
        );
        assert_eq!(
            order.output_schema["required"],
            json!(["id", "petId", "quantity", "shipDate", "status"])
        );

        // DELETE -> consequential form_submit, status from the documented 204.
        let delete = action(&draft, "delete_pet");
        assert_eq!(delete.family, ActionFamily::FormSubmit);
        assert!(delete.consequential);
        assert_eq!(delete.auth_provider.as_deref(), Some("example-com"));
        assert_eq!(delete.request.method, HttpMethod::Delete);
        assert_eq!(delete.verify.status, vec![204]);
        assert!(
            delete
                .description
                .starts_with("Deletes a pet. The pet is gone afterwards. ")
        );
        assert_eq!(delete.outputs.len(), 1);
        assert_eq!(delete.outputs[0].source, OutputSource::Status);

        // A learned cart is consequential too, with a form body.
        let cart = action(&draft, "add_to_cart");
        assert_eq!(cart.family, ActionFamily::Cart);
        assert!(cart.consequential);
        assert_eq!(
            cart.request.body,
            Some(BodyTemplate::Form {
                fields: [
                    ("qty".to_owned(), "{qty}".to_owned()),
                    ("sku".to_owned(), "{sku}".to_owned())
                ]
                .into()
            })
        );
        assert_eq!(cart.params_schema["required"], json!(["sku"]));

        // No operationId: the name comes from the method and path; a non-object body is one param.
        let booking = action(&draft, "post_appointments");
        assert_eq!(booking.family, ActionFamily::Booking);
        assert!(booking.consequential);
        assert_eq!(
            booking.request.body,
            Some(BodyTemplate::Json {
                value: json!("{body}")
            })
        );
        assert_eq!(booking.params_schema["required"], json!(["body"]));

        // A GET whose name says it changes something is consequential.
        let unsubscribe = action(&draft, "unsubscribe_newsletter");
        assert!(unsubscribe.consequential);
        assert_eq!(unsubscribe.family, ActionFamily::FormSubmit);
        assert!(unsubscribe.description.contains("Marked consequential"));

        // Skipped, each with a reason.
        assert!(skipped_with(&draft, "POST /user/login").contains("credentials"));
        assert!(skipped_with(&draft, "PUT /users/{id}").contains("`password`"));
        assert!(
            skipped_with(&draft, "GET /feeds").contains("served from https://feeds.example.net")
        );
        assert!(skipped_with(&draft, "GET /legacy").contains("deprecated"));
        assert!(skipped_with(&draft, "HEAD /pets/{petId}").contains("HEAD is not a method"));
        assert!(skipped_with(&draft, "POST /uploads").contains("multipart/form-data"));
        assert_eq!(
            draft.document.actions.len(),
            7,
            "{:#?}",
            draft.document.actions
        );
        assert_eq!(draft.skipped.len(), 6, "{:#?}", draft.skipped);
    }

    #[test]
    fn documents_that_are_not_openapi_are_reported_not_fatal() {
        let forms = [search_form()];
        for doc in [
            json!({"swagger": "1.2"}),
            json!([1, 2]),
            json!({"openapi": 3}),
            json!("x"),
        ] {
            let draft = learn(Some(&doc), &forms).unwrap();
            assert_valid(&draft);
            assert_eq!(draft.document.actions.len(), 1);
            assert!(
                skipped_with(&draft, "OpenAPI document")
                    .contains("not an OpenAPI 3.x or Swagger 2.0")
            );
        }
        let err = learn(Some(&json!({"openapi": "3.0.0", "info": {}})), &[]).unwrap_err();
        let LearnError::NothingLearned { skipped } = err else {
            panic!()
        };
        assert_eq!(skipped, ["OpenAPI document: it has no paths"]);
    }

    #[test]
    fn security_needs_a_site_derived_provider() {
        assert_eq!(provider_id(&domain()), "example-com");
        assert_eq!(
            provider_id(&Domain::parse("www.example.co.uk").unwrap()),
            "example-co-uk"
        );
        assert_eq!(
            provider_id(&Domain::parse("example.com").unwrap()),
            "example-com"
        );
        assert_eq!(
            provider_id(&Domain::parse("booking.sandbox.test").unwrap()),
            "sandbox-test"
        );
        assert!(provider_id_ok(&provider_id(&domain())));
        assert!(needs_auth(Some(&json!([{"key": []}]))));
        assert!(needs_auth(Some(&json!([{"a": []}, {"b": []}]))));
        assert!(
            !needs_auth(Some(&json!([{"key": []}, {}]))),
            "anonymous allowed"
        );
        assert!(!needs_auth(Some(&json!([]))));
        assert!(!needs_auth(Some(&json!({"key": []}))));
        assert!(!needs_auth(None));

        // A domain too long for a provider id: the operation that needs sign-in is skipped.
        let long = Domain::parse(&format!("{}.{}.com", "a".repeat(63), "b".repeat(63))).unwrap();
        let doc = json!({"openapi": "3.0.0", "security": [{"k": []}], "paths": {
            "/a": {"get": {"operationId": "a", "responses": {}}},
            "/b": {"get": {"operationId": "b", "security": [], "responses": {}}}
        }});
        let draft = draft_map(&LearnInput {
            domain: &long,
            base_url: BASE,
            openapi: Some(&doc),
            forms: &[],
        })
        .unwrap();
        assert_eq!(draft.document.actions.len(), 1);
        assert!(skipped_with(&draft, "GET /a").contains("no valid connection provider id"));
    }
}
