//! The composition root, and the only place that names concrete adapters: it picks the stores,
//! builds the world of adapters and the services, mounts the faces and runs the background jobs.

mod app;
mod application;
pub mod bot_auth;
mod jobs;
mod keys;
pub use keys::{ResealKey, reseal};
pub mod metrics;

use std::{collections::HashMap, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use poem::{
    Server,
    listener::{Acceptor, Listener, TcpAcceptor, TcpListener},
};
use svc_extract::HtmlExtractor;
use svc_fetch::{FetcherConfig, GuardedFetcher};
use svc_mail::{LogMailer, SmtpMailer};
use svc_oauth::{AesGcmSealer, OAuthProviders, ProviderConfig};
use svc_payments::HttpPaymentProvider;
use svc_ports::{
    A2aTaskStore, AccountStore, AuthorityStore, BillingStore, Clock, ConnectionStore, Environment,
    HookStore, IdentityStore, KeySetStore, LedgerStore, LimitStore, Mailer, MapStore, Outbox,
    PageCache, PaymentProvider, ScanStore, SealedStore, Signer, StoreHealth, TaskStore,
    TelemetryStore, webhooks::WebhookSecret,
};
use svc_render::{ChromiumRenderer, RenderConfig};
pub use svc_sandbox::{
    ACCESS_TOKEN_SECONDS, ActionSites, BLOG_HOST, BOOKING_ACCOUNT, DemoSite, LACKING, NEVER_HOST,
    OTHER_BOOKING_ACCOUNT, READY_HOST, ReadinessSites, SHOP_HOST, SandboxAuthServer,
    SandboxPaymentProvider, lacking_host,
};
use svc_sandbox::{DEMO_HOST, MemoryOutbox, MemoryStore, SANDBOX_PROVIDER_KEY};
use svc_signer::Ed25519Signer;
pub use svc_signer::verify_artifact;
use svc_sql::{PostgresStore, SqliteStore};
use svc_system::{OsEntropy, SystemClock};

use kit::context::{AppContext, Limits, Origins};
use svc_services::{BillingSettings, IdentitySettings, IssuedKey, Ports, Services};

pub use crate::config::BillingConfig;
use crate::config::{RenderSettings, RuntimeSettings};
pub use application::{Application, stopped};
pub use svc_services::keys::{SANDBOX_CREDITS, SANDBOX_EMAIL};

/// The stores behind the ports, chosen at run time.
#[derive(Clone)]
pub struct Stores {
    pub accounts: Arc<dyn AccountStore>,
    pub ledger: Arc<dyn LedgerStore>,
    pub pages: Arc<dyn PageCache>,
    pub identity: Arc<dyn IdentityStore>,
    pub maps: Arc<dyn MapStore>,
    pub tasks: Arc<dyn TaskStore>,
    pub telemetry: Arc<dyn TelemetryStore>,
    pub billing: Arc<dyn BillingStore>,
    pub scans: Arc<dyn ScanStore>,
    pub connections: Arc<dyn ConnectionStore>,
    pub authorities: Arc<dyn AuthorityStore>,
    /// Whether the store answers and is migrated (readiness), and its pools (metrics).
    pub health: Arc<dyn StoreHealth>,
    /// Limits shared by every instance on the store.
    pub limits: Arc<dyn LimitStore>,
    pub a2a_tasks: Arc<dyn A2aTaskStore>,
    /// The record of the keys the instances sharing the store use (checked at start).
    pub key_set: Arc<dyn KeySetStore>,
    /// Webhook endpoints, events and the delivery outbox.
    pub hooks: Arc<dyn HookStore>,
    /// Every sealed value, for `svc reseal`.
    pub sealed: Arc<dyn SealedStore>,
    /// What the store is, for logs (never the URL, which may hold a password).
    pub kind: &'static str,
}

impl Stores {
    /// Every port served by one store.
    pub fn all_in<S>(store: Arc<S>, kind: &'static str) -> Self
    where
        S: AccountStore
            + LedgerStore
            + PageCache
            + IdentityStore
            + MapStore
            + TaskStore
            + TelemetryStore
            + BillingStore
            + ScanStore
            + ConnectionStore
            + AuthorityStore
            + StoreHealth
            + LimitStore
            + A2aTaskStore
            + KeySetStore
            + HookStore
            + SealedStore
            + 'static,
    {
        Self {
            accounts: store.clone(),
            ledger: store.clone(),
            pages: store.clone(),
            identity: store.clone(),
            maps: store.clone(),
            tasks: store.clone(),
            telemetry: store.clone(),
            billing: store.clone(),
            scans: store.clone(),
            connections: store.clone(),
            authorities: store.clone(),
            health: store.clone(),
            limits: store.clone(),
            a2a_tasks: store.clone(),
            key_set: store.clone(),
            hooks: store.clone(),
            sealed: store,
            kind,
        }
    }

    /// In-memory stores: the sandbox's.
    pub fn memory() -> Self {
        Self::all_in(Arc::new(MemoryStore::new()), "memory")
    }

    /// SQLite (`sqlite:...`) or Postgres (`postgres://...`), migrated.
    pub async fn open(database_url: &str, max_connections: u32) -> anyhow::Result<Self> {
        if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
            Ok(Self::all_in(
                Arc::new(PostgresStore::open(database_url, max_connections).await?),
                "postgres",
            ))
        } else if database_url.starts_with("sqlite:") {
            Ok(Self::all_in(
                Arc::new(SqliteStore::open(database_url).await?),
                "sqlite",
            ))
        } else {
            anyhow::bail!("SVC_DATABASE_URL must start with sqlite: or postgres://")
        }
    }
}

/// How mail leaves the service.
#[derive(Debug, Clone, Default)]
pub enum Mail {
    /// Only logged, bodies withheld (`svc serve` without `SVC_SMTP_URL`).
    #[default]
    Log,
    /// Through an SMTP relay.
    Smtp { url: String, from: String },
    /// Kept in the sandbox's outbox, readable at `/sandbox/outbox`.
    SandboxOutbox,
}

/// Where the artifact signing key comes from.
#[derive(Debug, Clone, Default)]
pub enum Signing {
    /// A fresh key for this process (the sandbox, tests, one-shot commands).
    #[default]
    Ephemeral,
    /// `SVC_SIGNING_KEY` (base64url seed) and retired keys still published in the JWKS.
    Seed {
        active: String,
        retired: Vec<String>,
    },
    /// A key file, created (mode 0600) on first start: `svc serve`'s default.
    KeyFile {
        path: std::path::PathBuf,
        retired: Vec<String>,
    },
}

/// Where the key that seals connection credentials comes from.
#[derive(Debug, Clone, Default)]
pub enum Sealing {
    /// A fresh key for this process (the sandbox, tests): sealed data dies with it.
    #[default]
    Ephemeral,
    Key {
        active: String,
        retired: Vec<String>,
    },
    /// A key file, created (mode 0600) on first start: `svc serve`'s default.
    KeyFile {
        path: std::path::PathBuf,
        retired: Vec<String>,
    },
}

fn sealer(sealing: &Sealing) -> anyhow::Result<AesGcmSealer> {
    match sealing {
        Sealing::Ephemeral => Ok(AesGcmSealer::generate()),
        Sealing::Key { active, retired } => AesGcmSealer::from_settings(active, retired)
            .map_err(|e| anyhow::anyhow!("SVC_CONNECTION_KEY: {e}")),
        Sealing::KeyFile { path, retired } => {
            let key = svc_oauth::load_or_create_key_file(path)
                .with_context(|| format!("connection key file {}", path.display()))?;
            AesGcmSealer::from_settings(&key, retired)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
        }
    }
}

/// `SVC_CONNECTION_PROVIDERS`: a JSON array of providers, or `@path` to a file holding one.
pub fn connection_providers(raw: Option<&str>) -> anyhow::Result<Vec<ProviderConfig>> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let json = match raw.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("SVC_CONNECTION_PROVIDERS file {path}"))?,
        None => raw.to_owned(),
    };
    OAuthProviders::from_json(&json).context("SVC_CONNECTION_PROVIDERS")
}

