//! `svc`: the service's command line.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::Context;
use clap::{Parser, Subcommand};
mod read_cli;
mod reseal_cli;
mod scan_cli;

use svc::{
    config::{RuntimeSettings, ServeSettings},
    services::CreateKey,
    startup::{
        self, ActionSites, Application, DemoSite, Mail, Payments, ReadinessSites,
        SandboxAuthServer, SandboxPaymentProvider, Sealing, Signing, Stores, World,
    },
    telemetry,
};
use svc_ports::{CreditAmount, Email, Environment, KeyPrefix, Plan, Scopes};

// Every request allocates and frees many small buffers across threads; glibc's malloc spent
// about a sixth of an execution's time in its locks (bench/RESULTS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "svc", version, about = "Agent action and commerce service")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start and matched at once: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the live service (SQLite `./svc.db` by default, migrated at start).
    Serve(ServeSettings),
    /// Serve the sandbox: in-memory stores, a seeded account with test credits; prints
    /// `SVC_BASE_URL=...` and `SVC_API_KEY=...` once it serves.
    Sandbox {
        #[arg(long, env = "SVC_BIND", default_value = "127.0.0.1:8080")]
        bind: String,
        /// Keep the sandbox in a database (`sqlite://...` or `postgres://...`) instead of
        /// memory, so it survives a restart or is shared by several sandbox processes.
        #[arg(long, env = "SVC_SANDBOX_DATABASE_URL")]
        database_url: Option<String>,
        /// Largest Postgres connection pool for `--database-url` (1 to 1000), as for `serve`.
        #[arg(long, env = "SVC_DATABASE_MAX_CONNECTIONS", default_value_t = 16)]
        database_max_connections: u32,
        /// Test credits the seeded account gets (once per account; 0 to 1,000,000,000).
        #[arg(long, env = "SVC_SANDBOX_SEED_CREDITS", default_value_t = startup::SANDBOX_CREDITS)]
        seed_credits: i64,
        /// Ed25519 seed (base64url) that signs artifacts: set it, the same on each, when several
        /// sandboxes share one database. Without it each sandbox signs with a fresh key.
        #[arg(long, env = "SVC_SIGNING_KEY", hide_env_values = true)]
        signing_key: Option<String>,
        /// Earlier signing keys, still published in the JWKS.
        #[arg(
            long,
            env = "SVC_SIGNING_KEYS_RETIRED",
            value_delimiter = ',',
            hide_env_values = true
        )]
        signing_keys_retired: Vec<String>,
        /// AES-256-GCM key (base64url) sealing connection credentials: the same on each sandbox
        /// sharing one database. Without it each sandbox seals with a fresh key.
        #[arg(long, env = "SVC_CONNECTION_KEY", hide_env_values = true)]
        connection_key: Option<String>,
        #[command(flatten)]
        runtime: RuntimeSettings,
        #[command(subcommand)]
        command: Option<SandboxCommand>,
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
    /// Seal every stored secret (connection grants and PKCE verifiers, webhook secrets) again
    /// with the current connection key, bound to its record: after a key rotation, before the
    /// retired key is dropped. Instances may serve meanwhile.
    Reseal(reseal_cli::ResealArgs),
    /// Import, list, publish, retire and learn Agent Maps.
    Maps {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(subcommand)]
        command: MapsCommand,
    },
    /// Verify verification artifacts offline.
    Artifacts {
        #[command(subcommand)]
        command: ArtifactsCommand,
    },
    /// Read a page: a URL through the guarded fetcher, or a saved HTML file offline. Prints the
    /// main content (or, with `--format json`, the same JSON as `/api/read`); a blocked page
    /// exits with status 2.
    Read(read_cli::ReadArgs),
    /// Forward the account's webhook events to a local server while developing (as `stripe
    /// listen` does): polls the event feed with the API key and POSTs each new event there,
    /// signed per Standard Webhooks with the secret it prints (or `--secret`).
    Listen(ListenArgs),
    /// Scan a site for agent readiness (the same checks as `POST /api/readiness/scan`), with a
    /// progress bar on a terminal; prints the report, or its JSON with `--json`.
    Scan(scan_cli::ScanArgs),
}

