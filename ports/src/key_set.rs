//! One key set per database: which signing key, which connection-sealing key and which Web Bot
//! Auth key the instances sharing a store use, recorded by identity (never the key itself) so that an instance started
//! with another key refuses to start instead of signing artifacts nobody can verify or sealing
//! credentials the other instances cannot open.
//!
//! The record of a kind is a *set* of keys, so a rolling rotation works: old instances (current
//! key recorded) and new ones (a new current key, the recorded one among their retired keys)
//! run side by side; the first new one to start adds its key to the set. [`admit`] decides.

use async_trait::async_trait;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::store::StoreError;

/// Which key a record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// The Ed25519 key that signs verification artifacts (identified by its JWKS `kid`).
    Signing,
    /// The AES-256-GCM key that seals target-site credentials (identified by
    /// [`KeyFingerprint::of_secret_key`]).
    Connection,
    /// The Ed25519 key that signs outbound requests (Web Bot Auth), identified by its `keyid`
    /// (the RFC 7638 thumbprint): every instance serves the directory, so every instance must
    /// publish the key the others sign with.
    WebBotAuth,
}

impl KeyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signing => "signing",
            Self::Connection => "connection",
            Self::WebBotAuth => "web_bot_auth",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "signing" => Some(Self::Signing),
            "connection" => Some(Self::Connection),
            "web_bot_auth" => Some(Self::WebBotAuth),
            _ => None,
        }
    }
}

/// The public identity of a key: a signing key's `kid` (the RFC 7638 thumbprint of its public
/// half) or a secret key's HMAC fingerprint. 16 to 128 characters of base64url or hex; it
/// reveals nothing of a secret key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyFingerprint(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a key fingerprint is 16 to 128 characters of A-Z, a-z, 0-9, `-` and `_`")]
pub struct FingerprintError;

/// What the fingerprint of a secret key is computed under (domain separation: the same key used
/// for anything else never yields this value).
const SECRET_KEY_LABEL: &[u8] = b"svc key-set fingerprint v1";

impl KeyFingerprint {
    pub fn parse(s: &str) -> Result<Self, FingerprintError> {
        let ok = (16..=128).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(FingerprintError)
        }
    }

    /// HMAC-SHA256 of a fixed label under `key`, in hex: equal keys give equal fingerprints,
    /// and the fingerprint tells nothing about the key.
    pub fn of_secret_key(key: &[u8]) -> Self {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
        mac.update(SECRET_KEY_LABEL);
        Self(
            mac.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 characters, enough for an operator to tell keys apart in a message.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

impl std::fmt::Display for KeyFingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an instance's keys mean against the record of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Nothing is recorded yet: the current key becomes the first.
    First,
    /// The current key is recorded.
    Known,
    /// The current key is new and a retired key is recorded: a rotation, the current key is
    /// added to the record (the retired one stays accepted).
    Rotation,
    /// Neither the current key nor any retired key is recorded: the instance must not start.
    Refused,
}

/// Decides whether an instance with `current` (and `retired`) keys may use a store whose record
/// of that kind is `recorded`.
pub fn admit(
    recorded: &[KeyFingerprint],
    current: &KeyFingerprint,
    retired: &[KeyFingerprint],
) -> Admission {
    if recorded.is_empty() {
        Admission::First
    } else if recorded.contains(current) {
        Admission::Known
    } else if retired.iter().any(|r| recorded.contains(r)) {
        Admission::Rotation
    } else {
        Admission::Refused
    }
}

/// The record of the keys the instances sharing a store use. Keys only ever join a record.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait KeySetStore: Send + Sync {
    /// The keys recorded for `kind`, first recorded first; empty before any was recorded.
    async fn recorded_keys(&self, kind: KeyKind) -> Result<Vec<KeyFingerprint>, StoreError>;

    /// Records `key` as the first key of `kind` when none is recorded, and answers the record
    /// afterwards. When a key is recorded already, MUST change nothing. Race-safe: when first
    /// starts with different keys race, exactly one key is recorded and every caller is
    /// answered that record.
    async fn record_first_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError>;

    /// Adds `key` to the record of `kind` (a rotation; [`admit`] said so), and answers the
    /// record afterwards. Idempotent: a recorded key is not added twice.
    async fn record_rotated_key(
        &self,
        kind: KeyKind,
        key: &KeyFingerprint,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<KeyFingerprint>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(s: &str) -> KeyFingerprint {
        KeyFingerprint::parse(&format!("{s:0<16}")).unwrap()
    }

    #[test]
    fn admission_follows_the_record() {
        let (a, b, c) = (fp("a"), fp("b"), fp("c"));
        assert_eq!(admit(&[], &a, &[]), Admission::First);
        assert_eq!(admit(std::slice::from_ref(&a), &a, &[]), Admission::Known);
        assert_eq!(
            admit(std::slice::from_ref(&a), &b, std::slice::from_ref(&a)),
            Admission::Rotation
        );
        // Rolling: an old instance after the new key joined the record.
        assert_eq!(admit(&[a.clone(), b.clone()], &a, &[]), Admission::Known);
        assert_eq!(
            admit(std::slice::from_ref(&a), &b, std::slice::from_ref(&c)),
            Admission::Refused
        );
        assert_eq!(admit(std::slice::from_ref(&a), &b, &[]), Admission::Refused);
    }

    #[test]
    fn secret_fingerprints_are_stable_distinct_and_not_the_key() {
        let key = [7u8; 32];
        let f = KeyFingerprint::of_secret_key(&key);
        assert_eq!(f, KeyFingerprint::of_secret_key(&key));
        assert_ne!(f, KeyFingerprint::of_secret_key(&[8u8; 32]));
        assert_eq!(f.as_str().len(), 64);
        assert!(KeyFingerprint::parse(f.as_str()).is_ok());
        assert!(!f.as_str().contains(&"07".repeat(4)));
        assert_eq!(f.short().len(), 12);
    }

    #[test]
    fn fingerprints_are_checked() {
        assert!(KeyFingerprint::parse("short").is_err());
        assert!(KeyFingerprint::parse(&"a".repeat(129)).is_err());
        assert!(KeyFingerprint::parse("abcdefgh ijklmnop").is_err());
        assert!(KeyFingerprint::parse("abcdefgh-ijklmn_p").is_ok());
    }
}