/// The payment provider the service opens checkouts with and takes webhooks from.
#[derive(Clone, Default)]
pub enum Payments {
    /// None: checkout answers 503 and webhooks are refused.
    #[default]
    Disabled,
    /// A hosted-checkout provider over HTTP, and the secrets its webhooks are signed with.
    Http {
        base_url: String,
        api_key: String,
        webhook_secrets: Vec<String>,
    },
    /// The sandbox's wiremock provider (its webhooks are delivered to this service).
    Sandbox(Arc<SandboxPaymentProvider>),
}

/// The outside world the service talks to: the sites callers name, the mail relay, the clock,
/// and the key its artifacts are signed with.
#[derive(Clone, Default)]
pub struct World {
    /// Demo hosts the sandbox may read, by exact name, pinned to these loopback addresses.
    /// Must stay empty in the live environment.
    pub sandbox_hosts: HashMap<String, SocketAddr>,
    /// Names the operator pinned to addresses the guard would refuse (`SVC_PINNED_HOSTS`),
    /// for the actions of maps' sites alone: allowed in the live environment, announced at
    /// start.
    pub pinned_hosts: HashMap<String, SocketAddr>,
    /// Names pinned for reads, rendered pages' requests and readiness scans too
    /// (`SVC_READ_PINNED_HOSTS`, a test site on loopback): every caller reaches them.
    pub read_pinned_hosts: HashMap<String, SocketAddr>,
    /// Overall time limit of one fetch (default 15 s).
    pub fetch_timeout: Option<Duration>,
    /// A readiness scan's limits, each probe and the whole scan; `None`: the service's (5 s
    /// and 9 s, under the 10 s a scanner's users wait). Tests on a loaded machine judge what a
    /// scan finds, not how fast, so they give it room; `svc scan --budget-seconds` sets them.
    pub scan_deadlines: Option<(Duration, Duration)>,
    pub mail: Mail,
    /// The time source; `None` is the system clock (tests pin their own).
    pub clock: Option<Arc<dyn Clock>>,
    pub signing: Signing,
    pub payments: Payments,
    pub billing: BillingConfig,
    /// The target sites' OAuth providers (`auth_provider` ids with their endpoints).
    pub connection_providers: Vec<ProviderConfig>,
    pub sealing: Sealing,
    /// How long an authenticated key is remembered (`SVC_KEY_CACHE_MILLIS`): the longest a
    /// revocation made elsewhere goes unnoticed here. `None`: one second.
    pub key_cache: Option<Duration>,
    /// How long a rotated key keeps working (`SVC_KEY_ROTATION_OVERLAP_HOURS`). `None`: 24 h.
    pub key_rotation_overlap: Option<Duration>,
    /// Readiness scans per client address per minute (`SVC_SCAN_RATE_LIMIT_PER_IP`), shared by
    /// every instance on the store. `None`: the default, 10.
    pub scans_per_minute: Option<u32>,
    /// Credits a new signed-up account gets (`SVC_FREE_CREDITS`). `None`: 100 live, the
    /// sandbox's seed figure in the sandbox.
    pub free_credits: Option<i64>,
    /// Codes sent to one address per hour (`SVC_EMAIL_CODES_PER_HOUR`). `None`: 5 live, 60 in
    /// the sandbox.
    pub email_codes_per_hour: Option<u32>,
    /// Where the Web Bot Auth key comes from (`SVC_WEB_BOT_AUTH_KEY` or its file).
    pub bot_keys: bot_auth::BotKeys,
    /// The identity that signs outbound requests, made from `bot_keys` once the site's origin
    /// is known (`Application::build`); `None`: requests go unsigned (one-shot commands, or
    /// `SVC_WEB_BOT_AUTH=off`).
    pub bot_identity: Option<Arc<svc_fetch::bot_auth::BotAuth>>,
    /// The browser that renders script-built pages for reads (`SVC_CHROMIUM`, `SVC_RENDER_*`).
    /// `None`: no browser (`render: auto` reads statically, `always` is refused).
    pub render: Option<RenderSettings>,
}

