//! Discovery files, generated from the same registries the faces use so they cannot drift: the
//! composition root hands over what the other faces publish (the OpenAPI document, the MCP
//! tools, the A2A card) and this face serves it.

pub mod agents;
pub mod files;

use poem::{EndpointExt, Route, get};
use serde_json::{Value, json};

use files::{StaticFile, discovery_file, json_file, serve_static, text_file};

use kit::{context::AppContext, wire::discovery::McpListing};

/// `/.well-known/mcp/tools.json`: the same tools, with the same schemas, as `tools/list`.
pub fn tools_manifest(ctx: &AppContext, mcp: &McpListing) -> Value {
    let listed: Vec<Value> = mcp
        .tools
        .iter()
        .map(|spec| {
            let mut tool = spec.tool.clone();
            if let Some(obj) = tool.as_object_mut() {
                obj.insert("requiresApiKey".into(), json!(spec.requires_api_key));
            }
            tool
        })
        .collect();
    json!({
        "server": {
            "name": "svc",
            "version": env!("CARGO_PKG_VERSION"),
            "url": ctx.origins.mcp_url,
            "transport": "streamable-http",
            "protocolVersions": ["2025-06-18", "2025-11-25", "2026-07-28"],
        },
        "authentication": {
            "type": "bearer",
            "header": "Authorization",
            "format": "Bearer svc_<API_KEY>",
        },
        "tools": listed,
    })
}

/// RFC 8414 metadata: the device flow's endpoints.
pub fn oauth_authorization_server(ctx: &AppContext) -> Value {
    let base = &ctx.origins.base_url;
    let site = &ctx.origins.site_url;
    // The device flow may also ask for `execute:consequential`: the human grants it or not.
    let scopes: Vec<String> = svc_services::keys::grantable_scopes()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    json!({
        "issuer": base,
        "device_authorization_endpoint": format!("{base}/oauth2/device_authorization"),
        "token_endpoint": format!("{base}/oauth2/token"),
        "grant_types_supported": [kit::wire::signup::DEVICE_CODE_GRANT],
        "response_types_supported": [],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": scopes,
        "service_documentation": format!("{site}/llms.txt"),
        "op_policy_uri": format!("{site}/privacy"),
        "op_tos_uri": format!("{site}/terms"),
    })
}

/// RFC 9728 metadata of the API as a protected resource: where keys come from and how they
/// are sent. The 401 challenge points here.
pub fn oauth_protected_resource(ctx: &AppContext) -> Value {
    let base = &ctx.origins.base_url;
    let scopes: Vec<String> = svc_services::keys::grantable_scopes()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    json!({
        "resource": base,
        "authorization_servers": [base],
        "bearer_methods_supported": ["header"],
        "scopes_supported": scopes,
        "resource_name": "Agent action and commerce service",
        "resource_documentation": format!("{}/openapi.json", base),
    })
}

/// `/.well-known/action-catalog.json`: which action families the service runs and which it
/// never does, and the catalog of failure classes.
pub fn action_catalog() -> Value {
    use svc_ports::{ActionFamily, FailureClass};
    let family = |f: &ActionFamily| {
        json!({
            "family": f.as_str(),
            "description": f.about(),
            "consequential": f.always_consequential(),
        })
    };
    let allowed: Vec<Value> = ActionFamily::ALL
        .iter()
        .filter(|f| f.allowed())
        .map(family)
        .collect();
    let disallowed: Vec<Value> = ActionFamily::ALL
        .iter()
        .filter(|f| !f.allowed())
        .map(family)
        .collect();
    let failures: Vec<Value> = FailureClass::ALL
        .iter()
        .map(|c| {
            json!({
                "failure_class": c.as_str(),
                "status": c.http_status(),
                "retryable": c.retryable(),
                "title": c.title(),
                "hint": c.hint(),
            })
        })
        .collect();
    json!({
        "allowed_families": allowed,
        "disallowed_families": disallowed,
        "consequential_scope": svc_ports::actions::CONSEQUENTIAL_SCOPE,
        "failure_classes": failures,
    })
}

