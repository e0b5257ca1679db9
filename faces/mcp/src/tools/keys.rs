//! `svc_list_keys`, `svc_create_key`, `svc_rotate_key` and `svc_revoke_key`: the account's API
//! keys, with the REST API's bodies and the key service's rules (a key grants and acts only
//! within the scopes it holds).

use kit::wire::keys::{ApiKeyList, ApiKeyView, CreatedKey, RotatedKeyView, requested_scopes};
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use svc_services::Holder;

use super::{principal, reply, tool_error, wire, wire_answer};
use crate::SvcMcp;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyArgs {
    /// A name to recognise the key by (default api).
    #[schemars(length(max = 80))]
    pub name: Option<String>,
    /// Its scopes, each one this key holds; omitted: read, discover and execute as far as this
    /// key holds them. ["read"] makes a read-only key.
    #[schemars(length(min = 1, max = 8))]
    pub scopes: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrefixArgs {
    /// The key's prefix as svc_list_keys gives it: svc_live_ (or svc_test_) and 8 characters.
    #[schemars(length(min = 17, max = 17))]
    pub prefix: String,
}

#[tool_router(router = keys_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "svc_list_keys",
        title = "List API keys",
        description = "Lists the account's API keys, oldest first: prefix, name, scopes, status (active, rotating, \
            expired, revoked), created_at and, for a rotated key, expires_at. Never a secret. Needs an API key.",
        output_schema = wire::<ApiKeyList>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_list_keys(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let now = self.ctx.services.clock.now();
        reply(
            self.ctx
                .services
                .keys
                .account_keys(&principal.account.id)
                .await,
            |keys| {
                wire_answer(&ApiKeyList {
                    keys: keys.iter().map(|k| ApiKeyView::of(k, now)).collect(),
                })
            },
        )
    }

    #[tool(
        name = "svc_create_key",
        title = "Create an API key",
        description = "Creates another key of the same account, for a script or a sub-agent, with scopes this key \
            holds (a key never grants more than it holds: insufficient_scope names what it lacks). Pass scopes \
            [\"read\"] for a read-only key. The secret in api_key is shown only in this answer; store it securely and \
            never echo it. Needs an API key.",
        output_schema = wire::<CreatedKey>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_create_key(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<CreateKeyArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let scopes = match requested_scopes(args.scopes.as_deref()) {
            Ok(s) => s,
            Err(problem) => return Ok(tool_error(&problem)),
        };
        let holder = Holder::key(&principal.key);
        let now = self.ctx.services.clock.now();
        reply(
            self.ctx
                .services
                .keys
                .create_for(&principal.account.id, &holder, args.name.as_deref(), scopes)
                .await,
            |(secret, record)| {
                wire_answer(&CreatedKey {
                    api_key: secret.expose().to_owned(),
                    key: ApiKeyView::of(&record, now),
                })
            },
        )
    }

    #[tool(
        name = "svc_rotate_key",
        title = "Rotate an API key",
        description = "Issues a new secret for a key (same scopes and name). The old key keeps working until \
            previous.expires_at (24 hours by default), then stops: switch to the new api_key before then. This key \
            must hold every scope of the key it rotates. The new secret is shown only in this answer. Needs an API \
            key.",
        output_schema = wire::<RotatedKeyView>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_rotate_key(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<PrefixArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let holder = Holder::key(&principal.key);
        let now = self.ctx.services.clock.now();
        reply(
            self.ctx
                .services
                .keys
                .rotate_for(&principal.account.id, &holder, &args.prefix)
                .await,
            |rotated| wire_answer(&RotatedKeyView::of(&rotated, now)),
        )
    }

    #[tool(
        name = "svc_revoke_key",
        title = "Revoke an API key",
        description = "Revokes a key of the account at once (also during a rotation's overlap); requests with it then \
            get 401. A key may revoke itself, and another key only if it holds every scope of that key. Revoking \
            again answers the same. Needs an API key.",
        output_schema = wire::<ApiKeyView>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn svc_revoke_key(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<PrefixArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let holder = Holder::key(&principal.key);
        let now = self.ctx.services.clock.now();
        reply(
            self.ctx
                .services
                .keys
                .revoke_for(&principal.account.id, &holder, &args.prefix)
                .await,
            |record| wire_answer(&ApiKeyView::of(&record, now)),
        )
    }
}