fn signer(signing: &Signing) -> anyhow::Result<Ed25519Signer> {
    match signing {
        Signing::Ephemeral => Ok(Ed25519Signer::generate()),
        Signing::Seed { active, retired } => Ed25519Signer::from_settings(active, retired)
            .context("SVC_SIGNING_KEY / SVC_SIGNING_KEYS_RETIRED"),
        Signing::KeyFile { path, retired } => {
            let seed = svc_signer::load_or_create_key_file(path)
                .with_context(|| format!("signing key file {}", path.display()))?;
            Ed25519Signer::from_settings(&svc_signer::seed_to_string(&seed), retired)
        }
    }
}

impl World {
    /// The sandbox's: its demo and action sites, reachable under their names and nothing else
    /// on loopback, and its outbox.
    pub fn sandbox(site: &DemoSite, actions: &ActionSites) -> Self {
        let mut hosts = HashMap::from([(DEMO_HOST.to_owned(), site.address())]);
        for s in &actions.sites {
            hosts.insert(s.host.to_owned(), s.address());
        }
        Self {
            sandbox_hosts: hosts,
            mail: Mail::SandboxOutbox,
            ..Self::default()
        }
    }
}

impl World {
    /// Adds the sandbox's authorization server as the `booking-sandbox` provider.
    pub fn with_auth_server(mut self, server: &SandboxAuthServer) -> Self {
        let uri = server.uri();
        self.connection_providers.push(ProviderConfig {
            id: svc_ports::ProviderId::parse(svc_sandbox::BOOKING_PROVIDER)
                .expect("the sandbox provider id is valid"),
            client_id: svc_sandbox::SANDBOX_CLIENT_ID.into(),
            client_secret: None,
            authorize_url: format!("{uri}/authorize"),
            token_url: format!("{uri}/token"),
            userinfo_url: format!("{uri}/userinfo"),
            scopes: vec!["bookings".into()],
            credential: svc_ports::CredentialKind::Bearer,
            hosts: vec![svc_sandbox::BOOKING_HOST.into()],
        });
        self
    }

