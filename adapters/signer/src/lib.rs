//! Signing and offline verification of verification artifacts.
//!
//! An artifact is signed with Ed25519 over its canonical JSON (RFC 8785, JCS) with the
//! `signature` member removed; the signature is `{alg: "EdDSA", kid, value}` where `value` is
//! base64url without padding. The public keys are a JWK Set (OKP / Ed25519) whose `kid`s are
//! RFC 7638 thumbprints, so anyone holding the JWKS can verify an artifact offline:
//!
//! ```
//! use svc_ports::Signer;
//! use svc_signer::{Ed25519Signer, sign_artifact, verify_artifact};
//!
//! let signer = Ed25519Signer::from_seed([7; 32]);
//! let artifact = sign_artifact(&signer, serde_json::json!({"task_id": "t1", "status": "completed"}));
//! verify_artifact(&artifact, &signer.jwks()).unwrap();
//! ```

mod jcs;
mod keys;
mod verify;

pub use jcs::{canonical_json, signing_bytes};
pub use keys::{Ed25519Signer, RetiredKey, load_or_create_key_file, parse_seed, seed_to_string};
pub use verify::{VerifyError, sign_artifact, sign_verification_artifact, verify_artifact};

/// The JWS `alg` of every signature this crate makes or accepts.
pub const ALG: &str = "EdDSA";
