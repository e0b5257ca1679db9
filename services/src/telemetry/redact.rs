//! What is removed from an agent traffic event before it is stored: raw prompts, credential
//! fields, secret-looking values, email addresses and card numbers, each removal named.

use std::{collections::BTreeSet, sync::LazyLock};

use serde_json::Value;

/// Field names whose values are never stored: raw prompts and conversation text.
const PROMPT_FIELDS: &[&str] = &[
    "prompt",
    "raw_prompt",
    "system_prompt",
    "user_prompt",
    "messages",
    "conversation",
    "completion",
    "transcript",
];
/// Field names whose values are payment credentials or secrets.
const CREDENTIAL_FIELDS: &[&str] = &[
    "card_number",
    "card",
    "pan",
    "cvc",
    "cvv",
    "cvv2",
    "card_expiry",
    "iban",
    "account_number",
    "routing_number",
    "password",
    "secret",
    "api_key",
    "access_token",
    "refresh_token",
    "authorization",
];

static EMAIL: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
        .expect("static regex")
});
/// 13 to 19 digits, optionally grouped by spaces or dashes.
static CARD: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\b(?:\d[ -]?){12,18}\d\b").expect("static regex"));
/// `_` also as `%5F`: a key pasted into a URL's query is percent-encoded.
static SVC_KEY: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"svc(?:_|%5[Ff])(?:live|test)(?:_|%5[Ff])[A-Za-z0-9]{8,}")
        .expect("static regex")
});

