//! `svc_create_checkout_session`: a one-time link that lets the human buy credits.

use kit::problem::ApiProblem;
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use svc_services::telemetry::Face;

use super::{answer, output, principal, reply, tool_error};
use crate::SvcMcp;

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlanArg {
    /// Sold by hosted checkout.
    #[default]
    Starter,
    /// Sales-led: answers with a contact link.
    Enterprise,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutArgs {
    /// The plan to buy; only starter is sold by checkout.
    #[serde(default)]
    pub plan: PlanArg,
}

/// The link to hand to the human, and what it buys.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckoutHandoff {
    /// The one link to show the human.
    pub handoff_url: String,
    /// When the link stops working (RFC 3339).
    pub expires_at: String,
    pub plan: String,
    /// Price in minor units.
    pub amount: i64,
    /// Lowercase ISO 4217 code.
    pub currency: String,
    /// Credits the purchase adds.
    pub credits: i64,
    /// Always `awaiting_human`: nothing is bought until the human pays.
    pub status: String,
    /// What to do next.
    pub next_step: String,
}

#[tool_router(router = billing_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "svc_create_checkout_session",
        title = "Start buying credits",
        description = "Creates a one-time link (valid 10 minutes) that signs the account's human in on the site and \
            opens hosted checkout for the chosen plan. Show the human only `handoff_url` and let them pay; never ask \
            for card details. Credits arrive only after the payment provider confirms the payment to the service \
            (not when the human says they paid): check with svc_auth_status or GET /api/usage afterwards. `starter` \
            is the only plan sold by checkout; `enterprise` is sales-led and answers with a contact link. Needs an \
            API key.",
        output_schema = output::<CheckoutHandoff>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn svc_create_checkout_session(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<CheckoutArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let plan = match args.plan {
            PlanArg::Starter => "starter",
            PlanArg::Enterprise => "enterprise",
        };
        let billing = &self.ctx.services.billing;
        let (amount, currency, credits) = match billing.checkout_sku(plan) {
            Ok((_, amount, currency, credits)) => (amount, currency.to_string(), credits),
            Err(e) => return Ok(tool_error(&ApiProblem::from(e))),
        };
        reply(
            billing
                .create_handoff(&principal.account.id, plan, Face::Mcp)
                .await,
            |(url, expires_at)| {
                answer(&CheckoutHandoff {
                    handoff_url: url,
                    expires_at: expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    plan: plan.into(),
                    amount,
                    currency,
                    credits,
                    status: "awaiting_human".into(),
                    next_step: "Show the human handoff_url. Credits are added only once the payment provider \
                        confirms the payment; check the balance with svc_auth_status."
                        .into(),
                })
            },
        )
    }
}
