//! What an operation or a form is, by its words: kinds of action the catalog forbids,
//! sensitive fields, and the family and consequence of what is drafted.

use serde_json::Value;
use svc_ports::{ActionFamily, actions::HttpMethod};

use super::names::words;

const CREDENTIAL_WORDS: &[&str] = &[
    "login",
    "logins",
    "logon",
    "logout",
    "signin",
    "signon",
    "signout",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "passcode",
    "passkey",
    "passkeys",
    "webauthn",
    "token",
    "tokens",
    "oauth",
    "oauth2",
    "openid",
    "saml",
    "sso",
    "2fa",
    "mfa",
    "otp",
    "totp",
    "hotp",
    "recover",
    "recovery",
    "reset",
    "credential",
    "credentials",
    "authenticate",
    "authentication",
    "authorize",
    "authorization",
    "auth",
    "apikey",
    "apikeys",
    "secret",
    "secrets",
];
const ORDER_WORDS: &[&str] = &[
    "order",
    "orders",
    "checkout",
    "purchase",
    "purchases",
    "buy",
    "pay",
    "payment",
    "payments",
];
const BOOKING_WORDS: &[&str] = &[
    "book",
    "booking",
    "bookings",
    "reserve",
    "reservation",
    "reservations",
    "appointment",
    "appointments",
];
const CART_WORDS: &[&str] = &["cart", "carts", "basket", "baskets"];
/// Verbs that make a GET suspect of changing something.
const STATE_VERBS: &[&str] = &[
    "delete",
    "remove",
    "cancel",
    "create",
    "add",
    "update",
    "edit",
    "set",
    "send",
    "submit",
    "subscribe",
    "unsubscribe",
    "confirm",
    "approve",
    "reject",
    "checkout",
    "buy",
    "purchase",
    "pay",
    "book",
    "reserve",
    "vote",
    "like",
    "unlike",
    "follow",
    "unfollow",
    "register",
    "publish",
    "archive",
    "destroy",
];

fn has(words: &[String], list: &[&str]) -> bool {
    words.iter().any(|w| list.contains(&w.as_str()))
}

fn pair(words: &[String], a: &str, b: &str) -> bool {
    words.windows(2).any(|p| p[0] == a && p[1] == b)
}

/// Why the words of an operation (its id and path) or a form (its action path, id and name)
/// show a kind of action the catalog forbids.
pub(super) fn forbidden(w: &[String]) -> Option<&'static str> {
    let credentials = has(w, CREDENTIAL_WORDS)
        || [
            ("log", "in"),
            ("log", "on"),
            ("log", "out"),
            ("sign", "in"),
            ("sign", "on"),
        ]
        .iter()
        .chain(&[
            ("sign", "out"),
            ("api", "key"),
            ("api", "keys"),
            ("one", "time"),
        ])
        .any(|(a, b)| pair(w, a, b));
    if credentials {
        return Some(
            "it handles credentials (sign-in, passwords, tokens, one-time codes or account recovery), which the action catalog forbids",
        );
    }
    let card = has(w, &["cvc", "cvv", "cvv2", "cardnumber"])
        || (has(w, &["card", "cards"])
            && has(
                w,
                &[
                    "payment", "payments", "credit", "debit", "billing", "pay", "wallet",
                ],
            ))
        || (has(w, &["payment", "payments"])
            && has(
                w,
                &[
                    "method",
                    "methods",
                    "instrument",
                    "instruments",
                    "source",
                    "sources",
                ],
            ));
    if card {
        return Some("it takes payment-card details, which the action catalog forbids");
    }
    let bulk = has(w, &["broadcast", "broadcasts"])
        || (has(w, &["bulk", "mass", "batch", "blast"])
            && has(
                w,
                &[
                    "message",
                    "messages",
                    "email",
                    "emails",
                    "mail",
                    "sms",
                    "notification",
                    "notifications",
                    "send",
                ],
            ));
    if bulk {
        return Some("it sends messages in bulk, which the action catalog forbids");
    }
    None
}

/// A state change on a user's own sign-in details (`PUT /users/{id}/email`).
pub(super) fn changes_sign_in_details(w: &[String]) -> bool {
    has(
        w,
        &["user", "users", "account", "accounts", "me", "profile"],
    ) && has(w, &["email", "phone", "username"])
}

