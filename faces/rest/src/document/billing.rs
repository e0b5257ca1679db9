//! The site's `/api/billing/*` JSON endpoints in the OpenAPI document: they are served by the
//! web face on the site's origin, so they are written here rather than derived from handlers.

use serde_json::{Value, json};

use super::{ACCOUNT_ID, VISIBLE_ASCII, merge, problem, retry_after};

/// The site's `/api/billing/*` JSON endpoints (served on `{site_url}` by the web face).
pub(super) fn billing(doc: &mut Value, site_url: &str, checkout_skus: Vec<String>) {
    let servers = json!([{"url": site_url, "description": "The site origin"}]);
    let receipt = json!({
        "type": "object",
        "description": "One movement of credits or money, as the ledger recorded it.",
        "properties": {
            "receipt_id": {"type": "string"}, "kind": {"type": "string"},
            "credits": {"type": "integer"}, "spendable_delta": {"type": "integer"},
            "frozen_delta": {"type": "integer"}, "shortfall": {"type": "integer"},
            "amount": {"type": ["integer", "null"]}, "currency": {"type": ["string", "null"]},
            "payment_id": {"type": ["string", "null"]}, "checkout_id": {"type": ["string", "null"]},
            "task_id": {"type": ["string", "null"]}, "artifact_id": {"type": ["string", "null"]},
            "note": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
        },
        "required": ["receipt_id", "kind", "created_at"],
    });
    let schemas = json!({
        "BillingAccount": {
            "type": "object",
            "description": "The signed-in customer's plan, credits and latest receipts.",
            "required": ["account_id", "plan", "credits", "receipts"],
            "properties": {
                "account_id": {"type": "string"},
                "plan": {"type": "string"},
                "credits": {
                    "type": "object",
                    "required": ["spendable", "held", "frozen"],
                    "properties": {
                        "spendable": {"type": "integer"}, "held": {"type": "integer"},
                        "frozen": {"type": "integer"},
                    },
                },
                "receipts": {"type": "array", "items": {"$ref": "#/components/schemas/BillingReceipt"}},
            },
        },
        "BillingReceipt": receipt,
        "CheckoutRequest": {
            "type": "object",
            "description": "A catalog SKU (`/.well-known/payment-protocols.json`).",
            "required": ["sku"],
            "additionalProperties": false,
            "properties": {"sku": {"type": "string", "enum": checkout_skus,
                "description": "A SKU sold by checkout; a sales-led one is 422 `contact_sales`."}},
        },
        "CheckoutSession": {
            "type": "object",
            "required": ["checkout_id", "checkout_url", "sku", "amount", "currency", "credits", "expires_at", "status", "note"],
            "properties": {
                "checkout_id": {"type": "string"},
                "checkout_url": {"type": "string", "format": "uri", "description": "The provider's hosted checkout: send the browser there."},
                "sku": {"type": "string"}, "amount": {"type": "integer"},
                "currency": {"type": "string"}, "credits": {"type": "integer"},
                "expires_at": {"type": "string", "format": "date-time"},
                "status": {"type": "string", "enum": ["pending"]},
                "note": {"type": "string"},
            },
        },
        "WebhookReceived": {
            "type": "object",
            "required": ["received", "webhook_id", "type", "status", "detail"],
            "properties": {
                "received": {"type": "boolean"}, "webhook_id": {"type": "string"},
                "type": {"type": "string"},
                "status": {"type": "string", "enum": ["applied", "pending", "acknowledged", "rejected", "duplicate"]},
                "detail": {"type": "string"},
            },
        },
        "MeterEvent": {
            "type": "object",
            "additionalProperties": false,
            "required": ["identifier", "event_name", "value"],
            "properties": {
                "identifier": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": VISIBLE_ASCII,
                    "description": "Idempotency: one event per identifier."},
                "event_name": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": VISIBLE_ASCII},
                "account_id": {"type": ["string", "null"], "pattern": ACCOUNT_ID},
                "value": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000},
                "timestamp": {"type": ["string", "null"], "format": "date-time"},
            },
        },
        "MeterEventRecorded": {
            "type": "object",
            "required": ["meter_event_id", "identifier", "replayed", "forwarded"],
            "properties": {
                "meter_event_id": {"type": "string"}, "identifier": {"type": "string"},
                "replayed": {"type": "boolean"}, "forwarded": {"type": "boolean"},
            },
        },
    });
    if let (Some(target), Value::Object(add)) = (
        doc.pointer_mut("/components/schemas")
            .and_then(Value::as_object_mut),
        schemas,
    ) {
        target.extend(add);
    }
    let schemes = json!({
        "SessionCookie": {"type": "apiKey", "in": "cookie", "name": kit::session::SESSION_COOKIE,
            "description": "The customer's signed-in web session on the site."},
        "CsrfToken": {"type": "http", "scheme": "bearer",
            "description": "The CSRF token of the site's page (not an API key: API keys are refused)."},
        "InternalToken": {"type": "http", "scheme": "bearer",
            "description": "The operator's internal token (`SVC_INTERNAL_TOKEN`)."},
    });
    merge(doc, "/components/securitySchemes", schemes);
    let json_of = |schema: &str| json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}});
    let paths = json!({
        "/api/billing/account": {"get": {
            "tags": ["Billing"],
            "summary": "The billing account (signed-in web session)",
            "description": "The signed-in customer's plan, credits and receipts. Read in the site's web session; \
                requests carrying `Authorization` are refused (agents read credits with `GET /api/usage`).",
            "security": [{"SessionCookie": []}],
            "servers": servers,
            "responses": {
                "200": {"description": "The account.", "content": json_of("BillingAccount")},
                "401": problem("Not signed in (`sign_in_required`) or the session ended."),
                "403": problem("Sent with an API key (`api_key_not_allowed`)."),
                "429": retry_after("Rate limit reached."),
                "500": problem("Internal error."),
                "503": retry_after("Temporarily unavailable (`unavailable`)."),
            },
        }},
        "/api/billing/create-checkout-session": {"post": {
            "tags": ["Billing"],
            "summary": "Start hosted checkout (signed-in web session only)",
            "description": "For the site's own pages: the session cookie, an Origin of this site and the page's CSRF \
                token as the bearer. API keys are refused: agents call the MCP tool `svc_create_checkout_session` and \
                hand the human its link. Credits come only with the provider's verified webhook.",
            "security": [{"SessionCookie": [], "CsrfToken": []}],
            "servers": servers,
            "parameters": [{
                "name": "Idempotency-Key", "in": "header", "required": true,
                "description": "The same key returns the same checkout (200 with `Idempotent-Replayed: true`).",
                "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": VISIBLE_ASCII},
            }, {
                "name": "svc_csrf", "in": "cookie", "required": true,
                "description": "The site's CSRF seed cookie; the bearer is the token derived from it.",
                "schema": {"type": "string", "minLength": 1},
            }],
            "requestBody": {"required": true, "content": json_of("CheckoutRequest")},
            "responses": {
                "200": {"description": "The checkout this Idempotency-Key already created.", "content": json_of("CheckoutSession")},
                "201": {"description": "Checkout created: send the browser to `checkout_url`.", "content": json_of("CheckoutSession")},
                "400": problem("Body not UTF-8 JSON of the request's fields (`malformed_request`) or no Idempotency-Key (`idempotency_key_required`)."),
                "401": problem("Not signed in (`sign_in_required`)."),
                "403": problem("Sent with an API key (`api_key_not_allowed`), or without this site's Origin and CSRF token (`csrf_rejected`)."),
                "413": problem("Body larger than 16 KiB."),
                "415": problem("Body not sent as application/json (`unsupported_media_type`)."),
                "422": problem("Unknown SKU (`invalid_request`), a sales-led plan (`contact_sales`), or the key reused for another request (`idempotency_conflict`)."),
                "429": retry_after("Rate limit reached."),
                "500": problem("Internal error."),
                "502": problem("The payment provider did not answer (`payment_provider_unavailable`) or refused the request (`payment_provider_refused`)."),
                "503": retry_after("Billing not configured or the store unreachable (`unavailable`)."),
            },
        }},
        "/api/billing/webhook": {"post": {
            "tags": ["Billing"],
            "summary": "Payment-provider webhook (Standard Webhooks signature)",
            "description": "Only the payment provider calls it. The signature headers are verified against the raw \
                body before anything is applied; an event id seen before changes nothing (`duplicate`).",
            "security": [],
            "servers": servers,
            "parameters": [
                {"name": "webhook-id", "in": "header", "required": true, "schema": {"type": "string", "minLength": 1}},
                {"name": "webhook-timestamp", "in": "header", "required": true, "schema": {"type": "string", "pattern": "^[0-9]+$"}},
                {"name": "webhook-signature", "in": "header", "required": true, "schema": {"type": "string", "minLength": 1},
                    "description": "Space-separated `v1,<base64 HMAC-SHA256>` signatures."},
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {
                "200": {"description": "Verified and stored (also for an event already received).", "content": json_of("WebhookReceived")},
                "400": problem("Not verified (`webhook_rejected`): which check failed is only logged."),
                "413": problem("Body larger than 256 KiB."),
                "429": retry_after("Rate limit reached."),
                "503": retry_after("Not stored now (`unavailable`); deliver it again."),
            },
        }},
        "/api/billing/report-meter-event": {"post": {
            "tags": ["Billing"],
            "summary": "Report a usage-meter event (internal)",
            "description": "The service's own usage reporting, with the internal token; once per `identifier`.",
            "security": [{"InternalToken": []}],
            "servers": servers,
            "requestBody": {"required": true, "content": json_of("MeterEvent")},
            "responses": {
                "202": {"description": "Recorded (or already recorded: `replayed`).", "content": json_of("MeterEventRecorded")},
                "400": problem("Body not the expected JSON (`malformed_request`)."),
                "401": problem("No token (`internal_token_required`)."),
                "403": problem("Not the internal token (`internal_only`)."),
                "413": problem("Body larger than 16 KiB."),
                "422": problem("A value is not acceptable (`invalid_request`)."),
                "429": retry_after("Rate limit reached."),
                "500": problem("Internal error."),
                "502": problem("The payment provider did not answer (`payment_provider_unavailable`) or refused the request (`payment_provider_refused`)."),
                "503": retry_after("Temporarily unavailable (`unavailable`)."),
            },
        }},
    });
    merge(doc, "/paths", paths);
    if let Some(tags) = doc.get_mut("tags").and_then(Value::as_array_mut) {
        tags.push(json!({"name": "Billing", "description": "The site's billing endpoints: the customer's web session, the provider's webhook, internal metering."}));
    }
}
