//! Domain services, one module per capability, written against ports only.

pub mod a2a;
pub mod actions;
pub mod activity;
pub mod auth;
pub mod authority;
pub mod billing;
pub mod connections;
pub mod health;
pub mod hooks;
pub mod identity;
pub mod key_set;
pub mod keys;
pub mod learn;
pub mod limits;
pub mod metrics;
pub mod read;
pub mod readiness;
pub mod reseal;
pub mod telemetry;
pub mod usage;

use std::sync::Arc;

use svc_ports::{
    A2aTaskStore, AccountStore, ActionTransport, AuthorityStore, BillingStore, Clock, Entropy,
    Environment, HookStore, IdentityStore, LedgerStore, LimitStore, Mailer, MapStore, PageCache,
    PageExtractor, PageFetcher, PaymentProvider, ScanStore, Signer, TaskStore, TelemetryStore,
};

pub use actions::{
    ActionService, ExecuteRefusal, ExecuteRequest, Executed, TaskVerified, VerifyRefusal,
};
pub use activity::{ActivityError, ActivityService, TaskListRequest};
pub use auth::{AuthError, Authenticator, Principal};
pub use authority::{AuthorityFailure, AuthorityReport, AuthorityService, NewAuthority};
pub use billing::{BillingFailure, BillingService, BillingSettings, HandoffOffer, HandoffState};
pub use identity::{IdentityFailure, IdentityService, IdentitySettings, SignupKey};
pub use keys::{
    CreateKey, DEFAULT_ROTATION_OVERLAP, Holder, IssuedKey, KeyService, KeyServiceError, RotatedKey,
};
pub use read::{ReadError, ReadOutcome, ReadRequest, ReadService};
pub use usage::UsageService;

/// The driven ports a service may use. Built by `startup` from concrete adapters.
#[derive(Clone)]
pub struct Ports {
    pub accounts: Arc<dyn AccountStore>,
    pub ledger: Arc<dyn LedgerStore>,
    pub pages: Arc<dyn PageCache>,
    pub identity: Arc<dyn IdentityStore>,
    pub maps: Arc<dyn MapStore>,
    pub tasks: Arc<dyn TaskStore>,
    pub telemetry: Arc<dyn TelemetryStore>,
    pub billing: Arc<dyn BillingStore>,
    pub scans: Arc<dyn ScanStore>,
    pub connections: Arc<dyn svc_ports::store::ConnectionStore>,
    /// The target sites' authorization servers, and the sealer of what they grant.
    pub connection_provider: Arc<dyn svc_ports::ConnectionProvider>,
    pub sealer: Arc<dyn svc_ports::SecretSealer>,
    pub authorities: Arc<dyn AuthorityStore>,
    /// Limits shared by every instance on the store (wrong codes, readiness scans).
    pub limits: Arc<dyn LimitStore>,
    /// Finished A2A tasks, readable from any instance until they expire.
    pub a2a_tasks: Arc<dyn A2aTaskStore>,
    /// Webhook endpoints, events and the delivery outbox.
    pub hooks: Arc<dyn HookStore>,
    /// The payment provider; `None` when billing is not configured.
    pub payments: Option<Arc<dyn PaymentProvider>>,
    pub mailer: Arc<dyn Mailer>,
    /// Action requests to the sites of published maps (names the operator pinned included).
    pub transport: Arc<dyn ActionTransport>,
    /// The readiness scan's MCP probe: guarded as reads are (a URL a caller or a scanned site
    /// names), without the operator's pins.
    pub probe_transport: Arc<dyn ActionTransport>,
    /// Deliveries to customers' webhook endpoints: guarded like `transport`, without the
    /// operator's pinned names (those are for maps; a customer's URL never reaches them).
    pub hook_transport: Arc<dyn ActionTransport>,
    pub signer: Arc<dyn Signer>,
    pub fetcher: Arc<dyn PageFetcher>,
    pub extractor: Arc<dyn PageExtractor>,
    /// Reads PDFs answered to a read.
    pub pdf: Arc<dyn svc_ports::PdfReader>,
    /// The browser that runs script-built pages for reads ([`svc_ports::NoRenderer`]: none).
    pub renderer: Arc<dyn svc_ports::PageRenderer>,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    /// Whether the store can serve (readiness) and its pools.
    pub store_health: Arc<dyn svc_ports::StoreHealth>,
}

pub struct Services {
    pub auth: Authenticator,
    pub keys: Arc<KeyService>,
    pub identity: IdentityService,
    pub actions: ActionService,
    pub telemetry: Arc<telemetry::TelemetryService>,
    pub billing: BillingService,
    pub usage: UsageService,
    pub read: ReadService,
    pub readiness: readiness::ReadinessService,
    pub connections: connections::ConnectionService,
    pub authorities: AuthorityService,
    pub health: health::HealthService,
    /// Readiness scans per client address, shared by every instance on the store.
    pub scans: limits::SharedLimit,
    /// The store of the shared limits, for the purge of ended windows.
    pub limit_store: Arc<dyn LimitStore>,
    pub clock: Arc<dyn Clock>,
    pub a2a: a2a::A2aTaskService,
    pub activity: ActivityService,
    /// Webhooks to the customer's systems: endpoints, events, deliveries.
    pub hooks: Arc<hooks::HookService>,
}

