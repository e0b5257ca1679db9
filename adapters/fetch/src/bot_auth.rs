//! Web Bot Auth: every request the guarded client sends is signed with HTTP Message Signatures
//! (RFC 9421) as the Web Bot Auth protocol draft (draft-ietf-webbotauth-httpsig-protocol)
//! profiles them, so a site can tell this service's reader, scanner, learner and actions from
//! anyone borrowing its User-Agent:
//!
//! ```text
//! Signature-Agent: sig1="https://svc.example"
//! Signature-Input: sig1=("@authority" "signature-agent";key="sig1");created=..;keyid="<RFC 7638
//!   thumbprint>";alg="ed25519";expires=..;nonce="..";tag="web-bot-auth"
//! Signature: sig1=:<Ed25519 signature, base64>:
//! ```
//!
//! The key set is served at `/.well-known/http-message-signatures-directory` (JWKS, each `kid`
//! the key's thumbprint), the current key and the previous ones during a rotation, each response
//! carrying one possession proof per key it can sign with (the draft's directory response
//! signature over `@authority;req` and `content-digest`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use svc_ports::bot_auth::{BotDirectory, DirectoryProof};
use url::Url;

/// The label of our one signature, and the `Signature-Agent` member it covers.
const LABEL: &str = "sig1";
/// The tag the protocol draft fixes for request signatures.
const TAG: &str = "web-bot-auth";
/// The tag of a directory's possession proofs.
const DIRECTORY_TAG: &str = "http-message-signatures-directory";
/// How long a directory proof stays valid: verifiers redistributing the key set keep it.
const DIRECTORY_PROOF_LIFETIME: u64 = 7 * 24 * 3600;
/// The default lifetime of a request signature (`SVC_WEB_BOT_AUTH_LIFETIME_SECONDS`).
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(60);

/// A key in the directory: one we sign with, or a previous one only published.
struct Key {
    public: [u8; 32],
    signing: Option<SigningKey>,
    thumbprint: String,
}

impl Key {
    fn new(public: [u8; 32], signing: Option<SigningKey>) -> Self {
        Self {
            thumbprint: jwk_thumbprint(&public),
            public,
            signing,
        }
    }
}

/// A previous key kept in the directory while verifiers may still hold signatures made with it.
pub enum PreviousKey {
    /// Its seed: the directory also proves possession of it.
    Seed([u8; 32]),
    /// Its public key only (a JWK's `x`).
    Public([u8; 32]),
}

/// This service's Web Bot Auth identity: the key that signs, the keys published, and the
/// `Signature-Agent` URL (the origin serving the directory).
pub struct BotAuth {
    current: Key,
    previous: Vec<Key>,
    /// The `Signature-Agent` member value, as a serialized structured-field string.
    agent: String,
    lifetime: Duration,
}

impl std::fmt::Debug for BotAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotAuth")
            .field("keyid", &self.current.thumbprint)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

/// Why a Web Bot Auth identity could not be made; never echoes key material.
#[derive(Debug, thiserror::Error)]
pub enum BotAuthError {
    #[error("the Signature-Agent must be an http(s) origin, got {0:?}")]
    Agent(String),
    #[error("previous key #{0} is not a valid Ed25519 public key")]
    Previous(usize),
}

impl BotAuth {
    /// `agent` is the origin serving the directory (`SVC_SITE_URL`'s origin): verifiers fetch
    /// `{agent}/.well-known/http-message-signatures-directory`.
    pub fn new(
        seed: [u8; 32],
        previous: Vec<PreviousKey>,
        agent: &str,
        lifetime: Duration,
    ) -> Result<Self, BotAuthError> {
        let origin = Url::parse(agent)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .map(|u| u.origin().ascii_serialization())
            .ok_or_else(|| BotAuthError::Agent(agent.to_owned()))?;
        let signing = SigningKey::from_bytes(&seed);
        let current = Key::new(signing.verifying_key().to_bytes(), Some(signing));
        let mut keys: Vec<Key> = Vec::new();
        for (i, p) in previous.into_iter().enumerate() {
            let key = match p {
                PreviousKey::Seed(seed) => {
                    let s = SigningKey::from_bytes(&seed);
                    Key::new(s.verifying_key().to_bytes(), Some(s))
                }
                PreviousKey::Public(public) => {
                    VerifyingKey::from_bytes(&public).map_err(|_| BotAuthError::Previous(i + 1))?;
                    Key::new(public, None)
                }
            };
            // The current key, or one listed twice, is published once.
            if key.thumbprint != current.thumbprint
                && !keys.iter().any(|k| k.thumbprint == key.thumbprint)
            {
                keys.push(key);
            }
        }
        Ok(Self {
            current,
            previous: keys,
            agent: sf_string(&origin),
            lifetime,
        })
    }

