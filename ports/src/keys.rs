//! API keys: `svc_live_` / `svc_test_` + 32 base62 characters. The secret exists only in the
//! caller's hands and in the answer that created it; the store keeps its SHA-256 and a short
//! prefix by which people list and revoke it.

use std::{collections::BTreeSet, fmt};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{account::Environment, ids::AccountId, ids::ApiKeyId};

pub const KEY_RANDOM_LEN: usize = 32;
/// How many random characters the listed prefix shows after `svc_live_`.
pub const PREFIX_RANDOM_LEN: usize = 8;
pub const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn env_tag(env: Environment) -> &'static str {
    match env {
        Environment::Live => "svc_live_",
        Environment::Test => "svc_test_",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyFormatError {
    #[error("API keys start with `svc_live_` or `svc_test_`")]
    BadPrefix,
    #[error("API keys have 32 base62 characters after the prefix")]
    BadBody,
}

/// A presented or freshly generated API key. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret {
    raw: String,
    environment: Environment,
}

impl ApiKeySecret {
    pub fn parse(raw: &str) -> Result<Self, KeyFormatError> {
        let (environment, body) = if let Some(body) = raw.strip_prefix("svc_live_") {
            (Environment::Live, body)
        } else if let Some(body) = raw.strip_prefix("svc_test_") {
            (Environment::Test, body)
        } else {
            return Err(KeyFormatError::BadPrefix);
        };
        if body.len() != KEY_RANDOM_LEN || !body.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(KeyFormatError::BadBody);
        }
        Ok(Self {
            raw: raw.to_owned(),
            environment,
        })
    }

    /// Builds a key from 32 random base62 characters (see [`crate::Entropy::base62`]).
    pub fn from_random(
        environment: Environment,
        random_base62: &str,
    ) -> Result<Self, KeyFormatError> {
        Self::parse(&format!("{}{random_base62}", env_tag(environment)))
    }

    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// The secret itself, for the one answer that hands it to its owner.
    pub fn expose(&self) -> &str {
        &self.raw
    }

    pub fn hash(&self) -> KeyHash {
        KeyHash(Sha256::digest(self.raw.as_bytes()).into())
    }

    pub fn prefix(&self) -> KeyPrefix {
        let tag = env_tag(self.environment);
        KeyPrefix(self.raw[..tag.len() + PREFIX_RANDOM_LEN].to_owned())
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeySecret({}…)", self.prefix().as_str())
    }
}

/// SHA-256 of the whole key string; the only form in which a key is stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash([u8; 32]);

impl KeyHash {
    /// SHA-256 of any secret string (device codes, email codes, session tokens).
    pub fn of(secret: &str) -> Self {
        KeyHash(Sha256::digest(secret.as_bytes()).into())
    }

