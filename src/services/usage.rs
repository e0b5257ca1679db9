//! The usage record of the calling account.

use std::sync::Arc;

use svc_ports::{LedgerStore, MeteringPolicy, UsageRecord, store::LedgerError};

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
        let balance = self.ledger.balance(&principal.account.id).await?;
        Ok(UsageRecord {
            account_id: principal.account.id.clone(),
            plan: principal.account.plan,
            environment: principal.account.environment,
            balance,
            metering: self.policy.clone(),
        })
    }
}
