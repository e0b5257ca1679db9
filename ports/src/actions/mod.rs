//! Agent Maps: the declarative, versioned description of what an agent may do on one site, and
//! the action catalog that says which kinds of action the service runs at all.

use std::{collections::BTreeMap, fmt};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{billing::Currency, keys::Scopes};

/// The scope every execution needs.
pub const EXECUTE_SCOPE: &str = "execute";
/// The explicit approval scope a consequential action needs on top.
pub const CONSEQUENTIAL_SCOPE: &str = "execute:consequential";
pub const MAX_ACTION_COST: i64 = 100;
pub const MAX_ACTIONS_PER_MAP: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("domain `{0}` is not a lowercase host name")]
    BadDomain(String),
    #[error("action `{0}`: {1}")]
    BadAction(String, String),
    #[error("{0}")]
    BadMap(String),
}

/// A site's host name, lowercase, without scheme, port or path: `shop.example.com`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Domain(String);

impl Domain {
    pub fn parse(raw: &str) -> Result<Self, MapError> {
        let d = raw.trim().trim_end_matches('.').to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if d.len() <= 253 && d.contains('.') && d.split('.').all(label_ok) {
            Ok(Self(d))
        } else {
            Err(MapError::BadDomain(raw.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Domain {
    type Error = MapError;
    fn try_from(s: String) -> Result<Self, MapError> {
        Self::parse(&s)
    }
}

impl From<Domain> for String {
    fn from(d: Domain) -> String {
        d.0
    }
}

macro_rules! families {
    ($($variant:ident => ($name:literal, $allowed:literal, $consequential:literal, $about:literal)),+ $(,)?) => {
        /// Kinds of action. The catalog says which the service runs and which it never does.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum ActionFamily { $($variant),+ }

        impl ActionFamily {
            pub const ALL: &'static [ActionFamily] = &[$(ActionFamily::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $name),+ }
            }
            /// Whether maps may contain actions of this family.
            pub fn allowed(self) -> bool {
                match self { $(Self::$variant => $allowed),+ }
            }
            /// Whether every action of this family changes something that matters (and so needs
            /// the approval scope).
            pub fn always_consequential(self) -> bool {
                match self { $(Self::$variant => $consequential),+ }
            }
            pub fn about(self) -> &'static str {
                match self { $(Self::$variant => $about),+ }
            }
        }
    };
}

families! {
    Search => ("search", true, false, "Find items on a site (products, slots, articles)."),
    Read => ("read", true, false, "Read one item's details."),
    Cart => ("cart", true, false, "Change a cart or a draft that commits nothing by itself."),
    Order => ("order", true, true, "Place an order or buy something."),
    Booking => ("booking", true, true, "Reserve or cancel a slot, a table, a room."),
    FormSubmit => ("form_submit", true, true, "Send a form to the site (contact, request, sign-up)."),
    Account => ("account", true, false, "Read the user's own data on the site through a connection."),
    RawBrowserControl => ("raw_browser_control", false, true, "Driving a browser freely: never, actions are mapped."),
    CredentialEntry => ("credential_entry", false, true, "Typing passwords or one-time codes for a user: never."),
    UnrestrictedPayment => ("unrestricted_payment", false, true, "Paying without a delegated, bounded authority: never."),
    AccountTakeover => ("account_recovery", false, true, "Changing a user's credentials, email or recovery settings: never."),
    MassMessaging => ("mass_messaging", false, true, "Sending messages to many recipients: never."),
}

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

/// A JSON pointer into the response that must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRule {
    pub pointer: String,
    /// When set, the value must equal this; otherwise it must exist and not be null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
}

/// A CSS selector that must match in an HTML response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CssRule {
    pub selector: String,
    /// When set, the first match's text must contain this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_contains: Option<String>,
}

/// How success is verified: every rule must hold. An accepted request is not enough.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyRules {
    /// Acceptable HTTP statuses.
    pub status: Vec<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json: Vec<JsonRule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub css: Vec<CssRule>,
}

/// Where one typed output field comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum OutputSource {
    /// A JSON pointer into the response body.
    Json { pointer: String },
    /// The text of the first match of a CSS selector in an HTML response.
    Css { selector: String },
    /// The response's HTTP status.
    Status,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputField {
    pub name: String,
    #[serde(flatten)]
    pub source: OutputSource,
}

