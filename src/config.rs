//! Typed settings from `SVC_*` environment variables (or flags); `svc serve --help` lists them.

use clap::Args;
pub use kit::context::Origins;
use svc_services::billing::Catalog;

#[derive(Debug, Clone, Args)]
pub struct ServeSettings {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[arg(long, env = "SVC_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,

    /// Store: `sqlite://PATH` (default, created and migrated at start) or `postgres://...`.
    #[arg(long, env = "SVC_DATABASE_URL", default_value = "sqlite://./svc.db")]
    pub database_url: String,

    /// Largest Postgres connection pool (1 to 1000).
    #[arg(long, env = "SVC_DATABASE_MAX_CONNECTIONS", default_value_t = 16)]
    pub database_max_connections: u32,

    /// SMTP relay for sign-in and signup codes: `smtp://host:port`,
    /// `smtp://user:pass@host:587?tls=required` or `smtps://host:465`. Without it mail is only
    /// logged (bodies withheld), and codes cannot arrive.
    #[arg(long, env = "SVC_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,

    /// Sender of the service's mail.
    #[arg(
        long,
        env = "SVC_MAIL_FROM",
        default_value = "svc <no-reply@localhost>"
    )]
    pub mail_from: String,

    /// Ed25519 seed (base64url, 32 bytes) that signs verification artifacts. Set it (the same
    /// on every instance) when several instances serve one database; without it the key lives
    /// in `SVC_SIGNING_KEY_FILE`.
    #[arg(long, env = "SVC_SIGNING_KEY", hide_env_values = true)]
    pub signing_key: Option<String>,

    /// Key file used when `SVC_SIGNING_KEY` is unset; created (mode 0600) on first start.
    #[arg(
        long,
        env = "SVC_SIGNING_KEY_FILE",
        default_value = "./svc-signing.key"
    )]
    pub signing_key_file: std::path::PathBuf,

    /// Earlier signing keys, still published in the JWKS so their artifacts keep verifying:
    /// seeds, or `pub:<base64url public key>`.
    #[arg(
        long,
        env = "SVC_SIGNING_KEYS_RETIRED",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub signing_keys_retired: Vec<String>,

    #[command(flatten)]
    pub sealing: SealingArgs,

    /// Ed25519 seed (base64url, 32 bytes) that signs outbound requests (Web Bot Auth); the same
    /// on every instance, since each serves the key directory. Without it the key lives in
    /// `SVC_WEB_BOT_AUTH_KEY_FILE`.
    #[arg(long, env = "SVC_WEB_BOT_AUTH_KEY", hide_env_values = true)]
    pub web_bot_auth_key: Option<String>,

    /// Key file used when `SVC_WEB_BOT_AUTH_KEY` is unset; created (mode 0600) on first start.
    #[arg(
        long,
        env = "SVC_WEB_BOT_AUTH_KEY_FILE",
        default_value = "./svc-web-bot-auth.key"
    )]
    pub web_bot_auth_key_file: std::path::PathBuf,

    /// Previous Web Bot Auth keys, still published in the directory while a rotation settles:
    /// seeds, or `pub:<base64url public key>`.
    #[arg(
        long,
        env = "SVC_WEB_BOT_AUTH_KEYS_RETIRED",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub web_bot_auth_keys_retired: Vec<String>,

    /// The target sites' OAuth providers: a JSON array of `{id, client_id, client_secret,
    /// authorize_url, token_url, userinfo_url, scopes, credential, hosts}` (`id` is the
    /// `auth_provider` the sites' actions declare; its credentials go only to `hosts` and their
    /// subdomains), or `@path` to a file holding it.
    #[arg(long, env = "SVC_CONNECTION_PROVIDERS", hide_env_values = true)]
    pub connection_providers: Option<String>,

    /// Origin of the hosted-checkout payment provider's API. Without it billing is off:
    /// checkout answers 503 and webhooks are refused.
    #[arg(long, env = "SVC_PAYMENT_PROVIDER_URL")]
    pub payment_provider_url: Option<String>,

    /// The payment provider's secret API key.
    #[arg(long, env = "SVC_PAYMENT_PROVIDER_API_KEY", hide_env_values = true)]
    pub payment_provider_api_key: Option<String>,

    /// Standard Webhooks secrets (`whsec_...`) the provider signs with: one, or two while
    /// rotating, comma separated.
    #[arg(
        long,
        env = "SVC_PAYMENT_WEBHOOK_SECRETS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub payment_webhook_secrets: Vec<String>,

    /// Names actions reach at a fixed address even when that address is private or loopback:
    /// `name=ip:port`, comma separated. Off by default and named in a warning at start: for a
    /// map's test site on loopback (`scripts/cluster.sh`) or a partner on a private network.
    /// Only the actions of published maps reach them: reads, rendered pages, scans and
    /// webhooks look the names up as any other.
    #[arg(long, env = "SVC_PINNED_HOSTS", value_delimiter = ',')]
    pub pinned_hosts: Vec<String>,

    /// Names reads, rendered pages' requests and readiness scans reach at a fixed address
    /// (`name=ip:port`, comma separated), whoever asks: for a test site on loopback only.
    /// Off by default and named in a warning at start.
    #[arg(long, env = "SVC_READ_PINNED_HOSTS", value_delimiter = ',')]
    pub read_pinned_hosts: Vec<String>,

    #[command(flatten)]
    pub runtime: RuntimeSettings,
}

