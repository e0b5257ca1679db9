//! Target-site connections: an agent's human links an upstream account on a target site (OAuth
//! with PKCE), and the service keeps the sealed credentials to act there on their behalf.
//!
//! A connection starts `pending` with a connect link that lives [`CONNECT_LINK_TTL_MINUTES`];
//! it is finished exactly once (connected, refused, wrong account or expired). A connected one
//! may expire later, when its credentials can no longer be refreshed. Secrets never appear in
//! the clear here: the OAuth `state` is kept as its SHA-256, and the PKCE verifier and the
//! credentials as [`SealedSecret`]s (ciphertext made elsewhere).

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ids::{AccountId, ConnectionId};
use crate::store::StoreError;

/// How long a connect link is valid after the connection is created.
pub const CONNECT_LINK_TTL_MINUTES: i64 = 10;

/// A connection provider id: exactly the `auth_provider` an action declares, written like a
/// site's name and top-level domain joined by a hyphen (`booking-sandbox`, `shop-example`).
/// Lowercase ASCII letters, digits and hyphens, at least one hyphen, none leading, trailing or
/// doubled, 3 to 63 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProviderId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a provider id is 3 to 63 lowercase letters, digits and single inner hyphens, with at least one hyphen (like `shop-example`)"
)]
pub struct ProviderIdError;

impl ProviderId {
    pub const MIN_LEN: usize = 3;
    pub const MAX_LEN: usize = 63;

    pub fn parse(raw: &str) -> Result<Self, ProviderIdError> {
        let ok = (Self::MIN_LEN..=Self::MAX_LEN).contains(&raw.len())
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && raw.contains('-')
            && !raw.starts_with('-')
            && !raw.ends_with('-')
            && !raw.contains("--");
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ProviderIdError)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ProviderId {
    type Error = ProviderIdError;
    fn try_from(raw: String) -> Result<Self, ProviderIdError> {
        Self::parse(&raw)
    }
}

impl From<ProviderId> for String {
    fn from(p: ProviderId) -> String {
        p.0
    }
}

/// Where a connection stands. Polling stops at a final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    Pending,
    Connected,
    Expired,
    Refused,
    WrongAccount,
}

impl ConnectionState {
    pub const ALL: [Self; 5] = [
        Self::Pending,
        Self::Connected,
        Self::Expired,
        Self::Refused,
        Self::WrongAccount,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Connected => "connected",
            Self::Expired => "expired",
            Self::Refused => "refused",
            Self::WrongAccount => "wrong_account",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Expired, refused and wrong account never change again. Connected is not final: it
    /// expires when its credentials can no longer be refreshed.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Expired | Self::Refused | Self::WrongAccount)
    }
}

/// Ciphertext (sealed by an AEAD cipher outside this crate). Opaque here: its `Debug` shows
/// only its length, so it never reaches a log.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSecret(Vec<u8>);

impl SealedSecret {
    pub fn new(ciphertext: Vec<u8>) -> Self {
        Self(ciphertext)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SealedSecret(<{} bytes>)", self.0.len())
    }
}