/// Other people's secrets by their shape: payment-provider keys (`sk_live_...`, `rk_`, also
/// `_test_`) and Standard Webhooks secrets; bearer tokens below.
static SECRET: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"\b(?:(?:sk|rk)(?:_|%5[Ff])(?:live|test)(?:_|%5[Ff])[A-Za-z0-9]{8,}|whsec(?:_|%5[Ff])[A-Za-z0-9+/=%]{8,})",
    )
        .expect("static regex")
});
static BEARER: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}").expect("static regex")
});

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(*d);
            if !i.is_multiple_of(2) {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Redacts one string in place; returns the kinds removed.
fn redact_text(text: &str) -> (String, Vec<&'static str>) {
    let mut kinds = Vec::new();
    let mut out = text.to_owned();
    if SVC_KEY.is_match(&out) {
        out = SVC_KEY.replace_all(&out, "[redacted api key]").into_owned();
        kinds.push("api_key");
    }
    if SECRET.is_match(&out) {
        out = SECRET.replace_all(&out, "[redacted secret]").into_owned();
        kinds.push("secret");
    }
    if BEARER.is_match(&out) {
        out = BEARER
            .replace_all(&out, "[redacted bearer token]")
            .into_owned();
        kinds.push("bearer_token");
    }
    if EMAIL.is_match(&out) {
        out = EMAIL.replace_all(&out, "[redacted email]").into_owned();
        kinds.push("email");
    }
    let mut card = false;
    out = CARD
        .replace_all(&out, |c: &regex::Captures| {
            let digits: Vec<u8> = c[0]
                .bytes()
                .filter(u8::is_ascii_digit)
                .map(|b| b - b'0')
                .collect();
            if (13..=19).contains(&digits.len()) && luhn(&digits) {
                card = true;
                "[redacted card number]".to_owned()
            } else {
                c[0].to_owned()
            }
        })
        .into_owned();
    if card {
        kinds.push("card_number");
    }
    (out, kinds)
}

/// Walks the event: drops prompt and credential fields, redacts text; `path` is a JSON pointer.
pub(super) fn redact(value: &mut Value, path: &str, found: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let lower = k.to_ascii_lowercase();
                let here = format!("{path}/{k}");
                if PROMPT_FIELDS.contains(&lower.as_str()) {
                    map.remove(&k);
                    found.insert(format!("raw_prompt:{here}"));
                } else if CREDENTIAL_FIELDS.contains(&lower.as_str()) {
                    map.remove(&k);
                    found.insert(format!("credential:{here}"));
                } else if k != "privacy_redactions"
                    && let Some(v) = map.get_mut(&k)
                {
                    redact(v, &here, found);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                redact(v, &format!("{path}/{i}"), found);
            }
        }
        Value::String(s) => {
            let (clean, kinds) = redact_text(s);
            if !kinds.is_empty() {
                *s = clean;
                for k in kinds {
                    found.insert(format!("{k}:{path}"));
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_looking_values_are_redacted_and_named() {
        let cases = [
            ("key sk_live_51HxYzAbCdEfGh1234", "secret"),
            ("rk_test_AbCdEfGh12345678", "secret"),
            ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "secret"),
            ("svc_live_short12345", "api_key"),
            (
                "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc",
                "bearer_token",
            ),
            ("svc_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "api_key"),
            // Percent-encoded, as in a URL's query.
            ("?key=svc%5Ftest%5FAAAAAAAAAAAAAAAA", "api_key"),
            ("?k=sk%5flive%5f51HxYzAbCdEfGh1234", "secret"),
            ("card 4242 4242 4242 4242", "card_number"),
        ];
        for (text, kind) in cases {
            let (clean, kinds) = redact_text(text);
            assert!(kinds.contains(&kind), "{text}: {kinds:?}");
            assert!(clean.contains("[redacted"), "{text} -> {clean}");
            for needle in [
                "sk_live_51",
                "rk_test_Ab",
                "whsec_Mf",
                "svc_live_s",
                "AAAAAAAA",
                "51HxYz",
                "eyJhbG",
                "4242 4242",
            ] {
                assert!(!clean.contains(needle), "{text} -> {clean}");
            }
        }
        let mut event = json!({"properties": {"note": "paid with sk_live_51HxYzAbCdEfGh1234"}});
        let mut found = BTreeSet::new();
        redact(&mut event, "", &mut found);
        assert_eq!(event["properties"]["note"], "paid with [redacted secret]");
        assert!(found.contains("secret:/properties/note"), "{found:?}");
        // Ordinary words stay.
        assert_eq!(
            redact_text("a bearer of good news, sk_live").1,
            Vec::<&str>::new()
        );
    }
    #[test]
    fn cards_emails_and_keys_are_redacted_but_other_numbers_stay() {
        let (out, kinds) = redact_text(
            "pay 4242 4242 4242 4242 or mail bob@example.com, order 1234567890123 key svc_live_0123456789abcdefghijABCDEFGHIJKL",
        );
        assert!(
            !out.contains("4242") && !out.contains("bob@") && !out.contains("svc_live_0123"),
            "{out}"
        );
        assert!(
            out.contains("1234567890123"),
            "a number that fails Luhn stays: {out}"
        );
        assert_eq!(kinds, vec!["api_key", "email", "card_number"]);
        let (same, none) = redact_text("nothing private here 2026-11-21");
        assert_eq!(
            (same.as_str(), none.len()),
            ("nothing private here 2026-11-21", 0)
        );
    }
    #[test]
    fn prompt_and_credential_fields_are_removed_wherever_they_are() {
        let mut v = json!({"task_type": "x", "prompt": "secret plans", "extra": {"card_number": "4111111111111111",
            "notes": ["write to a@b.co"], "ok": 1}, "privacy_redactions": ["client:thing"]});
        let mut found = BTreeSet::new();
        redact(&mut v, "", &mut found);
        assert!(v.get("prompt").is_none());
        assert!(v["extra"].get("card_number").is_none());
        assert_eq!(v["extra"]["notes"][0], "write to [redacted email]");
        assert_eq!(
            v["privacy_redactions"],
            json!(["client:thing"]),
            "the client's list is not scanned"
        );
        let found: Vec<String> = found.into_iter().collect();
        assert_eq!(
            found,
            vec![
                "credential:/extra/card_number",
                "email:/extra/notes/0",
                "raw_prompt:/prompt"
            ]
        );
    }
    #[test]
    fn luhn_checks_card_numbers() {
        assert!(luhn(&[4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2]));
        assert!(!luhn(&[4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 3]));
    }
}