#[derive(clap::Args)]
struct ListenArgs {
    /// Where each event is POSTed, e.g. `http://localhost:3000/webhooks`.
    #[arg(long)]
    forward_to: String,
    #[arg(long, env = "SVC_BASE_URL", default_value = "http://127.0.0.1:8080")]
    base_url: String,
    #[arg(long, env = "SVC_API_KEY", hide_env_values = true)]
    api_key: String,
    /// Sign with this `whsec_...` secret instead of a new one.
    #[arg(long, env = "SVC_LISTEN_SECRET", hide_env_values = true)]
    secret: Option<String>,
    /// Forward the events recorded before the start too.
    #[arg(long)]
    all: bool,
    /// Stop after forwarding this many events.
    #[arg(long)]
    max_events: Option<usize>,
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
    /// Rotate the key with this prefix: prints only the new key on stdout; the old one keeps
    /// working for the overlap, then stops.
    Rotate {
        prefix: String,
        /// How long the old key keeps working, in hours (0 to 720; 0 stops it at once).
        #[arg(long, env = "SVC_KEY_ROTATION_OVERLAP_HOURS", default_value_t = 24)]
        overlap_hours: u64,
    },
}

#[derive(Subcommand)]
enum MapsCommand {
    /// Store a map document (JSON) as the domain's next candidate version.
    Import {
        file: PathBuf,
        /// The origin the map's actions call: fills a template's `{base_url}` (the examples in
        /// `sandbox/maps/` are templates), or replaces the document's `base_url`.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// List every version of every map (or of one domain).
    List {
        #[arg(long)]
        domain: Option<String>,
    },
    /// Publish the newest (or the given) version; the one published before is retired.
    Publish {
        domain: String,
        #[arg(long)]
        version: Option<u32>,
    },
    /// Retire the published version: nothing of the domain runs any more.
    Retire { domain: String },
    /// Draft a candidate map from what the site publishes (its OpenAPI document, its forms).
    /// Nothing learned runs before a person publishes it.
    Learn {
        domain: String,
        /// Origin to learn from (default `https://DOMAIN`).
        #[arg(long)]
        base_url: Option<String>,
        /// Learn from the sandbox's own site of that name (e.g. `ready.sandbox.test`), started
        /// in this process for the purpose.
        #[arg(long, conflicts_with = "base_url")]
        sandbox: bool,
    },
}

#[derive(Subcommand)]
enum SandboxCommand {
    /// Serve only the sandbox's action sites (the shop, the booking site, ...), for `svc serve`
    /// instances to call: writes each site's Agent Map to `--maps-dir` (`{host}.json`), prints
    /// `SVC_PINNED_HOSTS=...` for the instances, and serves until stopped.
    Sites {
        #[arg(long)]
        maps_dir: PathBuf,
    },
    /// Play QA payment scenario files against a running sandbox (the values it printed):
    /// PASS or FAIL per step; exit 1 when any step failed.
    Play {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long = "sandbox-url", env = "SVC_BASE_URL")]
        sandbox_url: String,
        #[arg(long, env = "SVC_PAYMENT_PROVIDER_URL")]
        provider_url: String,
        #[arg(long, env = "SVC_API_KEY", hide_env_values = true)]
        api_key: String,
    },
}