/// Hex SHA-256 of an OAuth `state` parameter: what is stored and looked up, never the state.
pub fn oauth_state_hash(state: &str) -> String {
    Sha256::digest(state.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    pub id: ConnectionId,
    pub account_id: AccountId,
    pub provider: ProviderId,
    /// The upstream account the agent said it expects (checked when the provider answers).
    pub expected_account: Option<String>,
    /// The upstream account the provider reported.
    pub upstream_account: Option<String>,
    pub state: ConnectionState,
    /// Hex SHA-256 of the OAuth `state` parameter (see [`oauth_state_hash`]).
    pub oauth_state_hash: String,
    pub pkce_verifier: SealedSecret,
    pub credentials: Option<SealedSecret>,
    pub credentials_expire_at: Option<DateTime<Utc>>,
    /// The connect link's expiry ([`CONNECT_LINK_TTL_MINUTES`] after creation).
    pub link_expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// How a pending connection ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionFinish {
    Connected {
        upstream_account: String,
        credentials: SealedSecret,
        credentials_expire_at: Option<DateTime<Utc>>,
    },
    /// The human declined at the provider.
    Refused,
    /// The provider reported another upstream account than the expected one.
    WrongAccount { upstream_account: String },
    /// The link expired before the human finished.
    Expired,
}

impl ConnectionFinish {
    pub fn state(&self) -> ConnectionState {
        match self {
            Self::Connected { .. } => ConnectionState::Connected,
            Self::Refused => ConnectionState::Refused,
            Self::WrongAccount { .. } => ConnectionState::WrongAccount,
            Self::Expired => ConnectionState::Expired,
        }
    }

    /// The record once this finish lands on it (what every store writes).
    pub fn apply(&self, record: &ConnectionRecord, at: DateTime<Utc>) -> ConnectionRecord {
        let mut next = record.clone();
        next.state = self.state();
        next.updated_at = at;
        match self {
            Self::Connected {
                upstream_account,
                credentials,
                credentials_expire_at,
            } => {
                next.upstream_account = Some(upstream_account.clone());
                next.credentials = Some(credentials.clone());
                next.credentials_expire_at = *credentials_expire_at;
            }
            Self::WrongAccount { upstream_account } => {
                next.upstream_account = Some(upstream_account.clone());
            }
            Self::Refused | Self::Expired => {}
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn provider_ids_are_site_names_joined_by_hyphens() {
        for ok in ["booking-sandbox", "shop-example", "a-b", "x1-y2-z3"] {
            assert_eq!(ProviderId::parse(ok).unwrap().as_str(), ok);
        }
        for bad in [
            "",
            "ab",
            "shop",
            "-shop-example",
            "shop-example-",
            "shop--example",
            "Shop-example",
            "shop_example",
            "shop.example",
            "shop-exämple",
            &format!("a-{}", "b".repeat(62)),
        ] {
            assert_eq!(ProviderId::parse(bad), Err(ProviderIdError), "{bad}");
        }
        assert!(ProviderId::parse(&format!("a-{}", "b".repeat(61))).is_ok());
    }

    #[test]
    fn states_round_trip_and_three_are_final() {
        for s in ConnectionState::ALL {
            assert_eq!(ConnectionState::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::Value::String(s.as_str().into())
            );
        }
        let finals: Vec<_> = ConnectionState::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        assert_eq!(
            finals,
            [
                ConnectionState::Expired,
                ConnectionState::Refused,
                ConnectionState::WrongAccount
            ]
        );
    }

    #[test]
    fn sealed_secrets_never_show_their_bytes() {
        let s = SealedSecret::new(b"very secret".to_vec());
        assert_eq!(format!("{s:?}"), "SealedSecret(<11 bytes>)");
        assert_eq!(
            oauth_state_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    proptest! {
        #[test]
        fn provider_parse_never_panics_and_accepts_only_the_grammar(s in ".{0,70}") {
            if let Ok(p) = ProviderId::parse(&s) {
                prop_assert_eq!(p.as_str(), s.as_str());
                prop_assert!((3..=63).contains(&s.len()));
                prop_assert!(s.contains('-') && !s.contains("--"));
                prop_assert!(!s.starts_with('-') && !s.ends_with('-'));
                prop_assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
            }
        }

        #[test]
        fn well_formed_ids_are_accepted(parts in proptest::collection::vec("[a-z0-9]{1,10}", 2..5)) {
            let id = parts.join("-");
            prop_assume!(id.len() <= 63);
            prop_assert_eq!(ProviderId::parse(&id).unwrap().to_string(), id);
        }

        #[test]
        fn serde_agrees_with_parse(s in "[a-z0-9-]{0,12}") {
            let via_serde: Result<ProviderId, _> = serde_json::from_value(serde_json::Value::String(s.clone()));
            prop_assert_eq!(via_serde.ok(), ProviderId::parse(&s).ok());
        }
    }
}

// ---- the outside world of connections ----------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a sealed secret could not be opened: {0}")]
pub struct SealError(pub String);

/// Seals secrets (tokens, cookies, PKCE verifiers, webhook secrets) for storage.
/// Implementations MUST use authenticated encryption with a fresh nonce per seal and bind
/// `context` (what the secret belongs to, [`seal_context`]) as associated data: `open` MUST
/// fail with [`SealError`] for anything not sealed by one of their keys, altered since, or
/// sealed for another context, so a sealed value copied into another record (a bad update, a
/// mixed-up restore, someone with write access to the store but not the key) is refused
/// rather than used as that record's. Values sealed before contexts existed (the adapter's
/// first format) open under any context; [`SecretSealer::reseal`] (`svc reseal`) rewrites them
/// bound to their record, and those sealed by a retired key under the active one.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait SecretSealer: Send + Sync {
    fn seal(&self, plaintext: &[u8], context: &str) -> SealedSecret;
    fn open(&self, sealed: &SealedSecret, context: &str) -> Result<Vec<u8>, SealError>;
    /// `sealed` sealed again the current way (by the active key, bound to `context`) when it
    /// is not sealed so already; `Ok(None)` when it is. MUST fail with [`SealError`] exactly
    /// when `open` would.
    fn reseal(
        &self,
        sealed: &SealedSecret,
        context: &str,
    ) -> Result<Option<SealedSecret>, SealError>;
}

/// A field of a stored record that holds a sealed value, and the context it is sealed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SealedField {
    /// A connected connection's grant (`connections.credentials`).
    ConnectionCredentials,
    /// A connection attempt's PKCE verifier (`connections.pkce_verifier`).
    ConnectionPkceVerifier,
    /// A webhook endpoint's signing secret (`webhook_endpoints.secret`).
    WebhookSecret,
}

impl SealedField {
    pub const ALL: [SealedField; 3] = [
        SealedField::ConnectionCredentials,
        SealedField::ConnectionPkceVerifier,
        SealedField::WebhookSecret,
    ];

    /// `table.column`, for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SealedField::ConnectionCredentials => "connections.credentials",
            SealedField::ConnectionPkceVerifier => "connections.pkce_verifier",
            SealedField::WebhookSecret => "webhook_endpoints.secret",
        }
    }

    /// The context a value of this field in record `id` is sealed for.
    pub fn context(self, id: &str) -> String {
        match self {
            SealedField::ConnectionCredentials => seal_context("connection", id, "credentials"),
            SealedField::ConnectionPkceVerifier => seal_context("connection", id, "pkce_verifier"),
            SealedField::WebhookSecret => seal_context("webhook_endpoint", id, "secret"),
        }
    }
}

/// The context a secret is sealed for: the record's kind, its id and the field,
/// `{record}:{id}:{field}` (for example `connection:01J…:credentials`).
pub fn seal_context(record: &str, id: &str, field: &str) -> String {
    format!("{record}:{id}:{field}")
}

/// Every sealed value the store keeps, field by field, for sealing them again under the active
/// key (`svc reseal`, [`SecretSealer::reseal`]) while instances serve.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait SealedStore: Send + Sync {
    /// Up to `limit` values of `field` as `(record id, value)` in the store's order of ids,
    /// from the first id after `after` (from the start when `None`); records of any state
    /// (a deleted endpoint's too), without those where the field is empty (a connection
    /// without credentials).
    async fn sealed_values(
        &self,
        field: SealedField,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<(String, SealedSecret)>, StoreError>;

    /// Replaces the value of `field` in record `id` by `new` only when it is still `old` byte
    /// for byte (a refresh may have replaced it meanwhile), changing nothing else; answers
    /// whether it did.
    async fn replace_sealed(
        &self,
        field: SealedField,
        id: &str,
        old: &SealedSecret,
        new: &SealedSecret,
    ) -> Result<bool, StoreError>;
}

/// How a credential is presented to the target site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    /// `Authorization: Bearer <token>` (OAuth 2.0 access token).
    Bearer,
    /// `Cookie: <value>` (managed partners whose sessions are cookies).
    Cookie,
}