/// Readiness scans allowed per client address per minute unless set otherwise.
pub const DEFAULT_SCANS_PER_MINUTE: u32 = 10;

impl Services {
    /// Sets the readiness scans allowed per client address per minute.
    pub fn with_scans_per_minute(mut self, per_minute: u32) -> Self {
        self.scans = limits::SharedLimit::new(
            self.limit_store.clone(),
            self.clock.clone(),
            svc_ports::LimitBucket::Scan,
            std::time::Duration::from_secs(60),
            per_minute,
        );
        self
    }

    /// Sets a readiness scan's limits: each probe, and the whole scan.
    pub fn with_scan_deadlines(
        mut self,
        probe: std::time::Duration,
        scan: std::time::Duration,
    ) -> Self {
        self.readiness = self.readiness.with_deadlines(probe, scan);
        self
    }

    /// Deletes the ended windows of the shared limits; answers how many.
    pub async fn purge_limits(&self) -> Result<u64, svc_ports::StoreError> {
        limits::purge_expired(self.limit_store.as_ref(), self.clock.as_ref()).await
    }

    pub fn new(
        ports: Ports,
        environment: Environment,
        identity: IdentitySettings,
        billing: BillingSettings,
    ) -> Self {
        let key_cache = Arc::new(auth::KeyCache::new(ports.clock.clone(), identity.key_cache));
        let keys = Arc::new(
            KeyService::new(ports.clone(), environment, key_cache.clone())
                .with_free_credits(identity.free_credits)
                .with_rotation_overlap(identity.key_rotation_overlap),
        );
        let site_url = identity.site_url.clone();
        let telemetry = Arc::new(telemetry::TelemetryService::new(
            ports.telemetry.clone(),
            ports.clock.clone(),
            ports.entropy.clone(),
            &site_url,
        ));
        let hooks = Arc::new(
            hooks::HookService::new(
                ports.hooks.clone(),
                ports.sealer.clone(),
                ports.hook_transport.clone(),
                ports.clock.clone(),
                ports.entropy.clone(),
            )
            .with_max_endpoints(match environment {
                Environment::Live => hooks::MAX_ENDPOINTS,
                Environment::Test => hooks::MAX_SANDBOX_ENDPOINTS,
            }),
        );
        let connections = connections::ConnectionService::new(
            ports.connections.clone(),
            ports.maps.clone(),
            ports.connection_provider.clone(),
            ports.sealer.clone(),
            ports.clock.clone(),
            ports.entropy.clone(),
            &site_url,
        )
        .with_hooks(hooks.clone());
        let scans = limits::SharedLimit::new(
            ports.limits.clone(),
            ports.clock.clone(),
            svc_ports::LimitBucket::Scan,
            std::time::Duration::from_secs(60),
            DEFAULT_SCANS_PER_MINUTE,
        );
        let limit_store = ports.limits.clone();
        let clock = ports.clock.clone();
        Self {
            health: health::HealthService::new(ports.store_health.clone()),
            scans,
            limit_store,
            clock,
            auth: Authenticator::new(ports.accounts.clone(), environment, key_cache),
            identity: IdentityService::new(ports.clone(), keys.clone(), identity)
                .with_telemetry(telemetry.clone()),
            actions: ActionService::new(ports.clone(), connections.clone())
                .with_site_url(&site_url)
                .with_telemetry(telemetry.clone())
                .with_hooks(hooks.clone()),
            authorities: AuthorityService::new(
                ports.authorities.clone(),
                ports.clock.clone(),
                ports.entropy.clone(),
                &site_url,
            ),
            connections,
            a2a: a2a::A2aTaskService::new(ports.a2a_tasks.clone(), ports.clock.clone()),
            activity: ActivityService::new(
                ports.tasks.clone(),
                ports.ledger.clone(),
                ports.accounts.clone(),
                ports.signer.clone(),
                ports.clock.clone(),
            ),
            billing: BillingService::new(
                ports.billing.clone(),
                ports.accounts.clone(),
                ports.ledger.clone(),
                ports.payments.clone(),
                ports.clock.clone(),
                ports.entropy.clone(),
                billing,
            )
            .with_telemetry(telemetry.clone())
            .with_hooks(hooks.clone()),
            hooks,
            telemetry,
            keys,
            usage: UsageService::new(ports.ledger.clone()),
            readiness: readiness::ReadinessService::new(
                ports.fetcher.clone(),
                ports.probe_transport.clone(),
                ports.extractor.clone(),
                ports.scans.clone(),
                ports.clock.clone(),
                ports.entropy.clone(),
            )
            .with_renderer(ports.renderer.clone()),
            read: ReadService::new(
                ports.fetcher.clone(),
                ports.pages.clone(),
                ports.extractor.clone(),
                ports.pdf.clone(),
                ports.clock.clone(),
            )
            .with_renderer(ports.renderer.clone()),
        }
    }
}
