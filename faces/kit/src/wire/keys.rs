//! An account's API keys over REST and MCP: list, create, rotate, revoke. Never a secret
//! except in the one answer that creates it, never a hash.

use chrono::{DateTime, Utc};
use poem_openapi::Object;
use svc_ports::ApiKeyRecord;
use svc_ports::{FailureClass, Scopes};
use svc_services::RotatedKey;

use crate::problem::ApiProblem;

/// One key, by its prefix.
#[derive(Debug, Clone, Object)]
pub struct ApiKeyView {
    /// `svc_live_` or `svc_test_` and the key's first 8 characters: how the key is named in
    /// every call and on the account page. Not a secret.
    pub prefix: String,
    pub name: String,
    /// What it may do: `read`, `discover`, `execute`, `execute:consequential`.
    pub scopes: Vec<String>,
    /// `active`; `rotating` (replaced, still working until `expires_at`); `expired` (its
    /// overlap ended); `revoked`.
    pub status: String,
    pub created_at: DateTime<Utc>,
    /// When a rotated key stops working (the end of its overlap); absent for a key never
    /// rotated.
    #[oai(skip_serializing_if_is_none)]
    pub expires_at: Option<DateTime<Utc>>,
    #[oai(skip_serializing_if_is_none)]
    pub revoked_at: Option<DateTime<Utc>>,
    /// When it last authenticated, to the minute; absent if it never has.
    #[oai(skip_serializing_if_is_none)]
    pub last_used_at: Option<DateTime<Utc>>,
}

impl ApiKeyView {
    pub fn of(k: &ApiKeyRecord, now: DateTime<Utc>) -> Self {
        Self {
            prefix: k.prefix.to_string(),
            name: k.label.clone(),
            scopes: k.scopes.iter().map(|s| s.as_str().to_owned()).collect(),
            status: k.status(now).to_owned(),
            created_at: k.created_at,
            expires_at: k.expires_at,
            revoked_at: k.revoked_at,
            last_used_at: k.last_used_at,
        }
    }
}

/// The account's keys, oldest first.
#[derive(Debug, Clone, Object)]
pub struct ApiKeyList {
    pub keys: Vec<ApiKeyView>,
}

#[derive(Debug, Clone, Object)]
#[oai(deny_unknown_fields)]
pub struct CreateKeyBody {
    /// A name to recognise it by (default `api`).
    #[oai(validator(max_length = 80))]
    pub name: Option<String>,
    /// Its scopes: each one that exists (else 422 `invalid_request`) and that the calling key
    /// holds (else 403 `insufficient_scope` naming the others). Omitted: `read discover execute`, narrowed to what the calling key holds. A
    /// restricted key is one with fewer: `["read"]` reads pages and nothing else.
    #[oai(validator(min_items = 1, max_items = 8))]
    pub scopes: Option<Vec<String>>,
}

/// A new key. `api_key` is shown only here: store it now.
#[derive(Debug, Clone, Object)]
pub struct CreatedKey {
    /// The secret, `svc_live_...`: send it as `Authorization: Bearer ...`.
    pub api_key: String,
    pub key: ApiKeyView,
}

/// A rotated key: the new secret (shown only here) and the old key, which keeps working until
/// its `expires_at`.
#[derive(Debug, Clone, Object)]
pub struct RotatedKeyView {
    /// The new secret, with the old key's scopes and name.
    pub api_key: String,
    pub key: ApiKeyView,
    /// The old key, `rotating` until `expires_at`, then `expired`.
    pub previous: ApiKeyView,
}

impl RotatedKeyView {
    pub fn of(r: &RotatedKey, now: DateTime<Utc>) -> Self {
        Self {
            api_key: r.secret.expose().to_owned(),
            key: ApiKeyView::of(&r.record, now),
            previous: ApiKeyView::of(&r.previous, now),
        }
    }
}

/// Scopes as sent: each must be a scope's syntax, else 422 naming it.
pub fn requested_scopes(raw: Option<&[String]>) -> Result<Option<Scopes>, ApiProblem> {
    let Some(list) = raw else {
        return Ok(None);
    };
    Scopes::parse_list(&list.join(" "))
        .map(Some)
        .map_err(|e| ApiProblem::new(FailureClass::InvalidRequest, e.to_string()))
        .and_then(|s| match list.iter().find(|s| s.contains([' ', ','])) {
            Some(bad) => Err(ApiProblem::new(
                FailureClass::InvalidRequest,
                format!("scope `{bad}` is not valid: one scope per item"),
            )),
            None => Ok(s),
        })
}
