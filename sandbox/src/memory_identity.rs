//! In-memory device grants, emailed-code challenges, web sessions and known browsers, under the same lock as
//! accounts and keys so that a key and the grant it settles change together.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    Account, ApiKeyRecord, ChallengeId, DeviceDecision, DeviceGrant, DeviceGrantId,
    DeviceGrantStatus, EmailChallenge, KeyHash, KnownBrowser, UserCode, WebSession,
    identity::MAX_CODE_ATTEMPTS,
    store::{IdentityError, IdentityStore, KeyError, StoreError},
};

use crate::MemoryStore;

#[derive(Default)]
pub(crate) struct IdentityState {
    grants: HashMap<DeviceGrantId, DeviceGrant>,
    challenges: HashMap<ChallengeId, EmailChallenge>,
    sessions: HashMap<KeyHash, WebSession>,
    browsers: HashMap<KeyHash, KnownBrowser>,
}

#[async_trait]
impl IdentityStore for MemoryStore {
    async fn insert_device_grant(&self, grant: &DeviceGrant) -> Result<(), IdentityError> {
        let mut s = self.lock();
        let taken = s.identity.grants.values().any(|g| {
            g.id == grant.id
                || g.device_code_hash == grant.device_code_hash
                || g.user_code == grant.user_code
        });
        if taken {
            return Err(IdentityError::Duplicate);
        }
        s.identity.grants.insert(grant.id.clone(), grant.clone());
        Ok(())
    }

    async fn device_grant_by_code(
        &self,
        device_code_hash: &KeyHash,
    ) -> Result<Option<DeviceGrant>, StoreError> {
        let s = self.lock();
        Ok(s.identity
            .grants
            .values()
            .find(|g| &g.device_code_hash == device_code_hash)
            .cloned())
    }

    async fn device_grant_by_user_code(
        &self,
        user_code: &UserCode,
    ) -> Result<Option<DeviceGrant>, StoreError> {
        let s = self.lock();
        Ok(s.identity
            .grants
            .values()
            .find(|g| &g.user_code == user_code)
            .cloned())
    }

    async fn record_device_poll(
        &self,
        id: &DeviceGrantId,
        at: DateTime<Utc>,
        interval_secs: u32,
    ) -> Result<(), StoreError> {
        if let Some(g) = self.lock().identity.grants.get_mut(id) {
            g.last_polled_at = Some(at);
            g.interval_secs = interval_secs;
        }
        Ok(())
    }

    async fn decide_device_grant(
        &self,
        id: &DeviceGrantId,
        decision: &DeviceDecision,
        at: DateTime<Utc>,
    ) -> Result<DeviceGrant, IdentityError> {
        let mut s = self.lock();
        let g = s
            .identity
            .grants
            .get_mut(id)
            .ok_or(IdentityError::NotFound)?;
        if g.status != DeviceGrantStatus::Pending {
            return Err(IdentityError::NotPending);
        }
        if g.is_expired(at) {
            return Err(IdentityError::Expired);
        }
        match decision {
            DeviceDecision::Approve { account, scopes } => {
                g.status = DeviceGrantStatus::Approved;
                g.account_id = Some(account.clone());
                g.scopes = scopes.clone();
            }
            DeviceDecision::Deny => g.status = DeviceGrantStatus::Denied,
        }
        Ok(g.clone())
    }

    async fn issue_device_key(
        &self,
        id: &DeviceGrantId,
        key: &ApiKeyRecord,
    ) -> Result<(), IdentityError> {
        let mut s = self.lock();
        let g = s.identity.grants.get(id).ok_or(IdentityError::NotFound)?;
        match g.status {
            DeviceGrantStatus::Approved => {}
            DeviceGrantStatus::Issued => return Err(IdentityError::AlreadyUsed),
            DeviceGrantStatus::Pending | DeviceGrantStatus::Denied => {
                return Err(IdentityError::NotApproved);
            }
        }
        if g.account_id.as_ref() != Some(&key.account_id) {
            return Err(IdentityError::Key(KeyError::UnknownAccount));
        }
        s.check_new_key(key).map_err(IdentityError::Key)?;
        s.keys.push(key.clone());
        let g = s
            .identity
            .grants
            .get_mut(id)
            .ok_or(IdentityError::NotFound)?;
        g.status = DeviceGrantStatus::Issued;
        g.key_id = Some(key.id.clone());
        Ok(())
    }