/// The key that seals stored secrets (`serve`, `reseal`).
#[derive(clap::Args, Debug, Clone)]
pub struct SealingArgs {
    /// AES-256-GCM key (base64url, 32 bytes) that seals target-site credentials at rest; the
    /// same on every instance. Without it the key lives in `SVC_CONNECTION_KEY_FILE`.
    #[arg(long, env = "SVC_CONNECTION_KEY", hide_env_values = true)]
    pub connection_key: Option<String>,

    /// Key file used when `SVC_CONNECTION_KEY` is unset; created (mode 0600) on first start.
    #[arg(
        long,
        env = "SVC_CONNECTION_KEY_FILE",
        default_value = "./svc-connection.key"
    )]
    pub connection_key_file: std::path::PathBuf,

    /// Earlier connection keys, still able to open what they sealed (rotation).
    #[arg(
        long,
        env = "SVC_CONNECTION_KEYS_RETIRED",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub connection_keys_retired: Vec<String>,
}

impl SealingArgs {
    /// The key, or else its file, with the retired ones.
    pub fn sealing(&self) -> crate::startup::Sealing {
        let retired = self.connection_keys_retired.clone();
        match self.connection_key.clone() {
            Some(active) => crate::startup::Sealing::Key { active, retired },
            None => crate::startup::Sealing::KeyFile {
                path: self.connection_key_file.clone(),
                retired,
            },
        }
    }
}

/// `SVC_PINNED_HOSTS` or `SVC_READ_PINNED_HOSTS` entries (`name=ip:port`) as a map; the error
/// names the variable.
pub fn pinned_hosts(
    variable: &str,
    entries: &[String],
) -> anyhow::Result<std::collections::HashMap<String, std::net::SocketAddr>> {
    entries
        .iter()
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (name, addr) = e
                .trim()
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("{variable}: `{e}` is not `name=ip:port`"))?;
            let name = name.trim().to_ascii_lowercase();
            let valid = !name.is_empty()
                && name.len() <= 253
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
            anyhow::ensure!(valid, "{variable}: `{name}` is not a host name");
            let addr = addr.trim().parse().map_err(|_| {
                anyhow::anyhow!("{variable}: `{addr}` (for {name}) is not `ip:port`")
            })?;
            Ok((name, addr))
        })
        .collect()
}

/// Settings shared by `svc serve` and `svc sandbox`.
#[derive(Debug, Clone, Args)]
pub struct RuntimeSettings {
    /// Public origin of the runtime API (default: the bound address).
    #[arg(long, env = "SVC_BASE_URL")]
    pub base_url: Option<String>,

    /// Public site origin serving discovery files, scan and billing (default: base URL).
    #[arg(long, env = "SVC_SITE_URL")]
    pub site_url: Option<String>,

    /// Public MCP endpoint (default: base URL + `/mcp`).
    #[arg(long, env = "SVC_MCP_URL")]
    pub mcp_url: Option<String>,

