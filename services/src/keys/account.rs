//! An account's own keys, managed by its keys (REST, MCP) or its signed-in human (the account
//! page): list, create, rotate, revoke. The rules are decided here, once:
//!
//! - a key grants, rotates or revokes only within what it holds: every scope of the new key
//!   (or of the key it acts on) must be one of its own, else `InsufficientScope` naming them;
//! - the human may grant every scope the service knows, but `execute:consequential` only with
//!   an explicit confirmation of what it allows;
//! - a rotated key keeps working for the overlap, then stops; a revoked key stops at once;
//! - another account's key, or a prefix that names nothing, is not found.

use chrono::TimeDelta;
use svc_ports::{
    AccountId, ApiKeyRecord, ApiKeySecret, KeyPrefix, Scopes, actions::CONSEQUENTIAL_SCOPE,
    store::KeyError,
};

use super::{KeyService, KeyServiceError};

/// Longest key name, in characters.
pub const KEY_NAME_MAX: usize = 80;

/// Every scope a key can hold here.
pub fn grantable_scopes() -> Scopes {
    Scopes::parse_list("read discover execute execute:consequential").expect("static scopes")
}

/// Who manages the keys, and so what it may grant.
#[derive(Debug, Clone)]
pub enum Holder {
    /// One of the account's API keys, holding these scopes.
    Key(Scopes),
    /// A key that was rotated and works until its overlap ends: it may use the service and
    /// revoke itself, not manage keys (a key rotated because it leaked must not mint keys that
    /// outlive it, nor rotate or revoke its replacement).
    EndingKey(KeyPrefix),
    /// The signed-in human; `consequential_confirmed` when they ticked the confirmation naming
    /// what `execute:consequential` allows.
    Human { consequential_confirmed: bool },
}

/// A rotation's result: the new key (its secret shown once) and the old one, which keeps
/// working until its `expires_at`.
#[derive(Debug)]
pub struct RotatedKey {
    pub secret: ApiKeySecret,
    pub record: ApiKeyRecord,
    pub previous: ApiKeyRecord,
}

impl Holder {
    /// Refuses scopes beyond the holder's (or, for the human, beyond the service's, and the
    /// consequential scope without its confirmation).
    /// The holder a calling key is.
    pub fn key(key: &ApiKeyRecord) -> Self {
        if key.expires_at.is_some() {
            Holder::EndingKey(key.prefix.clone())
        } else {
            Holder::Key(key.scopes.clone())
        }
    }

    /// Refuses a key that is ending any act on keys.
    fn may_manage(&self) -> Result<(), KeyServiceError> {
        match self {
            Holder::EndingKey(prefix) => Err(KeyServiceError::KeyEnding(prefix.clone())),
            _ => Ok(()),
        }
    }

    fn may_grant(&self, scopes: &Scopes) -> Result<(), KeyServiceError> {
        // A scope that does not exist is a bad request, whoever asks (not one the key lacks).
        if let Some(unknown) = scopes.beyond(&grantable_scopes()).first() {
            return Err(KeyServiceError::Invalid(format!(
                "scope `{}` does not exist; a key may hold {}",
                unknown.as_str(),
                grantable_scopes().to_list_string()
            )));
        }
        self.holds(scopes)
    }

    /// Refuses scopes beyond what the holder holds (for the human: the consequential scope
    /// without its confirmation).
    fn holds(&self, scopes: &Scopes) -> Result<(), KeyServiceError> {
        match self {
            Holder::Key(held) => {
                let beyond = scopes.beyond(held);
                if beyond.is_empty() {
                    Ok(())
                } else {
                    Err(KeyServiceError::InsufficientScope(
                        beyond.iter().map(|s| s.as_str().to_owned()).collect(),
                    ))
                }
            }
            Holder::Human {
                consequential_confirmed,
            } => {
                if scopes.contains(CONSEQUENTIAL_SCOPE) && !consequential_confirmed {
                    return Err(KeyServiceError::ConsequentialUnconfirmed);
                }
                Ok(())
            }
            Holder::EndingKey(_) => self.may_manage(),
        }
    }

    /// Acting on an existing key (rotating, revoking) needs every scope it holds: a key cannot
    /// mint a new secret for, or cut off, a key wider than itself. The human may act on any.
    fn may_act_on(&self, key: &ApiKeyRecord) -> Result<(), KeyServiceError> {
        match self {
            // What the key acted on holds was granted already: only whether the actor holds
            // it all matters (an operator may have granted a scope no key can ask for).
            Holder::Key(_) => self.holds(&key.scopes),
            // Only on itself: ending its own overlap early (revoking it) is always allowed.
            Holder::EndingKey(own) if own == &key.prefix => Ok(()),
            Holder::EndingKey(_) => self.may_manage(),
            Holder::Human { .. } => Ok(()),
        }
    }
}

