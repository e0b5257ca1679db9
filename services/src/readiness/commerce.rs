//! Agent commerce: x402 payment requirements, the Universal Commerce Protocol profile, the
//! Agentic Commerce Protocol file and the AP2 extension of the A2A card. Each counts only when
//! the home page shows the site sells something; otherwise an absent one is neutral.

use std::sync::LazyLock;

use serde_json::Value;
use svc_ports::{CheckId, CheckResult, CheckStatus, Evidence, Extraction};

use super::{Got, neutral, result};

static PRICE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)([$€£]\s?\d)|(\d\s?(usd|eur|gbp)\b)|add to (cart|basket)|buy now|checkout",
    )
    .expect("static regex")
});

const COMMERCE_TYPES: &[&str] = &["Product", "Offer", "AggregateOffer", "Store", "OnlineStore"];

/// What on the home page shows commerce: schema.org offers and products, prices, a cart.
pub fn commerce_signals(home: &Got, extraction: Option<&Extraction>) -> Vec<String> {
    let mut signals = Vec::new();
    if let Some(e) = extraction {
        let text = serde_json::to_string(&e.metadata.json_ld).unwrap_or_default();
        for t in COMMERCE_TYPES {
            if text.contains(&format!("\"{t}\"")) {
                signals.push(format!("JSON-LD {t}"));
            }
        }
    }
    if home.ok()
        && let Some(m) = PRICE.find(&home.body)
    {
        signals.push(format!("\"{}\" on the page", m.as_str()));
    }
    signals
}

/// An absent commerce document: a fail on a site that sells, neutral on one that does not.
pub(super) fn absent(
    id: CheckId,
    what: &str,
    evidence: Vec<Evidence>,
    signals: &[String],
    advice: &str,
) -> CheckResult {
    if signals.is_empty() {
        neutral(
            id,
            format!("{what}; the home page shows no commerce, so it is not scored"),
            evidence,
            advice,
        )
    } else {
        result(
            id,
            CheckStatus::Fail,
            format!(
                "{what}, though the home page sells ({})",
                signals.join(", ")
            ),
            evidence,
            Some(advice),
        )
    }
}

/// x402: a 402 answer on `/`, `/api` or `/api/v1` carrying payment requirements (a JSON
/// body with `accepts`, or the `PAYMENT-REQUIRED` header of x402 v2).
pub fn judge_x402(answers: &[&Got], signals: &[String]) -> CheckResult {
    const ADVICE: &str = "If agents may pay per request, answer unpaid calls with 402 and x402 payment requirements ({\"x402Version\": 1, \"accepts\": [{\"scheme\", \"network\", \"maxAmountRequired\", \"payTo\", \"asset\", \"resource\"}]}).";
    let evidence = answers.iter().map(|g| g.evidence()).collect();
    let paid: Vec<&&Got> = answers.iter().filter(|g| g.status == Some(402)).collect();
    let with_requirements = paid.iter().find(|g| {
        g.header("payment-required").is_some()
            || serde_json::from_str::<Value>(&g.body)
                .is_ok_and(|v| v["accepts"].as_array().is_some_and(|a| !a.is_empty()))
    });
    if let Some(g) = with_requirements {
        return result(
            CheckId::X402,
            CheckStatus::Pass,
            format!("402 with x402 payment requirements at {}", g.url),
            evidence,
            None,
        );
    }
    if let Some(g) = paid.first() {
        return result(
            CheckId::X402,
            CheckStatus::Warn,
            format!("402 at {} without x402 payment requirements", g.url),
            evidence,
            Some(ADVICE),
        );
    }
    absent(
        CheckId::X402,
        "no x402 402 answer",
        evidence,
        signals,
        ADVICE,
    )
}

pub fn judge_ucp(got: &Got, signals: &[String]) -> CheckResult {
    const ADVICE: &str = "Publish a Universal Commerce Protocol profile at /.well-known/ucp ({\"ucp\": {\"version\", \"services\", \"capabilities\"}}).";
    let doc = got.json_object();
    let profile = doc
        .as_ref()
        .map(|d| if d["ucp"].is_object() { &d["ucp"] } else { d });
    match profile {
        Some(p)
            if p["version"].is_string()
                && (p["services"].is_object()
                    || p["capabilities"].is_array()
                    || p["capabilities"].is_object()) =>
        {
            result(
                CheckId::Ucp,
                CheckStatus::Pass,
                format!(
                    "UCP profile version {}",
                    p["version"].as_str().unwrap_or_default()
                ),
                vec![got.evidence()],
                None,
            )
        }
        Some(_) => result(
            CheckId::Ucp,
            CheckStatus::Warn,
            "/.well-known/ucp without a `version` and services or capabilities",
            vec![got.evidence()],
            Some(ADVICE),
        ),
        None => absent(
            CheckId::Ucp,
            "no UCP profile",
            vec![got.evidence()],
            signals,
            ADVICE,
        ),
    }
}

