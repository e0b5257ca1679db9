//! Signing artifacts and verifying them against a JWKS.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::Value;
use svc_ports::{Signer, VerificationArtifact};

use crate::{ALG, signing_bytes};

/// Why an artifact does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The artifact is not an object, or has no `signature` object with string `alg`, `kid`
    /// and `value`.
    #[error("the artifact has no well-formed signature")]
    MissingSignature,
    /// The signature's `alg` is not `EdDSA`.
    #[error("unsupported signature algorithm {0:?} (expected \"EdDSA\")")]
    UnsupportedAlgorithm(String),
    /// No key in the JWKS has the signature's `kid`.
    #[error("no key with kid {0:?} in the JWKS")]
    UnknownKey(String),
    /// The JWK with that `kid` is not a usable Ed25519 signature key (`kty` not `OKP`, `crv`
    /// not `Ed25519`, `alg`/`use` present but not `EdDSA`/`sig`, or `x` not a valid key).
    #[error("the JWK for the signature's kid is not a usable Ed25519 signing key")]
    BadKey,
    /// The signature's `value` is not 64 bytes of base64url without padding.
    #[error("the signature value is not 64 bytes of unpadded base64url")]
    BadSignatureEncoding,
    /// The signature does not match the artifact: it was altered or signed by another key.
    #[error("the signature does not match the artifact")]
    SignatureMismatch,
}

/// Signs `unsigned` with `signer`'s active key and returns it with its `signature` member set
/// (replacing any there was: the signature never covers itself).
///
/// # Panics
///
/// If `unsigned` is not a JSON object: an artifact always is.
pub fn sign_artifact(signer: &dyn Signer, unsigned: Value) -> Value {
    let Value::Object(mut members) = unsigned else {
        panic!("sign_artifact: an artifact must be a JSON object");
    };
    members.remove("signature");
    let mut artifact = Value::Object(members);
    let signature = signer.sign(&artifact);
    artifact["signature"] = serde_json::json!({
        "alg": signature.alg,
        "kid": signature.kid,
        "value": signature.value,
    });
    artifact
}

/// Signs a typed artifact in place: its current `signature` is ignored and replaced. The
/// signature covers the artifact's JSON form, exactly what [`verify_artifact`] checks.
pub fn sign_verification_artifact(signer: &dyn Signer, artifact: &mut VerificationArtifact) {
    let value =
        serde_json::to_value(&*artifact).expect("a VerificationArtifact always serialises to JSON");
    artifact.signature = signer.sign(&value);
}

