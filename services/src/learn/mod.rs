//! Learning an Agent Map: drafts a *candidate* map from what a site publishes about itself, its
//! OpenAPI 3.x (or Swagger 2.0) document and the HTML forms the reader found on its pages.
//!
//! Pure: no I/O, deterministic for the same input. Nothing here makes anything runnable: the
//! draft is stored as a candidate and a person reviews and publishes it.
//!
//! The rules, in short:
//! - Only what is served from the map's own origin becomes an action.
//! - Safe reads (GET) become non-consequential actions: `search` when the path has no path
//!   parameter and the request has query parameters, `read` otherwise. Anything else changes
//!   state and is consequential: `order`, `booking`, `cart` or `form_submit`, by the words of its
//!   id, path and summary. A learned `cart` action is consequential too: nothing learned is
//!   trusted to commit nothing. A GET whose id or path says it changes something
//!   (`deleteItem`, `/unsubscribe`) is treated like a state change.
//! - Credential handling (sign-in, passwords, tokens, OAuth, one-time codes, account recovery),
//!   payment-card entry, changes of a user's sign-in details and bulk messaging are never
//!   drafted: the action catalog forbids them.
//! - An operation that declares `security` (and does not also allow anonymous calls) needs a
//!   connection: its `auth_provider` is [`provider_id`] of the domain.
//! - Every schema is made self-contained draft 2020-12: local `$ref`s are inlined (cycles,
//!   remote refs and refs this document does not hold become `{}`), the OpenAPI 3.0 dialect
//!   (`nullable`, boolean exclusive bounds, `example`) is translated and other keywords are
//!   dropped. Each action is checked like [`MapDocument::check`] and its schemas are compiled as
//!   the import does: an action that fails is dropped and the reason recorded.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};
use svc_ports::{
    ActionFamily, ActionSpec, Domain, Form, FormField, MapDocument, MapError,
    actions::{
        BodyTemplate, HttpMethod, JsonRule, MAX_ACTIONS_PER_MAP, OutputField, OutputSource,
        RequestTemplate, VerifyRules, provider_id_ok,
    },
};
use url::Url;

/// What a site publishes about itself, as the learning found it.
pub struct LearnInput<'a> {
    pub domain: &'a Domain,
    /// Origin the actions are relative to, e.g. `https://shop.example.com`.
    pub base_url: &'a str,
    /// The site's OpenAPI 3.0/3.1 (or Swagger 2.0) document, if it serves one.
    pub openapi: Option<&'a Value>,
    /// Forms found on the site's pages by the reader (absolute `action` URLs).
    pub forms: &'a [Form],
}

/// A candidate map and what was not turned into an action.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// Passes [`MapDocument::check`], and every schema compiles as draft 2020-12.
    pub document: MapDocument,
    /// One line per thing not turned into an action, and why.
    pub skipped: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    #[error("`{0}` is not an http(s) origin")]
    BadBaseUrl(String),
    #[error("nothing the site publishes could be drafted as an action{}", reasons(.skipped))]
    NothingLearned {
        /// Why each thing found was skipped.
        skipped: Vec<String>,
    },
    #[error("the learned map does not pass the map checks: {0}")]
    Invalid(#[from] MapError),
}

fn reasons(skipped: &[String]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = skipped.iter().take(3).map(String::as_str).collect();
    let more = skipped.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    format!(": {}{tail}", shown.join("; "))
}

const FORM_NOTE: &str =
    "Learned from a form: verification only checks the status; add rules before publishing.";
const OPENAPI_NOTE: &str = "Learned from the OpenAPI document, which names no required response fields: verification only checks the status; add rules before publishing.";
const MAX_DESCRIPTION: usize = 200;
/// Schema nodes one inlined schema may have: refs to refs to refs cannot blow up.
const SCHEMA_BUDGET: usize = 5_000;
const SCHEMA_DEPTH: usize = 40;
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The connection provider id of a site: its registrable domain with the dots written as
/// hyphens, `shop.example.com` -> `example-com`, `www.example.co.uk` -> `example-co-uk`.
///
/// The registrable domain is found the way the reader decides whether a link is same-site: the
/// last two labels, or the last three when the second-level label is a common generic one
/// (`co`, `com`, `org`, ...) under a two-letter country code. No public-suffix list: subdomains
/// of one site share one connection, which is what a sign-in on that site gives.
pub fn provider_id(domain: &Domain) -> String {
    let labels: Vec<&str> = domain.as_str().split('.').collect();
    let n = labels.len();
    let take = if n >= 3
        && labels[n - 1].len() == 2
        && matches!(
            labels[n - 2],
            "co" | "com" | "net" | "org" | "gov" | "ac" | "edu" | "ne" | "or"
        ) {
        3
    } else {
        2
    };
    labels[n.saturating_sub(take)..].join("-")
}

/// Drafts a candidate map from the site's OpenAPI document and forms.
pub fn draft_map(input: &LearnInput) -> Result<Draft, LearnError> {
    let base = Url::parse(input.base_url.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| LearnError::BadBaseUrl(input.base_url.to_owned()))?;
    let origin = base.origin().ascii_serialization();
    let mut learner = Learner {
        domain: input.domain,
        base,
        origin,
        names: Names::default(),
        actions: Vec::new(),
        skipped: Vec::new(),
        covered: HashMap::new(),
    };
    let mut sources = Vec::new();
    if let Some(doc) = input.openapi {
        let before = learner.actions.len();
        let title = learner.openapi(doc);
        if learner.actions.len() > before {
            sources.push(format!("the site's OpenAPI document{title}"));
        }
    }
    let before = learner.actions.len();
    learner.forms(input.forms);
    let learned = learner.actions.len() - before;
    if learned > 0 {
        let s = if learned == 1 { "" } else { "s" };
        sources.push(format!("{learned} HTML form{s}"));
    }
    if learner.actions.is_empty() {
        return Err(LearnError::NothingLearned {
            skipped: learner.skipped,
        });
    }
    let document = MapDocument {
        domain: input.domain.clone(),
        base_url: learner.origin,
        description: format!(
            "Learned from {} on {}; review before publishing.",
            sources.join(" and "),
            input.domain
        ),
        actions: learner.actions,
    };
    document.check()?;
    Ok(Draft {
        document,
        skipped: learner.skipped,
    })
}

struct Learner<'i> {
    domain: &'i Domain,
    base: Url,
    /// `base` as an origin without a trailing slash: the map's `base_url`.
    origin: String,
    names: Names,
    actions: Vec<ActionSpec>,
    skipped: Vec<String>,
    /// Method and literal path of each action learned from the OpenAPI document, so a form
    /// sent to the same endpoint is not drafted twice.
    covered: HashMap<(HttpMethod, String), String>,
}

/// An action before it is named and checked.
struct Drafted {
    base_name: String,
    spec: ActionSpec,
}

