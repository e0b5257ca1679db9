//! The usage record: spendable balance, effective plan and the metering policy.

use serde::{Deserialize, Serialize};

use crate::{account::Environment, account::Plan, ids::AccountId, ledger::Balance};

/// How actions are metered. The same values are published in the OpenAPI description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeteringPolicy {
    /// Credits charged for one completed action unless its map says otherwise.
    pub cost_per_completed_action: i64,
    /// Failed actions are refunded in full.
    pub refund_on_failure: bool,
    /// How long an `Idempotency-Key` is remembered, in hours.
    pub idempotency_window_hours: u32,
}

impl Default for MeteringPolicy {
    fn default() -> Self {
        Self {
            cost_per_completed_action: 1,
            refund_on_failure: true,
            idempotency_window_hours: 24,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    pub account_id: AccountId,
    pub plan: Plan,
    pub environment: Environment,
    pub balance: Balance,
    pub metering: MeteringPolicy,
}
