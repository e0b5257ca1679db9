//! In-memory payment authorities and their spends, under the store's one lock: a spend is
//! checked and stored with its task, so concurrent tasks never spend past the limit.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, AuthorityId, AuthorityRefusal, AuthoritySpendRecord, AuthorityUsage, NewTask,
    PaymentAuthority, TaskId,
    authority::{check_spend, used_up_by, window_end, window_start},
    billing::Currency,
    store::{AuthorityError, AuthorityStore, StoreError},
};

use crate::{MemoryStore, memory::State};

#[derive(Default)]
pub(crate) struct AuthorityState {
    authorities: Vec<PaymentAuthority>,
    spends: Vec<AuthoritySpendRecord>,
}

impl AuthorityState {
    fn live_spends<'a>(
        &'a self,
        id: &'a AuthorityId,
    ) -> impl Iterator<Item = &'a AuthoritySpendRecord> + 'a {
        self.spends
            .iter()
            .filter(move |s| &s.authority_id == id && s.released_at.is_none())
    }

    fn usage(&self, a: &PaymentAuthority, now: DateTime<Utc>) -> AuthorityUsage {
        let start = window_start(a, now);
        let spent = self
            .live_spends(&a.authority_id)
            .filter(|s| s.window_start == start)
            .map(|s| s.amount)
            .sum();
        let count = self.live_spends(&a.authority_id).count();
        AuthorityUsage::compute(a, spent, u32::try_from(count).unwrap_or(u32::MAX), now)
    }

    /// The spend a new task would store, or why it may not; changes nothing.
    pub(crate) fn check(
        &self,
        task: &NewTask,
    ) -> Result<Option<AuthoritySpendRecord>, AuthorityRefusal> {
        let Some(spend) = &task.authority_spend else {
            return Ok(None);
        };
        let authority = self
            .authorities
            .iter()
            .find(|a| a.authority_id == spend.authority_id)
            .ok_or(AuthorityRefusal::UnknownAuthority)?;
        let start = window_start(authority, task.created_at);
        let spent = self
            .live_spends(&authority.authority_id)
            .filter(|s| s.window_start == start)
            .map(|s| s.amount)
            .sum();
        let window_start = check_spend(authority, &task.account_id, spend, spent, task.created_at)?;
        Ok(Some(AuthoritySpendRecord {
            authority_id: spend.authority_id.clone(),
            task_id: task.id.clone(),
            amount: spend.amount,
            currency: spend.currency.clone(),
            scope: spend.scope.clone(),
            window_start,
            spent_at: task.created_at,
            released_at: None,
        }))
    }

    /// The authority, currency and window end of the task's spend, when the task's settlement
    /// is the one that tells the authority has nothing left in the window ([`used_up_by`]);
    /// `settled` says when a task settled.
    pub(crate) fn used_up_by(
        &self,
        task: &TaskId,
        settled: impl Fn(&TaskId) -> Option<DateTime<Utc>>,
    ) -> Option<(AuthorityId, Currency, Option<DateTime<Utc>>)> {
        let spend = self
            .spends
            .iter()
            .find(|s| &s.task_id == task && s.released_at.is_none())?;
        let authority = self
            .authorities
            .iter()
            .find(|a| a.authority_id == spend.authority_id)?;
        let window: Vec<_> = self
            .live_spends(&spend.authority_id)
            .filter(|s| s.window_start == spend.window_start)
            .map(|s| (s, settled(&s.task_id)))
            .collect();
        let window_end = window_end(
            authority.amount_limit.interval(),
            spend.window_start,
            authority.expires_at,
        );
        used_up_by(authority, task, &window).then(|| {
            (
                authority.authority_id.clone(),
                authority.currency.clone(),
                window_end,
            )
        })
    }

    pub(crate) fn record(&mut self, spend: AuthoritySpendRecord) {
        self.spends.push(spend);
    }

    /// Gives back a failed task's spend.
    pub(crate) fn release(&mut self, task: &TaskId, at: DateTime<Utc>) {
        for s in self
            .spends
            .iter_mut()
            .filter(|s| &s.task_id == task && s.released_at.is_none())
        {
            s.released_at = Some(at);
        }
    }
}

fn owned<'a>(
    s: &'a mut State,
    account: &AccountId,
    id: &AuthorityId,
) -> Option<&'a mut PaymentAuthority> {
    s.authority
        .authorities
        .iter_mut()
        .find(|a| &a.authority_id == id && &a.account_id == account)
}

#[async_trait]
impl AuthorityStore for MemoryStore {
    async fn insert_authority(&self, authority: &PaymentAuthority) -> Result<(), AuthorityError> {
        let mut s = self.lock();
        if !s.accounts.contains_key(&authority.account_id) {
            return Err(AuthorityError::UnknownAccount);
        }
        if s.authority
            .authorities
            .iter()
            .any(|a| a.authority_id == authority.authority_id)
        {
            return Err(AuthorityError::Duplicate);
        }
        s.authority.authorities.push(authority.clone());
        Ok(())
    }

    async fn authority(
        &self,
        id: &AuthorityId,
        now: DateTime<Utc>,
    ) -> Result<Option<(PaymentAuthority, AuthorityUsage)>, StoreError> {
        let s = self.lock();
        Ok(s.authority
            .authorities
            .iter()
            .find(|a| &a.authority_id == id)
            .map(|a| (a.clone(), s.authority.usage(a, now))))
    }

    async fn authorities(
        &self,
        account: &AccountId,
        now: DateTime<Utc>,
    ) -> Result<Vec<(PaymentAuthority, AuthorityUsage)>, StoreError> {
        let s = self.lock();
        let mut out: Vec<_> = s
            .authority
            .authorities
            .iter()
            .filter(|a| &a.account_id == account)
            .map(|a| (a.clone(), s.authority.usage(a, now)))
            .collect();
        out.sort_by(|(a, _), (b, _)| {
            (b.created_at, &b.authority_id).cmp(&(a.created_at, &a.authority_id))
        });
        Ok(out)
    }

    async fn authority_spends(
        &self,
        id: &AuthorityId,
    ) -> Result<Vec<AuthoritySpendRecord>, StoreError> {
        let s = self.lock();
        let mut out: Vec<_> = s
            .authority
            .spends
            .iter()
            .filter(|sp| &sp.authority_id == id)
            .cloned()
            .collect();
        out.sort_by(|a, b| (a.spent_at, &a.task_id).cmp(&(b.spent_at, &b.task_id)));
        Ok(out)
    }

    async fn task_spend(&self, task: &TaskId) -> Result<Option<AuthoritySpendRecord>, StoreError> {
        Ok(self
            .lock()
            .authority
            .spends
            .iter()
            .find(|sp| &sp.task_id == task)
            .cloned())
    }

    async fn revoke_authority(
        &self,
        account: &AccountId,
        id: &AuthorityId,
        at: DateTime<Utc>,
    ) -> Result<PaymentAuthority, AuthorityError> {
        let mut s = self.lock();
        let a = owned(&mut s, account, id).ok_or(AuthorityError::NotFound)?;
        a.revoked_at.get_or_insert(at);
        Ok(a.clone())
    }
}