    /// Compares in constant time: whether a presented secret matches must not leak through
    /// timing, even for hashes.
    pub fn ct_eq(&self, other: &KeyHash) -> bool {
        use subtle::ConstantTimeEq;
        self.0.ct_eq(&other.0).into()
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The 32 bytes of the digest (what a store keeps where it has a bytes type).
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// `None` unless `bytes` is exactly 32 long.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
            let s = std::str::from_utf8(chunk).ok()?;
            out[i] = u8::from_str_radix(s, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyHash({}…)", &self.to_hex()[..12])
    }
}

/// The listed, non-secret start of a key: `svc_live_` + its first 8 random characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyPrefix(String);

impl KeyPrefix {
    pub fn parse(raw: &str) -> Result<Self, KeyFormatError> {
        let body = raw
            .strip_prefix("svc_live_")
            .or_else(|| raw.strip_prefix("svc_test_"))
            .ok_or(KeyFormatError::BadPrefix)?;
        if body.len() != PREFIX_RANDOM_LEN || !body.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(KeyFormatError::BadBody);
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for KeyPrefix {
    type Error = KeyFormatError;
    fn try_from(s: String) -> Result<Self, KeyFormatError> {
        KeyPrefix::parse(&s)
    }
}

impl From<KeyPrefix> for String {
    fn from(p: KeyPrefix) -> String {
        p.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scope `{0}` is not valid: use 1-64 of a-z, 0-9 and `_ - . : *`")]
pub struct ScopeError(pub String);

/// One permission a key carries, such as `read`, `execute` or `execute:consequential`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Scope(String);

impl Scope {
    pub fn parse(raw: &str) -> Result<Self, ScopeError> {
        let ok = !raw.is_empty()
            && raw.len() <= 64
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.:*".contains(&b));
        if ok {
            Ok(Scope(raw.to_owned()))
        } else {
            Err(ScopeError(raw.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Scope {
    type Error = ScopeError;
    fn try_from(s: String) -> Result<Self, ScopeError> {
        Scope::parse(&s)
    }
}

impl From<Scope> for String {
    fn from(s: Scope) -> String {
        s.0
    }
}

/// A set of scopes, stored space-separated.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Scopes(BTreeSet<Scope>);

impl Scopes {
    /// What a new key may do unless told otherwise: read pages, discover and run
    /// non-consequential actions. Consequential actions need an explicit approval scope.
    pub fn default_for_new_key() -> Self {
        Self::parse_list("read discover execute").expect("static scopes are valid")
    }

    pub fn parse_list(raw: &str) -> Result<Self, ScopeError> {
        raw.split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(Scope::parse)
            .collect::<Result<BTreeSet<_>, _>>()
            .map(Scopes)
    }

    pub fn contains(&self, scope: &str) -> bool {
        self.0.iter().any(|s| s.as_str() == scope)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Scope> {
        self.0.iter()
    }

    pub fn to_list_string(&self) -> String {
        self.0
            .iter()
            .map(Scope::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes of `self` that `holder` does not carry (empty: `self` is a subset).
    pub fn beyond(&self, holder: &Scopes) -> Vec<Scope> {
        self.0.difference(&holder.0).cloned().collect()
    }

    /// These scopes without `scope`.
    pub fn without(&self, scope: &str) -> Scopes {
        Scopes(
            self.0
                .iter()
                .filter(|s| s.as_str() != scope)
                .cloned()
                .collect(),
        )
    }

    /// The scopes both sets carry.
    pub fn intersection(&self, other: &Scopes) -> Scopes {
        Scopes(self.0.intersection(&other.0).cloned().collect())
    }
}

/// What the store keeps about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub id: ApiKeyId,
    pub account_id: AccountId,
    pub prefix: KeyPrefix,
    pub hash: KeyHash,
    pub scopes: Scopes,
    pub label: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Set when the key was rotated: it keeps working until then (the overlap), then stops.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it last authenticated, to within [`LAST_USED_GRANULARITY`]; `None`: never (or not
    /// since this was recorded).
    pub last_used_at: Option<DateTime<Utc>>,
}

/// How stale a key's `last_used_at` may be: a use is written at most this often per key, so
/// a busy agent's requests do not each write.
pub const LAST_USED_GRANULARITY: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

impl ApiKeyRecord {
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }

    /// Its rotation overlap ended at or before `now`.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|end| now >= end)
    }

    /// Whether it still authenticates at `now`.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        !self.is_revoked() && !self.is_expired(now)
    }

    /// `active`, `rotating` (replaced, working until `expires_at`), `expired` or `revoked`.
    pub fn status(&self, now: DateTime<Utc>) -> &'static str {
        if self.is_revoked() {
            "revoked"
        } else if self.is_expired(now) {
            "expired"
        } else if self.expires_at.is_some() {
            "rotating"
        } else {
            "active"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GOOD: &str = "svc_live_0123456789abcdefghijABCDEFGHIJKL";

    #[test]
    fn parses_both_environments() {
        let k = ApiKeySecret::parse(GOOD).unwrap();
        assert_eq!(k.environment(), Environment::Live);
        assert_eq!(k.prefix().as_str(), "svc_live_01234567");
        let t = ApiKeySecret::parse(&GOOD.replace("live", "test")).unwrap();
        assert_eq!(t.environment(), Environment::Test);
    }

    #[test]
    fn refuses_malformed_keys() {
        assert_eq!(
            ApiKeySecret::parse("sk_live_x"),
            Err(KeyFormatError::BadPrefix)
        );
        assert_eq!(
            ApiKeySecret::parse("svc_live_short"),
            Err(KeyFormatError::BadBody)
        );
        assert_eq!(
            ApiKeySecret::parse(&format!("{GOOD}X")),
            Err(KeyFormatError::BadBody)
        );
        assert_eq!(
            ApiKeySecret::parse("svc_live_0123456789abcdefghijABCDEFGHIJK!"),
            Err(KeyFormatError::BadBody)
        );
        assert_eq!(
            ApiKeySecret::parse("svc_live_0123456789abcdefghijABCDEFGHIJKé"),
            Err(KeyFormatError::BadBody)
        );
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let k = ApiKeySecret::parse(GOOD).unwrap();
        let shown = format!("{k:?}");
        assert!(!shown.contains(GOOD), "{shown}");
        assert!(shown.contains("svc_live_01234567"));
    }

    #[test]
    fn hash_is_sha256_of_the_key() {
        let k = ApiKeySecret::parse(GOOD).unwrap();
        let hex = k.hash().to_hex();
        assert_eq!(hex.len(), 64);
        assert_eq!(KeyHash::from_hex(&hex), Some(k.hash()));
        assert_ne!(
            ApiKeySecret::parse(&GOOD.replace('0', "Z")).unwrap().hash(),
            k.hash()
        );
        assert_eq!(KeyHash::from_hex("zz"), None);
    }

    #[test]
    fn scopes_parse_and_normalise() {
        let s = Scopes::parse_list("read, execute  read").unwrap();
        assert_eq!(s.to_list_string(), "execute read");
        assert!(s.contains("read"));
        assert!(!s.contains("discover"));
        assert!(Scopes::parse_list("READ").is_err());
        assert!(Scopes::parse_list("").unwrap().is_empty());
    }

    proptest! {
        #[test]
        fn generated_keys_always_parse(body in "[0-9A-Za-z]{32}", live in any::<bool>()) {
            let env = if live { Environment::Live } else { Environment::Test };
            let k = ApiKeySecret::from_random(env, &body).unwrap();
            prop_assert_eq!(ApiKeySecret::parse(k.expose()).unwrap(), k.clone());
            prop_assert!(KeyPrefix::parse(k.prefix().as_str()).is_ok());
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,60}") {
            let _ = ApiKeySecret::parse(&s);
            let _ = KeyPrefix::parse(&s);
            let _ = Scope::parse(&s);
        }
    }
}