    /// The `keyid`s of the previous keys still published.
    pub fn previous_keyids(&self) -> Vec<&str> {
        self.previous
            .iter()
            .map(|k| k.thumbprint.as_str())
            .collect()
    }

    /// The `keyid` of request signatures: the current key's JWK thumbprint.
    pub fn keyid(&self) -> &str {
        &self.current.thumbprint
    }

    /// The three headers that sign a request to `url` at `created` (Unix seconds).
    pub fn headers_for(&self, url: &Url, created: u64, nonce: &str) -> [(&'static str, String); 3] {
        let params = RequestParams {
            created,
            keyid: &self.current.thumbprint,
            expires: created + self.lifetime.as_secs(),
            nonce,
        };
        let base = request_signature_base(&authority(url), &self.agent, &params);
        let signature = self
            .current
            .signing
            .as_ref()
            .map(|k| k.sign(base.as_bytes()));
        let signature = signature
            .map(|s| STANDARD.encode(s.to_bytes()))
            .unwrap_or_default();
        [
            ("signature-agent", format!("{LABEL}={}", self.agent)),
            ("signature-input", format!("{LABEL}={}", params.serialize())),
            ("signature", format!("{LABEL}=:{signature}:")),
        ]
    }

    /// Signs `builder`'s request to `url` now, with a fresh nonce.
    pub(crate) fn sign(
        &self,
        builder: reqwest::RequestBuilder,
        url: &Url,
    ) -> reqwest::RequestBuilder {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut nonce = [0u8; 32];
        if getrandom::fill(&mut nonce).is_err() {
            // Without randomness the nonce cannot be one: the signature still holds without it.
            tracing::warn!("no randomness for a Web Bot Auth nonce");
        }
        self.headers_for(url, created, &STANDARD.encode(nonce))
            .into_iter()
            .fold(builder, |b, (name, value)| b.header(name, value))
    }
}

/// Signs `builder` when an identity is configured (`SVC_WEB_BOT_AUTH` on), else leaves it.
pub(crate) fn signed(
    builder: reqwest::RequestBuilder,
    identity: Option<&BotAuth>,
    url: &Url,
) -> reqwest::RequestBuilder {
    match identity {
        Some(identity) => identity.sign(builder, url),
        None => builder,
    }
}

impl BotDirectory for BotAuth {
    fn jwks(&self) -> Vec<u8> {
        // Written out so the members keep the draft's order (serde_json's map sorts them);
        // every value is base64url, nothing to escape.
        let keys: Vec<String> = std::iter::once(&self.current)
            .chain(&self.previous)
            .map(|k| {
                format!(
                    "{{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"{}\",\"x\":\"{}\",\"use\":\"sig\"}}",
                    k.thumbprint,
                    URL_SAFE_NO_PAD.encode(k.public)
                )
            })
            .collect();
        format!("{{\"keys\":[{}]}}", keys.join(",")).into_bytes()
    }

    fn proof(&self, authority: &str, body: &[u8], created: u64) -> DirectoryProof {
        let content_digest = content_digest(body);
        let mut inputs = Vec::new();
        let mut signatures = Vec::new();
        let signers = std::iter::once(&self.current).chain(&self.previous);
        for (i, key) in signers.enumerate() {
            let Some(signing) = &key.signing else {
                continue;
            };
            let label = if i == 0 {
                "binding".to_owned()
            } else {
                format!("binding{}", i + 1)
            };
            let params = directory_params(created, &key.thumbprint);
            let base = directory_signature_base(authority, &content_digest, &params);
            let signature = STANDARD.encode(signing.sign(base.as_bytes()).to_bytes());
            inputs.push(format!("{label}={params}"));
            signatures.push(format!("{label}=:{signature}:"));
        }
        DirectoryProof {
            content_digest,
            signature_input: inputs.join(", "),
            signature: signatures.join(", "),
        }
    }
}

/// The signature parameters of a request signature, in the order the draft's test vectors use.
struct RequestParams<'a> {
    created: u64,
    keyid: &'a str,
    expires: u64,
    nonce: &'a str,
}