impl Learner<'_> {
    fn skip(&mut self, label: &str, why: &str) {
        self.skipped.push(format!("{label}: {why}"));
    }

    /// Names the action, checks it as the map import would, and keeps it or records why not.
    fn accept(&mut self, label: &str, drafted: Drafted, from_openapi: bool) {
        if self.actions.len() >= MAX_ACTIONS_PER_MAP {
            return self.skip(
                label,
                &format!(
                    "the map already has {MAX_ACTIONS_PER_MAP} actions, the most a map may have"
                ),
            );
        }
        let mut spec = drafted.spec;
        spec.name = self.names.claim(&drafted.base_name);
        let single = MapDocument {
            domain: self.domain.clone(),
            base_url: self.origin.clone(),
            description: String::new(),
            actions: vec![spec],
        };
        let verdict = single.check().map_err(|e| e.to_string()).and_then(|()| {
            let spec = &single.actions[0];
            compile(&spec.params_schema).map_err(|e| format!("params_schema: {e}"))?;
            compile(&spec.output_schema).map_err(|e| format!("output_schema: {e}"))
        });
        let Some(spec) = single.actions.into_iter().next() else {
            return;
        };
        match verdict {
            Ok(()) => {
                if from_openapi {
                    let literal = spec.request.path.split('?').next().unwrap_or_default();
                    if !literal.contains('{') {
                        self.covered
                            .entry((spec.request.method, literal.to_owned()))
                            .or_insert_with(|| spec.name.clone());
                    }
                }
                self.actions.push(spec);
            }
            Err(why) => {
                self.names.release(&spec.name);
                self.skip(
                    label,
                    &format!(
                        "the drafted action fails the map checks ({})",
                        one_line(&why, MAX_DESCRIPTION)
                    ),
                );
            }
        }
    }

    // ---- OpenAPI ------------------------------------------------------------------------------

    /// Learns every operation of the document; returns ` "title"` for the map's description.
    fn openapi(&mut self, doc: &Value) -> String {
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

    // ---- forms --------------------------------------------------------------------------------

    fn forms(&mut self, forms: &[Form]) {
        let mut seen = HashSet::new();
        for form in forms {
            // The same form (a header search box) is on every page: draft it once.
            let mut action = form.action.split('#').next().unwrap_or_default().to_owned();
            if form.method.eq_ignore_ascii_case("GET") {
                action = action.split('?').next().unwrap_or_default().to_owned();
            }
            let fields: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
            if !seen.insert((form.method.to_ascii_uppercase(), action, fields.join("\0"))) {
                continue;
            }
            let label = form_label(form);
            match self.form(form) {
                Ok(drafted) => self.accept(&label, drafted, false),
                Err(why) => self.skip(&label, &why),
            }
        }
    }

    fn form(&self, form: &Form) -> Result<Drafted, String> {
        let url = Url::parse(&form.action)
            .map_err(|_| format!("its action `{}` is not an absolute URL", form.action))?;
        if url.origin() != self.base.origin() {
            return Err(format!(
                "it is sent to {}, not to {}",
                url.origin().ascii_serialization(),
                self.origin
            ));
        }
        let method = match form.method.to_ascii_uppercase().as_str() {
            "GET" => HttpMethod::Get,
            "POST" => HttpMethod::Post,
            other => return Err(format!("its method {other} is neither GET nor POST")),
        };
        for f in &form.fields {
            match f.field_type.to_ascii_lowercase().as_str() {
                "password" => return Err("it asks for a password".into()),
                "file" => return Err("it uploads a file, which maps cannot send".into()),
                _ => {}
            }
            if let Some(why) = sensitive_field(&f.name) {
                return Err(format!("its field `{}` {why}", f.name));
            }
        }
        let path = url.path().to_owned();
        let mut form_words = words(&path);
        for attr in [&form.id, &form.name].into_iter().flatten() {
            form_words.extend(words(attr));
        }
        if let Some(why) = forbidden(&form_words) {
            return Err(why.into());
        }
        let has_search_field = form.fields.iter().any(|f| {
            matches!(
                f.field_type.to_ascii_lowercase().as_str(),
                "search" | "text"
            )
        });
        if looks_like_sign_in(&form.fields) && !(method.is_safe() && has_search_field) {
            return Err("it looks like a sign-in form".into());
        }
        if let Some(name) = self.covered.get(&(method, path.clone())) {
            return Err(format!(
                "the OpenAPI action `{name}` already covers {} {path}",
                method.as_str()
            ));
        }

        let mut params = Params::default();
        let mut pairs: Vec<(String, Sent)> = Vec::new();
        let mut names = HashSet::new();
        let mut shown = Vec::new();
        let mut anti_forgery = false;
        for f in &form.fields {
            if !names.insert(f.name.as_str()) {
                continue;
            }
            let kind = f.field_type.to_ascii_lowercase();
            if kind == "hidden" {
                let value = f.default_value.clone().unwrap_or_default();
                let w = words(&f.name);
                anti_forgery |= w.iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "csrf" | "xsrf" | "csrfmiddlewaretoken" | "authenticity" | "nonce"
                    )
                });
                // Sent as written, so leaving it out still sends the page's value; declared as a
                // const so passing it is harmless. A value that reads like a placeholder cannot
                // be written into a template: then the param must be passed.
                let literal = !value.contains('{');
                let key = params.add(
                    &f.name,
                    json!({"const": value, "description": "Fixed: the page's form sends this value."}),
                    !literal,
                );
                let sent = if literal {
                    Sent::Literal(value)
                } else {
                    Sent::Param(key)
                };
                pairs.push((f.name.clone(), sent));
            } else {
                let key = params.add(&f.name, field_schema(f), f.required);
                pairs.push((f.name.clone(), Sent::Param(key)));
                shown.push(
                    f.label
                        .as_deref()
                        .map(|l| one_line(l, 40))
                        .filter(|l| !l.is_empty())
                        .unwrap_or_else(|| one_line(&f.name, 40)),
                );
            }
        }
        if method.is_safe() && pairs.is_empty() {
            return Err("it has no fields to fill".into());
        }

        let (family, consequential) = if method.is_safe() {
            if changes_state(&form_words) {
                (family_by_words(&form_words), true)
            } else if has_search_field {
                (ActionFamily::Search, false)
            } else {
                (ActionFamily::Read, false)
            }
        } else {
            (family_by_words(&form_words), true)
        };

        let (request_path, body) = if method.is_safe() {
            let query: Vec<String> = pairs
                .iter()
                .map(|(name, sent)| match sent {
                    Sent::Param(key) => format!("{}={{{key}}}", encode(name)),
                    Sent::Literal(v) => format!("{}={}", encode(name), encode(v)),
                })
                .collect();
            (format!("{path}?{}", query.join("&")), None)
        } else {
            let mut p = path.clone();
            if let Some(q) = url.query() {
                p.push('?');
                p.push_str(q);
            }
            let fields = pairs
                .into_iter()
                .map(|(name, sent)| match sent {
                    Sent::Param(key) => (name, format!("{{{key}}}")),
                    Sent::Literal(v) => (name, v),
                })
                .collect();
            (p, Some(BodyTemplate::Form { fields }))
        };

        let path_words = words(&path);
        let base_name = [&form.id, &form.name]
            .into_iter()
            .flatten()
            .find_map(|n| snake_name(n))
            .unwrap_or_else(|| {
                let joined = path_words.join("_");
                match (
                    consequential,
                    family,
                    path_words.first().map(String::as_str),
                ) {
                    (false, _, Some("search" | "find" | "query" | "lookup")) => joined,
                    (false, ActionFamily::Search, _) if joined.is_empty() => "search".into(),
                    (false, ActionFamily::Search, _) => format!("search_{joined}"),
                    (false, _, _) if joined.is_empty() => "read_page".into(),
                    (false, _, _) => format!("read_{joined}"),
                    (true, _, _) if joined.is_empty() => "submit_form".into(),
                    (true, _, _) => format!("submit_{joined}"),
                }
            });
        let base_name = snake_name(&base_name).unwrap_or_else(|| "form".into());

        let what = match (consequential, family) {
            (false, ActionFamily::Search) => "Search with the form at",
            (false, _) => "Read a page through the form at",
            (true, _) => "Submit the form at",
        };
        let fields = if shown.is_empty() {
            String::new()
        } else {
            let more = if shown.len() > 6 { ", ..." } else { "" };
            let shown: Vec<&str> = shown.iter().take(6).map(String::as_str).collect();
            format!(" (fields: {}{more})", shown.join(", "))
        };
        let mut description = format!("{what} {}{fields}. {FORM_NOTE}", one_line(&path, 120));
        if !method.is_safe() && form.enctype != "application/x-www-form-urlencoded" {
            description.push_str(&format!(
                " The page sends it as {}; this action sends it URL-encoded.",
                one_line(&form.enctype, 60)
            ));
        }
        if anti_forgery {
            description.push_str(
                " It carries an anti-forgery token copied from one page view, which the site will likely reject later.",
            );
        }
        Ok(Drafted {
            base_name,
            spec: ActionSpec {
                name: String::new(),
                description,
                family,
                params_schema: params.schema(),
                auth_provider: None,
                consequential,
                scopes: Vec::new(),
                cost: 1,
                request: RequestTemplate {
                    method,
                    path: request_path,
                    headers: BTreeMap::new(),
                    body,
                },
                verify: VerifyRules {
                    status: vec![200],
                    json: Vec::new(),
                    css: Vec::new(),
                },
                outputs: vec![OutputField {
                    name: "http_status".into(),
                    source: OutputSource::Status,
                }],
                output_schema: json!({"type": "object", "properties": {"http_status": {"type": "integer"}}}),
                payment: None,
            },
        })
    }
}

/// How a form field's value goes into the request.
enum Sent {
    Param(String),
    Literal(String),
}

fn form_label(form: &Form) -> String {
    let tag = [&form.id, &form.name]
        .into_iter()
        .flatten()
        .find(|n| !n.trim().is_empty())
        .map(|n| format!(" `{}`", one_line(n, 40)))
        .unwrap_or_default();
    format!(
        "form{tag} ({} {})",
        one_line(&form.method, 10),
        one_line(&form.action, 120)
    )
}

fn field_schema(f: &FormField) -> Value {
    let kind = f.field_type.to_ascii_lowercase();
    let mut s = match kind.as_str() {
        "select" => {
            let mut values: Vec<Value> = Vec::new();
            for o in &f.options {
                let v = Value::String(o.value.clone());
                let placeholder = f.required && o.value.is_empty();
                if !placeholder && !values.contains(&v) {
                    values.push(v);
                }
            }
            if values.is_empty() {
                json!({"type": "string"})
            } else {
                json!({"type": "string", "enum": values})
            }
        }
        "email" => json!({"type": "string", "format": "email"}),
        "url" => json!({"type": "string", "format": "uri"}),
        "date" => json!({"type": "string", "format": "date"}),
        "number" | "range" => json!({"type": "number"}),
        "checkbox" => {
            let on = f.default_value.clone().unwrap_or_else(|| "on".into());
            json!({
                "type": "string",
                "enum": [on, ""],
                "description": format!("`{on}` ticks the box, an empty string leaves it unticked."),
            })
        }
        _ => json!({"type": "string"}),
    };
    if f.required
        && matches!(
            kind.as_str(),
            "text" | "search" | "textarea" | "email" | "url" | "tel" | "radio"
        )
    {
        s["minLength"] = json!(1);
    }
    if let Some(label) = f.label.as_deref().map(|l| one_line(l, MAX_DESCRIPTION))
        && !label.is_empty()
    {
        let text = match s.get("description").and_then(Value::as_str) {
            Some(d) => format!("{label}. {d}"),
            None => label,
        };
        s["description"] = Value::String(text);
    }
    s
}

/// A POST form that asks who the user is and nothing else a site would search by.
fn looks_like_sign_in(fields: &[FormField]) -> bool {
    fields.iter().any(|f| {
        let w = words(&f.name);
        w.iter()
            .any(|w| matches!(w.as_str(), "username" | "login" | "userid" | "signin"))
            || w.windows(2).any(|p| p[0] == "remember" && p[1] == "me")
            || w.windows(2).any(|p| p[0] == "user" && p[1] == "name")
    })
}

