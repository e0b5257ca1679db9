//! The one catalog of `failure_class` values. Every REST problem, MCP tool error and A2A
//! failure carries one of these; the catalog is published with the OpenAPI description.

use serde::Serialize;

macro_rules! failure_classes {
    ($($variant:ident => ($name:literal, $status:literal, $retryable:literal, $title:literal, $hint:literal)),+ $(,)?) => {
        /// A machine-readable reason for a failure.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum FailureClass { $($variant),+ }

        impl FailureClass {
            pub const ALL: &'static [FailureClass] = &[$(FailureClass::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(FailureClass::$variant => $name),+ }
            }
            /// The HTTP status a REST face answers with.
            pub fn http_status(self) -> u16 {
                match self { $(FailureClass::$variant => $status),+ }
            }
            /// Whether repeating the same request later can succeed.
            pub fn retryable(self) -> bool {
                match self { $(FailureClass::$variant => $retryable),+ }
            }
            pub fn title(self) -> &'static str {
                match self { $(FailureClass::$variant => $title),+ }
            }
            /// One sentence addressed to the calling model.
            pub fn hint(self) -> &'static str {
                match self { $(FailureClass::$variant => $hint),+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($name => Some(FailureClass::$variant),)+ _ => None }
            }
        }
    };
}

failure_classes! {
    MalformedRequest => ("malformed_request", 400, false, "Malformed request",
        "Fix the request syntax (JSON body, query or headers) as the detail says, then send it again."),
    MissingApiKey => ("missing_api_key", 401, false, "API key required",
        "Send `Authorization: Bearer svc_...`; if you have no key, sign up with svc_start_claim_link_signup."),
    InvalidApiKey => ("invalid_api_key", 401, false, "Invalid API key",
        "The key is malformed or unknown; check that it was copied whole, or sign up for a new one."),
    RevokedApiKey => ("revoked_api_key", 401, false, "API key revoked",
        "This key was revoked; ask the account owner for a new key."),
    WrongEnvironment => ("wrong_environment", 403, false, "Key is for another environment",
        "Test keys (svc_test_) work only on the sandbox and live keys only on the live service."),
    InsufficientScope => ("insufficient_scope", 403, false, "Key lacks a scope",
        "The key does not carry the scope this call needs; ask the account owner for a key that does."),
    ApiKeyNotAllowed => ("api_key_not_allowed", 403, false, "API keys cannot call this endpoint",
        "This endpoint needs a signed-in web session; hand the human the link instead of calling it."),
    InsufficientCredits => ("insufficient_credits", 402, false, "Not enough credits",
        "Top up the account's credits, then retry."),
    NotFound => ("not_found", 404, false, "Not found",
        "Check the path against /openapi.json."),
    UnknownDomain => ("unknown_domain", 404, false, "No published map for this domain",
        "List the domains with a published Agent Map (GET /api/domains, MCP list_domains), then discover one of them; execute only what it lists."),
    UnknownAction => ("unknown_action", 404, false, "No such action",
        "Use an action name exactly as discover or list_actions returned it."),
    ConnectionRequired => ("connection_required", 403, false, "Connection required",
        "This action needs the human's account on the site: start a connection, show its link, poll until connected."),
    PaymentAuthorityRequired => ("payment_authority_required", 403, false, "Payment authority required",
        "This action pays money: ask the human to create a payment authority on their account page (next_action.url), then pass its authority_id."),
    PaymentAuthorityRefused => ("payment_authority_refused", 403, false, "Payment authority refused",
        "The named payment authority does not allow this payment (the detail says why: unknown, revoked, expired, scope, currency, exhausted or over_limit); nothing was charged, so do not retry it unchanged."),
    MethodNotAllowed => ("method_not_allowed", 405, false, "Method not allowed",
        "Use one of the methods in the Allow header."),
    VerificationPending => ("verification_pending", 409, true, "Outcome not confirmed yet",
        "The site does not confirm the payment's business outcome yet (the detail carries what it answered); nothing was stored or charged, so verify again later."),
    NotVerifiable => ("not_verifiable", 409, false, "Task cannot be verified",
        "Only a task settled with a payment_completed artifact (a payment under an authority with verification_required) can be verified; this one stands as it is."),
    KeyNotActive => ("key_not_active", 409, false, "Key not active",
        "This key was revoked or already rotated, so it cannot be rotated again; rotate its replacement (GET /api/keys lists the keys) or create a new key."),
    IdempotencyInFlight => ("idempotency_in_flight", 409, true, "Request with this key is in flight",
        "Wait for Retry-After, then send the same request with the same Idempotency-Key."),
    PayloadTooLarge => ("payload_too_large", 413, false, "Request body too large",
        "Send a smaller body; the limit is published in /.well-known/sandbox.json."),
    UnsupportedMediaType => ("unsupported_media_type", 415, false, "Unsupported content type",
        "Send the body as application/json."),
    InvalidRequest => ("invalid_request", 422, false, "Invalid request",
        "The request is well formed but a value is not acceptable; fix the field the detail names."),
    IdempotencyConflict => ("idempotency_conflict", 422, false, "Idempotency-Key reused",
        "This Idempotency-Key was used for a different request; use a new key for a new request."),
    UrlRefused => ("url_refused", 422, false, "URL not fetched",
        "Only public http(s) URLs are read: no loopback, private, link-local or metadata addresses, no credentials in the URL."),
    RateLimited => ("rate_limited", 429, true, "Too many requests",
        "Wait the number of seconds in Retry-After before the next request."),
    LockedOut => ("locked_out", 429, true, "Too many wrong codes",
        "Too many wrong codes came from this address; wait for Retry-After, then start a new signup."),
    AuthorizationPending => ("authorization_pending", 400, true, "Waiting for the human",
        "The human has not approved yet; keep polling at the interval, and keep showing only the link."),
    SlowDown => ("slow_down", 400, true, "Polling too fast",
        "Poll less often: add 5 seconds to the interval and keep polling."),
    AccessDenied => ("access_denied", 400, false, "The human denied the request",
        "The human said no; stop polling and do not ask again unless they request it."),
    ExpiredToken => ("expired_token", 400, false, "Device code expired",
        "The link expired before it was approved; start a new signup and show the new link."),
    InvalidGrant => ("invalid_grant", 400, false, "Device code not valid",
        "This device code is unknown or already yielded its key; start a new signup if you have no key."),
    UnsupportedGrantType => ("unsupported_grant_type", 400, false, "Grant type not supported",
        "Send grant_type=urn:ietf:params:oauth:grant-type:device_code."),
    InvalidScope => ("invalid_scope", 400, false, "Scope not available",
        "Ask only for scopes listed in /.well-known/oauth-authorization-server, or omit scope."),
    InvalidCode => ("invalid_code", 422, false, "Wrong code",
        "The code does not match; ask the human to check the email and send the code again."),
    CodeExpired => ("code_expired", 422, false, "Code expired or used up",
        "This code can no longer be used; start again to have a new code sent."),
    CsrfRejected => ("csrf_rejected", 403, false, "Form check failed",
        "Reload the page and submit the form again."),
    HostNotAllowed => ("host_not_allowed", 403, false, "Host or Origin not allowed",
        "Call the MCP endpoint at the address the service publishes (its server card), from an allowed origin."),
    SignInRequired => ("sign_in_required", 401, false, "Sign-in required",
        "This is the customer's own web session endpoint; the human signs in on the site (an agent hands over a link from svc_create_checkout_session)."),
    IdempotencyKeyRequired => ("idempotency_key_required", 400, false, "Idempotency-Key required",
        "Send an Idempotency-Key header (a new random value per purchase attempt, the same one when retrying it)."),
    ContactSales => ("contact_sales", 422, false, "Plan is sales-led",
        "Enterprise is not sold by checkout; hand the human the contact link in next_action."),
    WebhookRejected => ("webhook_rejected", 400, false, "Webhook not verified",
        "Only the payment provider sends webhooks here, signed with Standard Webhooks; agents must not call this endpoint."),
    InternalOnly => ("internal_only", 403, false, "Internal endpoint",
        "This endpoint is for the service's own reporting and needs its internal token."),
    InternalTokenRequired => ("internal_token_required", 401, false, "Internal token required",
        "This endpoint is for the service's own reporting: send its internal token as `Authorization: Bearer ...`."),
    UnknownProvider => ("unknown_provider", 404, false, "Unknown connection provider",
        "Use `provider` exactly as an action's `auth_provider` in discover or list_actions; never guess one."),
    ConnectionExpired => ("connection_expired", 403, false, "Connection expired",
        "The human's connection to the site expired and could not be refreshed: start a new connection, show its link, poll until connected."),
    ConnectionProviderUnavailable => ("connection_provider_unavailable", 503, true, "Connection provider unavailable",
        "The site's authorization server is not reachable or not configured here; retry later."),
    PaymentProviderUnavailable => ("payment_provider_unavailable", 502, true, "Payment provider unavailable",
        "The payment provider did not answer; nothing was charged. Retry with the same Idempotency-Key."),
    PaymentProviderRefused => ("payment_provider_refused", 502, false, "Payment provider refused",
        "The payment provider refused the service's request; nothing was charged. The operators must fix it: tell the human, do not retry soon."),
    Internal => ("internal", 500, true, "Internal error",
        "Retry later; if it persists, report the request id."),
    UpstreamUnreachable => ("upstream_unreachable", 502, true, "Target site unreachable",
        "The target site did not answer in time or broke off; retry later."),
    ActionFailed => ("action_failed", 502, false, "The site did not confirm the action",
        "The site answered but did not confirm the action; nothing was charged. Check the params against discover before trying again."),
    UpstreamInvalidResponse => ("upstream_invalid_response", 502, true, "Unreadable answer from the site",
        "The site's answer could not be read as the map expects; nothing was charged. Retry later."),
    UpstreamTimeout => ("upstream_timeout", 504, true, "The site timed out",
        "The site did not answer in time; nothing was charged. Retry with a new Idempotency-Key, or the same one to see this answer again."),
    Interrupted => ("interrupted", 502, true, "Interrupted",
        "The service stopped while the action ran, so its outcome is unknown; it was refunded. Check the site before retrying."),
    Unavailable => ("unavailable", 503, true, "Service unavailable",
        "Retry after a short wait."),
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for c in FailureClass::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {c}");
            assert_eq!(FailureClass::parse(c.as_str()), Some(*c));
            assert!((400..600).contains(&c.http_status()));
            assert!(c.hint().ends_with('.'));
        }
        assert_eq!(serde_json_name(FailureClass::RateLimited), "rate_limited");
    }

    fn serde_json_name(c: FailureClass) -> String {
        serde_json::to_value(c)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }
}