/// Checks `artifact`'s signature against the key named by its `kid` in `jwks` (a JWK Set,
/// `{"keys": [...]}`), using only the artifact and the JWKS.
pub fn verify_artifact(artifact: &Value, jwks: &Value) -> Result<(), VerifyError> {
    let signature = artifact
        .get("signature")
        .and_then(Value::as_object)
        .ok_or(VerifyError::MissingSignature)?;
    let field = |name: &str| {
        signature
            .get(name)
            .and_then(Value::as_str)
            .ok_or(VerifyError::MissingSignature)
    };
    let (alg, kid, value) = (field("alg")?, field("kid")?, field("value")?);
    if alg != ALG {
        return Err(VerifyError::UnsupportedAlgorithm(alg.to_owned()));
    }

    let jwk = jwks
        .get("keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|jwk| jwk.get("kid").and_then(Value::as_str) == Some(kid))
        .ok_or_else(|| VerifyError::UnknownKey(kid.to_owned()))?;
    let public = ed25519_public_key(jwk).ok_or(VerifyError::BadKey)?;

    let signature = URL_SAFE_NO_PAD
        .decode(value)
        .ok()
        .and_then(|bytes| Signature::from_slice(&bytes).ok())
        .ok_or(VerifyError::BadSignatureEncoding)?;

    public
        .verify_strict(&signing_bytes(artifact), &signature)
        .map_err(|_| VerifyError::SignatureMismatch)
}

/// The Ed25519 public key of an OKP JWK meant for EdDSA signatures.
fn ed25519_public_key(jwk: &Value) -> Option<VerifyingKey> {
    let member = |name: &str| jwk.get(name).map(Value::as_str);
    if member("kty")? != Some("OKP") || member("crv")? != Some("Ed25519") {
        return None;
    }
    // Optional members, but if present they must allow this use.
    if member("alg").is_some_and(|alg| alg != Some(ALG))
        || member("use").is_some_and(|u| u != Some("sig"))
    {
        return None;
    }
    let x: [u8; 32] = URL_SAFE_NO_PAD
        .decode(member("x")??)
        .ok()?
        .try_into()
        .ok()?;
    let key = VerifyingKey::from_bytes(&x).ok()?;
    (!key.is_weak()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ed25519Signer, RetiredKey, canonical_json, parse_seed, seed_to_string};
    use serde_json::json;

    fn unsigned() -> Value {
        json!({
            "artifact_id": "01JABCDEF0123456789ABCDEFG",
            "task_id": "01JTASK0000000000000000000",
            "source": {
                "domain": "shop.example",
                "action": "checkout",
                "url": "https://shop.example/api/checkout?x=1&y=é",
            },
            "timestamp": "2025-06-01T12:34:56.789Z",
            "status": "completed",
            "evidence": {
                "http_status": 200,
                "rules": [{"name": "order_id present", "held": true}, {"name": "total", "held": true}],
                "response_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "outputs": {"order_id": "A-1", "total": 12.5, "items": [1, 2, 3]},
            },
            "failure_class": null,
        })
    }

    #[test]
    fn round_trip() {
        let signer = Ed25519Signer::generate();
        let artifact = sign_artifact(&signer, unsigned());
        assert_eq!(artifact["signature"]["alg"], "EdDSA");
        assert_eq!(artifact["signature"]["kid"], signer.kid());
        let value = artifact["signature"]["value"].as_str().unwrap();
        assert_eq!(value.len(), 86, "64 bytes, base64url, unpadded");
        assert!(!value.contains(['=', '+', '/']));
        verify_artifact(&artifact, &signer.jwks()).unwrap();

        // Through the wire: serialised, re-parsed, still verifies.
        let wire = serde_json::to_string(&artifact).unwrap();
        let jwks_wire = serde_json::to_string(&signer.jwks()).unwrap();
        verify_artifact(
            &serde_json::from_str(&wire).unwrap(),
            &serde_json::from_str(&jwks_wire).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn signature_covers_canonical_json_without_signature() {
        let signer = Ed25519Signer::from_seed([1; 32]);
        let artifact = sign_artifact(&signer, unsigned());
        let expected = signer.sign_bytes(&canonical_json(&unsigned()));
        assert_eq!(
            artifact["signature"]["value"], expected.value,
            "Ed25519 is deterministic"
        );
        // Re-signing a signed artifact replaces the signature rather than signing it.
        assert_eq!(sign_artifact(&signer, artifact.clone()), artifact);
    }

    #[test]
    fn tampering_fails() {
        let signer = Ed25519Signer::generate();
        let jwks = signer.jwks();
        let artifact = sign_artifact(&signer, unsigned());
        type Tamper = fn(&mut Value);
        let tamperings: Vec<(&str, Tamper)> = vec![
            ("status", |a| a["status"] = json!("failed")),
            ("timestamp", |a| {
                a["timestamp"] = json!("2025-06-01T12:34:56.790Z")
            }),
            ("evidence", |a| a["evidence"] = json!({})),
            ("http status", |a| a["evidence"]["http_status"] = json!(500)),
            ("nested bool", |a| {
                a["evidence"]["rules"][1]["held"] = json!(false)
            }),
            ("nested number", |a| {
                a["evidence"]["outputs"]["total"] = json!(12.25)
            }),
            ("array element", |a| {
                a["evidence"]["outputs"]["items"][2] = json!(4)
            }),
            ("array order", |a| {
                a["evidence"]["rules"].as_array_mut().unwrap().reverse()
            }),
            ("source url", |a| {
                a["source"]["url"] = json!("https://evil.example/")
            }),
            ("failure_class", |a| a["failure_class"] = json!("timeout")),
            ("task_id", |a| {
                a["task_id"] = json!("01JTASK0000000000000000001")
            }),
            ("added member", |a| a["extra"] = json!(true)),
            ("removed member", |a| {
                a.as_object_mut().unwrap().remove("failure_class");
            }),
            ("null vs absent", |a| {
                a["evidence"]["outputs"]["note"] = Value::Null
            }),
            ("string vs number", |a| {
                a["evidence"]["http_status"] = json!("200")
            }),
        ];
        for (what, tamper) in tamperings {
            let mut forged = artifact.clone();
            tamper(&mut forged);
            assert_ne!(forged, artifact, "{what}: the tampering changed nothing");
            assert_eq!(
                verify_artifact(&forged, &jwks),
                Err(VerifyError::SignatureMismatch),
                "{what}"
            );
        }

        // The signature itself: a flipped bit, another key's signature for the same kid.
        let mut forged = artifact.clone();
        let mut sig = URL_SAFE_NO_PAD
            .decode(forged["signature"]["value"].as_str().unwrap())
            .unwrap();
        sig[10] ^= 1;
        forged["signature"]["value"] = json!(URL_SAFE_NO_PAD.encode(&sig));
        assert_eq!(
            verify_artifact(&forged, &jwks),
            Err(VerifyError::SignatureMismatch)
        );

        let impostor = Ed25519Signer::generate();
        let mut forged = sign_artifact(&impostor, unsigned());
        forged["signature"]["kid"] = json!(signer.kid());
        assert_eq!(
            verify_artifact(&forged, &jwks),
            Err(VerifyError::SignatureMismatch)
        );
    }

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let signer = Ed25519Signer::generate();
        let artifact = sign_artifact(&signer, unsigned());
        let jwks = signer.jwks();

        let pretty = serde_json::to_string_pretty(&artifact).unwrap();
        verify_artifact(&serde_json::from_str(&pretty).unwrap(), &jwks).unwrap();

        // Hand-written in a different member order, with different whitespace and number and
        // string spellings of the same values.
        let v = artifact["signature"]["value"].as_str().unwrap();
        let kid = signer.kid();
        let rewritten = format!(
            r#"{{ "signature" : {{ "value": "{v}", "kid": "{kid}", "alg": "EdDSA" }},
                "failure_class" : null,
                "evidence": {{ "outputs": {{ "items": [ 1.0, 2e0, 30E-1 ], "total": 1.25e1,
                                              "order_id": "\u0041-1" }},
                               "response_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                               "rules": [ {{ "held": true, "name": "order_id present" }},
                                          {{ "held": true, "name": "total" }} ],
                               "http_status": 2.00e2 }},
                "status": "completed",
                "timestamp": "2025-06-01T12:34:56.789Z",
                "source": {{ "url": "https:\/\/shop.example\/api\/checkout?x=1&y=\u00e9",
                             "action": "checkout", "domain": "shop.example" }},
                "task_id": "01JTASK0000000000000000000",
                "artifact_id": "01JABCDEF0123456789ABCDEFG"
            }}"#
        );
        let rewritten: Value = serde_json::from_str(&rewritten).unwrap();
        verify_artifact(&rewritten, &jwks).unwrap();
    }

    #[test]
    fn retired_keys_still_verify_but_never_sign() {
        let old_seed = [3; 32];
        let old = Ed25519Signer::from_seed(old_seed);
        let old_artifact = sign_artifact(&old, unsigned());

        let rotated =
            Ed25519Signer::from_seed([4; 32]).with_retired([RetiredKey::from_seed(old_seed)]);
        assert_ne!(rotated.kid(), old.kid());
        let jwks = rotated.jwks();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, [rotated.kid(), old.kid()], "active key first");

        verify_artifact(&old_artifact, &jwks).unwrap();
        let new_artifact = sign_artifact(&rotated, unsigned());
        assert_eq!(new_artifact["signature"]["kid"], rotated.kid());
        verify_artifact(&new_artifact, &jwks).unwrap();

        // A public-key-only retired key works the same; so does `rotate`.
        let by_public = Ed25519Signer::from_seed([4; 32])
            .with_retired([RetiredKey::from_public_key(old.public_key()).unwrap()]);
        assert_eq!(by_public.jwks(), jwks);
        let old_kid = old.kid().to_owned();
        assert_eq!(old.rotate([4; 32]).jwks(), jwks);

        // The old key's artifacts stop verifying once the key is dropped from the JWKS.
        assert_eq!(
            verify_artifact(&old_artifact, &Ed25519Signer::from_seed([4; 32]).jwks()),
            Err(VerifyError::UnknownKey(old_kid))
        );
    }

    #[test]
    fn duplicate_retired_keys_are_skipped() {
        let signer = Ed25519Signer::from_seed([4; 32]).with_retired([
            RetiredKey::from_seed([4; 32]),
            RetiredKey::from_seed([3; 32]),
            RetiredKey::from_seed([3; 32]),
        ]);
        assert_eq!(signer.retired().len(), 1);
        assert_eq!(signer.jwks()["keys"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn error_cases() {
        let signer = Ed25519Signer::generate();
        let jwks = signer.jwks();
        let artifact = sign_artifact(&signer, unsigned());

        let other = Ed25519Signer::generate();
        assert_eq!(
            verify_artifact(&artifact, &other.jwks()),
            Err(VerifyError::UnknownKey(signer.kid().to_owned()))
        );
        assert_eq!(
            verify_artifact(&artifact, &json!({})),
            Err(VerifyError::UnknownKey(signer.kid().to_owned()))
        );

        assert_eq!(
            verify_artifact(&unsigned(), &jwks),
            Err(VerifyError::MissingSignature)
        );
        assert_eq!(
            verify_artifact(&json!([1]), &jwks),
            Err(VerifyError::MissingSignature)
        );
        let mut no_value = artifact.clone();
        no_value["signature"]
            .as_object_mut()
            .unwrap()
            .remove("value");
        assert_eq!(
            verify_artifact(&no_value, &jwks),
            Err(VerifyError::MissingSignature)
        );
        let mut string_sig = artifact.clone();
        string_sig["signature"] = json!("abc");
        assert_eq!(
            verify_artifact(&string_sig, &jwks),
            Err(VerifyError::MissingSignature)
        );

        let mut rs256 = artifact.clone();
        rs256["signature"]["alg"] = json!("RS256");
        assert_eq!(
            verify_artifact(&rs256, &jwks),
            Err(VerifyError::UnsupportedAlgorithm("RS256".into()))
        );

        let good = artifact["signature"]["value"].as_str().unwrap().to_owned();
        let mut bad_values = vec![
            "!!!".to_owned(),
            "AAAA".to_owned(),
            // Padding is not the canonical form.
            format!("{good}=="),
            // 65 bytes.
            URL_SAFE_NO_PAD.encode([0u8; 65]),
        ];
        let standard_alphabet = good.replace('-', "+").replace('_', "/");
        if standard_alphabet != good {
            bad_values.push(standard_alphabet);
        }
        for bad in bad_values {
            let mut encoded = artifact.clone();
            encoded["signature"]["value"] = json!(bad);
            assert_eq!(
                verify_artifact(&encoded, &jwks),
                Err(VerifyError::BadSignatureEncoding),
                "{bad}"
            );
        }

        for (member, value) in [
            ("kty", json!("EC")),
            ("crv", json!("X25519")),
            ("alg", json!("ES256")),
            ("use", json!("enc")),
            ("x", json!("AAAA")),
            ("x", json!(42)),
            ("x", Value::Null),
        ] {
            let mut bad_jwks = jwks.clone();
            bad_jwks["keys"][0][member] = value.clone();
            assert_eq!(
                verify_artifact(&artifact, &bad_jwks),
                Err(VerifyError::BadKey),
                "{member}={value}"
            );
        }
        let mut no_kty = jwks.clone();
        no_kty["keys"][0].as_object_mut().unwrap().remove("kty");
        assert_eq!(
            verify_artifact(&artifact, &no_kty),
            Err(VerifyError::BadKey)
        );
        // `alg` and `use` are optional in a JWK.
        let mut minimal = jwks.clone();
        minimal["keys"][0].as_object_mut().unwrap().remove("alg");
        minimal["keys"][0].as_object_mut().unwrap().remove("use");
        verify_artifact(&artifact, &minimal).unwrap();
    }

    /// RFC 8037 appendix A: the example key, its RFC 7638 thumbprint, and the signature of the
    /// example JWS signing input.
    #[test]
    fn rfc8037_vectors() {
        let seed = parse_seed("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A").unwrap();
        let signer = Ed25519Signer::from_seed(seed);
        assert_eq!(
            URL_SAFE_NO_PAD.encode(signer.public_key()),
            "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        );
        assert_eq!(signer.kid(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
        let jws_input = b"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc";
        assert_eq!(
            signer.sign_bytes(jws_input).value,
            "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
        );
        assert_eq!(
            signer.jwks(),
            json!({"keys": [{
                "kty": "OKP",
                "crv": "Ed25519",
                "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                "kid": "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k",
                "use": "sig",
                "alg": "EdDSA",
            }]})
        );
        assert_eq!(
            seed_to_string(&seed),
            "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
        );
    }

    #[test]
    fn typed_artifact_signing() {
        let signer = Ed25519Signer::generate();
        let mut value = unsigned();
        value["signature"] = json!({"alg": "", "kid": "", "value": ""});
        let mut artifact: VerificationArtifact = serde_json::from_value(value).unwrap();
        sign_verification_artifact(&signer, &mut artifact);
        assert_eq!(artifact.signature.kid, signer.kid());
        let served = serde_json::to_value(&artifact).unwrap();
        verify_artifact(&served, &signer.jwks()).unwrap();
        // Same bytes as signing the untyped form.
        assert_eq!(served, sign_artifact(&signer, unsigned()));
    }

    #[test]
    #[should_panic(expected = "must be a JSON object")]
    fn sign_artifact_rejects_non_objects() {
        sign_artifact(&Ed25519Signer::generate(), json!([]));
    }
}