    /// Largest accepted request body, in bytes (1 KiB to 64 MiB); larger bodies get 413.
    #[arg(long, env = "SVC_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Requests per minute allowed for one API key (burst of the same size; 1 to 1,000,000).
    #[arg(long, env = "SVC_RATE_LIMIT_PER_KEY", default_value_t = 1200)]
    pub rate_limit_per_key: u32,

    /// Requests per minute allowed from one client IP address (burst of the same size; 1 to
    /// 1,000,000).
    #[arg(long, env = "SVC_RATE_LIMIT_PER_IP", default_value_t = 3000)]
    pub rate_limit_per_ip: u32,

    /// Readiness scans per minute allowed from one client IP address (each scan makes about
    /// fifty requests to the scanned site; 1 to 10,000).
    #[arg(long, env = "SVC_SCAN_RATE_LIMIT_PER_IP", default_value_t = 10)]
    pub scan_rate_limit_per_ip: u32,

    /// Proxies (load balancers) whose forwarding header names the client: a comma-separated
    /// list of CIDR blocks or addresses (`10.0.0.0/8,2001:db8::/32,192.0.2.7`). When the
    /// connecting peer is one of them, the client is the right-most address of the header that
    /// is not one of them; from any other peer the header is ignored. Default: none.
    #[arg(long, env = "SVC_TRUSTED_PROXIES")]
    pub trusted_proxies: Option<String>,

    /// The header the trusted proxies write: `x-forwarded-for` or `forwarded` (RFC 7239). Only
    /// that one is read: a proxy passes the other through from the client unchanged.
    #[arg(long, env = "SVC_FORWARDED_HEADER", default_value = "x-forwarded-for")]
    pub forwarded_header: String,

    /// Deprecated (use `SVC_TRUSTED_PROXIES`): trusts whatever peer connects as a proxy, for
    /// one hop (the right-most `X-Forwarded-For` entry is the client). Ignored when
    /// `SVC_TRUSTED_PROXIES` is set.
    #[arg(long, env = "SVC_TRUST_FORWARDED_FOR", default_value_t = false)]
    pub trust_forwarded_for: bool,

    /// Extra `Host` values the MCP endpoint accepts (loopback and the configured origins always are).
    #[arg(long, env = "SVC_MCP_ALLOWED_HOSTS", value_delimiter = ',')]
    pub mcp_allowed_hosts: Vec<String>,

    /// Browser origins allowed to call the MCP endpoint (`scheme://host:port`); when empty,
    /// requests that carry an `Origin` header must come from the configured origins.
    #[arg(long, env = "SVC_MCP_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub mcp_allowed_origins: Vec<String>,

    /// Accept any `Host` on the MCP endpoint (for a deployment behind a proxy that checks it).
    #[arg(long, env = "SVC_MCP_DISABLE_HOST_CHECK", default_value_t = false)]
    pub mcp_disable_host_check: bool,

    /// A task still unsettled this many seconds after it began is taken to be orphaned by a
    /// dead process and settled as failed and refunded (checked at start and every third of the window, at most 30 s).
    /// 30 to 86,400: it must outlast the 15 s request deadline with a margin, or a live
    /// process would refund actions still running.
    #[arg(long, env = "SVC_RECOVER_AFTER_SECONDS", default_value_t = 60)]
    pub recover_after_seconds: i64,

    /// How long an authenticated API key is remembered, in milliseconds (0 to 1,000): the
    /// longest a key revoked through another instance (or `svc keys revoke`) keeps working
    /// here. 0 reads every key from the store.
    #[arg(long, env = "SVC_KEY_CACHE_MILLIS", default_value_t = 1000)]
    pub key_cache_millis: u64,

    /// How long a rotated API key keeps working beside its replacement, in hours (0 to 720; 0
    /// stops it at once): long enough for a running agent to switch to the new key.
    #[arg(long, env = "SVC_KEY_ROTATION_OVERLAP_HOURS", default_value_t = 24)]
    pub key_rotation_overlap_hours: u64,
    /// How often this instance looks for webhook deliveries that came due (retries, and events
    /// stored by other instances), in milliseconds (0 to 60,000); events stored here are sent
    /// at once. 0: this instance sends no webhooks (another instance on the store does).
    #[arg(long, env = "SVC_WEBHOOK_POLL_MILLIS", default_value_t = 1000)]
    pub webhook_poll_millis: u64,

