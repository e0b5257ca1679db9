//! `svc`: the service's command line.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use svc::{
    config::{RuntimeSettings, ServeSettings},
    services::CreateKey,
    startup::{self, Application, Stores},
    telemetry,
};
use svc_ports::{CreditAmount, Email, Environment, KeyPrefix, Plan, Scopes};

#[derive(Parser)]
#[command(name = "svc", version, about = "Agent action and commerce service")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the live service (SQLite `./svc.db` by default, migrated at start).
    Serve(ServeSettings),
    /// Serve the sandbox: in-memory stores, a seeded account with test credits; prints
    /// `SVC_BASE_URL=...` and `SVC_API_KEY=...` once it serves.
    Sandbox {
        #[arg(long, env = "SVC_BIND", default_value = "127.0.0.1:8080")]
        bind: String,
        #[command(flatten)]
        runtime: RuntimeSettings,
    },
    /// Apply pending database migrations and exit.
    Migrate(DatabaseArgs),
    /// Create, list and revoke API keys.
    Keys {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(subcommand)]
        command: KeysCommand,
    },
}

#[derive(clap::Args)]
struct DatabaseArgs {
    #[arg(long, env = "SVC_DATABASE_URL", default_value = "sqlite://./svc.db")]
    database_url: String,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key (and the account, if new); prints only the key on stdout.
    Create {
        #[arg(long)]
        email: String,
        /// Credits to grant the account with the key.
        #[arg(long)]
        credits: Option<i64>,
        /// Plan of a new account.
        #[arg(long, default_value = "free")]
        plan: String,
        /// Space- or comma-separated scopes.
        #[arg(long, default_value = "read discover execute")]
        scopes: String,
        #[arg(long, default_value = "cli")]
        label: String,
    },
    /// List keys by prefix (never the secrets).
    List {
        #[arg(long)]
        email: Option<String>,
    },
    /// Revoke the key with this prefix (e.g. `svc_live_AbCd1234`).
    Revoke { prefix: String },
}

#[tokio::main]
async fn main() -> ExitCode {
    telemetry::init();
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(s) => {
            let stores = Stores::open(&s.database_url, s.database_max_connections).await?;
            let app = Application::build(&s.runtime, &s.bind, stores, Environment::Live).await?;
            app.run_until_stopped().await.context("serving")
        }
        Command::Sandbox { bind, runtime } => {
            let app =
                Application::build(&runtime, &bind, Stores::memory(), Environment::Test).await?;
            let issued = startup::seed_sandbox(&app.context().services).await?;
            let origins = app.context().origins.clone();
            println!("SVC_BASE_URL={}", origins.base_url);
            println!("SVC_MCP_URL={}", origins.mcp_url);
            println!("SVC_API_KEY={}", issued.secret.expose());
            eprintln!(
                "MCP setup: claude mcp add --transport http svc {} --header \"Authorization: Bearer $SVC_API_KEY\"",
                origins.mcp_url
            );
            app.run_until_stopped().await.context("serving")
        }
        Command::Migrate(db) => {
            let stores = Stores::open(&db.database_url, 2).await?;
            tracing::info!(store = stores.kind, "migrations applied");
            Ok(())
        }
        Command::Keys { db, command } => keys(&db.database_url, command).await,
    }
}

async fn keys(database_url: &str, command: KeysCommand) -> anyhow::Result<()> {
    let stores = Stores::open(database_url, 2).await?;
    let services = startup::services(&stores, Environment::Live);
    match command {
        KeysCommand::Create {
            email,
            credits,
            plan,
            scopes,
            label,
        } => {
            let request = CreateKey {
                email: Email::parse(&email).context("--email")?,
                plan: plan.parse::<Plan>()?,
                credits: credits
                    .map(CreditAmount::new)
                    .transpose()
                    .context("--credits")?,
                scopes: Scopes::parse_list(&scopes).context("--scopes")?,
                label,
            };
            let issued = services.keys.create_key(request).await?;
            println!("{}", issued.secret.expose());
            eprintln!(
                "created {} for {} ({})",
                issued.record.prefix, issued.account.email, issued.account.id
            );
        }
        KeysCommand::List { email } => {
            let email = email
                .map(|e| Email::parse(&e))
                .transpose()
                .context("--email")?;
            println!(
                "{:<20} {:<12} {:<32} {:<10} {:<24} SCOPES",
                "PREFIX", "STATUS", "EMAIL", "PLAN", "CREATED"
            );
            for (key, account) in services.keys.list(email.as_ref()).await? {
                let status = if key.is_revoked() {
                    "revoked"
                } else {
                    "active"
                };
                let (email, plan) = account
                    .map(|a| (a.email.to_string(), a.plan.to_string()))
                    .unwrap_or_else(|| ("?".into(), "?".into()));
                println!(
                    "{:<20} {:<12} {:<32} {:<10} {:<24} {}",
                    key.prefix.as_str(),
                    status,
                    email,
                    plan,
                    key.created_at
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    key.scopes.to_list_string()
                );
            }
        }
        KeysCommand::Revoke { prefix } => {
            let prefix =
                KeyPrefix::parse(&prefix).context("PREFIX must look like svc_live_AbCd1234")?;
            let record = services.keys.revoke(&prefix).await?;
            println!("revoked {}", record.prefix);
        }
    }
    Ok(())
}