pub fn judge_acp(got: &Got, signals: &[String]) -> CheckResult {
    const ADVICE: &str = "If agents may check out through the Agentic Commerce Protocol, publish /.well-known/acp.json naming its version and your checkout endpoint.";
    match got.json_object() {
        Some(d) if d.as_object().is_some_and(|o| !o.is_empty()) => result(
            CheckId::Acp,
            CheckStatus::Pass,
            format!(
                "ACP file with {}",
                d.as_object()
                    .map(|o| o.keys().take(5).cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ),
            vec![got.evidence()],
            None,
        ),
        Some(_) => result(
            CheckId::Acp,
            CheckStatus::Warn,
            "/.well-known/acp.json is empty",
            vec![got.evidence()],
            Some(ADVICE),
        ),
        None => absent(
            CheckId::Acp,
            "no ACP file",
            vec![got.evidence()],
            signals,
            ADVICE,
        ),
    }
}

/// AP2 extends A2A: without an A2A card there is nothing to extend (neutral).
pub fn judge_ap2(card: &Got, signals: &[String]) -> CheckResult {
    const ADVICE: &str = "Declare the AP2 extension in your A2A agent card (capabilities.extensions[] with the AP2 URI) if agents may pay through mandates.";
    let Some(doc) = card.json_object() else {
        return neutral(
            CheckId::Ap2,
            "no A2A agent card to carry an AP2 extension",
            vec![card.evidence()],
            ADVICE,
        );
    };
    let ap2 = doc
        .pointer("/capabilities/extensions")
        .and_then(Value::as_array)
        .and_then(|e| {
            e.iter()
                .filter_map(|x| x["uri"].as_str())
                .find(|u| u.to_ascii_lowercase().contains("ap2"))
                .map(str::to_owned)
        });
    match ap2 {
        Some(uri) => result(
            CheckId::Ap2,
            CheckStatus::Pass,
            format!("A2A card declares the AP2 extension {uri}"),
            vec![card.evidence()],
            None,
        ),
        None => absent(
            CheckId::Ap2,
            "the A2A card declares no AP2 extension",
            vec![card.evidence()],
            signals,
            ADVICE,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn commerce_signals_come_from_prices_and_offers() {
        let shop = got(
            200,
            "text/html",
            "<p>Sencha, $12.50</p><button>Add to cart</button>",
        );
        assert_eq!(commerce_signals(&shop, None), vec!["\"$1\" on the page"]);
        let blog = got(200, "text/html", "<p>Notes on tea.</p>");
        assert!(commerce_signals(&blog, None).is_empty());
    }

    #[test]
    fn commerce_checks_count_only_where_the_site_sells() {
        let sells = vec!["a price".to_owned()];
        let none = got(404, "text/plain", "");
        let mut paid = got(
            402,
            "application/json",
            r#"{"x402Version":1,"accepts":[{"scheme":"exact","network":"base","maxAmountRequired":"10000","payTo":"0x1","asset":"0x2","resource":"https://e.com/api"}]}"#,
        );
        assert_eq!(judge_x402(&[&none, &paid], &[]).status, CheckStatus::Pass);
        paid.body = "{}".into();
        assert_eq!(judge_x402(&[&paid], &sells).status, CheckStatus::Warn);
        paid.headers = vec![("payment-required".into(), "eyJ4NDAyVmVyc2lvbiI6Mn0=".into())];
        assert_eq!(judge_x402(&[&paid], &sells).status, CheckStatus::Pass);
        assert_eq!(judge_x402(&[&none], &sells).status, CheckStatus::Fail);
        assert_eq!(judge_x402(&[&none], &[]).status, CheckStatus::Neutral);

        let ucp = got(
            200,
            "application/json",
            r#"{"ucp":{"version":"2026-01-11","services":{"dev.ucp.shopping":{}},"capabilities":[]}}"#,
        );
        assert_eq!(judge_ucp(&ucp, &sells).status, CheckStatus::Pass);
        assert_eq!(
            judge_ucp(&got(200, "application/json", "{\"a\":1}"), &sells).status,
            CheckStatus::Warn
        );
        assert_eq!(judge_ucp(&none, &sells).status, CheckStatus::Fail);
        assert_eq!(judge_ucp(&none, &[]).status, CheckStatus::Neutral);

        let acp = got(
            200,
            "application/json",
            r#"{"version":"2025-09-29","checkout":"https://e.com/acp"}"#,
        );
        assert_eq!(judge_acp(&acp, &sells).status, CheckStatus::Pass);
        assert_eq!(judge_acp(&none, &sells).status, CheckStatus::Fail);

        let card = got(
            200,
            "application/json",
            r#"{"name":"a","capabilities":{"extensions":[{"uri":"https://github.com/google-agentic-commerce/ap2/tree/v0.1"}]}}"#,
        );
        assert_eq!(judge_ap2(&card, &sells).status, CheckStatus::Pass);
        let plain = got(200, "application/json", r#"{"name":"a","capabilities":{}}"#);
        assert_eq!(judge_ap2(&plain, &sells).status, CheckStatus::Fail);
        assert_eq!(judge_ap2(&plain, &[]).status, CheckStatus::Neutral);
        assert_eq!(judge_ap2(&none, &sells).status, CheckStatus::Neutral);
    }
}
