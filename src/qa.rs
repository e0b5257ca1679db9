//! QA payment scenarios: a file lists provider events (paid, duplicate, tampered, stale,
//! future-dated, wrong secret, refund, dispute, out of order, ...) with what the service must
//! answer and the balance expected after each; `svc sandbox play FILE...` plays them against a
//! running sandbox through its payment provider and reports pass or fail per step.
//!
//! ```toml
//! name = "a refund before its payment"
//! [[step]]
//! send = "refund"            # pay, checkout_completed, payment_succeeded, fail, refund,
//!                            # dispute, dispute_won, dispute_lost, replay
//! variant = "ok"             # ok, tampered, stale, future, wrong_secret, unsigned
//! amount = 450               # minor units, for refund and dispute (default: all of it)
//! expect_status = [200]      # the service's answer to each delivery (default 200, or 400
//!                            # for a variant other than ok)
//! expect_spendable = 0       # change since the scenario began
//! expect_frozen = 0
//! ```

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub send: String,
    #[serde(default = "ok")]
    pub variant: String,
    pub amount: Option<i64>,
    /// For `checkout_completed` / `payment_succeeded`: the currency the event states.
    pub currency: Option<String>,
    /// For `checkout_completed` / `payment_succeeded`: name a checkout the service never made.
    #[serde(default)]
    pub unknown_checkout: bool,
    pub expect_status: Option<Vec<u16>>,
    /// What the service made of each delivery (`applied`, `pending`, `acknowledged`,
    /// `rejected`, `duplicate`).
    pub expect_outcome: Option<Vec<String>>,
    pub expect_spendable: Option<i64>,
    pub expect_frozen: Option<i64>,
}

fn ok() -> String {
    "ok".into()
}

const SENDS: &[&str] = &[
    "pay",
    "checkout_completed",
    "payment_succeeded",
    "fail",
    "refund",
    "dispute",
    "dispute_won",
    "dispute_lost",
    "replay",
    "nul_body",
    "nul_type",
];
const VARIANTS: &[&str] = &[
    "ok",
    "tampered",
    "stale",
    "future",
    "wrong_secret",
    "unsigned",
];

impl Scenario {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let scenario: Scenario =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        if scenario.steps.is_empty() {
            bail!("{}: a scenario needs at least one [[step]]", path.display());
        }
        for (i, s) in scenario.steps.iter().enumerate() {
            if !SENDS.contains(&s.send.as_str()) {
                bail!(
                    "{}: step {}: `send` must be one of {SENDS:?}",
                    path.display(),
                    i + 1
                );
            }
            if !VARIANTS.contains(&s.variant.as_str()) {
                bail!(
                    "{}: step {}: `variant` must be one of {VARIANTS:?}",
                    path.display(),
                    i + 1
                );
            }
        }
        Ok(scenario)
    }
}

/// Where the sandbox is.
pub struct Target {
    pub base_url: String,
    pub provider_url: String,
    pub api_key: String,
}

/// The account's (spendable, frozen).
async fn balance(http: &reqwest::Client, t: &Target) -> anyhow::Result<(i64, i64)> {
    let usage: Value = http
        .get(format!("{}/api/usage", t.base_url))
        .bearer_auth(&t.api_key)
        .send()
        .await
        .context("reading /api/usage")?
        .error_for_status()
        .context("reading /api/usage")?
        .json()
        .await?;
    let b = &usage["balance"];
    Ok((
        b["spendable"]
            .as_i64()
            .context("usage has no spendable balance")?,
        b["frozen"].as_i64().unwrap_or(0),
    ))
}

/// Plays one scenario on a new checkout; prints a line per step; returns whether all passed.
pub async fn play(scenario: &Scenario, t: &Target) -> anyhow::Result<bool> {
    let http = reqwest::Client::new();
    let checkout: Value = http
        .post(format!("{}/sandbox/checkouts", t.base_url))
        .bearer_auth(&t.api_key)
        .send()
        .await
        .context("opening a checkout on the sandbox")?
        .error_for_status()
        .context("opening a checkout on the sandbox (is this a sandbox with SVC_API_KEY's key?)")?
        .json()
        .await?;
    let session = checkout["provider_session_id"]
        .as_str()
        .context("the checkout has no provider session")?
        .to_owned();
    let (start_spendable, start_frozen) = balance(&http, t).await?;
    println!("scenario: {}", scenario.name);
    let mut all = true;
    for (i, step) in scenario.steps.iter().enumerate() {
        let answer: Value = http
            .post(format!("{}/qa/send", t.provider_url))
            .json(&json!({
                "session_id": session, "event": step.send, "variant": step.variant,
                "amount": step.amount, "currency": step.currency,
                "unknown_checkout": step.unknown_checkout,
            }))
            .send()
            .await
            .context("asking the sandbox provider to send")?
            .json()
            .await?;
        let statuses: Vec<u16> = answer["deliveries"]
            .as_array()
            .with_context(|| format!("the provider refused: {answer}"))?
            .iter()
            .map(|d| d["status"].as_u64().unwrap_or(0) as u16)
            .collect();
        let outcomes: Vec<String> = answer["deliveries"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                serde_json::from_str::<Value>(d["answer"].as_str().unwrap_or_default())
                    .ok()
                    .and_then(|a| a["status"].as_str().map(str::to_owned))
                    .unwrap_or_default()
            })
            .collect();
        let default_status = if step.variant == "ok" { 200 } else { 400 };
        let expected = step
            .expect_status
            .clone()
            .unwrap_or_else(|| vec![default_status; statuses.len().max(1)]);
        let (spendable, frozen) = balance(&http, t).await?;
        let (ds, df) = (spendable - start_spendable, frozen - start_frozen);
        let mut problems = Vec::new();
        if statuses != expected {
            problems.push(format!("answered {statuses:?}, expected {expected:?}"));
        }
        if let Some(want) = &step.expect_outcome
            && want != &outcomes
        {
            problems.push(format!("outcomes {outcomes:?}, expected {want:?}"));
        }
        if let Some(want) = step.expect_spendable
            && want != ds
        {
            problems.push(format!("spendable changed by {ds}, expected {want}"));
        }
        if let Some(want) = step.expect_frozen
            && want != df
        {
            problems.push(format!("frozen changed by {df}, expected {want}"));
        }
        let label = format!("step {}: {} ({})", i + 1, step.send, step.variant);
        if problems.is_empty() {
            println!("  PASS {label}: {statuses:?}, spendable {ds:+}, frozen {df:+}");
        } else {
            all = false;
            println!("  FAIL {label}: {}", problems.join("; "));
        }
    }
    Ok(all)
}