    /// Credits an account created by signup gets once, so a new agent can try an action at once
    /// (0 to 1,000,000; 0 gives none). Default: 100 on `svc serve`; in the sandbox, the seeded
    /// account's figure (`SVC_SANDBOX_SEED_CREDITS`).
    #[arg(long, env = "SVC_FREE_CREDITS")]
    pub free_credits: Option<i64>,

    /// Sign-in and signup codes sent to one e-mail address per hour (1 to 1,000). Default: 5 on
    /// `svc serve`; 60 in the sandbox, where one developer signs up again and again.
    #[arg(long, env = "SVC_EMAIL_CODES_PER_HOUR")]
    pub email_codes_per_hour: Option<u32>,

    /// On SIGTERM, how long requests in flight may take to finish (20 to 600 s; at least the
    /// 15 s request deadline and a margin, so a running action still gets its answer).
    #[arg(long, env = "SVC_SHUTDOWN_GRACE_SECONDS", default_value_t = 20)]
    pub shutdown_grace_seconds: u64,

    /// On SIGTERM, how long readiness answers 503 before the listener closes (0 to 60 s), so a
    /// load balancer polling `/health/ready` takes the instance out before connections are
    /// refused. Requests keep being served meanwhile. Set it to the balancer's probe interval
    /// times its failure threshold.
    #[arg(long, env = "SVC_SHUTDOWN_DELAY_SECONDS", default_value_t = 0)]
    pub shutdown_delay_seconds: u64,

    /// A connection quiet this long between requests, or that never sends a byte, is closed
    /// (20 to 3,600 s); a request in progress finishes first. Keep it above your load
    /// balancer's idle timeout (60 s on many), so the balancer never reuses a connection the
    /// service is closing. A request head that arrives in part and then stalls is not timed
    /// out here: the balancer's request timeout does that (`timeout http-request` in
    /// `deploy/haproxy.cfg`).
    #[arg(long, env = "SVC_IDLE_TIMEOUT_SECONDS", default_value_t = 75)]
    pub idle_timeout_seconds: u64,

    /// Address serving `GET /metrics` (Prometheus text format) on its own, e.g.
    /// `127.0.0.1:9100`, without credentials: bind it where only the scraper reaches. Unset, the
    /// main address serves `/metrics` to `Authorization: Bearer $SVC_INTERNAL_TOKEN` only (404
    /// without the token).
    #[arg(long, env = "SVC_METRICS_BIND")]
    pub metrics_bind: Option<String>,

    /// Price of the Starter plan, in minor units of `SVC_STARTER_CURRENCY` (1 to 100,000,000).
    #[arg(long, env = "SVC_STARTER_PRICE", default_value_t = 900)]
    pub starter_price: i64,

    /// Currency of the Starter price (ISO 4217).
    #[arg(long, env = "SVC_STARTER_CURRENCY", default_value = "usd")]
    pub starter_currency: String,

    /// Credits one Starter purchase grants (1 to 100,000,000).
    #[arg(long, env = "SVC_STARTER_CREDITS", default_value_t = 1000)]
    pub starter_credits: i64,

    /// Where Enterprise customers reach sales (Enterprise is not sold by checkout).
    #[arg(
        long,
        env = "SVC_ENTERPRISE_CONTACT_URL",
        default_value = "mailto:sales@example.com"
    )]
    pub enterprise_contact_url: String,

    /// Bearer token of the internal `/api/billing/report-meter-event` and, without
    /// `SVC_METRICS_BIND`, of `/metrics`; unset closes both.
    #[arg(long, env = "SVC_INTERNAL_TOKEN", hide_env_values = true)]
    pub internal_token: Option<String>,

    /// Web Bot Auth: `on` signs every outbound request (reads, scans, learning, actions) with
    /// HTTP Message Signatures and serves the key directory; `off` does neither.
    #[arg(long, env = "SVC_WEB_BOT_AUTH", default_value = "on")]
    pub web_bot_auth: String,

    /// How long a request signature stays valid, in seconds (10 to 3600).
    #[arg(long, env = "SVC_WEB_BOT_AUTH_LIFETIME_SECONDS", default_value_t = 60)]
    pub web_bot_auth_lifetime_seconds: u64,
    #[command(flatten)]
    pub render: RenderSettings,
}