    async fn insert_challenge_within(
        &self,
        challenge: &EmailChallenge,
        since: DateTime<Utc>,
        cap: u32,
    ) -> Result<bool, IdentityError> {
        let mut s = self.lock();
        if s.identity.challenges.contains_key(&challenge.id) {
            return Err(IdentityError::Duplicate);
        }
        let sent = s
            .identity
            .challenges
            .values()
            .filter(|c| {
                c.email == challenge.email
                    && c.purpose == challenge.purpose
                    && c.created_at >= since
            })
            .count();
        if sent >= cap as usize {
            return Ok(false);
        }
        s.identity
            .challenges
            .insert(challenge.id.clone(), challenge.clone());
        Ok(true)
    }

    async fn challenge(&self, id: &ChallengeId) -> Result<Option<EmailChallenge>, StoreError> {
        Ok(self.lock().identity.challenges.get(id).cloned())
    }

    async fn wrong_code_tries(
        &self,
        email: &svc_ports::Email,
        since: DateTime<Utc>,
        known_browser: bool,
    ) -> Result<u32, StoreError> {
        Ok(self
            .lock()
            .identity
            .challenges
            .values()
            .filter(|c| {
                &c.email == email && c.created_at >= since && c.known_browser == known_browser
            })
            .map(|c| {
                c.attempts
                    .saturating_sub(u32::from(c.consumed_at.is_some()))
            })
            .sum())
    }

    async fn attempt_challenge(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
    ) -> Result<EmailChallenge, IdentityError> {
        let mut s = self.lock();
        let c = s
            .identity
            .challenges
            .get_mut(id)
            .ok_or(IdentityError::NotFound)?;
        usable(c, at)?;
        if c.attempts >= MAX_CODE_ATTEMPTS {
            return Err(IdentityError::Exhausted);
        }
        c.attempts += 1;
        Ok(c.clone())
    }

    async fn consume_challenge<'a>(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
        key: Option<&'a ApiKeyRecord>,
    ) -> Result<EmailChallenge, IdentityError> {
        let mut s = self.lock();
        let c = s
            .identity
            .challenges
            .get(id)
            .ok_or(IdentityError::NotFound)?;
        usable(c, at)?;
        if let Some(key) = key {
            s.check_new_key(key).map_err(IdentityError::Key)?;
            s.keys.push(key.clone());
        }
        let c = s
            .identity
            .challenges
            .get_mut(id)
            .ok_or(IdentityError::NotFound)?;
        c.consumed_at = Some(at);
        Ok(c.clone())
    }

    async fn insert_session(&self, session: &WebSession) -> Result<(), IdentityError> {
        let mut s = self.lock();
        if s.identity.sessions.contains_key(&session.token_hash) {
            return Err(IdentityError::Duplicate);
        }
        if !s.accounts.contains_key(&session.account_id) {
            return Err(IdentityError::NotFound);
        }
        s.identity
            .sessions
            .insert(session.token_hash, session.clone());
        Ok(())
    }

    async fn session(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<(WebSession, Account)>, StoreError> {
        let s = self.lock();
        Ok(s.identity
            .sessions
            .get(token_hash)
            .filter(|w| now < w.expires_at)
            .and_then(|w| {
                s.accounts
                    .get(&w.account_id)
                    .map(|a| (w.clone(), a.clone()))
            }))
    }

    async fn delete_session(&self, token_hash: &KeyHash) -> Result<(), StoreError> {
        self.lock().identity.sessions.remove(token_hash);
        Ok(())
    }

    async fn insert_known_browser(&self, browser: &KnownBrowser) -> Result<(), IdentityError> {
        let mut s = self.lock();
        if s.identity.browsers.contains_key(&browser.token_hash) {
            return Err(IdentityError::Duplicate);
        }
        s.identity
            .browsers
            .insert(browser.token_hash, browser.clone());
        Ok(())
    }

    async fn known_browser(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<KnownBrowser>, StoreError> {
        Ok(self
            .lock()
            .identity
            .browsers
            .get(token_hash)
            .filter(|b| now < b.expires_at)
            .cloned())
    }

    async fn purge_identity(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut s = self.lock();
        let id = &mut s.identity;
        let count = |id: &IdentityState| {
            id.grants.len() + id.challenges.len() + id.sessions.len() + id.browsers.len()
        };
        let n = count(id);
        id.grants.retain(|_, g| g.expires_at >= before);
        id.challenges.retain(|_, c| c.expires_at >= before);
        id.sessions.retain(|_, w| w.expires_at >= before);
        id.browsers.retain(|_, b| b.expires_at >= before);
        let left = count(id);
        Ok((n - left) as u64)
    }
}

fn usable(c: &EmailChallenge, at: DateTime<Utc>) -> Result<(), IdentityError> {
    if c.consumed_at.is_some() {
        return Err(IdentityError::AlreadyUsed);
    }
    if at >= c.expires_at {
        return Err(IdentityError::Expired);
    }
    Ok(())
}
