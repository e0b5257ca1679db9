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

mod classify;
#[cfg(test)]
mod fixtures;
mod forms;
mod names;
mod openapi;
mod openapi_doc;
mod params;
mod schema;

use std::collections::HashMap;

use serde_json::Value;
use svc_ports::{
    ActionSpec, Domain, Form, MapDocument, MapError,
    actions::{HttpMethod, MAX_ACTIONS_PER_MAP},
};
use url::Url;

use names::{Names, one_line};

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

const MAX_DESCRIPTION: usize = 200;

/// The connection provider id of a site: its registrable domain with the dots written as
/// hyphens, `shop.example.com` -> `example-com`, `www.example.co.uk` -> `example-co-uk`.
///
/// The registrable domain is found the way the reader decides whether a link is same-site: the
/// last two labels, or the last three when the second-level label is a common generic one
/// (`co`, `com`, `org`, ...) under a two-letter country code. No public-suffix list: subdomains
/// of one site share one connection, which is what a sign-in on that site gives.
pub fn provider_id(domain: &Domain) -> String {
    svc_ports::fetch::site_of(domain.as_str()).replace('.', "-")
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
}

fn compile(schema: &Value) -> Result<(), String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::fixtures::*;
    use serde_json::{Map, json};
    use svc_ports::FormField;

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