// ---- OpenAPI documents ---------------------------------------------------------------------------

struct Api<'a> {
    root: &'a Value,
    v2: bool,
}

impl<'a> Api<'a> {
    /// Follows local `$ref`s of a non-schema object (parameter, body, response, path item).
    fn deref(&self, v: &'a Value) -> Option<&'a Value> {
        let mut cur = v;
        for _ in 0..8 {
            match cur.get("$ref") {
                Some(Value::String(r)) => cur = local_target(self.root, r)?,
                _ => return Some(cur),
            }
        }
        None
    }

    fn inline(&self, schema: &Value) -> Value {
        Inliner {
            root: self.root,
            budget: SCHEMA_BUDGET,
            stack: Vec::new(),
        }
        .schema(schema, 0)
    }

    /// The path prefix of the first server on the map's origin.
    fn prefix(
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
    fn param_schema(&self, p: &Map<String, Value>) -> Value {
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
    fn v2_json(&self, op: &Map<String, Value>, key: &str) -> bool {
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
    fn success(&self, op: &'a Map<String, Value>) -> (Vec<u16>, Option<&'a Value>) {
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
    fn response_schema(&self, op: &Map<String, Value>, response: &'a Value) -> Option<&'a Value> {
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

/// Verification rules, outputs and output schema from a success response's schema.
fn outputs_for(schema: Option<Value>) -> (Vec<JsonRule>, Vec<OutputField>, Value) {
    let status_only = || {
        (
            Vec::new(),
            vec![OutputField {
                name: "http_status".into(),
                source: OutputSource::Status,
            }],
            json!({"type": "object", "properties": {"http_status": {"type": "integer"}}}),
        )
    };
    let Some(schema) = schema else {
        return status_only();
    };
    match shape(&schema, 0) {
        Some(shape) => {
            let mut rules = Vec::new();
            let mut outputs = Vec::new();
            let mut properties = Map::new();
            for (name, s) in shape.props {
                let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
                let required = shape.required.contains(&name);
                if required && !explicitly_nullable(&s) {
                    rules.push(JsonRule {
                        pointer: pointer.clone(),
                        equals: None,
                    });
                }
                outputs.push(OutputField {
                    name: name.clone(),
                    source: OutputSource::Json { pointer },
                });
                // Outputs the site leaves out are null in the result.
                properties.insert(name, if required { s } else { or_null(s) });
            }
            let mut out = json!({"type": "object", "properties": properties});
            let required: Vec<&String> = shape
                .required
                .iter()
                .filter(|r| out["properties"].get(r.as_str()).is_some())
                .collect();
            if !required.is_empty() {
                out["required"] = json!(required);
            }
            if let Some(d) = schema.get("description").filter(|d| d.is_string()) {
                out["description"] = d.clone();
            }
            (rules, outputs, out)
        }
        None => {
            let substantive = schema.as_object().is_some_and(|o| {
                ["type", "items", "anyOf", "oneOf", "allOf", "enum", "const"]
                    .iter()
                    .any(|k| o.contains_key(*k))
            });
            if !substantive {
                return status_only();
            }
            let name = if schema.get("type").and_then(Value::as_str) == Some("array") {
                "items"
            } else {
                "body"
            };
            (
                Vec::new(),
                vec![OutputField {
                    name: name.into(),
                    source: OutputSource::Json {
                        pointer: String::new(),
                    },
                }],
                json!({"type": "object", "required": [name], "properties": {name: schema}}),
            )
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

fn is_json(media: &str) -> bool {
    let m = media.trim().to_ascii_lowercase();
    m.starts_with("application/json") || m.contains("+json") || m == "*/*"
}

fn local_target<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
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

// ---- schemas ---------------------------------------------------------------------------------------

/// Makes a schema self-contained draft 2020-12: local refs inlined, OpenAPI 3.0 dialect
/// translated, unknown keywords (and ill-formed known ones) dropped.
struct Inliner<'a> {
    root: &'a Value,
    budget: usize,
    /// Refs being inlined: a ref to one of them is a cycle and becomes `{}`.
    stack: Vec<String>,
}

const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const STRING_KEYWORDS: &[&str] = &[
    "format",
    "title",
    "description",
    "pattern",
    "contentEncoding",
    "contentMediaType",
];
const COUNT_KEYWORDS: &[&str] = &[
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "maxContains",
    "minContains",
];
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

impl Inliner<'_> {
    fn schema(&mut self, v: &Value, depth: usize) -> Value {
        if depth > SCHEMA_DEPTH || self.budget == 0 {
            return json!({});
        }
        self.budget -= 1;
        let obj = match v {
            Value::Bool(b) => return Value::Bool(*b),
            Value::Object(o) => o,
            _ => return json!({}),
        };
        let Some(Value::String(reference)) = obj.get("$ref") else {
            return Value::Object(self.keywords(obj, depth));
        };
        let root = self.root;
        let mut resolved = match local_target(root, reference) {
            Some(target) if !self.stack.contains(reference) => {
                self.stack.push(reference.clone());
                let s = self.schema(target, depth + 1);
                self.stack.pop();
                s
            }
            _ => json!({}),
        };
        let siblings: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| k.as_str() != "$ref")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !siblings.is_empty() {
            let extra = self.keywords(&siblings, depth);
            match &mut resolved {
                Value::Object(o) => o.extend(extra),
                Value::Bool(true) => resolved = Value::Object(extra),
                _ => {}
            }
        }
        resolved
    }

    fn keywords(&mut self, obj: &Map<String, Value>, depth: usize) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in obj {
            let key = k.as_str();
            if key == "items" {
                match v {
                    Value::Array(list) if !list.is_empty() => {
                        let list = list.iter().map(|s| self.schema(s, depth + 1)).collect();
                        out.insert("prefixItems".into(), Value::Array(list));
                    }
                    Value::Array(_) => {}
                    other => {
                        out.insert("items".into(), self.schema(other, depth + 1));
                    }
                }
            } else if SCHEMA_KEYWORDS.contains(&key) {
                out.insert(k.clone(), self.schema(v, depth + 1));
            } else if SCHEMA_MAPS.contains(&key) {
                if let Value::Object(m) = v {
                    let m = m
                        .iter()
                        .map(|(name, s)| (name.clone(), self.schema(s, depth + 1)))
                        .collect();
                    out.insert(k.clone(), Value::Object(m));
                }
            } else if SCHEMA_LISTS.contains(&key) {
                if let Value::Array(list) = v
                    && !list.is_empty()
                    && !out.contains_key(key)
                {
                    let list = list.iter().map(|s| self.schema(s, depth + 1)).collect();
                    out.insert(k.clone(), Value::Array(list));
                }
            } else if STRING_KEYWORDS.contains(&key) {
                if v.is_string() {
                    out.insert(k.clone(), v.clone());
                }
            } else if COUNT_KEYWORDS.contains(&key) {
                if v.as_u64().is_some() {
                    out.insert(k.clone(), v.clone());
                }
            } else {
                let keep = match key {
                    "enum" => v.as_array().is_some_and(|a| !a.is_empty()),
                    "const" | "default" => true,
                    "examples" => v.is_array(),
                    "readOnly" | "writeOnly" | "deprecated" | "uniqueItems" => v.is_boolean(),
                    "multipleOf" => v.as_f64().is_some_and(|n| n > 0.0),
                    "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => {
                        v.is_number()
                    }
                    _ => false,
                };
                if keep {
                    out.insert(k.clone(), v.clone());
                    continue;
                }
                match key {
                    "type" => {
                        if let Some(t) = schema_type(v) {
                            out.insert(k.clone(), t);
                        }
                    }
                    "example" if !obj.contains_key("examples") => {
                        out.insert("examples".into(), json!([v]));
                    }
                    "required" => {
                        if let Value::Array(list) = v {
                            let mut names: Vec<Value> = Vec::new();
                            for name in list.iter().filter(|n| n.is_string()) {
                                if !names.contains(name) {
                                    names.push(name.clone());
                                }
                            }
                            out.insert(k.clone(), Value::Array(names));
                        }
                    }
                    "dependentRequired" => {
                        if let Value::Object(m) = v {
                            let m: Map<String, Value> = m
                                .iter()
                                .filter_map(|(name, list)| {
                                    let mut names: Vec<Value> = Vec::new();
                                    for n in list.as_array()?.iter().filter(|n| n.is_string()) {
                                        if !names.contains(n) {
                                            names.push(n.clone());
                                        }
                                    }
                                    Some((name.clone(), Value::Array(names)))
                                })
                                .collect();
                            out.insert(k.clone(), Value::Object(m));
                        }
                    }
                    _ => {}
                }
            }
        }
        // OpenAPI 3.0: boolean exclusive bounds qualify `minimum` / `maximum`.
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if obj.get(exclusive) == Some(&Value::Bool(true))
                && let Some(b) = out.remove(bound)
            {
                out.insert(exclusive.into(), b);
            }
        }
        // OpenAPI 3.0: `nullable: true` allows null.
        if obj.get("nullable") == Some(&Value::Bool(true)) {
            match out.get_mut("type") {
                Some(Value::String(t)) if t != "null" => {
                    let t = t.clone();
                    out.insert("type".into(), json!([t, "null"]));
                }
                Some(Value::Array(list)) if !list.iter().any(|t| t == "null") => {
                    list.push(json!("null"));
                }
                _ => {}
            }
            if let Some(Value::Array(values)) = out.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        out
    }
}

fn schema_type(v: &Value) -> Option<Value> {
    match v {
        Value::String(t) if TYPES.contains(&t.as_str()) => Some(v.clone()),
        Value::Array(list) => {
            let mut types: Vec<Value> = Vec::new();
            for t in list {
                if t.as_str().is_some_and(|t| TYPES.contains(&t)) && !types.contains(t) {
                    types.push(t.clone());
                }
            }
            (!types.is_empty()).then_some(Value::Array(types))
        }
        _ => None,
    }
}

/// The top-level properties of an (inlined) object schema, `allOf` members merged.
struct Shape {
    props: Vec<(String, Value)>,
    required: Vec<String>,
}

fn shape(schema: &Value, depth: usize) -> Option<Shape> {
    let obj = schema.as_object()?;
    let object_type = match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(list)) => list.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !object_type {
        return None;
    }
    let mut props: Vec<(String, Value)> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    if let Some(Value::Object(p)) = obj.get("properties") {
        props.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(Value::Array(r)) = obj.get("required") {
        required.extend(r.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if depth < 8
        && let Some(Value::Array(members)) = obj.get("allOf")
    {
        for member in members {
            if let Some(s) = shape(member, depth + 1) {
                for (k, v) in s.props {
                    if !props.iter().any(|(p, _)| *p == k) {
                        props.push((k, v));
                    }
                }
                required.extend(s.required);
            }
        }
    }
    if props.is_empty() {
        return None;
    }
    required.retain(|r| props.iter().any(|(p, _)| p == r));
    required.sort();
    required.dedup();
    Some(Shape { props, required })
}

/// Whether a schema says null is a value it expects (not merely one it does not exclude).
fn explicitly_nullable(s: &Value) -> bool {
    let Some(o) = s.as_object() else {
        return false;
    };
    let typed_null = match o.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(list)) => list.iter().any(|t| t == "null"),
        _ => false,
    };
    typed_null
        || o.get("const") == Some(&Value::Null)
        || o.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || ["anyOf", "oneOf"].iter().any(|k| {
            o.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|list| list.iter().any(explicitly_nullable))
        })
}

fn or_null(s: Value) -> Value {
    let anything = s == Value::Bool(true) || s.as_object().is_some_and(Map::is_empty);
    if anything || explicitly_nullable(&s) {
        s
    } else {
        json!({"anyOf": [s, {"type": "null"}]})
    }
}

fn compile(schema: &Value) -> Result<(), String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

// ---- params ------------------------------------------------------------------------------------------

/// An action's params: each gets a key a template placeholder can name (`[A-Za-z0-9_]+`).
#[derive(Default)]
struct Params {
    props: Map<String, Value>,
    required: Vec<String>,
}

impl Params {
    /// Declares a param for `wanted` (a parameter, property or field name) and returns its key:
    /// the name itself when a placeholder can name it, else its words joined by `_`; `_2`,
    /// `_3`, ... when taken.
    fn add(&mut self, wanted: &str, schema: Value, required: bool) -> String {
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

    fn schema(&self) -> Value {
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

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

// ---- names and words -------------------------------------------------------------------------------

/// Action names in use in the draft.
#[derive(Default)]
struct Names(HashSet<String>);

impl Names {
    /// `base` if free, else `base_2`, `base_3`, ... (each at most 64 characters).
    fn claim(&mut self, base: &str) -> String {
        let base = fit(base, 64);
        if self.0.insert(base.clone()) {
            return base;
        }
        let mut n = 2u32;
        loop {
            let suffix = format!("_{n}");
            let candidate = format!("{}{suffix}", fit(&base, 64 - suffix.len()));
            if self.0.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }

    fn release(&mut self, name: &str) {
        self.0.remove(name);
    }
}

/// At most `max` bytes of an ASCII name, without a trailing `_`.
fn fit(name: &str, max: usize) -> String {
    let mut end = name.len().min(max);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].trim_end_matches('_').to_owned()
}

/// An action name from an identifier: `getPetByID` -> `get_pet_by_id`; `[a-z][a-z0-9_]*`, at
/// most 64 characters; `None` when it has no letters or digits.
fn snake_name(s: &str) -> Option<String> {
    let w = words(s);
    if w.is_empty() {
        return None;
    }
    let mut name = w.join("_");
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert_str(0, "op_");
    }
    Some(fit(&name, 64))
}

/// `{method}_{path words}`: `GET /pets/{petId}` -> `get_pets_by_pet_id`.
fn fallback_name(method: &str, path: &str) -> String {
    let mut w = vec![method.to_ascii_lowercase()];
    for part in path_parts(path) {
        match part {
            Part::Lit(text) => w.extend(words(&text)),
            Part::Var(name) => {
                w.push("by".into());
                w.extend(words(&name));
            }
        }
    }
    if w.len() == 1 {
        w.push("root".into());
    }
    snake_name(&w.join("_")).unwrap_or_else(|| method.to_ascii_lowercase())
}

/// Lower-case ASCII words of an identifier, path or phrase, split at anything not a letter or
/// digit and at camel-case humps: `getHTTPServer2Id` -> `get`, `http`, `server2`, `id`.
fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if !cur.is_empty() && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

enum Part {
    Lit(String),
    Var(String),
}

/// A path template's literal text and `{name}` placeholders.
fn path_parts(path: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if end > 0 && !after[..end].contains('{') => {
                if start > 0 {
                    parts.push(Part::Lit(rest[..start].to_owned()));
                }
                parts.push(Part::Var(after[..end].to_owned()));
                rest = &after[end + 1..];
            }
            _ => {
                parts.push(Part::Lit(rest[..=start].to_owned()));
                rest = after;
            }
        }
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_owned()));
    }
    parts
}

// ---- safety ------------------------------------------------------------------------------------------

const CREDENTIAL_WORDS: &[&str] = &[
    "login",
    "logins",
    "logon",
    "logout",
    "signin",
    "signon",
    "signout",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "passcode",
    "passkey",
    "passkeys",
    "webauthn",
    "token",
    "tokens",
    "oauth",
    "oauth2",
    "openid",
    "saml",
    "sso",
    "2fa",
    "mfa",
    "otp",
    "totp",
    "hotp",
    "recover",
    "recovery",
    "reset",
    "credential",
    "credentials",
    "authenticate",
    "authentication",
    "authorize",
    "authorization",
    "auth",
    "apikey",
    "apikeys",
    "secret",
    "secrets",
];
const ORDER_WORDS: &[&str] = &[
    "order",
    "orders",
    "checkout",
    "purchase",
    "purchases",
    "buy",
    "pay",
    "payment",
    "payments",
];
const BOOKING_WORDS: &[&str] = &[
    "book",
    "booking",
    "bookings",
    "reserve",
    "reservation",
    "reservations",
    "appointment",
    "appointments",
];
const CART_WORDS: &[&str] = &["cart", "carts", "basket", "baskets"];
/// Verbs that make a GET suspect of changing something.
const STATE_VERBS: &[&str] = &[
    "delete",
    "remove",
    "cancel",
    "create",
    "add",
    "update",
    "edit",
    "set",
    "send",
    "submit",
    "subscribe",
    "unsubscribe",
    "confirm",
    "approve",
    "reject",
    "checkout",
    "buy",
    "purchase",
    "pay",
    "book",
    "reserve",
    "vote",
    "like",
    "unlike",
    "follow",
    "unfollow",
    "register",
    "publish",
    "archive",
    "destroy",
];

fn has(words: &[String], list: &[&str]) -> bool {
    words.iter().any(|w| list.contains(&w.as_str()))
}

fn pair(words: &[String], a: &str, b: &str) -> bool {
    words.windows(2).any(|p| p[0] == a && p[1] == b)
}

/// Why the words of an operation (its id and path) or a form (its action path, id and name)
/// show a kind of action the catalog forbids.
fn forbidden(w: &[String]) -> Option<&'static str> {
    let credentials = has(w, CREDENTIAL_WORDS)
        || [
            ("log", "in"),
            ("log", "on"),
            ("log", "out"),
            ("sign", "in"),
            ("sign", "on"),
        ]
        .iter()
        .chain(&[
            ("sign", "out"),
            ("api", "key"),
            ("api", "keys"),
            ("one", "time"),
        ])
        .any(|(a, b)| pair(w, a, b));
    if credentials {
        return Some(
            "it handles credentials (sign-in, passwords, tokens, one-time codes or account recovery), which the action catalog forbids",
        );
    }
    let card = has(w, &["cvc", "cvv", "cvv2", "cardnumber"])
        || (has(w, &["card", "cards"])
            && has(
                w,
                &[
                    "payment", "payments", "credit", "debit", "billing", "pay", "wallet",
                ],
            ))
        || (has(w, &["payment", "payments"])
            && has(
                w,
                &[
                    "method",
                    "methods",
                    "instrument",
                    "instruments",
                    "source",
                    "sources",
                ],
            ));
    if card {
        return Some("it takes payment-card details, which the action catalog forbids");
    }
    let bulk = has(w, &["broadcast", "broadcasts"])
        || (has(w, &["bulk", "mass", "batch", "blast"])
            && has(
                w,
                &[
                    "message",
                    "messages",
                    "email",
                    "emails",
                    "mail",
                    "sms",
                    "notification",
                    "notifications",
                    "send",
                ],
            ));
    if bulk {
        return Some("it sends messages in bulk, which the action catalog forbids");
    }
    None
}

/// A state change on a user's own sign-in details (`PUT /users/{id}/email`).
fn changes_sign_in_details(w: &[String]) -> bool {
    has(
        w,
        &["user", "users", "account", "accounts", "me", "profile"],
    ) && has(w, &["email", "phone", "username"])
}

/// Why a parameter, body property or form field name shows a value the catalog forbids agents
/// to send: passwords, one-time codes, credentials, card numbers.
fn sensitive_field(name: &str) -> Option<&'static str> {
    let w = words(name);
    let secret = has(
        &w,
        &[
            "password",
            "passwd",
            "passphrase",
            "passcode",
            "pwd",
            "otp",
            "totp",
            "hotp",
            "2fa",
            "mfa",
            "secret",
            "apikey",
            "jwt",
            "bearer",
        ],
    ) || pair(&w, "api", "key")
        || pair(&w, "one", "time")
        || (has(&w, &["token"])
            && has(
                &w,
                &[
                    "access", "refresh", "id", "auth", "session", "api", "bearer",
                ],
            ))
        || (has(&w, &["code"])
            && has(
                &w,
                &[
                    "verification",
                    "verify",
                    "security",
                    "auth",
                    "sms",
                    "login",
                    "mfa",
                ],
            ));
    if secret {
        return Some("asks for a password, a one-time code or another credential");
    }
    let card = has(
        &w,
        &[
            "cvc",
            "cvv",
            "cvv2",
            "csc",
            "cardnumber",
            "ccnumber",
            "ccnum",
        ],
    ) || (has(&w, &["card", "cc"])
        && has(
            &w,
            &[
                "number",
                "num",
                "no",
                "exp",
                "expiry",
                "expiration",
                "cvc",
                "code",
            ],
        ));
    if card {
        return Some("asks for payment-card details");
    }
    None
}

/// The first sensitive property name anywhere in a (body) schema.
fn sensitive_nested(schema: &Value, depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    let obj = schema.as_object()?;
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (name, s) in props {
            if let Some(why) = sensitive_field(name) {
                return Some(format!("its body field `{name}` {why}"));
            }
            if let Some(why) = sensitive_nested(s, depth + 1) {
                return Some(why);
            }
        }
    }
    for key in ["items", "allOf", "anyOf", "oneOf"] {
        match obj.get(key) {
            Some(Value::Array(list)) => {
                if let Some(why) = list.iter().find_map(|s| sensitive_nested(s, depth + 1)) {
                    return Some(why);
                }
            }
            Some(s) => {
                if let Some(why) = sensitive_nested(s, depth + 1) {
                    return Some(why);
                }
            }
            None => {}
        }
    }
    None
}