/// `/.well-known/payment-artifact.schema.json`: the verification artifact, draft 2020-12.
pub fn payment_artifact_schema(ctx: &AppContext) -> Value {
    let mut schema = kit::schema::json_schema_of::<kit::wire::actions::VerificationArtifactDoc>();
    if let Some(o) = schema.as_object_mut() {
        o.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        o.insert(
            "$id".into(),
            json!(format!(
                "{}/.well-known/payment-artifact.schema.json",
                ctx.origins.site_url
            )),
        );
        o.insert("title".into(), json!("Verification artifact"));
        o.insert(
            "description".into(),
            json!("Returned with every settled task. `status` tells a started payment, a completed payment and a verified business action apart. The signature is Ed25519 over the artifact without `signature`, as RFC 8785 canonical JSON; keys at /.well-known/jwks.json."),
        );
    }
    schema
}

const SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// `/.well-known/agent-traffic-event.schema.json`: the schema every event is validated against.
pub fn agent_traffic_event_schema(ctx: &AppContext) -> Value {
    svc_services::telemetry::event_schema(&ctx.origins.site_url)
}

/// `/.well-known/payment-authority.schema.json`: the delegated payment authority record.
pub fn payment_authority_schema(ctx: &AppContext) -> Value {
    json!({
        "$schema": SCHEMA_2020_12,
        "$id": format!("{}/.well-known/payment-authority.schema.json", ctx.origins.site_url),
        "title": "Delegated payment authority",
        "description": "What a signed-in human allowed an agent to pay: for which scope, up to which amount per interval, in which currency, until when. Created by the human on the site, never by an agent alone; revocable at revocation_url.",
        "type": "object",
        "required": ["authority_id", "principal", "scope", "amount_limit", "currency", "expires_at",
            "revocation_url", "receipt_required", "verification_required", "created_at"],
        "properties": {
            "authority_id": {"type": "string"},
            "principal": {
                "type": "object",
                "required": ["type", "id", "agent_provider"],
                "properties": {
                    "type": {"type": "string"},
                    "id": {"type": "string"},
                    "agent_provider": {"type": "string"}
                }
            },
            "scope": {"type": "array", "items": {"type": "string"}},
            "amount_limit": {
                "type": "object",
                "required": ["value", "interval"],
                "properties": {
                    "value": {"type": "integer", "minimum": 1, "description": "Minor units of `currency`."},
                    "interval": {"type": "string", "enum": ["single_use", "day", "week", "month"],
                        "description": "`single_use`: one payment of at most `value`, ever. `day`, `week`, `month` (30 days): at most `value` per fixed window starting at `created_at`."}
                }
            },
            "currency": {"type": "string", "pattern": "^[a-z]{3}$", "description": "Lowercase ISO 4217 code."},
            "expires_at": {"type": "string", "format": "date-time"},
            "revocation_url": {"type": "string", "format": "uri"},
            "receipt_required": {"type": "boolean"},
            "verification_required": {"type": "boolean"},
            "created_at": {"type": "string", "format": "date-time"}
        }
    })
}

/// `/.well-known/sandbox.json`: the sandbox's real limits (the same settings the live service
/// uses, with the values this process runs with).
pub fn sandbox_limits(ctx: &AppContext) -> Value {
    let identity = ctx.services.identity.settings();
    let policy = ctx.services.usage.policy();
    let sandbox = ctx.environment == svc_ports::Environment::Test;
    json!({
        "environment": ctx.environment.as_str(),
        "is_sandbox": sandbox,
        "key_prefix": if sandbox { "svc_test_" } else { "svc_live_" },
        "base_url": ctx.origins.base_url,
        "mcp_url": ctx.origins.mcp_url,
        "outbox_url": ctx.outbox.as_ref().map(|_| format!("{}/sandbox/outbox", ctx.origins.site_url)),
        "seed": sandbox.then(|| json!({"email": svc_services::keys::SANDBOX_EMAIL, "credits": svc_services::keys::SANDBOX_CREDITS})),
        "limits": {
            "request_body_bytes": ctx.limits.max_body_bytes,
            "requests_per_minute_per_ip": ctx.limits.rate_limit_per_ip,
            "requests_per_minute_per_key": ctx.limits.rate_limit_per_key,
            "readiness_scans_per_minute_per_ip": ctx.limits.scan_rate_limit_per_ip,
            "connect_link_minutes": svc_ports::connections::CONNECT_LINK_TTL_MINUTES,
            "connection_poll_wait_ms_max": svc_services::connections::MAX_POLL_WAIT.as_millis() as u64,
            "fetched_page_bytes": 10 * 1024 * 1024,
            "fetch_timeout_seconds": 15,
            "redirects": 5,
            "action_response_bytes": 2 * 1024 * 1024,
            "idempotency_key_length": svc_ports::tasks::MAX_IDEMPOTENCY_KEY_LEN,
            "idempotency_window_hours": policy.idempotency_window_hours,
            "credits_per_completed_action": policy.cost_per_completed_action,
            "unsettled_task_refunded_after_seconds": ctx.limits.recover_after_seconds,
            "device_code_seconds": identity.device_code_ttl.as_secs(),
            "device_poll_interval_seconds": identity.poll_interval.as_secs(),
            "email_code_seconds": identity.email_code_ttl.as_secs(),
            "email_code_attempts": svc_ports::identity::MAX_CODE_ATTEMPTS,
            "codes_per_address_per_hour": identity.codes_per_address_per_hour,
            "free_credits_per_new_account": identity.free_credits,
            "wrong_codes_per_ip": identity.wrong_codes_per_ip,
            "lockout_window_seconds": identity.lockout_window.as_secs(),
            "web_session_seconds": identity.session_ttl.as_secs()
        },
        "sites": [
            {"domain": "demo.sandbox.test", "for": "reading"},
            {"domain": "shop.sandbox.test", "for": "actions: search, product, cart, order"},
            {"domain": "booking.sandbox.test", "for": "actions that need a connection (booking-sandbox)"},
            {"domain": "flaky.sandbox.test", "for": "failures on purpose, each refunded"}
        ]
    })
}