/// The headless browser that runs single-page apps for reads (`render` on `/api/read`,
/// `read_page`, `svc read`).
#[derive(Debug, Clone, Args)]
pub struct RenderSettings {
    /// The Chromium binary that renders script-built pages for reads, started on the first page
    /// that needs it (one browser per process). Empty turns rendering off: `render: auto` then
    /// reads the HTML as fetched and `render: always` answers 503.
    #[arg(long, env = "SVC_CHROMIUM", default_value = "/usr/bin/chromium")]
    pub chromium: String,
    /// Pages rendered at once, one browser tab each (1 to 16); a page that finds none free
    /// within its time limit gets 503 `unavailable`.
    #[arg(long, env = "SVC_RENDER_TABS", default_value_t = 2)]
    pub render_tabs: usize,
    /// Time limit of one rendered page, in seconds (1 to 60): past it the page is read as it
    /// stands, or answered 502 when its scripts never yield.
    #[arg(long, env = "SVC_RENDER_TIMEOUT_SECONDS", default_value_t = 10)]
    pub render_timeout_seconds: u64,
    /// JavaScript heap one rendered page may use, in MiB (64 to 4096); each page runs in a fresh
    /// browser context closed after it.
    #[arg(long, env = "SVC_RENDER_HEAP_MB", default_value_t = 512)]
    pub render_heap_mb: u32,
}

impl Default for RenderSettings {
    fn default() -> Self {
        Self {
            chromium: "/usr/bin/chromium".into(),
            render_tabs: 2,
            render_timeout_seconds: 10,
            render_heap_mb: 512,
        }
    }
}

impl RenderSettings {
    /// Every setting within its documented range; the error names the variable.
    pub fn check(&self) -> anyhow::Result<()> {
        in_range("SVC_RENDER_TABS", self.render_tabs, 1..=16)?;
        in_range(
            "SVC_RENDER_TIMEOUT_SECONDS",
            self.render_timeout_seconds,
            1..=60,
        )?;
        in_range("SVC_RENDER_HEAP_MB", self.render_heap_mb, 64..=4096)?;
        Ok(())
    }
}

/// `value` within `range`, or an error naming the setting.
pub fn in_range<T>(
    variable: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> anyhow::Result<T>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    anyhow::ensure!(
        range.contains(&value),
        "{variable} must be between {} and {}, got {value}",
        range.start(),
        range.end()
    );
    Ok(value)
}

/// The longest rotation overlap, in hours (30 days): past that a "rotated" key is not rotated.
pub const MAX_KEY_ROTATION_OVERLAP_HOURS: u64 = 720;

/// The shortest task recovery window: the request deadline and as long again.
pub const MIN_RECOVER_AFTER_SECONDS: i64 = 2 * svc_ports::fetch::FETCH_DEADLINE.as_secs() as i64;
/// The shortest shutdown grace: the request deadline and five seconds to answer.
pub const MIN_SHUTDOWN_GRACE_SECONDS: u64 = svc_ports::fetch::FETCH_DEADLINE.as_secs() + 5;

/// The longest wait between readiness turning 503 and the listener closing.
pub const MAX_SHUTDOWN_DELAY_SECONDS: u64 = 60;

impl ServeSettings {
    /// Every numeric setting within its documented range; the error names the variable.
    pub fn check(&self) -> anyhow::Result<()> {
        in_range(
            "SVC_DATABASE_MAX_CONNECTIONS",
            self.database_max_connections,
            1..=1000,
        )?;
        pinned_hosts("SVC_PINNED_HOSTS", &self.pinned_hosts)?;
        pinned_hosts("SVC_READ_PINNED_HOSTS", &self.read_pinned_hosts)?;
        self.runtime.check()
    }
}

