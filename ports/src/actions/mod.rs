//! Agent Maps: the declarative, versioned description of what an agent may do on one site, and
//! the action catalog that says which kinds of action the service runs at all.

mod check;
mod integers;
mod template;

use std::{collections::BTreeMap, fmt};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{billing::Currency, keys::Scopes};

pub use check::provider_id_ok;
pub use integers::write_integers_as_integers;
pub use template::{BodyTemplate, HttpMethod, RequestTemplate, placeholders};

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

impl PaymentSpec {
    /// The amount the params name, when it is an integer there.
    pub fn amount_of(&self, params: &Value) -> Option<i64> {
        params.pointer(&self.amount).and_then(Value::as_i64)
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
}