/// `/.well-known/mcp/catalog.json`: the MCP servers this site offers.
pub fn mcp_catalog(ctx: &AppContext) -> Value {
    json!({
        "servers": [{
            "name": "svc",
            "url": ctx.origins.mcp_url,
            "transport": "streamable-http",
            "serverCard": format!("{}/server-card", ctx.origins.mcp_url),
            "toolsManifest": format!("{}/.well-known/mcp/tools.json", ctx.origins.site_url)
        }]
    })
}

/// `/.well-known/mcp/apps.json`: the setup, auth, payment-authority and verification
/// resources an MCP client needs around the tools.
pub fn mcp_apps(ctx: &AppContext) -> Value {
    let (site, base) = (&ctx.origins.site_url, &ctx.origins.base_url);
    json!({
        "apps": [{
            "name": "svc",
            "mcp_url": ctx.origins.mcp_url,
            "setup": {
                "preferred": {"tools": ["svc_start_claim_link_signup", "svc_poll_claim_link_signup"],
                    "http": {"device_authorization": format!("{base}/oauth2/device_authorization"), "token": format!("{base}/oauth2/token")},
                    "show_the_human": "verification_uri_complete only"},
                "fallback": {"tools": ["svc_start_api_key_signup", "svc_complete_api_key_signup"],
                    "http": {"register": format!("{base}/api/register"), "verify": format!("{base}/api/verify")}},
                "terms": format!("{site}/terms"),
                "privacy": format!("{site}/privacy")
            },
            "auth": {
                "scheme": "bearer",
                "header": "Authorization: Bearer svc_<API_KEY>",
                "authorization_server": format!("{base}/.well-known/oauth-authorization-server"),
                "protected_resource": format!("{base}/.well-known/oauth-protected-resource"),
                "status_tool": "svc_auth_status"
            },
            "connections": {
                "tools": ["svc_connection_status", "svc_start_connection", "svc_poll_connection"],
                "provider": "exactly an action's auth_provider from discover or list_actions",
                "show_the_human": "connect_url only (it lives 10 minutes)",
                "final_states": ["expired", "refused", "wrong_account"],
                "connect_page": format!("{site}/connect")
            },
            "payment_authority": {
                "schema": format!("{site}/.well-known/payment-authority.schema.json"),
                "create": format!("{site}/account#payment-authorities"),
                "list": format!("{base}/api/payment-authorities"),
                "read": format!("{base}/api/payment-authorities/{{authority_id}}"),
                "revocation": "each authority's revocation_url: GET reports status and remaining without credentials; POST revokes (the owning account)",
                "created_by": "the signed-in human on the account page; never an API key"
            },
            "verification": {
                "jwks": format!("{site}/.well-known/jwks.json"),
                "artifact_schema": format!("{site}/.well-known/payment-artifact.schema.json"),
                "task": format!("{base}/api/tasks/{{task_id}}"),
                "verify_payment": format!("{base}/api/tasks/{{task_id}}/verify"),
                "verify_tool": "svc_verify_task"
            }
        }]
    })
}

