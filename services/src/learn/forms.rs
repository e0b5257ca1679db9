//! HTML forms to actions: same-origin GET forms become searches or reads, POST forms
//! consequential submissions sent URL-encoded.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};
use svc_ports::{
    ActionFamily, ActionSpec, Form, FormField,
    actions::{BodyTemplate, HttpMethod, OutputField, OutputSource, RequestTemplate, VerifyRules},
};
use url::Url;

use super::{
    Drafted, Learner, MAX_DESCRIPTION,
    classify::{changes_state, family_by_words, forbidden, sensitive_field},
    names::{one_line, snake_name, words},
    params::{Params, encode},
};

const FORM_NOTE: &str =
    "Learned from a form: verification only checks the status; add rules before publishing.";

impl Learner<'_> {
    pub(super) fn forms(&mut self, forms: &[Form]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::fixtures::*;

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
}
