//! Domain model and port traits of the agent action and commerce service.
//!
//! This crate performs no I/O. Records here are validated newtypes ("parse, don't validate"):
//! a value of one of these types is known to be well formed. Port traits document, for every
//! operation, which error an implementation MUST return and when; the contract suite in
//! `contract-tests/` holds every store to those words.

pub mod a2a;
pub mod account;
pub mod actions;
pub mod activity;
pub mod artifact;
pub mod authority;
pub mod billing;
pub mod bot_auth;
pub mod connections;
pub mod document;
pub mod failure;
pub mod fetch;
pub mod health;
pub mod hooks;
pub mod identity;
pub mod ids;
pub mod json;
pub mod key_set;
pub mod keys;
pub mod ledger;
pub mod limits;
pub mod mail;
pub mod network;
pub mod page;
pub mod payments;
pub mod proxies;
pub mod readiness;
pub mod render;
pub mod system;
pub mod tasks;
pub mod telemetry;
pub mod text;
pub mod usage;
pub mod webhooks;

pub use a2a::{A2aTask, A2aTaskStore};
pub use account::{Account, Email, Environment, Plan};
pub use actions::{ActionFamily, ActionSpec, AgentMap, Domain, MapDocument, MapError, MapStatus};
pub use activity::{TaskCursor, TaskQuery, UsageKind, UsageRow};
pub use artifact::{
    ArtifactSignature, ArtifactSource, ArtifactStatus, Signer, VerificationArtifact,
};
pub use authority::{
    AmountLimit, AuthorityInterval, AuthorityRefusal, AuthoritySpend, AuthoritySpendRecord,
    AuthorityStatus, AuthorityUsage, PaymentAuthority, Principal,
};
pub use billing::{
    CheckoutHandoff, CheckoutOutcome, CheckoutRecord, Currency, EventOutcome, MeterEvent,
    MeterOutcome, PaymentEvent, PaymentFact, Receipt, ReceiptKind,
};
pub use connections::{
    ConnectionFinish, ConnectionProvider, ConnectionProviderError, ConnectionRecord,
    ConnectionState, CredentialKind, ProviderGrant, ProviderId, SealError, SealedField,
    SealedSecret, SecretSealer, seal_context,
};
pub use document::{PdfReader, PdfRefusal, PdfText, is_pdf};
pub use failure::FailureClass;
pub use fetch::{
    ActionRequest, ActionResponse, ActionTransport, FetchError, FetchRequest, FetchedPage,
    PageFetcher, RobotsDecision, UrlRefusal,
};
pub use health::{PoolUsage, StoreHealth};
pub use hooks::{
    Attempt, AttemptResult, ClaimCaps, ClaimedDelivery, DeliveryIds, DeliveryRecord,
    DeliveryStatus, EndpointHealth, EnqueueOutcome, Exhaustion, HookError, HookEvent,
    HookEventType, HookStore, LowCharge, WebhookEndpoint,
};
pub use identity::{
    ChallengePurpose, DeviceDecision, DeviceGrant, DeviceGrantStatus, EmailChallenge, KnownBrowser,
    SessionReach, UserCode, WebSession,
};
pub use ids::{
    AccountId, ApiKeyId, ArtifactId, AuthorityId, ChallengeId, CheckoutId, ConnectionId,
    DeviceGrantId, IdError, LedgerEntryId, MeterEventId, ReceiptId, ScanId, TaskId,
    WebhookDeliveryId, WebhookEndpointId, WebhookEventId,
};
pub use key_set::{KeyFingerprint, KeyKind, KeySetStore};
pub use keys::{ApiKeyRecord, ApiKeySecret, KeyHash, KeyPrefix, Scope, Scopes};
pub use ledger::{Balance, CreditAmount, EntryKind, Grant, GrantOutcome, LedgerEntry};
pub use limits::{LimitBucket, LimitDecision, LimitKey, LimitStore};
pub use mail::{MailError, MailMessage, Mailer, Outbox, SentMail};
pub use network::ClientAddress;
pub use page::{
    ExtractError, ExtractOptions, Extraction, FieldOption, Form, FormField, Link, MainContent,
    PageExtractor, PageMetadata, PageSignals,
};
pub use payments::{CheckoutRequest, HostedCheckout, PaymentProvider, ProviderError};
pub use proxies::{ForwardingHeader, TrustedProxies};
pub use readiness::{
    CheckId, CheckResult, CheckStatus, Evidence, NextLevel, ReadinessLevel, ScanReport,
};
pub use render::{NoRenderer, PageRenderer, RenderError, RenderRequest, RenderedPage};
pub use system::{Clock, Entropy};
pub use tasks::{
    BeginOutcome, NewTask, SettleOutcome, Settlement, TaskRecord, TaskStatus, VerifyOutcome,
};
pub use telemetry::{FunnelCount, StoredEvent};
pub use usage::{MeteringPolicy, UsageRecord};

pub mod store;
pub use store::{
    AccountError, AccountStore, AuthorityError, AuthorityStore, BillingError, BillingStore,
    ConnectionError, ConnectionStore, IdentityError, IdentityStore, KeyError, LedgerError,
    LedgerStore, MapStore, MapStoreError, PageCache, ScanStore, SealedStore, StoreError,
    StoreUnreachable, TaskError, TaskStore, TelemetryStore,
};