/// `/.well-known/agent-commerce.json`: what is sold, for how much, and how an agent starts a
/// purchase, from the same catalog the checkout endpoints validate against.
pub fn agent_commerce(ctx: &AppContext) -> Value {
    use svc_services::billing::Offer;
    let (site, base) = (&ctx.origins.site_url, &ctx.origins.base_url);
    let billing = &ctx.services.billing;
    let policy = ctx.services.usage.policy();
    let skus: Vec<Value> = billing
        .catalog()
        .skus
        .iter()
        .map(|sku| match &sku.offer {
            Offer::Checkout {
                amount,
                currency,
                credits,
            } => json!({
                "sku": sku.id, "name": sku.name, "plan": sku.plan.as_str(), "description": sku.description,
                "purchase": "checkout", "available": billing.is_configured(),
                "price": {"amount": amount, "currency": currency.as_str(), "unit": "minor"},
                "credits": credits,
            }),
            Offer::Contact { url } => json!({
                "sku": sku.id, "name": sku.name, "plan": sku.plan.as_str(), "description": sku.description,
                "purchase": "contact_sales", "contact_url": url,
            }),
        })
        .collect();
    json!({
        "version": "1.0",
        "merchant": {"name": "svc", "site": site, "terms": format!("{site}/terms"), "privacy": format!("{site}/privacy")},
        "catalog": skus,
        "metering": {
            "unit": "credit",
            "cost_per_completed_action": policy.cost_per_completed_action,
            "failed_actions": "refunded",
            "idempotency_window_hours": policy.idempotency_window_hours,
            "balance": format!("{base}/api/usage"),
        },
        "checkout": {
            "agent_tool": "svc_create_checkout_session",
            "agent_flow": "Call svc_create_checkout_session with an API key; show the human only handoff_url; credits arrive once the provider's signed webhook is verified.",
            "web_session_endpoint": format!("{site}/api/billing/create-checkout-session"),
            "web_session_requirements": ["signed-in web session cookie", "Origin of this site", "CSRF token as bearer", "Idempotency-Key"],
            "api_keys_accepted": false,
            "billing_account": format!("{site}/api/billing/account"),
        },
        "entitlement": {
            "granted_by": "verified payment-provider webhook",
            "redirect_is_proof": false,
            "protocols": format!("{site}/.well-known/payment-protocols.json"),
        },
        "refunds": "A refunded payment's credits are taken back (credits already spent cannot be).",
        "disputes": "A disputed payment's credits are frozen until the dispute closes: released when won, given up when lost.",
    })
}

/// `/.well-known/payment-protocols.json`: how payments and their proof travel.
pub fn payment_protocols(ctx: &AppContext) -> Value {
    let site = &ctx.origins.site_url;
    json!({
        "version": "1.0",
        "protocols": [
            {
                "id": "hosted-checkout",
                "description": "The customer pays on the payment provider's hosted page; the service never sees card data.",
                "start": {"mcp_tool": "svc_create_checkout_session", "web_session": format!("{site}/api/billing/create-checkout-session")},
                "currencies": ctx.services.billing.catalog().skus.iter().filter_map(|s| match &s.offer {
                    svc_services::billing::Offer::Checkout { currency, .. } => Some(currency.as_str().to_owned()),
                    _ => None,
                }).collect::<Vec<_>>(),
            },
            {
                "id": "standard-webhooks",
                "description": "Provider events are signed with Standard Webhooks and verified against the raw body before any credit is applied.",
                "endpoint": format!("{site}/api/billing/webhook"),
                "headers": ["webhook-id", "webhook-timestamp", "webhook-signature"],
                "signature": "v1, HMAC-SHA256 over {webhook-id}.{webhook-timestamp}.{body}, base64; several signatures space separated",
                "secret_format": "whsec_<base64>",
                "tolerance_seconds": svc_ports::webhooks::TOLERANCE_SECONDS,
                "deduplication": "webhook-id",
                "event_types": ["checkout.completed", "payment.succeeded", "payment.refunded", "dispute.created", "dispute.closed"],
                "agents_may_call": false,
            },
            {
                "id": "delegated-payment-authority",
                "description": "A human-approved, bounded authority an agent names (execute's authority_id) to run a payment action; created by the signed-in human on the account page, never by an agent.",
                "schema": format!("{site}/.well-known/payment-authority.schema.json"),
                "create": format!("{site}/account#payment-authorities"),
                "list": format!("{}/api/payment-authorities", ctx.origins.base_url),
                "revocation": "each authority's revocation_url (GET: status and remaining; POST: revoke)",
            },
            {
                "id": "verification-artifact",
                "description": "Every settled task returns an Ed25519-signed artifact (RFC 8785 canonical JSON).",
                "schema": format!("{site}/.well-known/payment-artifact.schema.json"),
                "jwks": format!("{site}/.well-known/jwks.json"),
            }
        ]
    })
}

