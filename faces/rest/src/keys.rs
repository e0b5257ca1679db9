//! An account's API keys over REST, for agents and scripts: list, create (scopes within the
//! calling key's), rotate (the old key keeps working for an overlap) and revoke. The MCP tools
//! `svc_list_keys`, `svc_create_key`, `svc_rotate_key` and `svc_revoke_key` answer the same
//! bodies. The rules are the key service's.

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::JsonBody;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::keys::*;
use poem_openapi::{ApiResponse, OpenApi, param::Path, payload::Json};
use serde_json::{Value, json};
use svc_services::Holder;

use crate::document::{PRINTABLE, add_links, merge, parameter_schema};

#[derive(ApiResponse)]
pub enum KeyListResponse {
    #[oai(status = 200)]
    Ok(Json<ApiKeyList>),
}

#[derive(ApiResponse)]
pub enum CreateKeyResponse {
    /// Created: `api_key` is shown only in this answer.
    #[oai(status = 201)]
    Created(Json<CreatedKey>),
}

#[derive(ApiResponse)]
pub enum RotateKeyResponse {
    /// Rotated: the new `api_key` is shown only in this answer; `previous` works until its
    /// `expires_at`.
    #[oai(status = 200)]
    Ok(Json<RotatedKeyView>),
}

#[derive(ApiResponse)]
pub enum RevokeKeyResponse {
    /// Revoked (now or before): requests with it get 401 `revoked_api_key`.
    #[oai(status = 200)]
    Ok(Json<ApiKeyView>),
}

pub struct KeysApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Keys")]
impl KeysApi {
    /// The account's API keys
    ///
    /// Every key of the calling key's account, oldest first: prefix, name, scopes, status,
    /// when it was created, and for a rotated key when it stops working (`expires_at`). Never
    /// a secret or a hash.
    #[oai(path = "/api/keys", method = "get")]
    async fn list(&self, auth: ApiKeyAuth) -> Result<KeyListResponse, ApiProblem> {
        let now = self.ctx.services.clock.now();
        let keys = self
            .ctx
            .services
            .keys
            .account_keys(&auth.0.account.id)
            .await?;
        Ok(KeyListResponse::Ok(Json(ApiKeyList {
            keys: keys.iter().map(|k| ApiKeyView::of(k, now)).collect(),
        })))
    }

    /// Create a key
    ///
    /// A new key of the same account, with scopes the calling key holds: a key can never grant
    /// more than it holds (403 `insufficient_scope` naming the scopes it lacks). Restricted
    /// keys are made this way: `{"name": "reader", "scopes": ["read"]}` makes a read-only key
    /// (it can read pages but not discover or run actions). `execute:consequential` (orders,
    /// bookings, payments) can be granted only by a key that holds it, itself granted by the
    /// human on the account page or in the device flow. The secret is in this answer only.
    #[oai(path = "/api/keys", method = "post")]
    async fn create(
        &self,
        auth: ApiKeyAuth,
        /// The new key's name and scopes; `{}` for the defaults.
        body: JsonBody<CreateKeyBody>,
    ) -> Result<CreateKeyResponse, ApiProblem> {
        let scopes = requested_scopes(body.0.scopes.as_deref())?;
        let holder = Holder::key(&auth.0.key);
        let (secret, record) = self
            .ctx
            .services
            .keys
            .create_for(&auth.0.account.id, &holder, body.0.name.as_deref(), scopes)
            .await?;
        let now = self.ctx.services.clock.now();
        Ok(CreateKeyResponse::Created(Json(CreatedKey {
            api_key: secret.expose().to_owned(),
            key: ApiKeyView::of(&record, now),
        })))
    }