#[derive(Subcommand)]
enum ArtifactsCommand {
    /// Check an artifact's Ed25519 signature with a JWKS (exit 0 when it verifies, 1 when
    /// not). FILE may hold the artifact, or an execute answer or task that carries one.
    Verify {
        file: PathBuf,
        /// The JWK Set to check against: a file saved from `/.well-known/jwks.json`, or that
        /// URL itself (`https://...`; fetched as `curl` would, by the person who names it).
        #[arg(long)]
        jwks: String,
    },
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
            s.check()?;
            let stores = Stores::open(&s.database_url, s.database_max_connections).await?;
            let mail = match s.smtp_url.clone() {
                Some(url) => Mail::Smtp {
                    url,
                    from: s.mail_from.clone(),
                },
                None => Mail::Log,
            };
            let signing = match s.signing_key.clone() {
                Some(active) => Signing::Seed {
                    active,
                    retired: s.signing_keys_retired.clone(),
                },
                None => Signing::KeyFile {
                    path: s.signing_key_file.clone(),
                    retired: s.signing_keys_retired.clone(),
                },
            };
            let payments = match (&s.payment_provider_url, &s.payment_provider_api_key) {
                (Some(base_url), Some(api_key)) => Payments::Http {
                    base_url: base_url.clone(),
                    api_key: api_key.clone(),
                    webhook_secrets: s.payment_webhook_secrets.clone(),
                },
                (None, None) => {
                    tracing::warn!(
                        "no SVC_PAYMENT_PROVIDER_URL: billing is off (checkout answers 503)"
                    );
                    Payments::Disabled
                }
                _ => anyhow::bail!(
                    "set both SVC_PAYMENT_PROVIDER_URL and SVC_PAYMENT_PROVIDER_API_KEY, or neither"
                ),
            };
            let sealing = s.sealing.sealing();
            let connection_providers =
                startup::connection_providers(s.connection_providers.as_deref())?;
            let pinned_hosts = svc::config::pinned_hosts("SVC_PINNED_HOSTS", &s.pinned_hosts)?;
            for (name, addr) in &pinned_hosts {
                tracing::warn!(
                    "SVC_PINNED_HOSTS: actions reach {name} at {addr}, \
                     whatever the address; leave it unset in production unless you mean it"
                );
            }
            let read_pinned_hosts =
                svc::config::pinned_hosts("SVC_READ_PINNED_HOSTS", &s.read_pinned_hosts)?;
            for (name, addr) in &read_pinned_hosts {
                tracing::warn!(
                    "SVC_READ_PINNED_HOSTS: every caller's reads and scans reach {name} at {addr}, \
                     whatever the address; for test sites only"
                );
            }
            let bot_keys = match s.web_bot_auth_key.clone() {
                Some(active) => startup::bot_auth::BotKeys::Seed {
                    active,
                    retired: s.web_bot_auth_keys_retired.clone(),
                },
                None => startup::bot_auth::BotKeys::KeyFile {
                    path: s.web_bot_auth_key_file.clone(),
                    retired: s.web_bot_auth_keys_retired.clone(),
                },
            };
            let world = World {
                pinned_hosts,
                read_pinned_hosts,
                mail,
                signing,
                sealing,
                bot_keys,
                connection_providers,
                payments,
                billing: s.runtime.billing_config()?,
                ..World::default()
            };
            let app =
                Application::build(&s.runtime, &s.bind, stores, Environment::Live, world).await?;
            app.run_until_stopped().await.context("serving")
        }
        Command::Sandbox {
            command:
                Some(SandboxCommand::Play {
                    files,
                    sandbox_url,
                    provider_url,
                    api_key,
                }),
            ..
        } => {
            let target = svc::qa::Target {
                base_url: sandbox_url.trim_end_matches('/').to_owned(),
                provider_url: provider_url.trim_end_matches('/').to_owned(),
                api_key,
            };
            let mut failed = 0;
            for file in &files {
                let scenario = svc::qa::Scenario::load(file)?;
                if !svc::qa::play(&scenario, &target).await? {
                    failed += 1;
                }
            }
            println!(
                "{} of {} scenarios passed",
                files.len() - failed,
                files.len()
            );
            anyhow::ensure!(failed == 0, "{failed} scenario(s) failed");
            Ok(())
        }
        Command::Sandbox {
            command: Some(SandboxCommand::Sites { maps_dir }),
            ..
        } => {
            let sites = ActionSites::start().await;
            std::fs::create_dir_all(&maps_dir)
                .with_context(|| format!("creating {}", maps_dir.display()))?;
            let mut pinned = Vec::new();
            for site in &sites.sites {
                let file = maps_dir.join(format!("{}.json", site.host));
                std::fs::write(&file, site.map_json())
                    .with_context(|| format!("writing {}", file.display()))?;
                pinned.push(format!("{}={}", site.host, site.address()));
            }
            println!("SVC_PINNED_HOSTS={}", pinned.join(","));
            if let Some(shop) = sites.site(startup::SHOP_HOST) {
                println!("SVC_SHOP_SITE={}", shop.origin());
            }
            startup::stopped().await;
            Ok(())
        }
        Command::Sandbox {
            bind,
            database_url,
            database_max_connections,
            seed_credits,
            signing_key,
            signing_keys_retired,
            connection_key,
            runtime,
            command: None,
        } => {
            runtime.check()?;
            svc::config::in_range("SVC_SANDBOX_SEED_CREDITS", seed_credits, 0..=1_000_000_000)?;
            svc::config::in_range(
                "SVC_DATABASE_MAX_CONNECTIONS",
                database_max_connections,
                1..=1000,
            )?;
            let signing = match signing_key {
                Some(active) => Signing::Seed {
                    active,
                    retired: signing_keys_retired,
                },
                None => Signing::Ephemeral,
            };
            let sealing = match connection_key {
                Some(active) => Sealing::Key {
                    active,
                    retired: Vec::new(),
                },
                None => Sealing::Ephemeral,
            };
            let stores = match database_url {
                Some(url) => Stores::open(&url, database_max_connections).await?,
                None => Stores::memory(),
            };
            let demo = DemoSite::start().await;
            let sites = ActionSites::start().await;
            let payments = Arc::new(SandboxPaymentProvider::start().await);
            let readiness_sites = ReadinessSites::start().await;
            let auth_server = SandboxAuthServer::start().await;
            let world = World {
                payments: Payments::Sandbox(payments.clone()),
                billing: runtime.billing_config()?,
                signing,
                sealing,
                // A new sandbox account starts with what the seeded one has, unless set apart.
                free_credits: Some(seed_credits),
                ..World::sandbox(&demo, &sites)
            }
            .with_readiness_sites(&readiness_sites)
            .with_auth_server(&auth_server);
            let app = Application::build(&runtime, &bind, stores, Environment::Test, world).await?;
            let issued = startup::seed_sandbox_with(&app.context().services, seed_credits).await?;
            startup::publish_sandbox_maps(&app.context().services, &sites).await?;
            let origins = app.context().origins.clone();
            println!("SVC_BASE_URL={}", origins.base_url);
            println!("SVC_MCP_URL={}", origins.mcp_url);
            println!("SVC_API_KEY={}", issued.secret.expose());
            println!("SVC_DEMO_SITE={}", demo.origin());
            println!("SVC_OUTBOX_URL={}/sandbox/outbox", origins.site_url);
            println!("SVC_PAYMENT_PROVIDER_URL={}", payments.uri());
            println!("SVC_AUTH_SERVER_URL={}", auth_server.uri());
            println!(
                "SVC_READY_SITE={}",
                readiness_sites.origin(startup::READY_HOST)
            );
            if let Some(shop) = sites.site(startup::SHOP_HOST) {
                println!("SVC_SHOP_SITE={}", shop.origin());
            }
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
        Command::Maps { db, command } => maps(&db.database_url, command).await,
        Command::Artifacts {
            command: ArtifactsCommand::Verify { file, jwks },
        } => {
            let jwks = if jwks.starts_with("https://") || jwks.starts_with("http://") {
                let resp = reqwest::get(&jwks)
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .with_context(|| format!("fetching {jwks}"))?;
                resp.json::<serde_json::Value>()
                    .await
                    .with_context(|| format!("{jwks} is not JSON"))?
            } else {
                read_json(std::path::Path::new(&jwks))?
            };
            verify_artifact(&file, &jwks)
        }
        Command::Read(args) => read_cli::run(args).await,
        Command::Reseal(args) => reseal_cli::run(args).await,
        Command::Scan(args) => scan_cli::run(args).await,
        Command::Listen(args) => {
            let options = svc::listen::ListenOptions {
                base_url: args.base_url,
                api_key: args.api_key,
                forward_to: args.forward_to,
                secret: args.secret,
                replay_existing: args.all,
                poll_every: std::time::Duration::from_secs(1),
                max_events: args.max_events,
            };
            svc::listen::run(options, &mut std::io::stdout()).await?;
            Ok(())
        }
    }
}