    /// Adds the readiness-scan sites (`ready.sandbox.test` and the `lacks-*` ones).
    pub fn with_readiness_sites(mut self, sites: &ReadinessSites) -> Self {
        for host in sites.hosts() {
            self.sandbox_hosts.insert(host, sites.address());
        }
        self
    }
}

/// The driven ports, and the outbox when mail stays in the sandbox.
pub fn ports(stores: &Stores, world: &World) -> anyhow::Result<(Ports, Option<Arc<dyn Outbox>>)> {
    // The guarded client reaching `hosts` (exact names pinned to addresses it would refuse).
    let guarded = |hosts: HashMap<String, SocketAddr>, what: &'static str| {
        let mut config = FetcherConfig {
            sandbox_hosts: hosts,
            bot_auth: world.bot_identity.clone(),
            ..FetcherConfig::default()
        };
        if let Some(t) = world.fetch_timeout {
            config.timeout = t;
        }
        GuardedFetcher::new(config).context(what)
    };
    // Customers' webhook endpoints: the sandbox's demo names only, never the operator's pins
    // (those are for maps' sites).
    let hook_transport = Arc::new(guarded(
        world.sandbox_hosts.clone(),
        "building the webhook HTTP client",
    )?);
    // Actions reach the operator's pins; what callers name (reads, the pages a browser renders
    // for them, scans and their MCP probe) reaches only names pinned for reads: a pin for a
    // partner's actions is not a way for any caller into the partner's network.
    let mut pinned = world.pinned_hosts.clone();
    pinned.extend(world.sandbox_hosts.clone());
    let transport = Arc::new(guarded(pinned, "building the guarded HTTP client")?);
    let mut read_pinned = world.read_pinned_hosts.clone();
    read_pinned.extend(world.sandbox_hosts.clone());
    let fetcher = guarded(read_pinned, "building the guarded HTTP client")?;
    let clock: Arc<dyn Clock> = world.clock.clone().unwrap_or_else(|| Arc::new(SystemClock));
    let (mailer, outbox): (Arc<dyn Mailer>, Option<Arc<dyn Outbox>>) = match &world.mail {
        Mail::Log => (Arc::new(LogMailer), None),
        Mail::Smtp { url, from } => (Arc::new(SmtpMailer::new(url, from)?), None),
        Mail::SandboxOutbox => {
            let outbox = Arc::new(MemoryOutbox::new(clock.clone()));
            (outbox.clone(), Some(outbox))
        }
    };
    let fetcher = Arc::new(fetcher);
    let renderer = renderer(world.render.as_ref(), fetcher.clone());
    let signer: Arc<dyn Signer> = Arc::new(signer(&world.signing)?);
    let payments: Option<Arc<dyn PaymentProvider>> = match &world.payments {
        Payments::Disabled => None,
        Payments::Http {
            base_url, api_key, ..
        } => Some(Arc::new(
            HttpPaymentProvider::new("provider", base_url, api_key)
                .context("SVC_PAYMENT_PROVIDER_URL")?,
        )),
        Payments::Sandbox(sandbox) => Some(Arc::new(
            HttpPaymentProvider::new("sandbox", &sandbox.uri(), SANDBOX_PROVIDER_KEY)
                .context("the sandbox payment provider")?,
        )),
    };
    let ports = Ports {
        accounts: stores.accounts.clone(),
        ledger: stores.ledger.clone(),
        pages: stores.pages.clone(),
        identity: stores.identity.clone(),
        maps: stores.maps.clone(),
        tasks: stores.tasks.clone(),
        telemetry: stores.telemetry.clone(),
        billing: stores.billing.clone(),
        scans: stores.scans.clone(),
        connections: stores.connections.clone(),
        connection_provider: Arc::new(
            OAuthProviders::new(world.connection_providers.clone())
                .context("building the OAuth client")?,
        ),
        sealer: Arc::new(sealer(&world.sealing)?),
        authorities: stores.authorities.clone(),
        limits: stores.limits.clone(),
        a2a_tasks: stores.a2a_tasks.clone(),
        hooks: stores.hooks.clone(),
        payments,
        mailer,
        transport,
        probe_transport: fetcher.clone(),
        hook_transport,
        signer,
        fetcher,
        extractor: Arc::new(HtmlExtractor::new()),
        pdf: Arc::new(svc_pdf::PdfExtractReader),
        renderer,
        clock,
        entropy: Arc::new(OsEntropy::new()),
        store_health: stores.health.clone(),
    };
    Ok((ports, outbox))
}