/// What the provider granted. Never logged: `Debug` shows no token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderGrant {
    pub kind: CredentialKind,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The upstream account the provider says the token belongs to.
    pub upstream_account: String,
}

impl fmt::Debug for ProviderGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderGrant")
            .field("kind", &self.kind)
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("upstream_account", &self.upstream_account)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionProviderError {
    /// No provider with this id is configured.
    #[error("no connection provider `{0}` is configured")]
    UnknownProvider(String),
    /// The provider refused the code or the refresh token (`invalid_grant` and the like).
    #[error("the provider refused: {0}")]
    Refused(String),
    /// The provider could not be reached or answered nonsense.
    #[error("the provider is unavailable: {0}")]
    Unavailable(String),
}

/// The authorization servers of target sites (OAuth 2.0 authorization code with PKCE S256).
/// Implementations MUST send `code_verifier` with every code exchange, MUST NOT follow
/// redirects from the token endpoint, and MUST return [`ConnectionProviderError::Refused`]
/// (not `Unavailable`) when the provider answers `invalid_grant`.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait ConnectionProvider: Send + Sync {
    /// Whether `provider` is configured here.
    fn serves(&self, provider: &ProviderId) -> bool;

    /// Whether `provider`'s credentials may be sent to `host`. MUST be false unless `host` is
    /// one of the provider's configured hosts or a subdomain of one: a map of another site
    /// that names this provider never receives its tokens.
    fn may_receive(&self, provider: &ProviderId, host: &str) -> bool;

    /// Where the human's browser goes to authorize; `pkce_verifier` never leaves this process
    /// (only its S256 challenge does).
    fn authorization_url(
        &self,
        provider: &ProviderId,
        state: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
        login_hint: Option<String>,
    ) -> Result<String, ConnectionProviderError>;

    async fn exchange_code(
        &self,
        provider: &ProviderId,
        code: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
    ) -> Result<ProviderGrant, ConnectionProviderError>;

    /// New tokens for a connection of `account` (the upstream account it holds). Providers
    /// rotate refresh tokens, so tokens the provider gave MUST be answered, not lost: when it
    /// cannot say whose they are just then (its userinfo fails), they are answered as
    /// `account`'s.
    async fn refresh(
        &self,
        provider: &ProviderId,
        refresh_token: &str,
        account: &str,
    ) -> Result<ProviderGrant, ConnectionProviderError>;
}