async fn maps(database_url: &str, command: MapsCommand) -> anyhow::Result<()> {
    let stores = Stores::open(database_url, 2).await?;
    // `learn --sandbox` reads the sandbox's sites, on loopback: they are pinned for this run.
    let (sandbox_sites, world) = match &command {
        MapsCommand::Learn { sandbox: true, .. } => {
            let sites = (ActionSites::start().await, ReadinessSites::start().await);
            let mut world = World::default();
            for s in &sites.0.sites {
                world.pinned_hosts.insert(s.host.to_owned(), s.address());
                world
                    .read_pinned_hosts
                    .insert(s.host.to_owned(), s.address());
            }
            for host in sites.1.hosts() {
                world.pinned_hosts.insert(host.clone(), sites.1.address());
                world.read_pinned_hosts.insert(host, sites.1.address());
            }
            (Some(sites), world)
        }
        _ => (None, World::default()),
    };
    let services = startup::offline_services_in(&stores, Environment::Live, &world)?;
    let actions = &services.actions;
    let show = |m: &svc_ports::AgentMap| {
        println!(
            "{:<32} v{:<4} {:<10} {:<9} {:>3} actions  {}",
            m.document.domain.as_str(),
            m.version,
            m.status.as_str(),
            m.origin,
            m.document.actions.len(),
            m.updated_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    };
    match command {
        MapsCommand::Import { file, base_url } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let document = startup::map_document(&text, base_url.as_deref())
                .with_context(|| format!("{} is not a map document", file.display()))?;
            let map = actions.import_map(&document, "imported").await?;
            show(&map);
            eprintln!(
                "stored as a candidate; `svc maps publish {}` makes it run",
                map.document.domain
            );
        }
        MapsCommand::List { domain } => {
            for m in actions.maps(domain.as_deref()).await? {
                show(&m);
            }
        }
        MapsCommand::Publish { domain, version } => show(&actions.publish(&domain, version).await?),
        MapsCommand::Retire { domain } => show(&actions.retire(&domain).await?),
        MapsCommand::Learn {
            domain, base_url, ..
        } => {
            let base = match &sandbox_sites {
                Some((actions, readiness)) => {
                    let known: Vec<String> = actions
                        .sites
                        .iter()
                        .map(|s| s.host.to_owned())
                        .chain(readiness.hosts())
                        .collect();
                    anyhow::ensure!(
                        known.contains(&domain),
                        "{domain} is not a sandbox site; these are: {}",
                        known.join(", ")
                    );
                    match actions.sites.iter().find(|s| s.host == domain) {
                        Some(site) => site.origin(),
                        None => readiness.origin(&domain),
                    }
                }
                None => base_url.unwrap_or_else(|| format!("https://{domain}")),
            };
            let learned = actions.learn(&domain, &base).await?;
            show(&learned.map);
            for note in &learned.notes {
                eprintln!("  {note}");
            }
            eprintln!(
                "learned as a candidate: review it (`svc maps list`), then `svc maps publish {domain}`"
            );
        }
    }
    Ok(())
}