fn changes_state(ident: &[String]) -> bool {
    has(ident, STATE_VERBS)
}

fn family_by_words(w: &[String]) -> ActionFamily {
    if has(w, ORDER_WORDS) {
        ActionFamily::Order
    } else if has(w, BOOKING_WORDS) {
        ActionFamily::Booking
    } else if has(w, CART_WORDS) {
        ActionFamily::Cart
    } else {
        ActionFamily::FormSubmit
    }
}

/// Family, whether consequential, and whether it is a GET taken for a state change.
fn classify(
    method: HttpMethod,
    lookup: bool,
    ident: &[String],
    all: &[String],
) -> (ActionFamily, bool, bool) {
    if method.is_safe() {
        if changes_state(ident) {
            return (family_by_words(all), true, true);
        }
        let family = if lookup {
            ActionFamily::Search
        } else {
            ActionFamily::Read
        };
        return (family, false, false);
    }
    // Learned state changes are always consequential, carts included.
    (family_by_words(all), true, false)
}

/// One trimmed line of at most `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::FieldOption;

    const BASE: &str = "https://shop.example.com";

    fn domain() -> Domain {
        Domain::parse("shop.example.com").unwrap()
    }

    fn learn(openapi: Option<&Value>, forms: &[Form]) -> Result<Draft, LearnError> {
        let d = domain();
        draft_map(&LearnInput {
            domain: &d,
            base_url: BASE,
            openapi,
            forms,
        })
    }

    /// What every draft must satisfy: the map checks, and schemas the import compiles.
    fn assert_valid(draft: &Draft) {
        draft
            .document
            .check()
            .expect("learned maps pass MapDocument::check");
        assert_eq!(draft.document.base_url, BASE);
        for a in &draft.document.actions {
            compile(&a.params_schema).unwrap_or_else(|e| panic!("{}: params: {e}", a.name));
            compile(&a.output_schema).unwrap_or_else(|e| panic!("{}: output: {e}", a.name));
            assert!(a.family.allowed());
            if !a.request.method.is_safe() {
                assert!(a.consequential, "{} changes state", a.name);
            }
        }
        // A draft round-trips through the map file format.
        let text = serde_json::to_string(&draft.document).unwrap();
        let back: MapDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(back, draft.document);
    }

    fn action<'d>(draft: &'d Draft, name: &str) -> &'d ActionSpec {
        draft.document.action(name).unwrap_or_else(|| {
            let names: Vec<&str> = draft
                .document
                .actions
                .iter()
                .map(|a| a.name.as_str())
                .collect();
            panic!(
                "no action `{name}` in {names:?}; skipped: {:#?}",
                draft.skipped
            )
        })
    }

    fn skipped_with<'d>(draft: &'d Draft, needle: &str) -> &'d str {
        draft
            .skipped
            .iter()
            .find(|s| s.contains(needle))
            .unwrap_or_else(|| panic!("nothing skipped with `{needle}`: {:#?}", draft.skipped))
    }

    fn petstore() -> Value {
        json!({
            "openapi": "3.1.0",
            "info": {"title": "Petstore", "version": "1.0.0"},
            "servers": [{"url": "https://shop.example.com/api/v1"}, {"url": "https://mirror.example.net/v1"}],
            "security": [{"key": []}],
            "components": {
                "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
                "schemas": {
                    "Pet": {
                        "type": "object",
                        "required": ["id", "name"],
                        "properties": {
                            "id": {"type": "integer"},
                            "name": {"type": "string"},
                            "tag": {"type": "string"},
                            "category": {"$ref": "#/components/schemas/Category"}
                        }
                    },
                    "Category": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer"},
                            "name": {"type": "string"},
                            "parent": {"$ref": "#/components/schemas/Category"}
                        }
                    },
                    "Pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
                    "NewOrder": {
                        "type": "object",
                        "required": ["petId", "quantity"],
                        "properties": {
                            "petId": {"type": "integer"},
                            "quantity": {"type": "integer", "minimum": 1},
                            "note": {"type": "string"},
                            "id": {"type": "string", "readOnly": true}
                        }
                    },
                    "Order": {
                        "allOf": [
                            {"$ref": "#/components/schemas/NewOrder"},
                            {
                                "type": "object",
                                "required": ["id", "status", "shipDate"],
                                "properties": {
                                    "id": {"type": "string"},
                                    "status": {"type": "string", "enum": ["placed", "approved"]},
                                    "shipDate": {"type": ["string", "null"]}
                                }
                            }
                        ]
                    }
                },
                "parameters": {
                    "Limit": {"name": "limit", "in": "query", "description": "How many  at most.", "schema": {"type": "integer", "maximum": 100}}
                },
                "requestBodies": {
                    "NewOrder": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewOrder"}}}}
                }
            },
            "paths": {
                "/pets": {
                    "get": {
                        "operationId": "listPets",
                        "summary": "List all pets",
                        "security": [],
                        "parameters": [
                            {"$ref": "#/components/parameters/Limit"},
                            {"name": "tag", "in": "query", "required": true, "schema": {"type": "string"}},
                            {"name": "X-Request-ID", "in": "header", "schema": {"type": "string"}},
                            {"name": "Accept", "in": "header", "schema": {"type": "string"}}
                        ],
                        "responses": {
                            "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pets"}}}},
                            "default": {"description": "error"}
                        }
                    }
                },
                "/pets/{petId}": {
                    "parameters": [{"name": "petId", "in": "path", "required": true, "description": "The pet's id.", "schema": {"type": "integer"}}],
                    "get": {
                        "operationId": "showPetById",
                        "summary": "Info for a specific pet",
                        "security": [{}],
                        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
                    },
                    "delete": {
                        "operationId": "deletePet",
                        "description": "Deletes a pet.\n\nThe pet is gone afterwards.",
                        "responses": {"204": {"description": "deleted"}}
                    },
                    "head": {"operationId": "petExists", "responses": {"200": {"description": "ok"}}}
                },
                "/store/order": {
                    "post": {
                        "operationId": "placeOrder",
                        "summary": "Place an order for a pet",
                        "requestBody": {"$ref": "#/components/requestBodies/NewOrder"},
                        "responses": {
                            "201": {"description": "placed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}}},
                            "400": {"description": "bad"}
                        }
                    }
                },
                "/user/login": {
                    "post": {
                        "operationId": "loginUser",
                        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"username": {"type": "string"}}}}}},
                        "responses": {"200": {"description": "ok"}}
                    }
                },
                "/users/{id}": {
                    "put": {
                        "operationId": "updateUser",
                        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}, "password": {"type": "string"}}}}}},
                        "responses": {"200": {"description": "ok"}}
                    }
                },
                "/feeds": {
                    "get": {
                        "operationId": "listFeeds",
                        "servers": [{"url": "https://feeds.example.net"}],
                        "responses": {"200": {"description": "ok"}}
                    }
                },
                "/legacy": {"get": {"operationId": "legacy", "deprecated": true, "responses": {}}},
                "/cart/items": {
                    "post": {
                        "operationId": "addToCart",
                        "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}}}},
                        "responses": {"200": {"description": "ok"}}
                    }
                },
                "/appointments": {
                    "post": {
                        "summary": "Reserve a grooming slot",
                        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "array", "items": {"type": "string"}}}}},
                        "responses": {"201": {"description": "ok"}}
                    }
                },
                "/uploads": {
                    "post": {
                        "operationId": "uploadPhoto",
                        "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {"type": "object"}}}},
                        "responses": {"200": {"description": "ok"}}
                    }
                },
                "/newsletter/unsubscribe": {
                    "get": {
                        "operationId": "unsubscribeNewsletter",
                        "parameters": [{"name": "email", "in": "query", "required": true, "schema": {"type": "string", "format": "email"}}],
                        "responses": {"200": {"description": "ok"}}
                    }
                }
            }
        })
    }

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
    fn openapi_3_0_dialect_becomes_draft_2020_12() {
        let doc = json!({
            "openapi": "3.0.3",
            "paths": {
                "/items/{item-id}": {
                    "patch": {
                        "operationId": "update item (v2)",
                        "parameters": [{"name": "item-id", "in": "path", "required": true, "schema": {"type": "string"}}],
                        "requestBody": {"content": {"application/merge-patch+json": {"schema": {
                            "type": "object",
                            "x-internal": true,
                            "properties": {
                                "price": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "nullable": true, "example": 3.5},
                                "kind": {"type": "string", "enum": ["a", "b"], "nullable": true},
                                "photo": {"type": "file"},
                                "remote": {"$ref": "https://schemas.example.org/x.json"},
                                "missing": {"$ref": "#/components/schemas/Nope", "description": "Gone."},
                                "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                                "item-id": {"type": "string"}
                            },
                            "required": ["price", "price", 7],
                            "discriminator": {"propertyName": "kind"}
                        }}}},
                        "responses": {"2XX": {"description": "ok"}}
                    }
                }
            }
        });
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let a = action(&draft, "update_item_v2");
        assert_eq!(a.request.method, HttpMethod::Patch);
        assert_eq!(a.request.path, "/items/{item_id}");
        assert_eq!(a.verify.status, vec![200, 201, 202, 204]);
        let props = &a.params_schema["properties"];
        assert_eq!(
            props["price"],
            json!({"type": ["number", "null"], "exclusiveMinimum": 0, "examples": [3.5]})
        );
        assert_eq!(
            props["kind"],
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
        assert_eq!(props["photo"], json!({}));
        assert_eq!(props["remote"], json!({}));
        assert_eq!(props["missing"], json!({"description": "Gone."}));
        assert_eq!(
            props["tuple"],
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(
            props["item_id_2"],
            json!({"type": "string"}),
            "a body field named like a path param"
        );
        assert_eq!(
            a.params_schema["required"],
            json!(["item_id"]),
            "the body is optional"
        );
        assert_eq!(
            a.request.body,
            Some(BodyTemplate::Json {
                value: json!({"price": "{price}", "kind": "{kind}", "photo": "{photo}", "remote": "{remote}", "missing": "{missing}", "tuple": "{tuple}", "item-id": "{item_id_2}"})
            })
        );
    }

    #[test]
    fn schemas_that_do_not_compile_drop_the_action_with_a_reason() {
        let doc = json!({
            "openapi": "3.1.0",
            "paths": {
                "/a": {"get": {"operationId": "bad", "parameters": [{"name": "q", "in": "query", "schema": {"type": "string", "pattern": "(["}}], "responses": {}}},
                "/b": {"get": {"operationId": "good", "responses": {}}}
            }
        });
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        assert_eq!(draft.document.actions.len(), 1);
        assert!(skipped_with(&draft, "GET /a").contains("params_schema"));
        // The dropped action's name is free again.
        assert!(draft.document.action("good").is_some());
    }

    #[test]
    fn cyclic_and_exploding_refs_are_bounded() {
        let mut schemas = Map::new();
        schemas.insert("Loop".into(), json!({"$ref": "#/components/schemas/Loop"}));
        schemas.insert("Self".into(), json!({"$ref": "#"}));
        // Each level refers to the next twice: 2^30 nodes if inlined naively.
        for i in 0..30 {
            schemas.insert(
                format!("L{i}"),
                json!({"type": "object", "properties": {
                    "a": {"$ref": format!("#/components/schemas/L{}", i + 1)},
                    "b": {"$ref": format!("#/components/schemas/L{}", i + 1)}
                }}),
            );
        }
        schemas.insert("L30".into(), json!({"type": "string"}));
        let doc = json!({
            "openapi": "3.1.0",
            "components": {"schemas": schemas},
            "paths": {"/x": {"post": {
                "operationId": "explode",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                    "loop": {"$ref": "#/components/schemas/Loop"},
                    "self": {"$ref": "#/components/schemas/Self"},
                    "tree": {"$ref": "#/components/schemas/L0"}
                }}}}},
                "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}}}
            }}}
        });
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let a = action(&draft, "explode");
        assert_eq!(a.params_schema["properties"]["loop"], json!({}));
        let size = serde_json::to_string(&a.params_schema).unwrap().len();
        assert!(size < 1_000_000, "{size} bytes");
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

    #[test]
    fn names_are_snake_case_bounded_and_unique() {
        assert_eq!(snake_name("getPetByID").as_deref(), Some("get_pet_by_id"));
        assert_eq!(
            snake_name("HTTPServerList").as_deref(),
            Some("http_server_list")
        );
        assert_eq!(snake_name("list-pets v2").as_deref(), Some("list_pets_v2"));
        assert_eq!(
            snake_name("pets.v2Create").as_deref(),
            Some("pets_v2_create")
        );
        assert_eq!(snake_name("123go").as_deref(), Some("op_123go"));
        assert_eq!(snake_name("Über_Größe").as_deref(), Some("ber_gr_e"));
        assert_eq!(snake_name("--").as_deref(), None);
        let long = snake_name(&"wordy".repeat(30)).unwrap();
        assert!(long.len() <= 64);
        assert_eq!(
            fallback_name("get", "/pets/{petId}/photos"),
            "get_pets_by_pet_id_photos"
        );
        assert_eq!(fallback_name("post", "/"), "post_root");

        let mut names = Names::default();
        assert_eq!(names.claim("list_pets"), "list_pets");
        assert_eq!(names.claim("list_pets"), "list_pets_2");
        assert_eq!(names.claim("list_pets"), "list_pets_3");
        let base = "a".repeat(64);
        assert_eq!(names.claim(&base), base);
        let second = names.claim(&base);
        assert_eq!(second.len(), 64);
        assert!(second.ends_with("_2"));

        // Two operations whose ids collide after conversion.
        let doc = json!({"openapi": "3.1.0", "paths": {
            "/a": {"get": {"operationId": "listPets", "responses": {}}},
            "/b": {"get": {"operationId": "list_pets", "responses": {}}},
            "/c": {"get": {"operationId": "list-pets", "responses": {}}}
        }});
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let names: Vec<&str> = draft
            .document
            .actions
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["list_pets", "list_pets_2", "list_pets_3"]);
    }

    #[test]
    fn words_split_identifiers_and_paths() {
        assert_eq!(words("getHTTPServer2Id"), ["get", "http", "server2", "id"]);
        assert_eq!(words("/v1/pets/{petId}"), ["v1", "pets", "pet", "id"]);
        assert_eq!(words("user[email]"), ["user", "email"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn forbidden_kinds_are_recognised() {
        let f = |s: &str| forbidden(&words(s));
        for s in [
            "/login",
            "signIn",
            "/auth/token",
            "resetPassword",
            "/oauth2/authorize",
            "verify2faOtp",
            "/account/recovery",
            "createApiKey",
            "/log-in",
        ] {
            assert!(f(s).is_some_and(|w| w.contains("credentials")), "{s}");
        }
        assert!(f("addPaymentCard").is_some_and(|w| w.contains("payment-card")));
        assert!(f("/payment_methods").is_some_and(|w| w.contains("payment-card")));
        assert!(f("sendBulkEmail").is_some_and(|w| w.contains("bulk")));
        for s in [
            "/authors",
            "listTokenizedItems",
            "/orders",
            "/cards/games",
            "/search",
        ] {
            assert_eq!(f(s), None, "{s}");
        }
        for s in [
            "password",
            "new_password",
            "otp",
            "cvc",
            "card_number",
            "ccNumber",
            "access_token",
            "api-key",
            "verification_code",
        ] {
            assert!(sensitive_field(s).is_some(), "{s}");
        }
        for s in [
            "pageToken",
            "csrf_token",
            "email",
            "promo_code",
            "zip_code",
            "q",
        ] {
            assert_eq!(sensitive_field(s), None, "{s}");
        }
    }

    #[test]
    fn many_operations_are_capped_at_the_map_limit() {
        let mut paths = Map::new();
        for i in 0..MAX_ACTIONS_PER_MAP + 5 {
            paths.insert(format!("/p{i:03}"), json!({"get": {"responses": {}}}));
        }
        let doc = json!({"openapi": "3.1.0", "paths": paths});
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        assert_eq!(draft.document.actions.len(), MAX_ACTIONS_PER_MAP);
        assert_eq!(draft.skipped.len(), 5);
        assert!(draft.skipped[0].contains("the most a map may have"));
    }

    #[test]
    fn long_descriptions_are_one_trimmed_line() {
        let long = format!("  Finds\n\tthings. {}", "very ".repeat(100));
        let doc = json!({"openapi": "3.1.0", "paths": {"/x": {"get": {"operationId": "x", "summary": long, "responses": {}}}}});
        let draft = learn(Some(&doc), &[]).unwrap();
        let d = &action(&draft, "x").description;
        assert!(d.starts_with("Finds things. very very"));
        let first = d.split('…').next().unwrap();
        assert!(first.chars().count() < MAX_DESCRIPTION, "{d}");
        assert!(!d.contains('\n'));
        assert_eq!(one_line(" a  b ", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }

    // ---- forms ----

    fn field(name: &str, kind: &str) -> FormField {
        FormField {
            name: name.into(),
            field_type: kind.into(),
            label: None,
            required: false,
            default_value: None,
            options: Vec::new(),
        }
    }

    fn option(value: &str) -> FieldOption {
        FieldOption {
            value: value.into(),
            label: value.to_uppercase(),
            selected: false,
        }
    }

    fn form(action: &str, method: &str, fields: Vec<FormField>) -> Form {
        Form {
            id: None,
            name: None,
            action: action.into(),
            method: method.into(),
            enctype: "application/x-www-form-urlencoded".into(),
            fields,
        }
    }

    fn search_form() -> Form {
        let mut category = field("category", "select");
        category.options = vec![option(""), option("dogs"), option("cats")];
        let mut lang = field("lang", "hidden");
        lang.default_value = Some("en".into());
        let mut q = field("q", "search");
        q.label = Some("Search the shop".into());
        form(
            "https://shop.example.com/search?from=header",
            "GET",
            vec![q, category, lang],
        )
    }

    fn contact_form() -> Form {
        let mut email = field("email", "email");
        email.required = true;
        email.label = Some("Your email".into());
        let mut topic = field("topic", "select");
        topic.required = true;
        topic.options = vec![
            option(""),
            option("shipping"),
            option("returns"),
            option("returns"),
        ];
        let mut message = field("message", "textarea");
        message.required = true;
        let mut csrf = field("csrf_token", "hidden");
        csrf.default_value = Some("t0k".into());
        let mut copy = field("send_copy", "checkbox");
        copy.default_value = Some("yes".into());
        let mut qty = field("order-count", "number");
        qty.required = true;
        form(
            "https://shop.example.com/contact",
            "POST",
            vec![
                email,
                topic,
                message,
                csrf,
                copy,
                qty,
                field("website", "url"),
            ],
        )
    }

    #[test]
    fn forms_become_search_and_form_submit_actions() {
        let mut login = form(
            "https://shop.example.com/session",
            "POST",
            vec![field("email", "email"), field("password", "password")],
        );
        login.id = Some("login".into());
        let elsewhere = form(
            "https://evil.example.net/collect",
            "POST",
            vec![field("email", "email")],
        );
        let mut callback = form(
            "https://shop.example.com/contact",
            "POST",
            vec![field("phone", "tel")],
        );
        callback.name = Some("contact".into());
        let mut newsletter = form(
            "https://shop.example.com/subscribe",
            "POST",
            vec![field("email", "email")],
        );
        newsletter.id = Some("newsletter-signup".into());
        newsletter.enctype = "multipart/form-data".into();
        let mut cart_sku = field("sku", "hidden");
        cart_sku.default_value = Some("SKU-1".into());
        let cart = form("https://shop.example.com/cart/add", "POST", vec![cart_sku]);
        let mut party = field("party_size", "number");
        party.required = true;
        let booking = form("https://shop.example.com/book-table", "POST", vec![party]);
        let card = form(
            "https://shop.example.com/pay",
            "POST",
            vec![field("cardnumber", "text"), field("cvc", "text")],
        );
        let remember = form(
            "https://shop.example.com/account",
            "POST",
            vec![field("username", "text"), field("remember_me", "checkbox")],
        );
        let empty = form("https://shop.example.com/", "GET", vec![]);
        let relative = form("/relative", "GET", vec![field("q", "text")]);
        let read = form(
            "https://shop.example.com/",
            "GET",
            vec![{
                let mut s = field("store", "select");
                s.options = vec![option("north"), option("south")];
                s
            }],
        );
        let forms = vec![
            search_form(),
            contact_form(),
            login,
            elsewhere,
            search_form(), // the same form on another page
            callback,
            newsletter,
            cart,
            booking,
            card,
            remember,
            empty,
            relative,
            read,
        ];
        let draft = learn(None, &forms).unwrap();
        assert_valid(&draft);
        assert!(
            draft
                .document
                .description
                .starts_with("Learned from 7 HTML forms on shop.example.com"),
            "{}",
            draft.document.description
        );

        // GET search form: the action's own query is replaced, hidden fields sent as written.
        let search = action(&draft, "search");
        assert_eq!(search.family, ActionFamily::Search);
        assert!(!search.consequential);
        assert_eq!(search.request.method, HttpMethod::Get);
        assert_eq!(
            search.request.path,
            "/search?q={q}&category={category}&lang=en"
        );
        assert_eq!(search.request.body, None);
        assert_eq!(
            search.params_schema,
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "q": {"type": "string", "description": "Search the shop"},
                    "category": {"type": "string", "enum": ["", "dogs", "cats"]},
                    "lang": {"const": "en", "description": "Fixed: the page's form sends this value."}
                }
            })
        );
        assert_eq!(
            search.verify,
            VerifyRules {
                status: vec![200],
                json: vec![],
                css: vec![]
            }
        );
        assert_eq!(
            search.outputs,
            vec![OutputField {
                name: "http_status".into(),
                source: OutputSource::Status
            }]
        );
        assert_eq!(
            search.output_schema,
            json!({"type": "object", "properties": {"http_status": {"type": "integer"}}})
        );
        assert!(search.description.contains(FORM_NOTE));

        // POST contact form: consequential form_submit with a form body.
        let contact = action(&draft, "submit_contact");
        assert_eq!(contact.family, ActionFamily::FormSubmit);
        assert!(contact.consequential);
        assert_eq!(contact.request.path, "/contact");
        let Some(BodyTemplate::Form { fields }) = &contact.request.body else {
            panic!("{:?}", contact.request.body)
        };
        assert_eq!(fields["email"], "{email}");
        assert_eq!(fields["csrf_token"], "t0k");
        assert_eq!(fields["order-count"], "{order_count}");
        let props = &contact.params_schema["properties"];
        assert_eq!(
            props["email"],
            json!({"type": "string", "format": "email", "minLength": 1, "description": "Your email"})
        );
        assert_eq!(
            props["topic"],
            json!({"type": "string", "enum": ["shipping", "returns"]})
        );
        assert_eq!(props["message"], json!({"type": "string", "minLength": 1}));
        assert_eq!(props["csrf_token"]["const"], "t0k");
        assert_eq!(props["send_copy"]["enum"], json!(["yes", ""]));
        assert_eq!(props["order_count"], json!({"type": "number"}));
        assert_eq!(props["website"], json!({"type": "string", "format": "uri"}));
        assert_eq!(
            contact.params_schema["required"],
            json!(["email", "topic", "message", "order_count"])
        );
        assert!(contact.description.contains("anti-forgery token"));
        assert!(contact.description.starts_with("Submit the form at /contact (fields: Your email, topic, message, send_copy, order-count, website). "));

        // A second, different form to the same endpoint: named by its name attribute.
        let callback = action(&draft, "contact");
        assert_eq!(callback.request.path, "/contact");
        let newsletter = action(&draft, "newsletter_signup");
        assert!(newsletter.description.contains("multipart/form-data"));
        let cart = action(&draft, "submit_cart_add");
        assert_eq!(cart.family, ActionFamily::Cart);
        assert!(cart.consequential);
        assert_eq!(
            cart.request.body,
            Some(BodyTemplate::Form {
                fields: [("sku".to_owned(), "SKU-1".to_owned())].into()
            })
        );
        let booking = action(&draft, "submit_book_table");
        assert_eq!(booking.family, ActionFamily::Booking);
        let read = action(&draft, "read_page");
        assert_eq!(read.family, ActionFamily::Read);
        assert!(!read.consequential);
        assert_eq!(read.request.path, "/?store={store}");

        assert!(skipped_with(&draft, "form `login`").contains("password"));
        assert!(
            skipped_with(&draft, "evil.example.net")
                .contains("sent to https://evil.example.net, not to https://shop.example.com")
        );
        assert!(skipped_with(&draft, "/pay").contains("payment-card"));
        assert!(skipped_with(&draft, "/account").contains("sign-in form"));
        assert!(skipped_with(&draft, "(GET https://shop.example.com/)").contains("no fields"));
        assert!(skipped_with(&draft, "/relative").contains("not an absolute URL"));
        assert_eq!(draft.document.actions.len(), 7);
        assert_eq!(
            draft.skipped.len(),
            6,
            "the duplicate search form is not drafted twice: {:#?}",
            draft.skipped
        );
    }

    #[test]
    fn form_names_are_deduplicated() {
        let forms = vec![
            form(
                "https://shop.example.com/contact",
                "POST",
                vec![field("a", "text")],
            ),
            form(
                "https://shop.example.com/contact",
                "POST",
                vec![field("b", "text")],
            ),
            form(
                "https://shop.example.com/contact/",
                "POST",
                vec![field("c", "text")],
            ),
        ];
        let draft = learn(None, &forms).unwrap();
        assert_valid(&draft);
        let names: Vec<&str> = draft
            .document
            .actions
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["submit_contact", "submit_contact_2", "submit_contact_3"]
        );
    }

    #[test]
    fn forms_the_openapi_document_covers_are_not_drafted_twice() {
        let doc = petstore();
        let covered = form(
            "https://shop.example.com/api/v1/store/order",
            "POST",
            vec![field("petId", "number")],
        );
        let draft = learn(Some(&doc), &[covered, search_form()]).unwrap();
        assert_valid(&draft);
        assert!(
            skipped_with(&draft, "/api/v1/store/order")
                .contains("`place_order` already covers POST /api/v1/store/order")
        );
        assert!(draft.document.action("search").is_some());
        assert!(
            draft
                .document
                .description
                .contains("OpenAPI document \"Petstore\" and 1 HTML form on")
        );
    }

    #[test]
    fn form_actions_that_fail_the_checks_are_dropped_with_a_reason() {
        // A literal `{campaign}` in the action's query reads as an undeclared placeholder.
        let odd = form(
            "https://shop.example.com/contact?ref={campaign}",
            "POST",
            vec![field("a", "text")],
        );
        let mut brace = field("state", "hidden");
        brace.default_value = Some("{x}".into());
        let templated = form("https://shop.example.com/feedback", "POST", vec![brace]);
        let draft = learn(None, &[odd, templated]).unwrap();
        assert_valid(&draft);
        assert!(skipped_with(&draft, "/contact?ref=").contains("fails the map checks"));
        // A hidden value that reads like a placeholder is a required const param instead.
        let feedback = action(&draft, "submit_feedback");
        assert_eq!(feedback.params_schema["required"], json!(["state"]));
        assert_eq!(
            feedback.params_schema["properties"]["state"]["const"],
            "{x}"
        );
        assert_eq!(draft.document.actions.len(), 1);
    }

    #[test]
    fn nothing_usable_is_an_error_and_a_bad_base_url_too() {
        let err = learn(None, &[]).unwrap_err();
        assert!(matches!(&err, LearnError::NothingLearned { skipped } if skipped.is_empty()));
        assert_eq!(
            err.to_string(),
            "nothing the site publishes could be drafted as an action"
        );
        let d = domain();
        for bad in ["shop.example.com", "ftp://shop.example.com", "", "https://"] {
            let err = draft_map(&LearnInput {
                domain: &d,
                base_url: bad,
                openapi: None,
                forms: &[],
            })
            .unwrap_err();
            assert!(matches!(err, LearnError::BadBaseUrl(_)), "{bad}: {err}");
        }
        // A trailing slash (or path) on the base URL is normalised to the origin.
        let forms = [search_form()];
        let draft = draft_map(&LearnInput {
            domain: &d,
            base_url: "https://shop.example.com/",
            openapi: None,
            forms: &forms,
        })
        .unwrap();
        assert_eq!(draft.document.base_url, BASE);
    }

    // ---- never panics ----

    /// xorshift64*: a small deterministic generator (proptest is not a dev-dependency of svc).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
            list[self.below(list.len())]
        }
    }

    const KEYS: &[&str] = &[
        "openapi",
        "swagger",
        "paths",
        "components",
        "schemas",
        "servers",
        "url",
        "variables",
        "default",
        "parameters",
        "name",
        "in",
        "required",
        "schema",
        "$ref",
        "type",
        "properties",
        "items",
        "allOf",
        "anyOf",
        "requestBody",
        "content",
        "application/json",
        "application/x-www-form-urlencoded",
        "responses",
        "200",
        "201",
        "2XX",
        "security",
        "operationId",
        "summary",
        "get",
        "post",
        "put",
        "delete",
        "patch",
        "head",
        "nullable",
        "exclusiveMinimum",
        "minimum",
        "enum",
        "readOnly",
        "host",
        "basePath",
        "schemes",
        "consumes",
        "produces",
        "definitions",
        "/pets/{id}",
        "/a b/{x-y}",
        "/login",
        "pattern",
        "format",
        "example",
        "additionalProperties",
        "deprecated",
        "description",
    ];
    const STRINGS: &[&str] = &[
        "",
        "3.1.0",
        "3.0.0",
        "2.0",
        "get",
        "path",
        "query",
        "header",
        "cookie",
        "body",
        "formData",
        "object",
        "string",
        "integer",
        "array",
        "null",
        "file",
        "#",
        "#/components/schemas/A",
        "#/components/schemas/B",
        "#/definitions/A",
        "#/paths",
        "https://x.test/s.json",
        "/pets/{id}",
        "{",
        "}",
        "{}",
        "https://shop.example.com/v1",
        "https://other.example.net",
        "/{v}",
        "shop.example.com",
        "https",
        "(",
        "listPets",
        "ünïcödé ☃",
        "application/json",
        "%7B",
        "a~1b",
    ];

    fn arbitrary(rng: &mut Rng, depth: usize) -> Value {
        match rng.below(if depth > 5 { 4 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.below(2) == 0),
            2 => json!((rng.next() % 1000) as i64 - 500),
            3 => Value::String(rng.pick(STRINGS).to_owned()),
            4 => Value::Array(
                (0..rng.below(4))
                    .map(|_| arbitrary(rng, depth + 1))
                    .collect(),
            ),
            _ => {
                let mut m = Map::new();
                for _ in 0..rng.below(6) {
                    m.insert(rng.pick(KEYS).to_owned(), arbitrary(rng, depth + 1));
                }
                Value::Object(m)
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics_and_whatever_is_learned_is_valid() {
        let mut rng = Rng(0x5EED_1234_ABCD_0001);
        let mut learned = 0;
        for i in 0..10_000 {
            let mut doc = arbitrary(&mut rng, 0);
            // Most inputs look roughly like a document, so the deeper code runs.
            if i % 4 != 0 {
                let mut m = Map::new();
                m.insert(
                    if i % 3 == 0 { "swagger" } else { "openapi" }.into(),
                    json!(if i % 3 == 0 { "2.0" } else { "3.1.0" }),
                );
                let mut paths = Map::new();
                for _ in 0..rng.below(4) {
                    let mut item = Map::new();
                    for _ in 0..rng.below(3) {
                        item.insert(
                            rng.pick(&["get", "post", "delete", "parameters"]).into(),
                            arbitrary(&mut rng, 1),
                        );
                    }
                    let path = rng.pick(&[
                        "/pets",
                        "/pets/{id}",
                        "/a b/{x-y}/{x-y}",
                        "/login",
                        "/{}",
                        "/{",
                        "x",
                        "/Ünï/{ü}",
                    ]);
                    paths.insert(path.to_owned(), Value::Object(item));
                }
                m.insert("paths".into(), Value::Object(paths));
                m.insert("components".into(), json!({"schemas": {"A": arbitrary(&mut rng, 2), "B": {"$ref": "#/components/schemas/A"}}}));
                m.insert("definitions".into(), json!({"A": arbitrary(&mut rng, 2)}));
                if rng.below(2) == 0 {
                    m.insert(rng.pick(KEYS).to_owned(), arbitrary(&mut rng, 1));
                }
                doc = Value::Object(m);
            }
            if let Ok(draft) = learn(Some(&doc), &[]) {
                assert_valid(&draft);
                learned += 1;
            }
        }
        assert!(
            learned > 1_000,
            "only {learned} documents gave a draft: the generator is too weak"
        );
    }

    #[test]
    fn arbitrary_forms_never_panic_and_whatever_is_learned_is_valid() {
        let mut rng = Rng(0xF0F0_0000_1234_5678);
        let actions = [
            "https://shop.example.com/search",
            "https://shop.example.com/",
            "https://shop.example.com/a b/{c}?d={e}",
            "https://shop.example.com:8443/x",
            "http://shop.example.com/x",
            "https://other.example.net/x",
            "not a url",
            "",
            "https://shop.example.com/ünï?q=☃#frag",
        ];
        let types = [
            "text", "search", "hidden", "select", "checkbox", "radio", "email", "number",
            "password", "file", "", "TEXT", "textarea",
        ];
        let names = [
            "q",
            "",
            "email",
            "password",
            "card_number",
            "user[name]",
            "{x}",
            "a-b",
            "a_b",
            "ü",
            "csrf_token",
            "remember_me",
            "q",
        ];
        let values = ["", "on", "{x}", "en", "☃", "a&b=c"];
        let mut learned = 0;
        for _ in 0..3_000 {
            let forms: Vec<Form> = (0..rng.below(4))
                .map(|_| Form {
                    id: (rng.below(3) == 0).then(|| rng.pick(&names).to_owned()),
                    name: (rng.below(4) == 0).then(|| rng.pick(&names).to_owned()),
                    action: rng.pick(&actions).to_owned(),
                    method: rng.pick(&["GET", "POST", "post", "DIALOG"]).to_owned(),
                    enctype: rng
                        .pick(&[
                            "application/x-www-form-urlencoded",
                            "multipart/form-data",
                            "text/plain",
                        ])
                        .to_owned(),
                    fields: (0..rng.below(5))
                        .map(|_| FormField {
                            name: rng.pick(&names).to_owned(),
                            field_type: rng.pick(&types).to_owned(),
                            label: (rng.below(2) == 0).then(|| rng.pick(&values).to_owned()),
                            required: rng.below(2) == 0,
                            default_value: (rng.below(2) == 0)
                                .then(|| rng.pick(&values).to_owned()),
                            options: (0..rng.below(3))
                                .map(|_| option(rng.pick(&values)))
                                .collect(),
                        })
                        .collect(),
                })
                .collect();
            if let Ok(draft) = learn(None, &forms) {
                assert_valid(&draft);
                learned += 1;
            }
        }
        assert!(learned > 300, "only {learned} form sets gave a draft");
    }
}
