//! The usage record of the calling account.

use std::sync::Arc;

use svc_ports::{Account, LedgerStore, MeteringPolicy, UsageRecord, store::LedgerError};

use super::auth::Principal;

pub struct UsageService {
    ledger: Arc<dyn LedgerStore>,
    policy: MeteringPolicy,
}

impl UsageService {
    pub fn new(ledger: Arc<dyn LedgerStore>) -> Self {
        Self {
            ledger,
            policy: MeteringPolicy::default(),
        }
    }

    pub fn policy(&self) -> &MeteringPolicy {
        &self.policy
    }

    pub async fn usage(&self, principal: &Principal) -> Result<UsageRecord, LedgerError> {
        self.usage_of(&principal.account).await
    }

    /// The usage record of an account, for its signed-in owner.
    pub async fn usage_of(&self, account: &Account) -> Result<UsageRecord, LedgerError> {
        let balance = self.ledger.balance(&account.id).await?;
        Ok(UsageRecord {
            account_id: account.id.clone(),
            plan: account.plan,
            environment: account.environment,
            balance,
            metering: self.policy.clone(),
        })
    }
}