/// `/llms.txt` (llmstxt.org): what the service is, then the files and endpoints an agent needs.
pub fn llms_txt(ctx: &AppContext) -> String {
    let (site, base) = (&ctx.origins.site_url, &ctx.origins.base_url);
    format!(
        "# svc\n\n> Agent action and commerce service: read public web pages, discover the actions learned for a site, \
execute one mapped action and get a typed result with a signed verification artifact (about one credit per completed \
action, failed actions refunded), sign up for an API key and buy credits.\n\n\
Every live tool and endpoint needs `Authorization: Bearer svc_<API_KEY>`. Without a key, sign up: call the MCP tool \
`svc_start_claim_link_signup` (or `POST {base}/agent/identity`, RFC 8628) and show the human only \
`verification_uri_complete`. Errors are RFC 9457 problem+json with `failure_class`, `retryable`, `hint` and `next_action`.\n\n\
## API\n\n\
- [OpenAPI 3.1 contract]({base}/openapi.json): every REST endpoint, request and answer\n\
- [MCP server]({mcp}): Streamable HTTP; tools listed in [tools.json]({site}/.well-known/mcp/tools.json)\n\
- [MCP server card]({site}/.well-known/mcp/server-card.json): transport, auth and tools\n\
- [A2A agent card]({site}/.well-known/agent-card.json): email-code signup over A2A, and with a key read_page, discover_actions and execute_action as streamed tasks\n\
- [API catalog]({site}/.well-known/api-catalog): the APIs above as an RFC 9727 linkset\n\
- [Agent skills]({site}/.well-known/agent-skills/index.json): reading, discovering, executing and signing up, as SKILL.md files\n\n\
## Signup and auth\n\n\
- [OAuth authorization server metadata]({base}/.well-known/oauth-authorization-server): the device flow's endpoints\n\
- [OAuth protected resource metadata]({base}/.well-known/oauth-protected-resource): how keys are sent\n\
- [MCP apps]({site}/.well-known/mcp/apps.json): setup, auth, payment authority and verification resources\n\
- [Terms]({site}/terms): show them to the human before signup\n\
- [Privacy]({site}/privacy): what is recorded and what never is\n\n\
## Actions and proof\n\n\
- [Action catalog]({site}/.well-known/action-catalog.json): allowed and disallowed action families, failure classes\n\
- [JWKS]({site}/.well-known/jwks.json): keys that verify artifacts offline\n\
- [Verification artifact schema]({site}/.well-known/payment-artifact.schema.json)\n\
- [Payment authority schema]({site}/.well-known/payment-authority.schema.json): actions that pay need `authority_id`, \
an authority the human creates at {site}/account; read yours at `GET {base}/api/payment-authorities`, check or revoke one at its \
`revocation_url`\n\n\
## Credits and billing\n\n\
- [Agent commerce]({site}/.well-known/agent-commerce.json): plans, prices, metering, and how to start a purchase\n\
- [Payment protocols]({site}/.well-known/payment-protocols.json): hosted checkout, signed webhooks, authorities, artifacts\n\
- [Buying credits]({site}/.well-known/mcp/apps.json): the MCP tool `svc_create_checkout_session` returns a `handoff_url`; \
show the human only that; credits arrive once the payment provider's signed webhook is verified, never on a redirect\n\n\
## Optional\n\n\
- [Full reference]({site}/llms-full.txt): every endpoint and tool with its description\n\
- [Sandbox limits]({site}/.well-known/sandbox.json)\n\
- [Agent traffic event schema]({site}/.well-known/agent-traffic-event.schema.json)\n",
        mcp = ctx.origins.mcp_url,
    )
}

