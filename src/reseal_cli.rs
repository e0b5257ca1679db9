//! `svc reseal`: every stored secret sealed again with the current connection key, bound to its
//! record, with a line per field of what was found; `--check` only counts.

use svc::config::SealingArgs;
use svc::services::reseal::{FieldReport, Mode};
use svc::startup::ResealKey;

#[derive(clap::Args)]
pub struct ResealArgs {
    #[arg(long, env = "SVC_DATABASE_URL", default_value = "sqlite://./svc.db")]
    database_url: String,
    #[command(flatten)]
    sealing: SealingArgs,
    /// Only count what is not sealed the current way (writes nothing); exits with status 1
    /// when anything is.
    #[arg(long)]
    check: bool,
    /// Seal with a key the instances recorded before their newest one (after a rollback to
    /// it); without it only the newest recorded key reseals.
    #[arg(long)]
    allow_older_key: bool,
}

/// Exit status 0: every value is sealed the current way (or now is); 1: some are not (with
/// `--check`), or some open with no key; 2: nothing was done or the run stopped (a refused key,
/// no database, a store error).
pub async fn run(args: ResealArgs) -> anyhow::Result<()> {
    let mode = if args.check {
        Mode::Check
    } else {
        Mode::Reseal
    };
    let allowed = if args.allow_older_key {
        ResealKey::AnyRecorded
    } else {
        ResealKey::Newest
    };
    let sealing = args.sealing.sealing();
    let run = match svc::startup::reseal(&args.database_url, &sealing, mode, allowed).await {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    };
    let reports = run.reports;
    print!("{}", table(&reports, mode));
    if let Some(e) = run.stopped {
        eprintln!(
            "error: stopped at {}: {e:#} (what is above was done; run it again to go on)",
            reports.last().map_or("the start", |r| r.field.as_str())
        );
        std::process::exit(2);
    }
    let unopenable: u64 = reports.iter().map(|r| r.unopenable).sum();
    let stale: u64 = reports.iter().map(|r| r.stale).sum();
    if unopenable > 0 {
        anyhow::bail!(
            "{unopenable} sealed values open with neither the connection key nor a retired one \
             (their records are named above): they were left as they are"
        );
    }
    if mode == Mode::Check && stale > 0 {
        anyhow::bail!(
            "{stale} sealed values are not sealed with the current key for their record: run \
             `svc reseal`"
        );
    }
    Ok(())
}

fn table(reports: &[FieldReport], mode: Mode) -> String {
    let stale = match mode {
        Mode::Reseal => "RESEALED",
        Mode::Check => "STALE",
    };
    let mut out = format!(
        "{:<28} {:>8} {:>8} {:>9} {:>17} {:>11}\n",
        "FIELD", "READ", "CURRENT", stale, "CHANGED MEANWHILE", "UNOPENABLE"
    );
    for r in reports {
        out.push_str(&format!(
            "{:<28} {:>8} {:>8} {:>9} {:>17} {:>11}\n",
            r.field.as_str(),
            r.examined,
            r.current,
            r.stale,
            r.changed_meanwhile,
            r.unopenable
        ));
        for id in &r.unopenable_ids {
            out.push_str(&format!("  does not open: {} of {id}\n", r.field.as_str()));
        }
        let unnamed = r.unopenable - r.unopenable_ids.len() as u64;
        if unnamed > 0 {
            out.push_str(&format!("  and {unnamed} more\n"));
        }
    }
    out
}