impl RequestParams<'_> {
    fn serialize(&self) -> String {
        format!(
            "(\"@authority\" \"signature-agent\";key=\"{LABEL}\");created={};keyid={};alg=\"ed25519\";expires={};nonce={};tag=\"{TAG}\"",
            self.created,
            sf_string(self.keyid),
            self.expires,
            sf_string(self.nonce),
        )
    }
}

/// RFC 9421 section 2.5: one line per covered component, then `@signature-params`.
fn request_signature_base(authority: &str, agent: &str, params: &RequestParams) -> String {
    format!(
        "\"@authority\": {authority}\n\"signature-agent\";key=\"{LABEL}\": {agent}\n\"@signature-params\": {}",
        params.serialize()
    )
}

fn directory_params(created: u64, keyid: &str) -> String {
    format!(
        "(\"@authority\";req \"content-digest\");created={created};expires={};keyid={};tag=\"{DIRECTORY_TAG}\"",
        created + DIRECTORY_PROOF_LIFETIME,
        sf_string(keyid)
    )
}

fn directory_signature_base(authority: &str, digest: &str, params: &str) -> String {
    format!(
        "\"@authority\";req: {authority}\n\"content-digest\": {digest}\n\"@signature-params\": {params}"
    )
}

/// RFC 9530 `Content-Digest` of `body` with SHA-256.
pub fn content_digest(body: &[u8]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(Sha256::digest(body)))
}

/// RFC 9421 section 2.2.3: the target's host, lowercased, with the port unless it is the
/// scheme's default.
pub fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

