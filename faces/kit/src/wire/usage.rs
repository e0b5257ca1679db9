//! `GET /api/usage`: spendable balance, effective plan and metering policy.

use poem_openapi::{Enum, Object};
use svc_ports::{Environment, Plan, UsageRecord};

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename_all = "lowercase")]
pub enum PlanName {
    Sandbox,
    Free,
    Starter,
    Enterprise,
}

impl From<Plan> for PlanName {
    fn from(p: Plan) -> Self {
        match p {
            Plan::Sandbox => PlanName::Sandbox,
            Plan::Free => PlanName::Free,
            Plan::Starter => PlanName::Starter,
            Plan::Enterprise => PlanName::Enterprise,
        }
    }
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename_all = "lowercase")]
pub enum EnvironmentName {
    Live,
    Test,
}

impl From<Environment> for EnvironmentName {
    fn from(e: Environment) -> Self {
        match e {
            Environment::Live => EnvironmentName::Live,
            Environment::Test => EnvironmentName::Test,
        }
    }
}

/// Credits of the account.
#[derive(Debug, Object)]
pub struct CreditBalance {
    /// Credits an action may draw on now.
    pub spendable: i64,
    /// Credits reserved by actions in flight.
    pub held: i64,
    /// Credits of disputed payments, set aside until the dispute closes.
    pub frozen: i64,
}

/// How actions are charged.
#[derive(Debug, Object)]
pub struct MeteringPolicyBody {
    /// Credits charged for one completed action unless its map declares another cost.
    pub cost_per_completed_action: i64,
    /// Whether failed actions are refunded (always true).
    pub refund_on_failure: bool,
    /// Whether an action is charged only after its success was verified (always true).
    pub charge_only_verified_completions: bool,
    /// How long an `Idempotency-Key` on `POST /api/execute` is remembered, in hours.
    pub idempotency_window_hours: u32,
}

/// The key that made this request.
#[derive(Debug, Object)]
pub struct CallingKey {
    /// Listed prefix of the key (never the secret).
    pub prefix: String,
    pub scopes: Vec<String>,
}

/// The usage record.
#[derive(Debug, Object)]
pub struct Usage {
    pub account_id: String,
    /// Effective plan of the account.
    pub plan: PlanName,
    pub environment: EnvironmentName,
    pub balance: CreditBalance,
    pub metering: MeteringPolicyBody,
    pub key: CallingKey,
}

impl Usage {
    pub fn from_record(record: UsageRecord, key: CallingKey) -> Self {
        Self {
            account_id: record.account_id.to_string(),
            plan: record.plan.into(),
            environment: record.environment.into(),
            balance: CreditBalance {
                spendable: record.balance.spendable,
                held: record.balance.held,
                frozen: record.balance.frozen,
            },
            metering: MeteringPolicyBody {
                cost_per_completed_action: record.metering.cost_per_completed_action,
                refund_on_failure: record.metering.refund_on_failure,
                charge_only_verified_completions: true,
                idempotency_window_hours: record.metering.idempotency_window_hours,
            },
            key,
        }
    }
}