/// The headless browser of reads, fetching every request of its pages through `fetcher`;
/// nothing starts before the first page that needs it.
fn renderer(
    settings: Option<&RenderSettings>,
    fetcher: Arc<GuardedFetcher>,
) -> Arc<dyn svc_ports::PageRenderer> {
    match settings.filter(|s| !s.chromium.trim().is_empty()) {
        Some(s) => Arc::new(ChromiumRenderer::new(
            RenderConfig {
                tabs: s.render_tabs,
                page_timeout: Duration::from_secs(s.render_timeout_seconds),
                heap_megabytes: s.render_heap_mb,
                ..RenderConfig::new(s.chromium.trim())
            },
            fetcher,
        )),
        None => Arc::new(svc_ports::NoRenderer),
    }
}

/// The services, and the sandbox's outbox when mail stays in it.
pub type ServicesAndOutbox = (Arc<Services>, Option<Arc<dyn Outbox>>);

/// The services over the chosen stores and world, and the sandbox outbox if there is one.
pub fn services(
    stores: &Stores,
    environment: Environment,
    world: &World,
    origins: &Origins,
) -> anyhow::Result<ServicesAndOutbox> {
    if environment == Environment::Live && !world.sandbox_hosts.is_empty() {
        anyhow::bail!("sandbox demo hosts are allowed only in the sandbox");
    }
    if environment == Environment::Live && matches!(world.mail, Mail::SandboxOutbox) {
        anyhow::bail!("the mail outbox is readable by anyone: it is allowed only in the sandbox");
    }
    if environment == Environment::Live && matches!(world.payments, Payments::Sandbox(_)) {
        anyhow::bail!("the sandbox payment provider is allowed only in the sandbox");
    }
    let (ports, outbox) = ports(stores, world)?;
    let mut identity = IdentitySettings::new(&origins.site_url, &origins.mcp_url);
    if let Some(ttl) = world.key_cache {
        identity.key_cache = ttl;
    }
    if let Some(overlap) = world.key_rotation_overlap {
        identity.key_rotation_overlap = overlap;
    }
    identity.free_credits = world.free_credits.unwrap_or(match environment {
        Environment::Live => LIVE_FREE_CREDITS,
        Environment::Test => SANDBOX_CREDITS,
    });
    identity.codes_per_address_per_hour = world.email_codes_per_hour.unwrap_or(match environment {
        Environment::Live => 5,
        Environment::Test => 60,
    });
    let webhook_secrets = match &world.payments {
        Payments::Disabled => Vec::new(),
        Payments::Http {
            webhook_secrets, ..
        } => {
            anyhow::ensure!(
                !webhook_secrets.is_empty() && webhook_secrets.len() <= 2,
                "SVC_PAYMENT_WEBHOOK_SECRETS must hold one or two secrets (two while rotating)"
            );
            webhook_secrets
                .iter()
                .map(|s| WebhookSecret::parse(s))
                .collect::<Result<Vec<_>, _>>()
                .context("SVC_PAYMENT_WEBHOOK_SECRETS")?
        }
        Payments::Sandbox(sandbox) => vec![sandbox.webhook_secret()],
    };
    let billing = BillingSettings {
        catalog: world.billing.catalog.clone(),
        webhook_secrets,
        internal_token: world.billing.internal_token.clone(),
        site_url: origins.site_url.clone(),
    };
    let mut services = Services::new(ports, environment, identity, billing);
    if let Some(per_minute) = world.scans_per_minute {
        services = services.with_scans_per_minute(per_minute);
    }
    if let Some((probe, scan)) = world.scan_deadlines {
        services = services.with_scan_deadlines(probe, scan);
    }
    Ok((Arc::new(services), outbox))
}

