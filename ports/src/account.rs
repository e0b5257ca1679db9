//! Accounts: who is calling, on which plan, in which environment.

use std::{fmt, str::FromStr};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::AccountId;

/// The plan an account is on. Starter is the only plan sold on checkout; Enterprise is sales-led.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Sandbox,
    Free,
    Starter,
    Enterprise,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Sandbox, Plan::Free, Plan::Starter, Plan::Enterprise];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Sandbox => "sandbox",
            Plan::Free => "free",
            Plan::Starter => "starter",
            Plan::Enterprise => "enterprise",
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown plan `{0}` (expected sandbox, free, starter or enterprise)")]
pub struct UnknownPlan(pub String);

impl FromStr for Plan {
    type Err = UnknownPlan;
    fn from_str(s: &str) -> Result<Self, UnknownPlan> {
        Plan::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownPlan(s.to_owned()))
    }
}

/// Live keys work only on a live server, test keys only on the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Live,
    Test,
}

impl Environment {
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Live => "live",
            Environment::Test => "test",
        }
    }
}

impl FromStr for Environment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "live" => Ok(Environment::Live),
            "test" => Ok(Environment::Test),
            other => Err(format!("unknown environment `{other}`")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    #[error("email address is empty")]
    Empty,
    #[error("email address is longer than 254 characters")]
    TooLong,
    #[error("email address must look like name@domain.tld")]
    Malformed,
}

/// An email address, trimmed and lower-cased; syntax checked loosely (one `@`, a dotted domain,
/// no whitespace or control characters) because only a delivered code proves an address.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Email(String);

impl Email {
    pub fn parse(raw: &str) -> Result<Self, EmailError> {
        let s = raw.trim().to_lowercase();
        if s.is_empty() {
            return Err(EmailError::Empty);
        }
        if s.len() > 254 {
            return Err(EmailError::TooLong);
        }
        let (local, domain) = s.split_once('@').ok_or(EmailError::Malformed)?;
        let well_formed = !local.is_empty()
            && local.len() <= 64
            && !domain.contains('@')
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains("..")
            && s.chars().all(|c| !c.is_whitespace() && !c.is_control());
        if !well_formed {
            return Err(EmailError::Malformed);
        }
        Ok(Email(s))
    }

    /// The address as a page shows it to whoever holds a link: the first character of the
    /// local part and the domain (`j***@example.com`), enough to recognise one's own account.
    pub fn masked(&self) -> String {
        let (local, domain) = self.0.split_once('@').unwrap_or((&self.0, ""));
        let first: String = local.chars().take(1).collect();
        format!("{first}***@{domain}")
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Addresses are personal data: keep them out of debug logs.
        let (local, domain) = self.0.split_once('@').unwrap_or(("", &self.0));
        let first = local.chars().next().unwrap_or('*');
        write!(f, "Email({first}***@{domain})")
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Email {
    type Error = EmailError;
    fn try_from(s: String) -> Result<Self, EmailError> {
        Email::parse(&s)
    }
}

impl From<Email> for String {
    fn from(e: Email) -> String {
        e.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub id: AccountId,
    pub email: Email,
    pub plan: Plan,
    pub environment: Environment,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn masked_addresses_keep_the_first_character_and_the_domain() {
        assert_eq!(
            Email::parse("ada@example.com").unwrap().masked(),
            "a***@example.com"
        );
        assert_eq!(
            Email::parse("é@example.org").unwrap().masked(),
            "é***@example.org"
        );
    }

    #[test]
    fn emails_are_normalised() {
        assert_eq!(
            Email::parse("  Ada@Example.COM ").unwrap().as_str(),
            "ada@example.com"
        );
    }

    #[test]
    fn bad_emails_are_refused() {
        for bad in [
            "", "   ", "no-at", "a@b", "a@@b.c", "@b.co", "a@.b.co", "a@b.co.", "a b@c.de",
            "a@b..de",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            Email::parse(&format!("{}@x.io", "a".repeat(300))),
            Err(EmailError::TooLong)
        );
    }

    #[test]
    fn debug_hides_the_address() {
        let e = Email::parse("secret.person@example.com").unwrap();
        assert_eq!(format!("{e:?}"), "Email(s***@example.com)");
    }

    #[test]
    fn plans_round_trip() {
        for p in Plan::ALL {
            assert_eq!(p.as_str().parse::<Plan>().unwrap(), p);
        }
        assert!("gold".parse::<Plan>().is_err());
    }

    proptest! {
        #[test]
        fn email_parse_never_panics_and_is_idempotent(s in ".{0,300}") {
            if let Ok(e) = Email::parse(&s) {
                prop_assert_eq!(Email::parse(e.as_str()).unwrap(), e);
            }
        }
    }
}
