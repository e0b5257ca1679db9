//! A third party verifies a served artifact offline with nothing but the served JWKS and a
//! generic Ed25519 implementation (`ring`, not the `ed25519-dalek` the service signs with).
//!
//! The canonical bytes come from a small independent JCS written here for the JSON this
//! artifact uses (objects, arrays, strings, integers, booleans, null); they are checked against
//! `svc_signer::canonical_json` too.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{ED25519, UnparsedPublicKey};
use serde_json::{Value, json};
use svc_ports::{Signer, VerificationArtifact};
use svc_signer::{Ed25519Signer, RetiredKey, sign_verification_artifact};

/// What the service serves: the artifact with a settled task, and `/.well-known/jwks.json`.
fn served() -> (String, String) {
    let signer = Ed25519Signer::generate().with_retired([RetiredKey::from_seed([9; 32])]);
    let mut artifact: VerificationArtifact = serde_json::from_value(json!({
        "artifact_id": "01JZ5X6Q7R8S9T0V1W2X3Y4Z5A",
        "task_id": "01JZ5X6Q7R8S9T0V1W2X3Y4Z5B",
        "source": {"domain": "tickets.example", "action": "book", "url": "https://tickets.example/b?q=\u{e9}&n=2"},
        "timestamp": "2025-06-01T12:34:56.789123Z",
        "status": "verified",
        "evidence": {
            "http_status": 201,
            "rules": {"booking_ref present": true, "seat count = 2": true},
            "response_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "notes": "quote \" backslash \\ tab \t newline \n nul \u{0} del \u{7f} emoji \u{1f600} \u{fb33}",
            "\u{20ac}": 1, "\r": 2, "\u{fb33}": 3, "1": 4, "\u{1f600}": 5, "\u{80}": 6, "\u{f6}": 7,
            "counts": [0, -1, 9007199254740991_i64],
        },
        "failure_class": null,
        "signature": {"alg": "", "kid": "", "value": ""},
    }))
    .unwrap();
    sign_verification_artifact(&signer, &mut artifact);
    (
        serde_json::to_string_pretty(&artifact).unwrap(),
        serde_json::to_string(&signer.jwks()).unwrap(),
    )
}

/// The verifier's side: only the two served documents.
fn verify(artifact_json: &str, jwks_json: &str) -> Result<(), String> {
    let artifact: Value = serde_json::from_str(artifact_json).map_err(|e| e.to_string())?;
    let jwks: Value = serde_json::from_str(jwks_json).map_err(|e| e.to_string())?;

    let signature = &artifact["signature"];
    if signature["alg"] != "EdDSA" {
        return Err("alg".into());
    }
    let kid = signature["kid"].as_str().ok_or("kid")?;
    let jwk = jwks["keys"]
        .as_array()
        .ok_or("keys")?
        .iter()
        .find(|k| k["kid"] == kid)
        .ok_or("unknown kid")?;
    if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" {
        return Err("not an Ed25519 key".into());
    }
    let x = URL_SAFE_NO_PAD
        .decode(jwk["x"].as_str().ok_or("x")?)
        .map_err(|e| e.to_string())?;
    let sig = URL_SAFE_NO_PAD
        .decode(signature["value"].as_str().ok_or("value")?)
        .map_err(|e| e.to_string())?;

    let mut unsigned = artifact.clone();
    unsigned
        .as_object_mut()
        .ok_or("object")?
        .remove("signature");
    let mut message = Vec::new();
    jcs(&unsigned, &mut message);
    assert_eq!(
        message,
        svc_signer::canonical_json(&unsigned),
        "independent JCS and svc_signer::canonical_json disagree"
    );

    UnparsedPublicKey::new(&ED25519, &x)
        .verify(&message, &sig)
        .map_err(|_| "signature mismatch".into())
}

/// RFC 8785 for the subset this artifact uses (no fractional numbers).
fn jcs(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            let i = n
                .as_i64()
                .expect("this test's artifact has only safe integers");
            assert!(i.unsigned_abs() < 1 << 53);
            out.extend_from_slice(i.to_string().as_bytes());
        }
        Value::String(s) => jcs_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                jcs(item, out);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                jcs_string(key, out);
                out.push(b':');
                jcs(item, out);
            }
            out.push(b'}');
        }
    }
}

fn jcs_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\r' => out.extend_from_slice(b"\\r"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out.push(b'"');
}

#[test]
fn ring_verifies_a_served_artifact_with_only_the_jwks() {
    let (artifact, jwks) = served();
    verify(&artifact, &jwks).unwrap();
}

#[test]
fn ring_rejects_a_tampered_artifact() {
    let (artifact, jwks) = served();
    let tampered = artifact.replacen("\"verified\"", "\"failed\"", 1);
    assert_ne!(tampered, artifact);
    assert_eq!(verify(&tampered, &jwks), Err("signature mismatch".into()));

    let tampered = artifact.replacen("201", "500", 1);
    assert_ne!(tampered, artifact);
    assert_eq!(verify(&tampered, &jwks), Err("signature mismatch".into()));
}

#[test]
fn ring_rejects_a_jwks_of_other_keys() {
    let (artifact, _) = served();
    let (_, other_jwks) = served();
    assert_eq!(verify(&artifact, &other_jwks), Err("unknown kid".into()));
}
