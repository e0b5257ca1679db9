//! `svc scan`: the readiness scan of a site, with a line per check as each finishes, then the
//! report as a table (the level, what the next one needs, each check), JSON or Markdown.

use svc::config::RuntimeSettings;
use svc::startup::{self, ReadinessSites, Stores, World};
use svc_ports::Environment;

#[derive(clap::Args)]
pub struct ScanArgs {
    /// The company URL (`https://example.com`; a bare domain gets `https://`).
    url: String,
    /// Print the report as the JSON `/api/readiness/scan` answers.
    #[arg(long, conflicts_with = "agent")]
    json: bool,
    /// Print the report as Markdown an agent can act on (`format: "agent"` of the API).
    #[arg(long)]
    agent: bool,
    /// Exit with status 1 when the score is below this (for CI pipelines).
    #[arg(long, value_name = "SCORE")]
    fail_under: Option<u32>,
    /// Exit with status 1 when the level (0-5) is below this.
    #[arg(long, value_name = "LEVEL", value_parser = clap::value_parser!(u8).range(0..=5))]
    fail_under_level: Option<u8>,
    /// Also start the sandbox's readiness sites and allow their names (`ready.sandbox.test`,
    /// `lacks-llms-txt.sandbox.test`, ...); a sandbox URL without a port gets theirs.
    #[arg(long)]
    sandbox: bool,
    /// How long the whole scan may take, in seconds (1 to 300): the service's 9 by default. A
    /// slow site scanned from a terminal can be given longer; each request then gets half of
    /// it (the guarded client still stops one at 15 s), and never less than the service's 5 s
    /// (nor more than the budget).
    #[arg(long, value_name = "SECONDS", default_value_t = 9,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    budget_seconds: u64,
    /// The browser that runs the home page for the `web_mcp` check (every request it makes
    /// through the guarded fetcher); without one that check is neutral.
    #[command(flatten)]
    browser: svc::config::RenderSettings,
}

pub async fn run(args: ScanArgs) -> anyhow::Result<()> {
    use indicatif::{ProgressBar, ProgressStyle};
    args.browser.check()?;
    // A URL the scan refuses as written is refused before anything starts (the browser, the
    // sandbox's sites).
    svc_services::readiness::normalise(&args.url)?;
    let stores = Stores::memory();
    let browser = Some(args.browser.clone());
    let budget = std::time::Duration::from_secs(args.budget_seconds);
    let probe = (budget / 2)
        .max(std::time::Duration::from_secs(5))
        .min(budget);
    let scan_deadlines = Some((probe, budget));
    let mut url = args.url.clone();
    let (services, _sites) = if args.sandbox {
        let sites = ReadinessSites::start().await;
        if let Ok(mut parsed) = url::Url::parse(&url)
            && parsed
                .host_str()
                .is_some_and(|h| h.ends_with(".sandbox.test"))
            && parsed.port().is_none()
        {
            let _ = parsed.set_port(Some(sites.address().port()));
            url = parsed.to_string();
        }
        let world = World {
            render: browser,
            scan_deadlines,
            ..World::default()
        }
        .with_readiness_sites(&sites);
        let origins =
            RuntimeSettings::default().origins(std::net::SocketAddr::from(([127, 0, 0, 1], 8080)));
        let (services, _) = startup::services(&stores, Environment::Test, &world, &origins)?;
        (services, Some(sites))
    } else {
        let world = World {
            render: browser,
            scan_deadlines,
            ..World::default()
        };
        (
            startup::offline_services_in(&stores, Environment::Live, &world)?,
            None,
        )
    };
    if let Err(e) = services.readiness.warm_up().await {
        // The scan goes on: its web_mcp check says the browser is unavailable.
        tracing::warn!(error = %e, "the browser did not start");
    }
    let bar = ProgressBar::new(svc_ports::CheckId::ALL.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(format!("scanning {url}"));
    let report = services
        .readiness
        .scan(&url, &|check| {
            bar.inc(1);
            // One line per check as it finishes, above the bar on a terminal, else on stderr
            // (stdout is the report).
            let line = format!(
                "{:<7} {:<24} {}",
                check.status.as_str(),
                check.id.as_str(),
                check.summary
            );
            if bar.is_hidden() {
                eprintln!("{line}");
            } else {
                bar.println(line);
            }
            bar.set_message(format!("{} {}", check.status.as_str(), check.id));
        })
        .await;
    bar.finish_and_clear();
    let report = report?;
    let (score, level) = (report.score, report.level.number());
    if args.json {
        let body = svc::kit::wire::readiness::report_body(report, "");
        println!(
            "{}",
            serde_json::to_string_pretty(&poem_openapi::types::ToJSON::to_json(&body))?
        );
    } else if args.agent {
        print!("{}", svc::kit::wire::readiness::agent_markdown(&report, ""));
    } else {
        print_scan_table(&report);
    }
    if let Some(min) = args.fail_under
        && score < min
    {
        anyhow::bail!("score {score} is below {min}");
    }
    if let Some(min) = args.fail_under_level
        && level < min
    {
        anyhow::bail!("level {level} is below {min}");
    }
    Ok(())
}

/// The report as a table: the level and what the next one needs, then one row per check.
fn print_scan_table(report: &svc_ports::ScanReport) {
    println!(
        "{}: level {} of 5, {} · score {}/100 ({})",
        report.origin,
        report.level.number(),
        report.level.name(),
        report.score,
        report.scan_id
    );
    if let Some(next) = report.next_level() {
        let mut needs: Vec<String> = next.missing.iter().map(|c| c.to_string()).collect();
        if next.one_of_needed > 0 {
            needs.push(format!(
                "{} of {}",
                next.one_of_needed,
                next.one_of
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(" / ")
            ));
        }
        println!(
            "next: level {} {} needs {}",
            next.level.number(),
            next.level.name(),
            needs.join(", ")
        );
    }
    println!();
    println!("  {:<7}  {:<24} FOUND", "STATUS", "CHECK");
    for c in &report.checks {
        println!(
            "  {:<7}  {:<24} {}",
            c.status.as_str(),
            c.id.as_str(),
            c.summary
        );
        if let Some(r) = &c.recommendation
            && c.status != svc_ports::CheckStatus::Neutral
        {
            println!("  {:<7}  {:<24} fix: {r}", "", "");
        }
    }
}