/// Services for one-shot CLI commands that serve nothing (`svc keys`, `svc read`).
pub fn offline_services(
    stores: &Stores,
    environment: Environment,
) -> anyhow::Result<Arc<Services>> {
    offline_services_in(stores, environment, &World::default())
}

/// Offline services in a world of the caller's (`svc maps learn --sandbox` pins its sites).
pub fn offline_services_in(
    stores: &Stores,
    environment: Environment,
    world: &World,
) -> anyhow::Result<Arc<Services>> {
    let origins = RuntimeSettings::default().origins(SocketAddr::from(([127, 0, 0, 1], 8080)));
    let mut world = world.clone();
    if world.bot_identity.is_none() {
        world.bot_identity = bot_auth::for_command()?;
    }
    Ok(services(stores, environment, &world, &origins)?.0)
}

/// A map document from its JSON text. `base_url` fills a template's `{base_url}` (the shipped
/// examples are templates) or else replaces the document's own; a template without one is
/// refused with what to do.
pub fn map_document(text: &str, base_url: Option<&str>) -> anyhow::Result<svc_ports::MapDocument> {
    let template = text.contains("{base_url}");
    let mut value: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    match base_url {
        Some(base) => {
            let url =
                url::Url::parse(base).with_context(|| format!("--base-url {base} is not a URL"))?;
            anyhow::ensure!(
                matches!(url.scheme(), "http" | "https") && url.host().is_some(),
                "--base-url {base} must be an http or https origin"
            );
            value["base_url"] = serde_json::Value::String(base.trim_end_matches('/').to_owned());
        }
        None => anyhow::ensure!(
            !template,
            "it is a template: give --base-url with the origin its actions call"
        ),
    }
    let filled = value.to_string();
    let document: svc_ports::MapDocument =
        serde_json::from_str(&filled).context("not a map document")?;
    Ok(document)
}

/// A saved page's text, decoded as a fetched page is (BOM, then the `<meta>` charset, else
/// UTF-8 when valid, else windows-1252): `svc read --file` reads with it.
/// The most of a saved page `svc read --file` reads: what the fetcher reads of a fetched one.
pub const MAX_SAVED_PAGE_BYTES: usize = svc_fetch::MAX_BODY_BYTES;

pub fn decode_saved_page(bytes: &[u8]) -> String {
    svc_fetch::decode(bytes, None).0
}

/// `len` random base62 characters from the operating system (`svc listen`'s session secret).
pub fn random_base62(len: usize) -> String {
    svc_ports::Entropy::base62(&OsEntropy::new(), len)
}

/// Free credits of a new signed-up account on `svc serve` when `SVC_FREE_CREDITS` is unset.
pub const LIVE_FREE_CREDITS: i64 = 100;

/// The sandbox's seeded account and its test key, which may also run consequential actions.
pub async fn seed_sandbox(services: &Services) -> anyhow::Result<IssuedKey> {
    services.keys.seed_sandbox(SANDBOX_CREDITS).await
}

/// [`seed_sandbox`] with another amount of test credits (benchmarks need many).
pub async fn seed_sandbox_with(services: &Services, credits: i64) -> anyhow::Result<IssuedKey> {
    services.keys.seed_sandbox(credits).await
}

/// Imports and publishes the Agent Maps of the sandbox's action sites.
pub async fn publish_sandbox_maps(services: &Services, sites: &ActionSites) -> anyhow::Result<()> {
    for site in &sites.sites {
        let document: svc_ports::MapDocument = serde_json::from_str(&site.map_json())
            .with_context(|| format!("the sandbox map of {}", site.host))?;
        services.actions.import_map(&document, "sandbox").await?;
        services.actions.publish(site.host, None).await?;
    }
    Ok(())
}