/// Why a parameter, body property or form field name shows a value the catalog forbids agents
/// to send: passwords, one-time codes, credentials, card numbers.
pub(super) fn sensitive_field(name: &str) -> Option<&'static str> {
    let w = words(name);
    let secret = has(
        &w,
        &[
            "password",
            "passwd",
            "passphrase",
            "passcode",
            "pwd",
            "otp",
            "totp",
            "hotp",
            "2fa",
            "mfa",
            "secret",
            "apikey",
            "jwt",
            "bearer",
        ],
    ) || pair(&w, "api", "key")
        || pair(&w, "one", "time")
        || (has(&w, &["token"])
            && has(
                &w,
                &[
                    "access", "refresh", "id", "auth", "session", "api", "bearer",
                ],
            ))
        || (has(&w, &["code"])
            && has(
                &w,
                &[
                    "verification",
                    "verify",
                    "security",
                    "auth",
                    "sms",
                    "login",
                    "mfa",
                ],
            ));
    if secret {
        return Some("asks for a password, a one-time code or another credential");
    }
    let card = has(
        &w,
        &[
            "cvc",
            "cvv",
            "cvv2",
            "csc",
            "cardnumber",
            "ccnumber",
            "ccnum",
        ],
    ) || (has(&w, &["card", "cc"])
        && has(
            &w,
            &[
                "number",
                "num",
                "no",
                "exp",
                "expiry",
                "expiration",
                "cvc",
                "code",
            ],
        ));
    if card {
        return Some("asks for payment-card details");
    }
    None
}

/// The first sensitive property name anywhere in a (body) schema.
pub(super) fn sensitive_nested(schema: &Value, depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    let obj = schema.as_object()?;
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (name, s) in props {
            if let Some(why) = sensitive_field(name) {
                return Some(format!("its body field `{name}` {why}"));
            }
            if let Some(why) = sensitive_nested(s, depth + 1) {
                return Some(why);
            }
        }
    }
    for key in ["items", "allOf", "anyOf", "oneOf"] {
        match obj.get(key) {
            Some(Value::Array(list)) => {
                if let Some(why) = list.iter().find_map(|s| sensitive_nested(s, depth + 1)) {
                    return Some(why);
                }
            }
            Some(s) => {
                if let Some(why) = sensitive_nested(s, depth + 1) {
                    return Some(why);
                }
            }
            None => {}
        }
    }
    None
}

pub(super) fn changes_state(ident: &[String]) -> bool {
    has(ident, STATE_VERBS)
}

pub(super) fn family_by_words(w: &[String]) -> ActionFamily {
    if has(w, ORDER_WORDS) {
        ActionFamily::Order
    } else if has(w, BOOKING_WORDS) {
        ActionFamily::Booking
    } else if has(w, CART_WORDS) {
        ActionFamily::Cart
    } else {
        ActionFamily::FormSubmit
    }
}

/// Family, whether consequential, and whether it is a GET taken for a state change.
pub(super) fn classify(
    method: HttpMethod,
    lookup: bool,
    ident: &[String],
    all: &[String],
) -> (ActionFamily, bool, bool) {
    if method.is_safe() {
        if changes_state(ident) {
            return (family_by_words(all), true, true);
        }
        let family = if lookup {
            ActionFamily::Search
        } else {
            ActionFamily::Read
        };
        return (family, false, false);
    }
    // Learned state changes are always consequential, carts included.
    (family_by_words(all), true, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_kinds_are_recognised() {
        let f = |s: &str| forbidden(&words(s));
        for s in [
            "/login",
            "signIn",
            "/auth/token",
            "resetPassword",
            "/oauth2/authorize",
            "verify2faOtp",
            "/account/recovery",
            "createApiKey",
            "/log-in",
        ] {
            assert!(f(s).is_some_and(|w| w.contains("credentials")), "{s}");
        }
        assert!(f("addPaymentCard").is_some_and(|w| w.contains("payment-card")));
        assert!(f("/payment_methods").is_some_and(|w| w.contains("payment-card")));
        assert!(f("sendBulkEmail").is_some_and(|w| w.contains("bulk")));
        for s in [
            "/authors",
            "listTokenizedItems",
            "/orders",
            "/cards/games",
            "/search",
        ] {
            assert_eq!(f(s), None, "{s}");
        }
        for s in [
            "password",
            "new_password",
            "otp",
            "cvc",
            "card_number",
            "ccNumber",
            "access_token",
            "api-key",
            "verification_code",
        ] {
            assert!(sensitive_field(s).is_some(), "{s}");
        }
        for s in [
            "pageToken",
            "csrf_token",
            "email",
            "promo_code",
            "zip_code",
            "q",
        ] {
            assert_eq!(sensitive_field(s), None, "{s}");
        }
    }
}
