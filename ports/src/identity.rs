//! Identity: RFC 8628 device grants, emailed one-time codes and signed-in web sessions.
//!
//! Every secret here (device code, email code, session token) is stored only as a SHA-256
//! [`KeyHash`]; the clear value exists in the answer or the email that hands it over.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::{
    account::Email,
    ids::{AccountId, ApiKeyId, ChallengeId, DeviceGrantId},
    keys::{KeyHash, Scopes},
};

/// Characters of a user code: consonants without vowels or look-alikes (RFC 8628 §6.1), so no
/// word can be spelled and nothing is mistaken when read aloud.
pub const USER_CODE_ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
pub const USER_CODE_LEN: usize = 8;
/// Digits in an emailed one-time code.
pub const EMAIL_CODE_LEN: usize = 6;
/// Wrong tries after which an emailed code is dead.
pub const MAX_CODE_ATTEMPTS: u32 = 5;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a user code is 8 letters of BCDFGHJKLMNPQRSTVWXZ, written XXXX-XXXX")]
pub struct UserCodeError;

/// The short code a human confirms on the device page: 8 letters, shown `XXXX-XXXX`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct UserCode(String);

impl UserCode {
    /// Accepts what people type: any case, with or without the hyphen or spaces.
    pub fn parse(raw: &str) -> Result<Self, UserCodeError> {
        let normal: String = raw
            .chars()
            .filter(|c| !matches!(c, '-' | ' ' | '\t'))
            .map(|c| c.to_ascii_uppercase())
            .collect();
        let ok = normal.len() == USER_CODE_LEN
            && normal.bytes().all(|b| USER_CODE_ALPHABET.contains(&b));
        if ok {
            Ok(Self(normal))
        } else {
            Err(UserCodeError)
        }
    }

    /// The stored form: 8 letters without the hyphen.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shown form: `XXXX-XXXX`.
    pub fn display(&self) -> String {
        format!("{}-{}", &self.0[..4], &self.0[4..])
    }
}

impl fmt::Debug for UserCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserCode({})", self.display())
    }
}

/// Where a device grant stands. Issued is final: a device code yields one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceGrantStatus {
    Pending,
    Approved,
    Denied,
    Issued,
}

impl DeviceGrantStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Issued => "issued",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::Approved, Self::Denied, Self::Issued]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// One RFC 8628 device authorization: an agent asked for a key, a human decides.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceGrant {
    pub id: DeviceGrantId,
    pub device_code_hash: KeyHash,
    pub user_code: UserCode,
    /// The OAuth `client_id` the agent sent (public clients are not registered).
    pub client_id: String,
    /// How the agent named itself, shown to the human.
    pub agent_name: Option<String>,
    pub scopes: Scopes,
    pub status: DeviceGrantStatus,
    /// The approving human's account, once approved.
    pub account_id: Option<AccountId>,
    /// The key handed out, once issued.
    pub key_id: Option<ApiKeyId>,
    /// Seconds the agent must wait between polls; grows by 5 on `slow_down`.
    pub interval_secs: u32,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_polled_at: Option<DateTime<Utc>>,
}

impl DeviceGrant {
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        now >= self.expires_at
    }
}

/// The human's decision on a pending device grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceDecision {
    /// Approved for `account`, with the `scopes` the human granted (what the agent asked for,
    /// less what the human left unticked); the store keeps them as the grant's scopes.
    Approve {
        account: AccountId,
        scopes: Scopes,
    },
    Deny,
}

/// What an emailed code proves, once entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengePurpose {
    /// A human signing in to the web pages.
    SignIn,
    /// An agent's email-code signup (`/api/register`): yields an API key.
    ApiKey,
}

impl ChallengePurpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
            Self::ApiKey => "api_key",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::SignIn, Self::ApiKey]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// A 6-digit code sent to an address; its id is the `deviceId` of `/api/register`.
#[derive(Debug, Clone, PartialEq)]
pub struct EmailChallenge {
    pub id: ChallengeId,
    pub purpose: ChallengePurpose,
    pub email: Email,
    /// SHA-256 of `"{id}:{code}"`, so equal codes of two challenges hash apart.
    pub code_hash: KeyHash,
    pub agent_name: Option<String>,
    pub scopes: Scopes,
    /// Codes compared so far (right or wrong); at [`MAX_CODE_ATTEMPTS`] the challenge is dead.
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub consumed_at: Option<DateTime<Utc>>,
    /// Started by a browser that signed in as the address before (its mark). Wrong codes are
    /// counted apart for such challenges and the others, each with the day's limit, so
    /// strangers' guesses, which lock the address's other codes for a day, never lock the
    /// person's own browser out; whoever holds a mark adds only that pool's guesses.
    pub known_browser: bool,
}

impl EmailChallenge {
    pub fn code_hash_of(id: &ChallengeId, code: &str) -> KeyHash {
        KeyHash::of(&format!("{id}:{code}"))
    }
}

/// A signed-in browser: the cookie's token, hashed, bound to an account.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSession {
    pub token_hash: KeyHash,
    pub account_id: AccountId,
    pub reach: SessionReach,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A browser that signed in as an address with an e-mailed code: its long-lived cookie's
/// token, hashed. It proves nothing and opens nothing; it only lets that browser ask for more
/// sign-in codes to the address than anyone may (OWASP's device cookies), so strangers asking
/// for codes cannot hold the person's own sign-in.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownBrowser {
    pub token_hash: KeyHash,
    pub email: Email,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// What a web session may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionReach {
    /// Everything the account's person may do: signed in with a code sent to the account's
    /// e-mail address.
    Account,
    /// The checkout's return page (it says whether the account's checkout was paid), nothing
    /// else: signed in by an agent's handoff link, which any key of the account can ask for
    /// (and its agent can open itself). The account page, keys, payment authorities, devices,
    /// connections and webhooks ask for the e-mailed code.
    Checkout,
}

impl SessionReach {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionReach::Account => "account",
            SessionReach::Checkout => "checkout",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "account" => Ok(SessionReach::Account),
            "checkout" => Ok(SessionReach::Checkout),
            other => Err(format!("unknown session reach {other:?}")),
        }
    }
}
