//! Verification artifacts: what happened when an action ran, signed so anyone can check it
//! offline against the service's JWKS.
//!
//! The signature is Ed25519 over the artifact without its `signature` member, serialised as
//! canonical JSON (RFC 8785, JCS); `value` is base64url without padding.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an artifact attests. A payment that started, a payment that completed and a verified
/// business outcome are different facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactStatus {
    Completed,
    Failed,
    PaymentStarted,
    PaymentCompleted,
    Verified,
}

impl ArtifactStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::PaymentStarted => "payment_started",
            Self::PaymentCompleted => "payment_completed",
            Self::Verified => "verified",
        }
    }
}

/// Where the evidence came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactSource {
    pub domain: String,
    pub action: String,
    /// The URL the action's request went to.
    pub url: String,
}

/// `{alg: "EdDSA", kid, value}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactSignature {
    pub alg: String,
    pub kid: String,
    /// base64url (no padding) of the 64-byte Ed25519 signature.
    pub value: String,
}

/// The signed record returned with every settled task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerificationArtifact {
    pub artifact_id: String,
    pub task_id: String,
    pub source: ArtifactSource,
    /// RFC 3339, UTC.
    pub timestamp: DateTime<Utc>,
    pub status: ArtifactStatus,
    /// What was observed: HTTP status, which verification rules held, hashes of the response
    /// and of the extracted outputs.
    pub evidence: Value,
    /// `null` when the action completed.
    pub failure_class: Option<String>,
    pub signature: ArtifactSignature,
}

/// Signs artifacts. Implementations hold the private keys; the public half of every key that
/// may still have signed a live artifact (the active one and retired ones) is in [`Signer::jwks`].
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Signer: Send + Sync {
    /// Signs the canonical JSON (RFC 8785) of `unsigned` (an artifact without its `signature`
    /// member; one that is present is left out) with the active key: `alg` is `EdDSA`, `kid`
    /// names the key in the JWKS.
    fn sign(&self, unsigned: &Value) -> ArtifactSignature;

    /// The JWK Set (`{"keys": [{"kty": "OKP", "crv": "Ed25519", "x", "kid", "use": "sig",
    /// "alg": "EdDSA"}]}`) served at `/.well-known/jwks.json`.
    fn jwks(&self) -> Value;

    /// Checks `artifact`'s signature against the key its `kid` names in [`Self::jwks`]
    /// (active or retired), exactly as an offline verifier would with the JWKS; `Err` says
    /// why it does not verify, in a sentence.
    fn verify(&self, artifact: &Value) -> Result<(), String>;
}