impl RuntimeSettings {
    /// Every numeric setting within its documented range; the error names the variable.
    pub fn check(&self) -> anyhow::Result<()> {
        in_range("SVC_MAX_BODY_BYTES", self.max_body_bytes, 1024..=64 << 20)?;
        in_range(
            "SVC_RATE_LIMIT_PER_KEY",
            self.rate_limit_per_key,
            1..=1_000_000,
        )?;
        in_range(
            "SVC_RATE_LIMIT_PER_IP",
            self.rate_limit_per_ip,
            1..=1_000_000,
        )?;
        in_range(
            "SVC_SCAN_RATE_LIMIT_PER_IP",
            self.scan_rate_limit_per_ip,
            1..=10_000,
        )?;
        in_range(
            "SVC_RECOVER_AFTER_SECONDS",
            self.recover_after_seconds,
            MIN_RECOVER_AFTER_SECONDS..=86_400,
        )?;
        in_range("SVC_KEY_CACHE_MILLIS", self.key_cache_millis, 0..=1000)?;
        in_range(
            "SVC_KEY_ROTATION_OVERLAP_HOURS",
            self.key_rotation_overlap_hours,
            0..=MAX_KEY_ROTATION_OVERLAP_HOURS,
        )?;
        in_range(
            "SVC_WEBHOOK_POLL_MILLIS",
            self.webhook_poll_millis,
            0..=60_000,
        )?;
        if let Some(credits) = self.free_credits {
            in_range("SVC_FREE_CREDITS", credits, 0..=1_000_000)?;
        }
        if let Some(codes) = self.email_codes_per_hour {
            in_range("SVC_EMAIL_CODES_PER_HOUR", codes, 1..=1000)?;
        }
        in_range(
            "SVC_SHUTDOWN_GRACE_SECONDS",
            self.shutdown_grace_seconds,
            MIN_SHUTDOWN_GRACE_SECONDS..=600,
        )?;
        in_range(
            "SVC_SHUTDOWN_DELAY_SECONDS",
            self.shutdown_delay_seconds,
            0..=MAX_SHUTDOWN_DELAY_SECONDS,
        )?;
        in_range(
            "SVC_IDLE_TIMEOUT_SECONDS",
            self.idle_timeout_seconds,
            20..=3600,
        )?;
        in_range("SVC_STARTER_PRICE", self.starter_price, 1..=100_000_000)?;
        in_range("SVC_STARTER_CREDITS", self.starter_credits, 1..=100_000_000)?;
        svc_ports::billing::Currency::parse_iso4217(&self.starter_currency)
            .map_err(|e| anyhow::anyhow!("SVC_STARTER_CURRENCY: {e}"))?;
        self.trusted_proxies()?;
        self.web_bot_auth_on()?;
        in_range(
            "SVC_WEB_BOT_AUTH_LIFETIME_SECONDS",
            self.web_bot_auth_lifetime_seconds,
            10..=3600,
        )?;
        self.render.check()?;
        Ok(())
    }

    /// Whether outbound requests are signed (`SVC_WEB_BOT_AUTH`); the error names the variable.
    pub fn web_bot_auth_on(&self) -> anyhow::Result<bool> {
        match self.web_bot_auth.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => Ok(true),
            "off" | "false" | "0" => Ok(false),
            other => anyhow::bail!("SVC_WEB_BOT_AUTH must be `on` or `off`, got {other:?}"),
        }
    }

    /// Whose forwarding headers name the client; the error names the variable.
    pub fn trusted_proxies(&self) -> anyhow::Result<svc_ports::TrustedProxies> {
        use anyhow::Context;
        let header: svc_ports::ForwardingHeader = self
            .forwarded_header
            .parse()
            .map_err(|e: String| anyhow::anyhow!(e))
            .context("SVC_FORWARDED_HEADER")?;
        let list = self.trusted_proxies.as_deref().unwrap_or("");
        let proxies = svc_ports::TrustedProxies::parse(list)
            .context(
                "SVC_TRUSTED_PROXIES must be a comma-separated list of CIDR blocks or addresses",
            )?
            .reading(header);
        if proxies.is_empty() && self.trust_forwarded_for {
            return Ok(svc_ports::TrustedProxies::immediate_peer_only());
        }
        Ok(proxies)
    }

    /// The catalog and internal token these settings describe.
    pub fn billing_config(&self) -> anyhow::Result<BillingConfig> {
        use anyhow::Context;
        Ok(BillingConfig {
            catalog: Catalog::new(
                self.starter_price,
                &self.starter_currency,
                self.starter_credits,
                &self.enterprise_contact_url,
            )
            .context("SVC_STARTER_PRICE / SVC_STARTER_CURRENCY / SVC_STARTER_CREDITS")?,
            internal_token: self.internal_token.clone().filter(|t| !t.is_empty()),
        })
    }
}