/// One action of a map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionSpec {
    /// Exact name agents call it by: `search_products`.
    pub name: String,
    pub description: String,
    pub family: ActionFamily,
    /// JSON Schema (draft 2020-12) of `params`.
    pub params_schema: Value,
    /// The connection provider the action needs (`shop-example`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_provider: Option<String>,
    pub consequential: bool,
    /// Scopes the key needs besides `execute` (and `execute:consequential` when consequential).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Credits charged when it completes.
    #[serde(default = "default_cost")]
    pub cost: i64,
    pub request: RequestTemplate,
    pub verify: VerifyRules,
    #[serde(default)]
    pub outputs: Vec<OutputField>,
    /// JSON Schema of the typed result (the object of `outputs`).
    pub output_schema: Value,
    /// Set on actions that pay money (families `order` and `booking` only): they run only
    /// under a delegated payment authority that covers the amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment: Option<PaymentSpec>,
}

/// What a payment action pays: the amount is read from the params, the currency is the map's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentSpec {
    /// JSON pointer into `params` to a declared integer param: the amount in minor units.
    pub amount: String,
    /// Lowercase ISO 4217 code of the amount.
    pub currency: Currency,
    /// The output field that carries the site's payment id (put in receipts), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// How the business outcome of the payment is confirmed later, when the authority asks
    /// for verification (`verification_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmSpec>,
}

/// A non-consequential read or search of the same map that confirms a payment's outcome: its
/// params are taken from the payment's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmSpec {
    /// The name of another action of the same map, of family `read` or `search`, not
    /// consequential.
    pub action: String,
    /// Each param of the confirm action, mapped to a JSON pointer into the payment action's
    /// params (`{"order_id": "/order_id"}`).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

impl ConfirmSpec {
    /// The confirm action's params, taken from the payment's params; `None` when a pointer
    /// does not resolve.
    pub fn params_from(&self, payment_params: &Value) -> Option<serde_json::Map<String, Value>> {
        self.params
            .iter()
            .map(|(name, pointer)| {
                payment_params
                    .pointer(pointer)
                    .cloned()
                    .map(|v| (name.clone(), v))
            })
            .collect()
    }
}

/// The schema of the param a JSON pointer names in a params schema, walking `properties`.
fn schema_at<'a>(params_schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut at = params_schema;
    let path = pointer.strip_prefix('/')?;
    for segment in path.split('/') {
        let key = segment.replace("~1", "/").replace("~0", "~");
        at = at.get("properties")?.get(&key)?;
    }
    Some(at)
}

impl PaymentSpec {
    /// The amount the params name, when it is an integer there.
    pub fn amount_of(&self, params: &Value) -> Option<i64> {
        params.pointer(&self.amount).and_then(Value::as_i64)
    }

    /// The param schema the amount pointer names, walking `properties`.
    fn param_schema<'a>(&self, params_schema: &'a Value) -> Option<&'a Value> {
        schema_at(params_schema, &self.amount)
    }
}

fn default_cost() -> i64 {
    1
}

impl ActionSpec {
    /// Every scope a key must carry to run this action.
    pub fn required_scopes(&self) -> Vec<String> {
        let mut all = vec![EXECUTE_SCOPE.to_owned()];
        if self.consequential {
            all.push(CONSEQUENTIAL_SCOPE.to_owned());
        }
        all.extend(self.scopes.iter().cloned());
        all.sort();
        all.dedup();
        all
    }

    pub fn missing_scopes(&self, held: &Scopes) -> Vec<String> {
        self.required_scopes()
            .into_iter()
            .filter(|s| !held.contains(s))
            .collect()
    }

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