    /// Rotate a key
    ///
    /// Issues a new secret with the same scopes and name. The old key keeps working for the
    /// overlap (24 hours unless the service sets `SVC_KEY_ROTATION_OVERLAP_HOURS`; its end is
    /// `previous.expires_at`), so a running agent can switch without a failed request; then it
    /// stops (401). The calling key must hold every scope of the key it rotates (else 403
    /// `insufficient_scope`). A revoked key, or one already rotated, is 409 `key_not_active`.
    /// Another account's prefix is 404.
    #[oai(path = "/api/keys/:prefix/rotate", method = "post")]
    async fn rotate(
        &self,
        auth: ApiKeyAuth,
        /// `svc_live_` (or `svc_test_`) and 8 characters, as listed.
        prefix: Path<String>,
    ) -> Result<RotateKeyResponse, ApiProblem> {
        let holder = Holder::key(&auth.0.key);
        let rotated = self
            .ctx
            .services
            .keys
            .rotate_for(&auth.0.account.id, &holder, &prefix.0)
            .await?;
        let now = self.ctx.services.clock.now();
        Ok(RotateKeyResponse::Ok(Json(RotatedKeyView::of(
            &rotated, now,
        ))))
    }

    /// Revoke a key
    ///
    /// Stops the key at once, also during a rotation's overlap (every instance refuses it
    /// within a second). A key may revoke itself; it may revoke another key only if it holds
    /// every scope of that key (else 403 `insufficient_scope`). Idempotent: revoking again
    /// answers the same. Another account's prefix is 404.
    #[oai(path = "/api/keys/:prefix", method = "delete")]
    async fn revoke(
        &self,
        auth: ApiKeyAuth,
        /// `svc_live_` (or `svc_test_`) and 8 characters, as listed.
        prefix: Path<String>,
    ) -> Result<RevokeKeyResponse, ApiProblem> {
        let holder = Holder::key(&auth.0.key);
        let record = self
            .ctx
            .services
            .keys
            .revoke_for(&auth.0.account.id, &holder, &prefix.0)
            .await?;
        let now = self.ctx.services.clock.now();
        Ok(RevokeKeyResponse::Ok(Json(ApiKeyView::of(&record, now))))
    }
}

/// One scope's syntax (`Scope::parse`).
pub const SCOPE: &str = r"^[a-z0-9_.:*-]{1,64}$";
/// A key prefix as listed.
pub const KEY_PREFIX: &str = r"^svc_(?:live|test)_[0-9A-Za-z]{8}$";

/// What the OpenAPI document says of these operations beyond their types: the body's and the
/// path's syntax, and links from a created or rotated key to rotating and revoking it.
pub(crate) fn document(doc: &mut Value) {
    let schemas = "/components/schemas";
    merge(
        doc,
        &format!("{schemas}/CreateKeyBody"),
        json!({"properties": {
            "name": {"pattern": PRINTABLE},
            "scopes": {"items": {"pattern": SCOPE, "maxLength": 64}},
        }}),
    );
    for op in [
        "/paths/~1api~1keys~1{prefix}~1rotate/post",
        "/paths/~1api~1keys~1{prefix}/delete",
    ] {
        if let Some(p) = parameter_schema(doc, op, "prefix") {
            merge(doc, &p, json!({"pattern": KEY_PREFIX}));
        }
    }
    let key = |op: &str, at: &str, description: &str| {
        json!({
            "operationRef": format!("#/paths/~1api~1keys~1{{prefix}}{op}"),
            "parameters": {"prefix": format!("$response.body#/{at}/prefix")},
            "description": description,
        })
    };
    add_links(
        doc,
        "/paths/~1api~1keys/post",
        "201",
        json!({
            "RotateKey": key("~1rotate/post", "key", "Rotate the new key."),
            "RevokeKey": key("/delete", "key", "Revoke the new key."),
        }),
    );
    add_links(
        doc,
        "/paths/~1api~1keys~1{prefix}~1rotate/post",
        "200",
        json!({
            "RotateReplacement": key("~1rotate/post", "key", "Rotate the replacement in turn."),
            "RevokeReplacement": key("/delete", "key", "Revoke the replacement."),
            "RevokePrevious": key("/delete", "previous", "Stop the old key before its overlap ends."),
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::tests::check;

    #[test]
    fn the_patterns_are_the_servers_rules() {
        check(
            SCOPE,
            &["read", "execute:consequential"],
            &["", "READ", "a b", "é"],
        );
        check(
            KEY_PREFIX,
            &["svc_live_AbCd1234", "svc_test_00000000"],
            &[
                "svc_live_AbCd123",
                "svc_prod_AbCd1234",
                "svc_live_AbCd1234x",
                "svc_live_AbCd-234",
            ],
        );
    }
}