/// The catalog and the internal token of billing.
#[derive(Clone)]
pub struct BillingConfig {
    pub catalog: Catalog,
    pub internal_token: Option<String>,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            catalog: Catalog::new(900, "usd", 1000, "mailto:sales@example.com")
                .expect("the default catalog is valid"),
            internal_token: None,
        }
    }
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        Self {
            base_url: None,
            site_url: None,
            mcp_url: None,
            max_body_bytes: 1024 * 1024,
            rate_limit_per_key: 1200,
            rate_limit_per_ip: 3000,
            scan_rate_limit_per_ip: 10,
            trusted_proxies: None,
            forwarded_header: "x-forwarded-for".into(),
            trust_forwarded_for: false,
            mcp_allowed_hosts: Vec::new(),
            mcp_allowed_origins: Vec::new(),
            mcp_disable_host_check: false,
            recover_after_seconds: 60,
            key_cache_millis: 1000,
            key_rotation_overlap_hours: 24,
            webhook_poll_millis: 1000,
            free_credits: None,
            email_codes_per_hour: None,
            shutdown_grace_seconds: 20,
            shutdown_delay_seconds: 0,
            idle_timeout_seconds: 75,
            metrics_bind: None,
            starter_price: 900,
            starter_currency: "usd".into(),
            starter_credits: 1000,
            enterprise_contact_url: "mailto:sales@example.com".into(),
            internal_token: None,
            web_bot_auth: "on".into(),
            web_bot_auth_lifetime_seconds: 60,
            render: RenderSettings::default(),
        }
    }
}