    fn check(&self) -> Result<(), MapError> {
        let bad = |why: &str| Err(MapError::BadAction(self.name.clone(), why.to_owned()));
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self.name.as_bytes()[0].is_ascii_lowercase()
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !name_ok {
            return bad("names are 1-64 of a-z, 0-9 and _, starting with a letter");
        }
        if !self.family.allowed() {
            return bad(&format!(
                "family `{}` is disallowed by the action catalog",
                self.family.as_str()
            ));
        }
        if self.family.always_consequential() && !self.consequential {
            return bad(&format!(
                "family `{}` is always consequential",
                self.family.as_str()
            ));
        }
        if !(0..=MAX_ACTION_COST).contains(&self.cost) {
            return bad(&format!("cost must be 0 to {MAX_ACTION_COST}"));
        }
        if self.params_schema.get("type").and_then(Value::as_str) != Some("object") {
            return bad("params_schema must be a JSON Schema with type object");
        }
        if !self.output_schema.is_object() {
            return bad("output_schema must be a JSON Schema object");
        }
        if !self.request.path.starts_with('/') {
            return bad("request.path must start with /");
        }
        if self.verify.status.is_empty()
            || self.verify.status.iter().any(|s| !(100..600).contains(s))
        {
            return bad("verify.status must list HTTP statuses");
        }
        if let Some(p) = &self.auth_provider
            && !provider_id_ok(p)
        {
            return bad("auth_provider is a site-derived id like `shop-example`");
        }
        for s in &self.scopes {
            if crate::keys::Scope::parse(s).is_err() {
                return bad(&format!("scope `{s}` is not valid"));
            }
        }
        let declared: Vec<String> = self
            .params_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(missing) = self
            .template_params()
            .into_iter()
            .find(|p| !declared.contains(p))
        {
            return bad(&format!(
                "the request uses `{{{missing}}}`, which params_schema does not declare"
            ));
        }
        for rule in &self.verify.json {
            if !(rule.pointer.is_empty() || rule.pointer.starts_with('/')) {
                return bad("JSON pointers start with /");
            }
        }
        let mut names: Vec<&str> = self.outputs.iter().map(|o| o.name.as_str()).collect();
        names.sort();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return bad("output names must be unique");
        }
        if let Some(payment) = &self.payment {
            if !matches!(self.family, ActionFamily::Order | ActionFamily::Booking) {
                return bad("only order and booking actions may declare a payment");
            }
            let integer = payment
                .param_schema(&self.params_schema)
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                == Some("integer");
            if !integer {
                return bad("payment.amount must point to a declared integer param");
            }
            // The amount the authority is charged for must be the amount the site is sent.
            let top = payment
                .amount
                .strip_prefix('/')
                .unwrap_or_default()
                .split('/')
                .next()
                .unwrap_or_default()
                .replace("~1", "/")
                .replace("~0", "~");
            if !self.template_params().contains(&top) {
                return bad("payment.amount must be a param the request sends");
            }
            if let Some(r) = &payment.reference
                && !names.contains(&r.as_str())
            {
                return bad("payment.reference must name an output");
            }
        }
        Ok(())
    }
}

/// Connection provider ids are written like a site's name and top-level domain joined by a
/// hyphen: `shop-example`.
pub fn provider_id_ok(id: &str) -> bool {
    (3..=64).contains(&id.len())
        && id.contains('-')
        && !id.starts_with('-')
        && !id.ends_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MapStatus {
    /// Drafted (imported or learned); nothing runs until a person publishes it.
    Candidate,
    Published,
    Retired,
}

impl MapStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Candidate => "candidate",
            Self::Published => "published",
            Self::Retired => "retired",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Candidate, Self::Published, Self::Retired]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// What a map document holds (the file `svc maps import` reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapDocument {
    pub domain: Domain,
    /// Origin the action paths are relative to: `https://shop.example.com`.
    pub base_url: String,
    #[serde(default)]
    pub description: String,
    pub actions: Vec<ActionSpec>,
}

impl MapDocument {
    /// Checks everything a map must satisfy before it is stored.
    pub fn check(&self) -> Result<(), MapError> {
        let base_ok = (self.base_url.starts_with("https://")
            || self.base_url.starts_with("http://"))
            && !self.base_url.ends_with('/');
        if !base_ok {
            return Err(MapError::BadMap(
                "base_url must be an http(s) origin without a trailing slash".into(),
            ));
        }
        if self.actions.is_empty() || self.actions.len() > MAX_ACTIONS_PER_MAP {
            return Err(MapError::BadMap(format!(
                "a map has 1 to {MAX_ACTIONS_PER_MAP} actions"
            )));
        }
        let mut names: Vec<&str> = self.actions.iter().map(|a| a.name.as_str()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(MapError::BadMap(format!("action `{}` appears twice", w[0])));
        }
        self.actions.iter().try_for_each(ActionSpec::check)?;
        self.actions.iter().try_for_each(|a| self.check_confirm(a))
    }

    /// A payment's `confirm` names a non-consequential read or search of this map, with every
    /// pointer resolving to a declared param of the payment and every param one the confirm
    /// action declares.
    fn check_confirm(&self, action: &ActionSpec) -> Result<(), MapError> {
        let Some(confirm) = action.payment.as_ref().and_then(|p| p.confirm.as_ref()) else {
            return Ok(());
        };
        let bad = |why: String| Err(MapError::BadAction(action.name.clone(), why));
        let Some(target) = self.action(&confirm.action) else {
            return bad(format!(
                "payment.confirm.action `{}` is not an action of this map",
                confirm.action
            ));
        };
        if target.name == action.name
            || target.consequential
            || !matches!(target.family, ActionFamily::Read | ActionFamily::Search)
        {
            return bad(format!(
                "payment.confirm.action `{}` must be a non-consequential read or search",
                confirm.action
            ));
        }
        let declared = target
            .params_schema
            .get("properties")
            .and_then(Value::as_object);
        for (param, pointer) in &confirm.params {
            if !declared.is_some_and(|d| d.contains_key(param)) {
                return bad(format!(
                    "payment.confirm.params: `{}` does not declare `{param}`",
                    confirm.action
                ));
            }
            if schema_at(&action.params_schema, pointer).is_none() {
                return bad(format!(
                    "payment.confirm.params.{param}: `{pointer}` is not a declared param of this action"
                ));
            }
        }
        Ok(())
    }