fn read_json(p: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))
}

fn verify_artifact(file: &std::path::Path, jwks: &serde_json::Value) -> anyhow::Result<()> {
    let doc = read_json(file)?;
    // An execute answer or a task carries the artifact under `artifact`.
    let artifact = doc
        .get("artifact")
        .filter(|a| a.is_object())
        .unwrap_or(&doc);
    match startup::verify_artifact(artifact, jwks) {
        Ok(()) => {
            println!(
                "verified: {} ({}) signed by {}",
                artifact["artifact_id"].as_str().unwrap_or("?"),
                artifact["status"].as_str().unwrap_or("?"),
                artifact["signature"]["kid"].as_str().unwrap_or("?")
            );
            Ok(())
        }
        Err(e) => {
            eprintln!("NOT verified: {e}");
            std::process::exit(1);
        }
    }
}

async fn keys(database_url: &str, command: KeysCommand) -> anyhow::Result<()> {
    let stores = Stores::open(database_url, 2).await?;
    let mut world = startup::World::default();
    if let KeysCommand::Rotate { overlap_hours, .. } = &command {
        svc::config::in_range(
            "SVC_KEY_ROTATION_OVERLAP_HOURS",
            *overlap_hours,
            0..=svc::config::MAX_KEY_ROTATION_OVERLAP_HOURS,
        )?;
        world.key_rotation_overlap = Some(std::time::Duration::from_secs(overlap_hours * 3600));
    }
    let services = startup::offline_services_in(&stores, Environment::Live, &world)?;
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
                let status = key.status(chrono::Utc::now());
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
        KeysCommand::Rotate { prefix, .. } => {
            let prefix =
                KeyPrefix::parse(&prefix).context("PREFIX must look like svc_live_AbCd1234")?;
            let rotated = services.keys.rotate(&prefix).await?;
            println!("{}", rotated.secret.expose());
            let until = rotated
                .previous
                .expires_at
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default();
            eprintln!(
                "rotated {} to {}; {} keeps working until {until}, then stops",
                prefix, rotated.record.prefix, prefix
            );
        }
    }
    Ok(())
}