/// A key's name: trimmed, printable, at most [`KEY_NAME_MAX`] characters as sent; blank means
/// `default`.
fn key_name(raw: Option<&str>, default: &str) -> Result<String, KeyServiceError> {
    let Some(sent) = raw else {
        return Ok(default.to_owned());
    };
    let trimmed = sent.trim();
    if sent.chars().count() > KEY_NAME_MAX || trimmed.chars().any(char::is_control) {
        return Err(KeyServiceError::Invalid(format!(
            "name must be at most {KEY_NAME_MAX} printable characters"
        )));
    }
    Ok(if trimmed.is_empty() {
        default.to_owned()
    } else {
        trimmed.to_owned()
    })
}

impl KeyService {
    /// How long a rotated key keeps working beside its replacement.
    pub fn rotation_overlap(&self) -> std::time::Duration {
        self.overlap
    }

    /// The account's keys, oldest first (revoked and expired ones included, marked so).
    pub async fn account_keys(
        &self,
        account: &AccountId,
    ) -> Result<Vec<ApiKeyRecord>, KeyServiceError> {
        Ok(self
            .ports
            .accounts
            .keys(Some(account.clone()))
            .await
            .map_err(anyhow::Error::new)?)
    }

    /// A new key of `account`. `scopes` omitted: the default set of a new key, narrowed to
    /// what a key holder holds (never `execute:consequential` unless asked for).
    pub async fn create_for(
        &self,
        account: &AccountId,
        holder: &Holder,
        name: Option<&str>,
        scopes: Option<Scopes>,
    ) -> Result<(ApiKeySecret, ApiKeyRecord), KeyServiceError> {
        holder.may_manage()?;
        let default_name = match holder {
            Holder::Key(_) | Holder::EndingKey(_) => "api",
            Holder::Human { .. } => "web",
        };
        let name = key_name(name, default_name)?;
        let scopes = match (scopes, holder) {
            (Some(s), _) => s,
            (None, Holder::Key(held)) => Scopes::default_for_new_key().intersection(held),
            (None, Holder::Human { .. } | Holder::EndingKey(_)) => Scopes::default_for_new_key(),
        };
        if scopes.is_empty() {
            return Err(KeyServiceError::Invalid(
                "a key needs at least one scope".into(),
            ));
        }
        holder.may_grant(&scopes)?;
        Ok(self.issue_key(account, scopes, name).await?)
    }

    /// Replaces a key of `account` by a new one with the same scopes and name; the old one
    /// keeps working for the overlap, then stops.
    pub async fn rotate_for(
        &self,
        account: &AccountId,
        holder: &Holder,
        prefix: &str,
    ) -> Result<RotatedKey, KeyServiceError> {
        let old = self.own_key(account, prefix).await?;
        holder.may_act_on(&old)?;
        self.rotate_record(old).await
    }

    /// The operator's rotation (`svc keys rotate`): any account's key, by prefix.
    pub async fn rotate(&self, prefix: &KeyPrefix) -> Result<RotatedKey, KeyServiceError> {
        let old = self
            .ports
            .accounts
            .keys(None)
            .await
            .map_err(anyhow::Error::new)?
            .into_iter()
            .find(|k| &k.prefix == prefix)
            .ok_or_else(|| KeyServiceError::NotFound(prefix.to_string()))?;
        self.rotate_record(old).await
    }