/// RFC 7638 thumbprint of an Ed25519 public key (RFC 8037 appendix A.3), base64url.
pub fn jwk_thumbprint(public: &[u8; 32]) -> String {
    let canonical = format!(
        "{{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"{}\"}}",
        URL_SAFE_NO_PAD.encode(public)
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// An RFC 8941 string item. Our values (origins, base64) hold no `"` or `\`; escaped anyway.
fn sf_string(s: &str) -> String {
    let escaped: String = s
        .chars()
        .filter(|c| (' '..='~').contains(c))
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9421 appendix B.1.4 `test-key-ed25519`, the key the draft's vectors use.
    const TEST_SEED: &str = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU";

    fn test_seed() -> [u8; 32] {
        URL_SAFE_NO_PAD
            .decode(TEST_SEED)
            .unwrap()
            .try_into()
            .unwrap()
    }

    fn identity(agent: &str) -> BotAuth {
        BotAuth::new(test_seed(), Vec::new(), agent, DEFAULT_LIFETIME).unwrap()
    }

    #[test]
    fn the_keyid_is_the_rfc_7638_thumbprint() {
        let id = identity("https://signature-agent.test");
        assert_eq!(id.keyid(), "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U");
        assert_eq!(
            URL_SAFE_NO_PAD.encode(id.current.public),
            "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"
        );
    }

    /// The draft's Ed25519 test vector ("Signature-Agent Included Present on the Request"),
    /// with its member key and label `agent2`/`sig2` renamed to ours: the base must be the
    /// same bytes, and Ed25519 is deterministic, so the signature over the vector's own base
    /// must be the vector's.
    #[test]
    fn the_signature_base_is_the_drafts() {
        let nonce = "n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==";
        let params = RequestParams {
            created: 1735689600,
            keyid: "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U",
            expires: 4889289600,
            nonce,
        };
        let base =
            request_signature_base("example.com", "\"https://signature-agent.test\"", &params);
        let expected = format!(
            "\"@authority\": example.com\n\
             \"signature-agent\";key=\"sig1\": \"https://signature-agent.test\"\n\
             \"@signature-params\": (\"@authority\" \"signature-agent\";key=\"sig1\")\
             ;created=1735689600;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\"\
             ;alg=\"ed25519\";expires=4889289600;nonce=\"{nonce}\";tag=\"web-bot-auth\""
        );
        assert_eq!(base, expected);
        // The vector itself, labels as published.
        let vector = base.replace("key=\"sig1\"", "key=\"agent2\"");
        let signature = SigningKey::from_bytes(&test_seed()).sign(vector.as_bytes());
        assert_eq!(
            STANDARD.encode(signature.to_bytes()),
            "RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg=="
        );
    }

    #[test]
    fn the_headers_name_the_agent_as_a_dictionary_member_and_verify() {
        let id = BotAuth::new(
            test_seed(),
            Vec::new(),
            "https://svc.example/some/path",
            Duration::from_secs(60),
        )
        .unwrap();
        let url = Url::parse("https://Shop.Example:8443/a?b=c").unwrap();
        let [agent, input, signature] = id.headers_for(&url, 1_700_000_000, "bm9uY2U=");
        assert_eq!(
            agent,
            ("signature-agent", "sig1=\"https://svc.example\"".into())
        );
        assert_eq!(
            input.1,
            "sig1=(\"@authority\" \"signature-agent\";key=\"sig1\");created=1700000000\
             ;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\";alg=\"ed25519\"\
             ;expires=1700000060;nonce=\"bm9uY2U=\";tag=\"web-bot-auth\""
        );
        let value = signature
            .1
            .strip_prefix("sig1=:")
            .unwrap()
            .strip_suffix(':')
            .unwrap();
        let bytes: [u8; 64] = STANDARD.decode(value).unwrap().try_into().unwrap();
        let base = format!(
            "\"@authority\": shop.example:8443\n\"signature-agent\";key=\"sig1\": \"https://svc.example\"\n\"@signature-params\": {}",
            input.1.strip_prefix("sig1=").unwrap()
        );
        VerifyingKey::from_bytes(&id.current.public)
            .unwrap()
            .verify_strict(
                base.as_bytes(),
                &ed25519_dalek::Signature::from_bytes(&bytes),
            )
            .unwrap();
    }

    #[test]
    fn the_authority_drops_default_ports_only() {
        let a = |u: &str| authority(&Url::parse(u).unwrap());
        assert_eq!(a("https://example.com/x"), "example.com");
        assert_eq!(a("https://example.com:443/x"), "example.com");
        assert_eq!(a("http://example.com:80/"), "example.com");
        assert_eq!(
            a("http://Demo.Sandbox.Test:41234/"),
            "demo.sandbox.test:41234"
        );
        assert_eq!(a("http://[::1]:8080/"), "[::1]:8080");
    }

    /// The draft's "Signed Directory Response" vector, reproduced byte for byte.
    #[test]
    fn the_directory_proof_is_the_drafts() {
        let body = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","use":"sig"}]}"#;
        let id = identity("https://signature-agent.test");
        assert_eq!(id.jwks(), body.to_vec());
        assert_eq!(
            content_digest(body),
            "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:"
        );
        let params = "(\"@authority\";req \"content-digest\");created=1735689600;expires=4889289600\
                      ;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\";tag=\"http-message-signatures-directory\"";
        let base = directory_signature_base("signature-agent.test", &content_digest(body), params);
        let signature = SigningKey::from_bytes(&test_seed()).sign(base.as_bytes());
        assert_eq!(
            STANDARD.encode(signature.to_bytes()),
            "l6P8R67tm3kujAxbHWio7ll01qrEZ0dKD/WWlGhNYEmTnFZM8Wt0VQ9zqGfvo7T/UMkBxsigzChM1Gpz7gOVBg=="
        );
        // Ours differs only in `expires` (a week after `created`).
        let proof = id.proof("signature-agent.test", body, 1735689600);
        assert_eq!(proof.content_digest, content_digest(body));
        assert!(proof.signature_input.starts_with(
            "binding=(\"@authority\";req \"content-digest\");created=1735689600;expires=1736294400;"
        ));
    }

    #[test]
    fn rotation_publishes_both_keys_and_proves_each_it_holds() {
        let previous = [7u8; 32];
        let public_only = SigningKey::from_bytes(&[9u8; 32])
            .verifying_key()
            .to_bytes();
        let id = BotAuth::new(
            [1u8; 32],
            vec![
                PreviousKey::Seed(previous),
                PreviousKey::Public(public_only),
                PreviousKey::Seed([1u8; 32]),
            ],
            "https://svc.example",
            DEFAULT_LIFETIME,
        )
        .unwrap();
        let jwks: serde_json::Value = serde_json::from_slice(&id.jwks()).unwrap();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(
            kids.len(),
            3,
            "current, previous seed, previous public; no duplicate"
        );
        assert_eq!(kids[0], id.keyid());
        let proof = id.proof("svc.example", &id.jwks(), 1);
        assert_eq!(proof.signature.matches("binding").count(), 2);
        assert!(proof.signature_input.contains("binding2="));
    }

    #[test]
    fn a_bad_agent_is_refused() {
        assert!(BotAuth::new([1; 32], vec![], "not a url", DEFAULT_LIFETIME).is_err());
        assert!(BotAuth::new([1; 32], vec![], "ftp://x.example", DEFAULT_LIFETIME).is_err());
    }
}
