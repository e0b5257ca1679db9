//! Standard Webhooks (<https://www.standardwebhooks.com>): how the payment provider signs the
//! events it sends and how the service checks them before anything is applied.
//!
//! A secret is `whsec_` + base64 of the key; the signature is
//! `v1,` + base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{raw body}")); the
//! `webhook-signature` header may carry several, space separated, and any one made with any
//! active secret passes (so secrets can be rotated). The timestamp must be within the tolerance
//! of now, in both directions. Comparisons are constant-time.

use base64::{Engine, engine::general_purpose::STANDARD};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Tolerance of `webhook-timestamp` against now, both ways (the reference libraries' 5 minutes).
pub const TOLERANCE_SECONDS: i64 = 300;

const SECRET_PREFIX: &str = "whsec_";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretFormatError {
    #[error("a webhook secret must start with `whsec_`")]
    MissingPrefix,
    #[error("a webhook secret must be `whsec_` followed by base64")]
    NotBase64,
    #[error("a webhook secret must hold between 24 and 64 bytes of key")]
    WrongLength,
}

/// One signing key. Its `Debug` never shows the key.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl WebhookSecret {
    /// Parses `whsec_<base64>`.
    pub fn parse(raw: &str) -> Result<Self, SecretFormatError> {
        let encoded = raw
            .trim()
            .strip_prefix(SECRET_PREFIX)
            .ok_or(SecretFormatError::MissingPrefix)?;
        let key = STANDARD
            .decode(encoded)
            .map_err(|_| SecretFormatError::NotBase64)?;
        if !(24..=64).contains(&key.len()) {
            return Err(SecretFormatError::WrongLength);
        }
        Ok(Self(key))
    }

    /// A secret from raw key bytes (the sandbox draws its own).
    pub fn from_key(key: &[u8]) -> Result<Self, SecretFormatError> {
        Self::parse(&format!("{SECRET_PREFIX}{}", STANDARD.encode(key)))
    }

    /// The `whsec_...` form, for handing to the provider that signs with it.
    pub fn expose(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// The `v1,<base64>` signature of one message.
    pub fn sign(&self, webhook_id: &str, timestamp: i64, body: &[u8]) -> String {
        format!(
            "v1,{}",
            STANDARD.encode(self.mac(webhook_id, timestamp, body))
        )
    }

    fn mac(&self, webhook_id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes keys of any length");
        mac.update(webhook_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.finalize().into_bytes().to_vec()
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// The three headers, as received (absent ones are `None`).
#[derive(Debug, Clone, Default)]
pub struct WebhookHeaders<'a> {
    pub id: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
}

/// Which check refused a delivery: logged, never detailed to the sender.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookRejection {
    #[error("missing header `{0}`")]
    MissingHeader(&'static str),
    #[error("header `{0}` is malformed")]
    MalformedHeader(&'static str),
    #[error("timestamp is {skew_seconds} s from now, outside the {TOLERANCE_SECONDS} s window")]
    OutsideWindow { skew_seconds: i64 },
    #[error("no signature matches any active secret")]
    BadSignature,
    #[error("no webhook secret is configured")]
    NoSecret,
}

/// Longest `webhook-id` kept (Standard Webhooks ids are short; this bounds what is stored).
pub const MAX_WEBHOOK_ID_LEN: usize = 128;

/// Checks one delivery against the active secrets at `now` (Unix seconds). On success returns
/// the `webhook-id`, the key the delivery is deduplicated on.
pub fn verify<'a>(
    secrets: &[WebhookSecret],
    headers: &WebhookHeaders<'a>,
    body: &[u8],
    now: i64,
) -> Result<&'a str, WebhookRejection> {
    let id = headers
        .id
        .ok_or(WebhookRejection::MissingHeader("webhook-id"))?;
    let timestamp = headers
        .timestamp
        .ok_or(WebhookRejection::MissingHeader("webhook-timestamp"))?;
    let signatures = headers
        .signature
        .ok_or(WebhookRejection::MissingHeader("webhook-signature"))?;
    if id.is_empty() || id.len() > MAX_WEBHOOK_ID_LEN || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(WebhookRejection::MalformedHeader("webhook-id"));
    }
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| WebhookRejection::MalformedHeader("webhook-timestamp"))?;
    let skew = ts.saturating_sub(now);
    // `unsigned_abs`: `i64::MIN` (a timestamp of -2^63) has no `abs`.
    if skew.unsigned_abs() > TOLERANCE_SECONDS.unsigned_abs() {
        return Err(WebhookRejection::OutsideWindow { skew_seconds: skew });
    }
    if secrets.is_empty() {
        return Err(WebhookRejection::NoSecret);
    }
    let expected: Vec<Vec<u8>> = secrets.iter().map(|s| s.mac(id, ts, body)).collect();
    let mut matched = subtle::Choice::from(0u8);
    for candidate in signatures.split(' ').filter(|s| !s.is_empty()) {
        let Some(encoded) = candidate.strip_prefix("v1,") else {
            continue; // another scheme (v1a, ...) or garbage: not ours to judge
        };
        let Ok(given) = STANDARD.decode(encoded) else {
            continue;
        };
        for e in &expected {
            matched |= e.as_slice().ct_eq(given.as_slice());
        }
    }
    if bool::from(matched) {
        Ok(id)
    } else {
        Err(WebhookRejection::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VECTOR_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const VECTOR_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const VECTOR_TS: i64 = 1614265330;
    const VECTOR_BODY: &str = r#"{"test": 2432232314}"#;
    const VECTOR_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers<'a>(id: &'a str, ts: &'a str, sig: &'a str) -> WebhookHeaders<'a> {
        WebhookHeaders {
            id: Some(id),
            timestamp: Some(ts),
            signature: Some(sig),
        }
    }

    #[test]
    fn the_specification_test_vector_signs_and_verifies() {
        let secret = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        assert_eq!(
            secret.sign(VECTOR_ID, VECTOR_TS, VECTOR_BODY.as_bytes()),
            VECTOR_SIGNATURE
        );
        let ts = VECTOR_TS.to_string();
        let h = headers(VECTOR_ID, &ts, VECTOR_SIGNATURE);
        assert_eq!(
            verify(&[secret], &h, VECTOR_BODY.as_bytes(), VECTOR_TS),
            Ok(VECTOR_ID)
        );
    }

    #[test]
    fn each_check_names_itself() {
        let secret = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        let body = VECTOR_BODY.as_bytes();
        let ts = VECTOR_TS.to_string();
        let missing = WebhookHeaders {
            id: Some(VECTOR_ID),
            timestamp: None,
            signature: Some(VECTOR_SIGNATURE),
        };
        assert_eq!(
            verify(std::slice::from_ref(&secret), &missing, body, VECTOR_TS),
            Err(WebhookRejection::MissingHeader("webhook-timestamp"))
        );
        let h = headers(VECTOR_ID, "soon", VECTOR_SIGNATURE);
        assert_eq!(
            verify(std::slice::from_ref(&secret), &h, body, VECTOR_TS),
            Err(WebhookRejection::MalformedHeader("webhook-timestamp"))
        );
        let h = headers(VECTOR_ID, &ts, VECTOR_SIGNATURE);
        // Stale and future-dated, just outside the window both ways; just inside passes.
        for (now, ok) in [
            (VECTOR_TS + 301, false),
            (VECTOR_TS - 301, false),
            (VECTOR_TS + 300, true),
            (VECTOR_TS - 300, true),
        ] {
            assert_eq!(
                verify(std::slice::from_ref(&secret), &h, body, now).is_ok(),
                ok,
                "{now}"
            );
        }
        // The farthest timestamps either way are outside it too, and nothing overflows.
        for far in [i64::MIN.to_string(), i64::MAX.to_string()] {
            let h = headers(VECTOR_ID, &far, VECTOR_SIGNATURE);
            assert!(matches!(
                verify(std::slice::from_ref(&secret), &h, body, VECTOR_TS),
                Err(WebhookRejection::OutsideWindow { .. })
            ));
        }
        // Tampered body, wrong secret, no secret.
        assert_eq!(
            verify(
                std::slice::from_ref(&secret),
                &h,
                br#"{"test": 2432232315}"#,
                VECTOR_TS
            ),
            Err(WebhookRejection::BadSignature)
        );
        let other = WebhookSecret::from_key(&[7u8; 32]).unwrap();
        assert_eq!(
            verify(std::slice::from_ref(&other), &h, body, VECTOR_TS),
            Err(WebhookRejection::BadSignature)
        );
        assert_eq!(
            verify(&[], &h, body, VECTOR_TS),
            Err(WebhookRejection::NoSecret)
        );
    }

    #[test]
    fn several_signatures_and_two_secrets_rotate() {
        let old = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        let new = WebhookSecret::from_key(&[9u8; 32]).unwrap();
        let body = VECTOR_BODY.as_bytes();
        let ts = VECTOR_TS.to_string();
        let by_new = new.sign(VECTOR_ID, VECTOR_TS, body);
        // The header carries a foreign scheme, garbage, a wrong v1 and then the good one.
        let sig = format!("v1a,abc v1,!!! v1,AAAA {by_new}");
        let h = headers(VECTOR_ID, &ts, &sig);
        assert!(verify(&[old.clone(), new.clone()], &h, body, VECTOR_TS).is_ok());
        assert!(verify(&[new], &h, body, VECTOR_TS).is_ok());
        assert_eq!(
            verify(&[old], &h, body, VECTOR_TS),
            Err(WebhookRejection::BadSignature)
        );
    }

    #[test]
    fn secret_formats_are_checked_and_never_printed() {
        assert_eq!(
            WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap_err(),
            SecretFormatError::MissingPrefix
        );
        assert_eq!(
            WebhookSecret::parse("whsec_***").unwrap_err(),
            SecretFormatError::NotBase64
        );
        assert_eq!(
            WebhookSecret::parse("whsec_AAAA").unwrap_err(),
            SecretFormatError::WrongLength
        );
        let s = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        assert_eq!(s.expose(), VECTOR_SECRET);
        assert!(!format!("{s:?}").contains("MfKQ"));
    }

    proptest! {
        #[test]
        fn any_signed_message_verifies_and_any_change_fails(
            key in proptest::collection::vec(any::<u8>(), 24..64),
            id in "msg_[A-Za-z0-9]{1,30}",
            body in proptest::collection::vec(any::<u8>(), 0..256),
            ts in 1_000_000_000i64..4_000_000_000,
            flip in any::<prop::sample::Index>(),
        ) {
            let secret = WebhookSecret::from_key(&key).unwrap();
            let sig = secret.sign(&id, ts, &body);
            let tss = ts.to_string();
            let h = headers(&id, &tss, &sig);
            prop_assert!(verify(std::slice::from_ref(&secret), &h, &body, ts).is_ok());
            if !body.is_empty() {
                let mut tampered = body.clone();
                let i = flip.index(tampered.len());
                tampered[i] ^= 1;
                prop_assert_eq!(
                    verify(std::slice::from_ref(&secret), &h, &tampered, ts),
                    Err(WebhookRejection::BadSignature)
                );
            }
        }

        #[test]
        fn verify_never_panics_on_arbitrary_headers(
            id in ".{0,200}", ts in ".{0,30}", sig in ".{0,300}",
            body in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let secret = WebhookSecret::from_key(&[1u8; 32]).unwrap();
            let _ = verify(&[secret], &headers(&id, &ts, &sig), &body, 1_700_000_000);
        }
    }
}