impl RuntimeSettings {
    /// The origins the service answers for, once the listener is bound.
    pub fn origins(&self, bound: std::net::SocketAddr) -> Origins {
        let trim = |s: &str| s.trim_end_matches('/').to_owned();
        let base_url = self
            .base_url
            .as_deref()
            .map(trim)
            .unwrap_or_else(|| format!("http://{bound}"));
        let site_url = self
            .site_url
            .as_deref()
            .map(trim)
            .unwrap_or_else(|| base_url.clone());
        let mcp_url = self
            .mcp_url
            .as_deref()
            .map(trim)
            .unwrap_or_else(|| format!("{base_url}/mcp"));
        Origins {
            base_url,
            site_url,
            mcp_url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_hosts_are_names_at_socket_addresses() {
        let ok = pinned_hosts(
            "SVC_PINNED_HOSTS",
            &[
                "Shop.Example=127.0.0.1:8080".into(),
                " b.test=[::1]:9 ".into(),
            ],
        )
        .unwrap();
        assert_eq!(ok["shop.example"], "127.0.0.1:8080".parse().unwrap());
        assert_eq!(ok["b.test"], "[::1]:9".parse().unwrap());
        assert!(pinned_hosts("SVC_PINNED_HOSTS", &[]).unwrap().is_empty());
        for bad in [
            "shop.example",
            "=127.0.0.1:1",
            "a b=127.0.0.1:1",
            "a=127.0.0.1",
            "a=x:1",
        ] {
            let e = pinned_hosts("SVC_READ_PINNED_HOSTS", &[bad.into()])
                .unwrap_err()
                .to_string();
            assert!(e.contains("SVC_READ_PINNED_HOSTS"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_defaults_are_in_range_and_each_bound_names_its_variable() {
        RuntimeSettings::default().check().unwrap();
        let edge = |f: fn(&mut RuntimeSettings)| {
            let mut s = RuntimeSettings::default();
            f(&mut s);
            s.check().map_err(|e| e.to_string())
        };
        assert!(edge(|s| s.recover_after_seconds = MIN_RECOVER_AFTER_SECONDS).is_ok());
        let low = edge(|s| s.recover_after_seconds = MIN_RECOVER_AFTER_SECONDS - 1).unwrap_err();
        assert!(low.contains("SVC_RECOVER_AFTER_SECONDS"), "{low}");
        assert!(edge(|s| s.shutdown_grace_seconds = MIN_SHUTDOWN_GRACE_SECONDS).is_ok());
        let grace = edge(|s| s.shutdown_grace_seconds = 14).unwrap_err();
        assert!(grace.contains("SVC_SHUTDOWN_GRACE_SECONDS"), "{grace}");
        assert!(edge(|s| s.shutdown_delay_seconds = MAX_SHUTDOWN_DELAY_SECONDS).is_ok());
        assert!(edge(|s| s.idle_timeout_seconds = 20).is_ok());
        for e in [
            edge(|s| s.idle_timeout_seconds = 19).unwrap_err(),
            edge(|s| s.idle_timeout_seconds = 3601).unwrap_err(),
        ] {
            assert!(e.contains("SVC_IDLE_TIMEOUT_SECONDS"), "{e}");
        }
        let delay =
            edge(|s| s.shutdown_delay_seconds = MAX_SHUTDOWN_DELAY_SECONDS + 1).unwrap_err();
        assert!(delay.contains("SVC_SHUTDOWN_DELAY_SECONDS"), "{delay}");
        assert!(edge(|s| s.key_rotation_overlap_hours = 0).is_ok());
        assert!(edge(|s| s.key_rotation_overlap_hours = MAX_KEY_ROTATION_OVERLAP_HOURS).is_ok());
        let overlap = edge(|s| s.key_rotation_overlap_hours = MAX_KEY_ROTATION_OVERLAP_HOURS + 1)
            .unwrap_err();
        assert!(
            overlap.contains("SVC_KEY_ROTATION_OVERLAP_HOURS"),
            "{overlap}"
        );
        let proxies =
            edge(|s| s.trusted_proxies = Some("10.0.0.0/8, nonsense".into())).unwrap_err();
        assert!(proxies.contains("SVC_TRUSTED_PROXIES"), "{proxies}");
        let header = edge(|s| s.forwarded_header = "x-real-ip".into()).unwrap_err();
        assert!(header.contains("SVC_FORWARDED_HEADER"), "{header}");
        assert!(edge(|s| s.trusted_proxies = Some("10.0.0.0/8,::1".into())).is_ok());
        assert!(edge(|s| s.web_bot_auth = "off".into()).is_ok());
        let bot = edge(|s| s.web_bot_auth = "maybe".into()).unwrap_err();
        assert!(bot.contains("SVC_WEB_BOT_AUTH"), "{bot}");
        let lifetime = edge(|s| s.web_bot_auth_lifetime_seconds = 3601).unwrap_err();
        assert!(
            lifetime.contains("SVC_WEB_BOT_AUTH_LIFETIME_SECONDS"),
            "{lifetime}"
        );
        // The browser's settings, each at its bounds.
        let render = |f: &dyn Fn(&mut RenderSettings)| {
            let mut r = RenderSettings::default();
            f(&mut r);
            r.check().map_err(|e| e.to_string())
        };
        assert!(render(&|_| ()).is_ok());
        for (ok, bad, name) in [
            (
                render(&|r| r.render_tabs = 16),
                render(&|r| r.render_tabs = 17),
                "SVC_RENDER_TABS",
            ),
            (
                render(&|r| r.render_timeout_seconds = 1),
                render(&|r| r.render_timeout_seconds = 0),
                "SVC_RENDER_TIMEOUT_SECONDS",
            ),
            (
                render(&|r| r.render_heap_mb = 64),
                render(&|r| r.render_heap_mb = 63),
                "SVC_RENDER_HEAP_MB",
            ),
        ] {
            assert!(ok.is_ok(), "{name}");
            assert!(bad.unwrap_err().contains(name), "{name}");
        }
        // The recovery window and the grace both outlast the request deadline.
        assert!(
            MIN_RECOVER_AFTER_SECONDS as u64 > svc_ports::fetch::FETCH_DEADLINE.as_secs()
                && MIN_SHUTDOWN_GRACE_SECONDS > svc_ports::fetch::FETCH_DEADLINE.as_secs()
        );
    }
}