    pub fn action(&self, name: &str) -> Option<&ActionSpec> {
        self.actions.iter().find(|a| a.name == name)
    }
}

/// One stored version of a domain's map.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentMap {
    pub document: MapDocument,
    pub version: u32,
    pub status: MapStatus,
    /// `imported` or `learned`.
    pub origin: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub fn sample_action() -> ActionSpec {
        serde_json::from_value(json!({
            "name": "search_products",
            "description": "Search the catalog.",
            "family": "search",
            "params_schema": {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}},
            "consequential": false,
            "request": {"method": "GET", "path": "/api/search?q={query}"},
            "verify": {"status": [200], "json": [{"pointer": "/results"}]},
            "outputs": [{"name": "results", "from": "json", "pointer": "/results"}],
            "output_schema": {"type": "object"}
        }))
        .unwrap()
    }

    #[test]
    fn payments_point_at_an_integer_param_of_an_order_or_booking() {
        let pay = |family: &str, amount_type: &str, payment: Value| -> Result<(), MapError> {
            let spec: ActionSpec = serde_json::from_value(json!({
                "name": "pay",
                "description": "Pay.",
                "family": family,
                "params_schema": {"type": "object", "properties": {
                    "amount": {"type": amount_type}, "order": {"type": "object", "properties": {"cents": {"type": "integer"}}}}},
                "consequential": true,
                "request": {"method": "POST", "path": "/pay",
                    "body": {"type": "json", "value": {"amount": "{amount}", "order": "{order}"}}},
                "verify": {"status": [201]},
                "outputs": [{"name": "payment_id", "from": "json", "pointer": "/id"}],
                "output_schema": {"type": "object"},
                "payment": payment
            }))
            .unwrap();
            spec.check()
        };
        let ok = json!({"amount": "/amount", "currency": "usd", "reference": "payment_id"});
        assert!(pay("order", "integer", ok.clone()).is_ok());
        // An amount the request never sends cannot be what the authority pays for.
        let unsent: ActionSpec = serde_json::from_value(json!({
            "name": "pay", "description": "Pay.", "family": "order",
            "params_schema": {"type": "object", "properties": {"amount": {"type": "integer"}}},
            "consequential": true, "request": {"method": "POST", "path": "/pay"},
            "verify": {"status": [201]}, "outputs": [], "output_schema": {"type": "object"},
            "payment": {"amount": "/amount", "currency": "usd"}
        }))
        .unwrap();
        assert!(unsent.check().is_err());
        assert!(
            pay(
                "booking",
                "integer",
                json!({"amount": "/order/cents", "currency": "eur"})
            )
            .is_ok()
        );
        assert!(pay("form_submit", "integer", ok.clone()).is_err());
        assert!(pay("order", "string", ok.clone()).is_err());
        assert!(
            pay(
                "order",
                "integer",
                json!({"amount": "/missing", "currency": "usd"})
            )
            .is_err()
        );
        assert!(
            pay(
                "order",
                "integer",
                json!({"amount": "/amount", "currency": "usd", "reference": "nope"})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<PaymentSpec>(json!({"amount": "/a", "currency": "dollars"}))
                .is_err()
        );
        let spec: PaymentSpec = serde_json::from_value(ok).unwrap();
        assert_eq!(spec.amount_of(&json!({"amount": 250})), Some(250));
        assert_eq!(spec.amount_of(&json!({"amount": "250"})), None);
    }

    #[test]
    fn payment_confirmations_name_a_read_of_the_map_with_resolving_params() {
        let map = |confirm: Value, read_family: &str, read_consequential: bool| {
            serde_json::from_value::<MapDocument>(json!({
                "domain": "shop.example.com",
                "base_url": "https://shop.example.com",
                "actions": [{
                    "name": "pay",
                    "description": "Pay.",
                    "family": "order",
                    "params_schema": {"type": "object", "properties": {
                        "amount": {"type": "integer"}, "order_id": {"type": "string"}}},
                    "consequential": true,
                    "request": {"method": "POST", "path": "/pay?amount={amount}"},
                    "verify": {"status": [201]},
                    "output_schema": {"type": "object"},
                    "payment": {"amount": "/amount", "currency": "usd", "confirm": confirm}
                }, {
                    "name": "status",
                    "description": "Status.",
                    "family": read_family,
                    "params_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
                    "consequential": read_consequential,
                    "request": {"method": "GET", "path": "/orders/{id}"},
                    "verify": {"status": [200]},
                    "output_schema": {"type": "object"}
                }]
            }))
            .map_err(|e| MapError::BadMap(e.to_string()))
            .and_then(|m| m.check())
        };
        let ok = json!({"action": "status", "params": {"id": "/order_id"}});
        assert!(map(ok.clone(), "read", false).is_ok());
        assert!(map(ok.clone(), "search", false).is_ok());
        assert!(map(json!({"action": "status"}), "read", false).is_ok());
        let err = |r: Result<(), MapError>| r.unwrap_err().to_string();
        assert!(
            err(map(json!({"action": "nope", "params": {}}), "read", false))
                .contains("not an action")
        );
        assert!(
            err(map(json!({"action": "pay", "params": {}}), "read", false))
                .contains("non-consequential")
        );
        assert!(err(map(ok.clone(), "read", true)).contains("non-consequential"));
        assert!(err(map(ok.clone(), "cart", false)).contains("non-consequential"));
        assert!(
            err(map(
                json!({"action": "status", "params": {"sku": "/order_id"}}),
                "read",
                false
            ))
            .contains("does not declare `sku`")
        );
        assert!(
            err(map(
                json!({"action": "status", "params": {"id": "/missing"}}),
                "read",
                false
            ))
            .contains("not a declared param")
        );
        assert!(
            err(map(
                json!({"action": "status", "params": {"id": "order_id"}}),
                "read",
                false
            ))
            .contains("not a declared param")
        );
        assert!(
            map(json!({"action": "status", "extra": 1}), "read", false).is_err(),
            "unknown fields"
        );
        let spec: ConfirmSpec = serde_json::from_value(ok).unwrap();
        assert_eq!(
            spec.params_from(&json!({"order_id": "ord-1", "amount": 5})),
            Some(json!({"id": "ord-1"}).as_object().unwrap().clone())
        );
        assert_eq!(spec.params_from(&json!({"amount": 5})), None);
    }

    #[test]
    fn domains_are_lowercase_hosts() {
        assert_eq!(
            Domain::parse("Shop.Example.COM.").unwrap().as_str(),
            "shop.example.com"
        );
        for bad in [
            "localhost",
            "http://x.com",
            "x.com/a",
            "-a.com",
            "a..com",
            "",
        ] {
            assert!(Domain::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn actions_are_checked() {
        let ok = sample_action();
        assert!(ok.check().is_ok());
        assert_eq!(ok.cost, 1, "cost defaults to 1");
        assert_eq!(ok.required_scopes(), vec!["execute"]);
        let mut undeclared = ok.clone();
        undeclared.request.path = "/api/search?q={query}&page={page}".into();
        assert!(undeclared.check().is_err());
        let mut order = ok.clone();
        order.family = ActionFamily::Order;
        assert!(order.check().is_err(), "orders are always consequential");
        order.consequential = true;
        assert!(order.check().is_ok());
        assert_eq!(
            order.required_scopes(),
            vec!["execute", "execute:consequential"]
        );
        let mut forbidden = ok.clone();
        forbidden.family = ActionFamily::CredentialEntry;
        forbidden.consequential = true;
        assert!(forbidden.check().is_err());
        let mut bad_provider = ok;
        bad_provider.auth_provider = Some("Shop".into());
        assert!(bad_provider.check().is_err());
    }

    #[test]
    fn placeholders_are_found_in_every_part() {
        assert_eq!(placeholders("/a/{id}/b?x={q}&y={}"), vec!["id", "q"]);
        let mut a = sample_action();
        a.request.body = Some(BodyTemplate::Json {
            value: json!({"item": "{sku}", "n": ["{qty}"]}),
        });
        assert_eq!(a.template_params(), vec!["qty", "query", "sku"]);
    }

    #[test]
    fn provider_ids_look_like_site_names() {
        assert!(provider_id_ok("shop-example"));
        assert!(!provider_id_ok("shop"));
        assert!(!provider_id_ok("Shop-Example"));
    }
}