/// `/llms-full.txt`: llms.txt, then every REST operation (from the served OpenAPI document)
/// and every MCP tool (from the registry) with its description, and the failure catalog.
pub fn llms_full_txt(ctx: &AppContext, openapi: &Value, mcp: &McpListing) -> String {
    let mut out = llms_txt(ctx);
    out.push_str("\n## REST endpoints\n\n");
    if let Some(paths) = openapi["paths"].as_object() {
        for (path, item) in paths {
            for (method, op) in item.as_object().into_iter().flatten() {
                let summary = op["summary"].as_str().unwrap_or_default();
                let description = op["description"]
                    .as_str()
                    .unwrap_or_default()
                    .replace('\n', " ");
                out.push_str(&format!(
                    "- `{} {}`: {}{}{}\n",
                    method.to_uppercase(),
                    path,
                    summary,
                    if description.is_empty() { "" } else { ". " },
                    description
                ));
            }
        }
    }
    out.push_str(
        "- `POST /api/billing/create-checkout-session` (site, signed-in web session only): opens hosted checkout for a catalog SKU; \
         needs this site's Origin, the page's CSRF token as bearer and an Idempotency-Key; API keys are refused (403)\n\
         - `GET /api/billing/account` (site, signed-in web session): plan, credits and receipts\n\
         - `POST /api/billing/webhook` (payment provider only, Standard Webhooks signature): agents must not call it\n\
         - `POST /api/billing/report-meter-event` (internal token)\n",
    );
    out.push_str("\n## MCP tools\n\n");
    for t in &mcp.tools {
        out.push_str(&format!(
            "- `{}` ({}): {}\n",
            t.name,
            if t.requires_api_key {
                "API key"
            } else {
                "no key"
            },
            t.description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    out.push_str("\n## Failure classes\n\n");
    for c in svc_ports::FailureClass::ALL {
        out.push_str(&format!(
            "- `{}` (HTTP {}, {}): {}\n",
            c.as_str(),
            c.http_status(),
            if c.retryable() {
                "retryable"
            } else {
                "not retryable"
            },
            c.hint()
        ));
    }
    out
}

/// AI agents named in robots.txt, in the one group that welcomes them (the service is built
/// for them): the crawlers the readiness scan asks about, then these user-facing fetchers.
const FETCHERS_WELCOME: &[&str] = &[
    "OAI-SearchBot",
    "Claude-User",
    "Claude-SearchBot",
    "Perplexity-User",
];

/// Pages kept out of crawls: personal or one-time pages, never content.
const PRIVATE_PATHS: &[&str] = &[
    "/account",
    "/signin/code",
    "/signout",
    "/device",
    "/billing/",
    "/sandbox/",
];

/// What the content may be used for (contentsignals.org): search, answers given to a person
/// (`ai-input`) and training. The pages are documentation of a service built for agents.
pub const CONTENT_SIGNAL: &str = "search=yes, ai-input=yes, ai-train=yes";

/// `/robots.txt`: the AI crawlers named in a group with the same rules as everyone, content
/// signals in each group, private pages excluded, the sitemap named.
pub fn robots_txt(ctx: &AppContext) -> String {
    let rules = |out: &mut String| {
        out.push_str(&format!("Content-Signal: {CONTENT_SIGNAL}\nAllow: /\n"));
        for path in PRIVATE_PATHS {
            out.push_str(&format!("Disallow: {path}\n"));
        }
    };
    let mut out = String::from(
        "# Agents are welcome: see /llms.txt for what this service offers.\n\
         # Content signals (https://contentsignals.org/): search=yes: build a search index and link to it; \
         ai-input=yes: use it to answer a person; ai-train=yes: train or fine-tune models on it.\n\n",
    );
    for agent in svc_services::readiness::AI_CRAWLERS
        .iter()
        .chain(FETCHERS_WELCOME)
    {
        out.push_str(&format!("User-agent: {agent}\n"));
    }
    rules(&mut out);
    out.push_str("\nUser-agent: *\n");
    rules(&mut out);
    out.push_str(&format!(
        "\nSitemap: {}/sitemap.xml\n",
        ctx.origins.site_url
    ));
    out
}

/// `/sitemap.xml`: the public pages and the agent-facing documents.
pub fn sitemap_xml(ctx: &AppContext) -> String {
    let site = &ctx.origins.site_url;
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for path in [
        "/",
        "/index.md",
        "/llms.txt",
        "/llms-full.txt",
        "/openapi.json",
        "/signin",
        "/terms",
        "/privacy",
    ] {
        out.push_str(&format!("  <url><loc>{site}{path}</loc></url>\n"));
    }
    out.push_str("</urlset>\n");
    out
}

/// What the other faces publish, for the discovery files.
pub struct Published {
    /// The REST face's OpenAPI 3.1 document.
    pub openapi: Value,
    /// The MCP face's tools and instructions.
    pub mcp: McpListing,
    /// The A2A face's agent card.
    pub agent_card: Value,
}

/// The text of `/llms.txt` (also the landing page's Markdown answer).
pub fn llms_text(ctx: &AppContext) -> String {
    llms_txt(ctx)
}

/// Mounts every discovery file on `route`.
pub fn mount(route: Route, ctx: &AppContext, published: &Published) -> Route {
    let mcp_server_card_path = format!(
        "{}/server-card",
        ctx.origins
            .mcp_url
            .strip_prefix(&ctx.origins.base_url)
            .filter(|p| p.starts_with('/'))
            .unwrap_or("/mcp")
    );
    let server_card = agents::mcp_server_card(ctx, &published.mcp);
    let document = &published.openapi;
    agents::mount(route, ctx)
        .at("/openapi.json", discovery_file(document, "openapi_spec"))
        .at(
            "/.well-known/openapi.json",
            discovery_file(document, "openapi_spec"),
        )
        .at(
            "/.well-known/mcp/tools.json",
            discovery_file(&tools_manifest(ctx, &published.mcp), "mcp_registry"),
        )
        .at(
            "/.well-known/oauth-authorization-server",
            json_file(&oauth_authorization_server(ctx)),
        )
        .at(
            "/.well-known/oauth-protected-resource",
            json_file(&oauth_protected_resource(ctx)),
        )
        .at(
            "/.well-known/agent-card.json",
            discovery_file(&published.agent_card, "a2a_agent_card"),
        )
        .at(
            "/.well-known/agent.json",
            discovery_file(&published.agent_card, "a2a_agent_card"),
        )
        .at(
            "/.well-known/jwks.json",
            json_file(&ctx.services.actions.jwks()),
        )
        .at("/llms.txt", {
            let mut file = StaticFile::new(llms_txt(ctx).into_bytes(), "text/plain; charset=utf-8");
            file.surface = Some("llms_txt");
            get(serve_static).data(file)
        })
        .at("/robots.txt", text_file(robots_txt(ctx)))
        .at(
            "/sitemap.xml",
            get(serve_static).data(StaticFile::new(
                sitemap_xml(ctx).into_bytes(),
                "application/xml",
            )),
        )
        .at(
            "/llms-full.txt",
            text_file(llms_full_txt(ctx, document, &published.mcp)),
        )
        .at(
            "/.well-known/mcp/server-card.json",
            discovery_file(&server_card, "mcp_registry"),
        )
        .at(
            &mcp_server_card_path,
            discovery_file(&server_card, "mcp_registry"),
        )
        .at(
            "/.well-known/mcp/server-card",
            discovery_file(&server_card, "mcp_registry"),
        )
        .at(
            "/.well-known/mcp.json",
            discovery_file(&server_card, "mcp_registry"),
        )
        .at(
            "/.well-known/mcp/catalog.json",
            discovery_file(&mcp_catalog(ctx), "mcp_registry"),
        )
        .at("/.well-known/mcp/apps.json", json_file(&mcp_apps(ctx)))
        .at("/.well-known/sandbox.json", json_file(&sandbox_limits(ctx)))
        .at(
            "/.well-known/agent-traffic-event.schema.json",
            json_file(&agent_traffic_event_schema(ctx)),
        )
        .at(
            "/.well-known/payment-authority.schema.json",
            json_file(&payment_authority_schema(ctx)),
        )
        .at(
            "/.well-known/action-catalog.json",
            json_file(&action_catalog()),
        )
        .at(
            "/.well-known/agent-commerce.json",
            discovery_file(&agent_commerce(ctx), "agents_json"),
        )
        .at(
            "/.well-known/payment-protocols.json",
            json_file(&payment_protocols(ctx)),
        )
        .at(
            "/.well-known/payment-artifact.schema.json",
            json_file(&payment_artifact_schema(ctx)),
        )
}
