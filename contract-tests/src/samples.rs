//! Sample values shared by the scenarios and the Postgres upgrade test.

use chrono::Duration;
use svc_ports::{
    ScanId, ScanReport,
    readiness::{CheckId, CheckResult, CheckStatus, Evidence, ReadinessLevel},
};
use ulid::Ulid;

use crate::scenarios::t0;

/// One result per check, statuses, evidence and recommendations varied, with `excerpt` as
/// every evidence excerpt.
pub fn sample_checks(excerpt: &str) -> Vec<CheckResult> {
    CheckId::ALL
        .iter()
        .enumerate()
        .map(|(i, id)| CheckResult {
            id: *id,
            title: id.title().into(),
            status: [
                CheckStatus::Pass,
                CheckStatus::Warn,
                CheckStatus::Fail,
                CheckStatus::Neutral,
            ][i % 4],
            weight: id.weight(),
            summary: format!("summary {i} with \"quotes\" and ünïcödé"),
            evidence: vec![Evidence {
                url: format!("https://example.com/{id}"),
                status: (i % 2 == 0).then_some(200),
                excerpt: excerpt.into(),
            }],
            recommendation: (i % 3 != 0).then(|| format!("fix {id}")),
        })
        .collect()
}

/// A report of `checks` on example.com, started at [`t0`] and completed `millis` later.
pub fn sample_report(checks: Vec<CheckResult>, millis: i64) -> ScanReport {
    ScanReport {
        scan_id: ScanId::from_ulid(Ulid::new()),
        url: "https://example.com/".into(),
        origin: "https://example.com".into(),
        score: svc_ports::readiness::score(&checks),
        level: ReadinessLevel::of(&checks),
        checks,
        started_at: t0(),
        completed_at: t0() + Duration::milliseconds(millis),
    }
}