    async fn rotate_record(&self, old: ApiKeyRecord) -> Result<RotatedKey, KeyServiceError> {
        if old.is_revoked() {
            return Err(KeyServiceError::AlreadyRevoked(old.prefix));
        }
        if old.expires_at.is_some() {
            return Err(KeyServiceError::AlreadyRotated(old.prefix));
        }
        let now = self.ports.clock.now();
        let ends = now + TimeDelta::from_std(self.overlap).unwrap_or(TimeDelta::MAX);
        for _ in 0..4 {
            let (secret, record) =
                self.draft_key(&old.account_id, old.scopes.clone(), old.label.clone())?;
            match self
                .ports
                .accounts
                .rotate_key(&old.prefix, &record, ends)
                .await
            {
                Ok(previous) => {
                    // This instance's cache holds the old record without its end: drop it.
                    self.cache.forget(&old.prefix);
                    tracing::info!(account_id = %old.account_id, old_prefix = %old.prefix, key_prefix = %record.prefix, overlap_ends_at = %ends, "api key rotated");
                    return Ok(RotatedKey {
                        secret,
                        record,
                        previous,
                    });
                }
                Err(KeyError::Duplicate) => continue,
                Err(KeyError::NotFound) => {
                    return Err(KeyServiceError::NotFound(old.prefix.to_string()));
                }
                Err(KeyError::AlreadyRevoked) => {
                    return Err(KeyServiceError::AlreadyRevoked(old.prefix));
                }
                Err(KeyError::AlreadyRotated) => {
                    return Err(KeyServiceError::AlreadyRotated(old.prefix));
                }
                Err(e) => return Err(anyhow::Error::new(e).context("rotating key").into()),
            }
        }
        Err(anyhow::anyhow!("could not generate a unique key after 4 tries").into())
    }

    /// Revokes a key of `account` at once; revoking it again answers the same record.
    pub async fn revoke_for(
        &self,
        account: &AccountId,
        holder: &Holder,
        prefix: &str,
    ) -> Result<ApiKeyRecord, KeyServiceError> {
        let key = self.own_key(account, prefix).await?;
        holder.may_act_on(&key)?;
        if key.is_revoked() {
            return Ok(key);
        }
        match self.revoke(&key.prefix).await {
            Err(KeyServiceError::AlreadyRevoked(_)) => self.own_key(account, prefix).await,
            other => other,
        }
    }

    /// A key of this account by prefix; another account's key reads as not found.
    async fn own_key(
        &self,
        account: &AccountId,
        prefix: &str,
    ) -> Result<ApiKeyRecord, KeyServiceError> {
        let not_found = || KeyServiceError::NotFound(prefix.chars().take(32).collect());
        let parsed = KeyPrefix::parse(prefix).map_err(|_| not_found())?;
        self.account_keys(account)
            .await?
            .into_iter()
            .find(|k| k.prefix == parsed)
            .ok_or_else(not_found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scopes(raw: &str) -> Scopes {
        Scopes::parse_list(raw).unwrap()
    }

    #[test]
    fn a_key_grants_only_what_it_holds() {
        let read = Holder::Key(scopes("read"));
        assert!(read.may_grant(&scopes("read")).is_ok());
        match read.may_grant(&scopes("read execute discover")) {
            Err(KeyServiceError::InsufficientScope(names)) => {
                assert_eq!(names, vec!["discover", "execute"])
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_human_grants_consequential_only_when_confirmed() {
        let unconfirmed = Holder::Human {
            consequential_confirmed: false,
        };
        assert!(matches!(
            unconfirmed.may_grant(&scopes("execute execute:consequential")),
            Err(KeyServiceError::ConsequentialUnconfirmed)
        ));
        assert!(unconfirmed.may_grant(&scopes("read execute")).is_ok());
        let confirmed = Holder::Human {
            consequential_confirmed: true,
        };
        assert!(
            confirmed
                .may_grant(&scopes("execute execute:consequential"))
                .is_ok()
        );
        assert!(matches!(
            confirmed.may_grant(&scopes("admin")),
            Err(KeyServiceError::Invalid(_))
        ));
    }

    #[test]
    fn names_are_bounded_as_sent() {
        assert_eq!(key_name(None, "api").unwrap(), "api");
        assert_eq!(key_name(Some("  "), "api").unwrap(), "api");
        assert_eq!(key_name(Some(" ci bot "), "api").unwrap(), "ci bot");
        assert!(key_name(Some(&"x".repeat(81)), "api").is_err());
        assert!(key_name(Some("a\u{7}b"), "api").is_err());
    }

    proptest! {
        /// Whatever a key asks to grant, what it may grant is within what it holds, and only
        /// scopes that exist (`admin` does not).
        #[test]
        fn granted_is_always_within_held(
            held in proptest::sample::subsequence(vec!["read", "discover", "execute", "execute:consequential", "admin"], 0..=5),
            asked in proptest::sample::subsequence(vec!["read", "discover", "execute", "execute:consequential", "admin"], 0..=5),
        ) {
            let held = scopes(&held.join(" "));
            let asked = scopes(&asked.join(" "));
            let allowed = Holder::Key(held.clone()).may_grant(&asked).is_ok();
            prop_assert_eq!(
                allowed,
                asked.beyond(&held).is_empty() && asked.beyond(&grantable_scopes()).is_empty()
            );
        }
    }
}
