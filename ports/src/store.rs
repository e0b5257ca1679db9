//! Store ports. Each operation is atomic: it either happens whole or not at all. The contract
//! suite in `contract-tests/` runs the same scenarios against every implementation.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{
    account::{Account, Email, Environment},
    actions::{AgentMap, Domain, MapDocument},
    activity::{TaskQuery, UsageRow},
    authority::{AuthoritySpendRecord, AuthorityUsage, PaymentAuthority},
    billing::{
        CheckoutHandoff, CheckoutOutcome, CheckoutRecord, EventOutcome, MeterEvent, MeterOutcome,
        PaymentEvent, Receipt,
    },
    connections::{ConnectionFinish, ConnectionRecord, ConnectionState, ProviderId, SealedSecret},
    fetch::FetchedPage,
    identity::{DeviceDecision, DeviceGrant, EmailChallenge, KnownBrowser, UserCode, WebSession},
    ids::{
        AccountId, ApiKeyId, ArtifactId, AuthorityId, ChallengeId, CheckoutId, ConnectionId,
        DeviceGrantId, MeterEventId, ScanId, TaskId,
    },
    keys::{ApiKeyRecord, KeyHash, KeyPrefix},
    ledger::{Balance, Grant, GrantOutcome, LedgerEntry},
    readiness::ScanReport,
    tasks::{BeginOutcome, NewTask, SettleOutcome, Settlement, TaskRecord, VerifyOutcome},
    telemetry::{FunnelCount, StoredEvent},
};

/// A failure of the store itself (connection lost, disk full, corrupt row). Callers treat it
/// as an internal error; it never means "not found" or "conflict".
#[derive(Debug, thiserror::Error)]
#[error("store unavailable: {0:#}")]
pub struct StoreError(#[from] pub anyhow::Error);

/// The store could not be reached (connection refused, dropped or timed out; the database
/// restarting): nothing of the operation was stored, and the same request can succeed later.
/// Adapters put it at the root of a [`StoreError`]; faces answer it with a retryable 503.
#[derive(Debug, thiserror::Error)]
#[error("the store cannot be reached")]
pub struct StoreUnreachable(#[source] pub Box<dyn std::error::Error + Send + Sync>);

impl StoreError {
    /// A store error whose cause is [`StoreUnreachable`].
    pub fn unreachable(
        cause: impl std::error::Error + Send + Sync + 'static,
        what: &'static str,
    ) -> Self {
        StoreError(anyhow::Error::new(StoreUnreachable(Box::new(cause))).context(what))
    }
}

/// Whether an error, anywhere in its chain of causes, is a [`StoreUnreachable`].
pub fn is_unreachable(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<StoreUnreachable>() {
            return true;
        }
        next = e.source();
    }
    false
}

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("an account with this email already exists in this environment")]
    EmailTaken,
    #[error("account not found")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key's hash or prefix is already stored (regenerate and try again).
    #[error("a key with this prefix or hash already exists")]
    Duplicate,
    #[error("no key has this prefix")]
    NotFound,
    #[error("the key was already revoked")]
    AlreadyRevoked,
    /// The key was rotated before: it is on its way out (or gone), so it is not rotated again.
    #[error("the key was already rotated")]
    AlreadyRotated,
    #[error("the key's account does not exist")]
    UnknownAccount,
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("account not found")]
    UnknownAccount,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Accounts and their API keys.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Stores a new account with a zero balance.
    /// MUST return [`AccountError::EmailTaken`] when an account with the same email exists in
    /// the same environment (the same address may have one live and one test account).
    async fn create_account(&self, account: &Account) -> Result<(), AccountError>;

    /// Stores a new account and its opening grant (the free credits of a signup) as one
    /// write: either the account exists with the grant's credits and its ledger entry, or
    /// nothing was stored, so a crash between the two cannot leave an account that never gets
    /// its credits (a later sign-in finds the account and grants nothing).
    /// MUST return [`AccountError::EmailTaken`] as [`Self::create_account`] does, storing
    /// nothing. `grant.account_id` is `account.id`.
    async fn create_account_with_grant(
        &self,
        account: &Account,
        grant: &Grant,
    ) -> Result<(), AccountError>;

    /// `Ok(None)` when no account has this id.
    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError>;

    /// `Ok(None)` when no account in `environment` has this email.
    async fn account_by_email(
        &self,
        environment: Environment,
        email: &Email,
    ) -> Result<Option<Account>, StoreError>;

    /// Stores a key record.
    /// MUST return [`KeyError::Duplicate`] when a key with the same hash or prefix exists, and
    /// [`KeyError::UnknownAccount`] when its account does not exist.
    async fn insert_key(&self, key: &ApiKeyRecord) -> Result<(), KeyError>;

    /// The key with this hash and its account, revoked or not (the caller decides what a
    /// revoked key means); `Ok(None)` when no key has this hash.
    async fn key_by_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(ApiKeyRecord, Account)>, StoreError>;

    /// Keys of one account, or of all accounts when `account` is `None`, oldest first.
    async fn keys(&self, account: Option<AccountId>) -> Result<Vec<ApiKeyRecord>, StoreError>;

    /// Marks the key revoked at `at` and returns the updated record.
    /// MUST return [`KeyError::NotFound`] when no key has this prefix and
    /// [`KeyError::AlreadyRevoked`] when it was revoked before (the first revocation time stays).
    async fn revoke_key(
        &self,
        prefix: &KeyPrefix,
        at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError>;

    /// Records that the key `id` authenticated at `at`; an earlier time never replaces a later
    /// one. A key that does not exist is not an error (nothing to record).
    async fn touch_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), StoreError>;

    /// Sets the key with `prefix` to stop working at `old_expires_at` (the rotation overlap) and
    /// stores `replacement` in one transaction, and returns the old record as updated. MUST
    /// return [`KeyError::NotFound`] when no key has this prefix or `replacement` belongs to
    /// another account, [`KeyError::AlreadyRevoked`] when it was revoked before,
    /// [`KeyError::AlreadyRotated`] when it was rotated before (its `expires_at` stays), and
    /// [`KeyError::Duplicate`] when the replacement's hash or prefix exists; in each case
    /// nothing changes.
    async fn rotate_key(
        &self,
        prefix: &KeyPrefix,
        replacement: &ApiKeyRecord,
        old_expires_at: DateTime<Utc>,
    ) -> Result<ApiKeyRecord, KeyError>;
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// A record with the same id, device code, user code or token exists.
    #[error("a record with this id or code already exists")]
    Duplicate,
    #[error("no such grant or challenge")]
    NotFound,
    /// The device grant was already approved, denied or issued.
    #[error("the device grant is no longer pending")]
    NotPending,
    /// The device grant was not approved (still pending, or denied).
    #[error("the device grant is not approved")]
    NotApproved,
    /// The device grant already yielded its key, or the challenge was already used.
    #[error("already used")]
    AlreadyUsed,
    #[error("expired")]
    Expired,
    /// The challenge's wrong tries are used up.
    #[error("no tries left")]
    Exhausted,
    /// Storing the key that goes with the grant or challenge failed.
    #[error(transparent)]
    Key(KeyError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Device grants, emailed-code challenges and web sessions. Every state change is one
/// transaction, and each secret is stored only as its hash.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait IdentityStore: Send + Sync {
    /// MUST return [`IdentityError::Duplicate`] when the id, device code hash or user code
    /// is taken (the caller draws new codes).
    async fn insert_device_grant(&self, grant: &DeviceGrant) -> Result<(), IdentityError>;

    async fn device_grant_by_code(
        &self,
        device_code_hash: &KeyHash,
    ) -> Result<Option<DeviceGrant>, StoreError>;

    async fn device_grant_by_user_code(
        &self,
        user_code: &UserCode,
    ) -> Result<Option<DeviceGrant>, StoreError>;

    /// Records a poll at `at` and the interval the agent must now keep.
    async fn record_device_poll(
        &self,
        id: &DeviceGrantId,
        at: DateTime<Utc>,
        interval_secs: u32,
    ) -> Result<(), StoreError>;

    /// Approves (binding the account) or denies a pending grant and returns it updated.
    /// MUST return [`IdentityError::NotFound`], [`IdentityError::Expired`] when `at` is at or
    /// past its expiry, and [`IdentityError::NotPending`] when it was decided before; then
    /// nothing changes, also when two decisions race.
    async fn decide_device_grant(
        &self,
        id: &DeviceGrantId,
        decision: &DeviceDecision,
        at: DateTime<Utc>,
    ) -> Result<DeviceGrant, IdentityError>;

    /// Stores `key` and marks the approved grant issued with it, in one transaction: a device
    /// code yields one key, also when two polls race. MUST return [`IdentityError::NotFound`],
    /// [`IdentityError::NotApproved`] (pending or denied), [`IdentityError::AlreadyUsed`]
    /// (issued before), [`IdentityError::Key`] with [`KeyError::UnknownAccount`] when the key's
    /// account is not the approving one, or [`KeyError::Duplicate`]; then nothing changes.
    async fn issue_device_key(
        &self,
        id: &DeviceGrantId,
        key: &ApiKeyRecord,
    ) -> Result<(), IdentityError>;

    /// Stores `challenge` whatever was sent before. MUST return [`IdentityError::Duplicate`]
    /// when the id is taken.
    async fn insert_challenge(&self, challenge: &EmailChallenge) -> Result<(), IdentityError> {
        self.insert_challenge_within(challenge, challenge.created_at, u32::MAX)
            .await
            .map(|_| ())
    }

    /// Stores `challenge` unless `cap` or more challenges for its address and purpose were
    /// created at or after `since`; answers whether it was stored. The count and the insert are
    /// one step: requests racing for one address never store past the cap. MUST return
    /// [`IdentityError::Duplicate`] when the id is taken.
    async fn insert_challenge_within(
        &self,
        challenge: &EmailChallenge,
        since: DateTime<Utc>,
        cap: u32,
    ) -> Result<bool, IdentityError>;

    async fn challenge(&self, id: &ChallengeId) -> Result<Option<EmailChallenge>, StoreError>;

    /// Wrong code tries on the address's challenges (every purpose) created at or after
    /// `since` whose `known_browser` is as given: each challenge's tries, less the one that
    /// consumed it.
    async fn wrong_code_tries(
        &self,
        email: &Email,
        since: DateTime<Utc>,
        known_browser: bool,
    ) -> Result<u32, StoreError>;

    /// Takes one try before a code is compared, and returns the challenge with the count
    /// raised: at most [`crate::identity::MAX_CODE_ATTEMPTS`] comparisons ever happen, also
    /// under concurrent guesses. MUST return [`IdentityError::NotFound`],
    /// [`IdentityError::AlreadyUsed`] when consumed, [`IdentityError::Expired`] at or past
    /// expiry and [`IdentityError::Exhausted`] when the tries are used up; then nothing changes.
    async fn attempt_challenge(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
    ) -> Result<EmailChallenge, IdentityError>;

    /// Marks the challenge used and, when given, stores `key` in the same transaction.
    /// MUST return [`IdentityError::NotFound`], [`IdentityError::AlreadyUsed`] (also when two
    /// consumptions race), [`IdentityError::Expired`], or [`IdentityError::Key`] when the key
    /// cannot be stored; then nothing changes.
    async fn consume_challenge<'a>(
        &self,
        id: &ChallengeId,
        at: DateTime<Utc>,
        key: Option<&'a ApiKeyRecord>,
    ) -> Result<EmailChallenge, IdentityError>;

    /// MUST return [`IdentityError::Duplicate`] when the token hash exists and
    /// [`IdentityError::NotFound`] when the account does not.
    async fn insert_session(&self, session: &WebSession) -> Result<(), IdentityError>;

    /// The unexpired session with this token hash and its account; `Ok(None)` otherwise.
    async fn session(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<(WebSession, Account)>, StoreError>;

    /// Signs out: deletes the session if it exists.
    async fn delete_session(&self, token_hash: &KeyHash) -> Result<(), StoreError>;

    /// Remembers a browser that signed in. MUST return [`IdentityError::Duplicate`] when the
    /// token hash exists.
    async fn insert_known_browser(&self, browser: &KnownBrowser) -> Result<(), IdentityError>;

    /// The browser with this token hash, when its mark is unexpired at `now`; `Ok(None)`
    /// otherwise.
    async fn known_browser(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<KnownBrowser>, StoreError>;

    /// Deletes grants, challenges, sessions and known browsers that expired before `before`;
    /// returns how many.
    async fn purge_identity(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
}

/// The credit ledger.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Adds `grant.amount` to the account's spendable balance and records the entry, in one
    /// transaction. When `grant.reference` is set and an entry with the same reference exists
    /// for the account, MUST change nothing and return [`GrantOutcome::AlreadyApplied`] with the
    /// original entry, also when two such grants race.
    /// MUST return [`LedgerError::UnknownAccount`] when the account does not exist.
    async fn grant(&self, grant: &Grant) -> Result<GrantOutcome, LedgerError>;

    /// The account's balance. MUST return [`LedgerError::UnknownAccount`] when it does not exist.
    async fn balance(&self, account: &AccountId) -> Result<Balance, LedgerError>;

    /// The account's entries, newest first, at most `limit`. An unknown account has none.
    async fn entries(
        &self,
        account: &AccountId,
        limit: u32,
    ) -> Result<Vec<LedgerEntry>, StoreError>;

    /// The credits the account moved at or after `from` and before `until`, summed per UTC
    /// day and [`crate::activity::UsageKind`] (and, for charges and refunds, per key of the
    /// task), as the ledger records them: `Charged` is the cost of each task settled completed
    /// (its `capture` entry), `Refunded` of each settled failed (its `refund` entry), both on
    /// the day they settled; `Bought` sums `purchase` entries, `Granted` `grant` entries. Tasks
    /// that cost nothing and kinds with nothing that day give no row; the order is unspecified.
    /// An unknown account has none.
    async fn usage_by_day(
        &self,
        account: &AccountId,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<UsageRow>, StoreError>;
}

/// Fetched pages, kept so a read can be answered from the store when the caller's `max_age`
/// allows.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait PageCache: Send + Sync {
    /// Stores `page` under `key`, replacing what was there.
    async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError>;

    /// The page under `key` if it was fetched at or after `not_before`; `Ok(None)` when there
    /// is none or it is older.
    async fn fresh_page(
        &self,
        key: &str,
        not_before: DateTime<Utc>,
    ) -> Result<Option<FetchedPage>, StoreError>;

    /// Deletes every page fetched before `before` and returns how many went.
    async fn purge_pages(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum MapStoreError {
    /// No map (or no such version, or nothing published) for the domain.
    #[error("no such map")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Agent Maps, versioned per domain. At most one version of a domain is published at a time.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait MapStore: Send + Sync {
    /// Stores `document` as the domain's next version (1 for a new domain), a candidate.
    async fn insert_map(
        &self,
        document: &MapDocument,
        origin: &str,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, StoreError>;

    /// Every version of one domain (or of all domains), newest first within a domain.
    async fn maps(&self, domain: Option<Domain>) -> Result<Vec<AgentMap>, StoreError>;

    /// The published version of a domain, if any.
    async fn published_map(&self, domain: &Domain) -> Result<Option<AgentMap>, StoreError>;

    /// Publishes `version` (or the newest version when `None`) and retires the version that
    /// was published before, in one transaction. MUST return [`MapStoreError::NotFound`] when
    /// the domain or the version does not exist.
    async fn publish_map(
        &self,
        domain: &Domain,
        version: Option<u32>,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError>;

    /// Retires the published version. MUST return [`MapStoreError::NotFound`] when nothing
    /// is published.
    async fn retire_map(
        &self,
        domain: &Domain,
        at: DateTime<Utc>,
    ) -> Result<AgentMap, MapStoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("account not found")]
    UnknownAccount,
    #[error("task not found")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Execution tasks and the money they move. Each operation is one transaction; uniqueness that
/// guards money (one task per account and idempotency key, one hold, one capture or refund per
/// task) is enforced by the store itself, so instances sharing it never charge twice.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Looks up the idempotency key (when given) and, if it is new, checks the balance, holds
    /// `cost` (a `hold` ledger entry) and stores the task, all at once. With an existing key:
    /// [`BeginOutcome::Replay`] when its task settled and the fingerprint matches,
    /// [`BeginOutcome::InFlight`] when it has not settled, [`BeginOutcome::Conflict`] when the
    /// fingerprint differs; then nothing changes (and nothing is spent). MUST return
    /// [`BeginOutcome::InsufficientCredits`] (storing nothing) when spendable is below `cost`,
    /// and [`TaskError::UnknownAccount`] when the account does not exist.
    ///
    /// With `authority_spend`, a new task also locks the authority and checks the spend with
    /// [`crate::authority::check_spend`] against what its current window (the one containing
    /// `created_at`) has spent and not given back; when allowed, the spend is stored with the
    /// task in the same transaction, so concurrent tasks never spend more than the limit (and a
    /// `single_use` authority at most once). When refused, MUST store nothing (no task, no
    /// hold) and return [`BeginOutcome::AuthorityRefused`]. Checks run in this order: unknown
    /// account, authority, balance.
    async fn begin_task(&self, task: &NewTask) -> Result<BeginOutcome, TaskError>;

    /// Stores the outcome, the response and the artifact, and captures (completed) or refunds
    /// (failed) the hold, in one transaction; a failed task's authority spend is given back in
    /// the same transaction when [`Settlement::release_spend`] says its payment surely did not
    /// happen (a completed one, and one that may have paid, keep it). Only the first settlement of a task
    /// lands; a later one gets [`SettleOutcome::AlreadySettled`] and changes nothing. With
    /// [`Settlement::event`], the settlement that lands stores that event in the same
    /// transaction, exactly as [`crate::HookStore::enqueue_event`] would (subscribed endpoints'
    /// deliveries; [`crate::EnqueueOutcome::Duplicate`] when its source was recorded before),
    /// and answers what that came to; a settlement that does not land stores no event. MUST
    /// return [`TaskError::NotFound`] for an unknown task.
    async fn settle_task(&self, settlement: &Settlement) -> Result<SettleOutcome, TaskError>;

    /// Stores `artifact` (JSON text of a signed `verified` artifact with id `artifact_id`) as
    /// the verification of a task settled completed with a `payment_completed` artifact
    /// ([`TaskRecord::verifiable`]), with `at` as `verified_at`; the settled artifact, the
    /// response and the money stay as they are. Compare-and-set: only the first verification
    /// of a task lands ([`VerifyOutcome::Verified`]); a later one gets
    /// [`VerifyOutcome::AlreadyVerified`] with the stored one and changes nothing, also when
    /// many race. A task that is not verifiable gets [`VerifyOutcome::NotVerifiable`] and
    /// nothing changes. MUST return [`TaskError::NotFound`] for an unknown task.
    async fn record_verification(
        &self,
        task_id: &TaskId,
        artifact_id: &ArtifactId,
        artifact: &str,
        at: DateTime<Utc>,
    ) -> Result<VerifyOutcome, TaskError>;

    /// The account's task under an idempotency key, if there is one.
    async fn task_by_key(
        &self,
        account: &AccountId,
        key: &str,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// A task by id; when `account` is given, only that account's.
    async fn task(
        &self,
        id: &TaskId,
        account: Option<AccountId>,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// The account's tasks that match `query` ([`TaskQuery::matches`]: status, domain,
    /// `since` inclusive, `until` exclusive, strictly after the cursor), newest first by
    /// `(created_at, id)` both descending, at most `query.limit`. Keyset, never an offset: a
    /// task inserted between two pages cannot make the next page repeat or skip one. Another
    /// account's tasks never appear.
    async fn list_tasks(
        &self,
        account: &AccountId,
        query: &TaskQuery,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// Tasks still in flight that began before `before` (their process may have died).
    async fn unsettled_tasks(&self, before: DateTime<Utc>) -> Result<Vec<TaskRecord>, StoreError>;
}

/// Agent traffic events.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait TelemetryStore: Send + Sync {
    /// Stores a batch in one transaction: all of it or none.
    async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), StoreError>;

    /// Events received at or after `since`, counted by discovery surface and conversion state:
    /// those of `account` only, or every event when `account` is `None`.
    async fn funnel<'a>(
        &self,
        since: DateTime<Utc>,
        account: Option<&'a AccountId>,
    ) -> Result<Vec<FunnelCount>, StoreError>;

    /// The newest events, newest first, at most `limit`.
    async fn recent_events(&self, limit: u32) -> Result<Vec<StoredEvent>, StoreError>;
}

/// Readiness scan reports.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait ScanStore: Send + Sync {
    /// Stores a finished report. Its `scan_id` is fresh: storing one again MUST fail and
    /// replace nothing.
    async fn insert_scan(&self, report: &ScanReport) -> Result<(), StoreError>;

    /// A report by id, exactly as stored.
    async fn scan(&self, id: &ScanId) -> Result<Option<ScanReport>, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    #[error("account not found")]
    UnknownAccount,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checkouts, verified payment events and the credits they move, receipts, checkout handoffs
/// and meter events.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait BillingStore: Send + Sync {
    /// Stores a checkout. When the account already has one under the same idempotency key,
    /// MUST store nothing and return [`CheckoutOutcome::Existing`] with it, also when two
    /// such inserts race. MUST return [`BillingError::UnknownAccount`] for an unknown account.
    async fn insert_checkout(
        &self,
        checkout: &CheckoutRecord,
    ) -> Result<CheckoutOutcome, BillingError>;

    /// The account's checkout under an idempotency key.
    async fn checkout_by_key(
        &self,
        account: &AccountId,
        idempotency_key: &str,
    ) -> Result<Option<CheckoutRecord>, StoreError>;

    async fn checkout(&self, id: &CheckoutId) -> Result<Option<CheckoutRecord>, StoreError>;

    /// Stores a verified event and applies what it calls for, in one transaction: when
    /// `(provider, webhook_id)` is already stored, MUST change nothing and return
    /// [`EventOutcome::Duplicate`] (also when two deliveries race). Otherwise the event is
    /// stored with its outcome, and when it concerns a payment, the movements that
    /// [`crate::billing::plan_payment`] computes from all of that payment's events are applied
    /// (balance, ledger entry and receipt each), and the account's plan is raised to the
    /// checkout's when it was `free`.
    async fn apply_payment_event(&self, event: &PaymentEvent) -> Result<EventOutcome, StoreError>;

    /// The account's receipts (payment movements, and the charges and refunds of its settled
    /// tasks), newest first, at most `limit`.
    async fn receipts(&self, account: &AccountId, limit: u32) -> Result<Vec<Receipt>, StoreError>;

    /// The account's open write-off liens (`billing::Lien`), oldest first, as the next payment
    /// event is planned with them: what other disputes' releases still pay back.
    async fn liens(&self, account: &AccountId) -> Result<Vec<crate::billing::Lien>, StoreError>;

    async fn insert_handoff(&self, handoff: &CheckoutHandoff) -> Result<(), BillingError>;

    /// A handoff as it stands, without taking it, and whether it was taken; `None` for an
    /// unknown hash. Expiry is the caller's to judge (`expires_at`).
    async fn handoff(
        &self,
        token_hash: &KeyHash,
    ) -> Result<Option<(CheckoutHandoff, bool)>, StoreError>;

    /// Takes a handoff: only once, only before it expires. A second take, an expired one and
    /// an unknown hash all get `None`.
    async fn take_handoff(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<CheckoutHandoff>, StoreError>;

    /// Records a meter event; an identifier seen before MUST return
    /// [`MeterOutcome::Existing`] with the first record and store nothing.
    async fn record_meter_event(&self, event: &MeterEvent) -> Result<MeterOutcome, StoreError>;

    async fn mark_meter_forwarded(
        &self,
        id: &MeterEventId,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("account not found")]
    UnknownAccount,
    /// The id or the OAuth state hash is already stored.
    #[error("a connection with this id or state already exists")]
    Duplicate,
    #[error("connection not found")]
    NotFound,
    /// The connection was finished before: the current record.
    #[error("the connection is no longer pending")]
    NotPending(Box<ConnectionRecord>),
    /// The connection is not connected (pending or final): the current record.
    #[error("the connection is not connected")]
    NotConnected(Box<ConnectionRecord>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Target-site connections. Each state change is one compare-and-set on the stored state, so
/// racing callbacks and polls finish a connection exactly once.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait ConnectionStore: Send + Sync {
    /// Stores a new connection. MUST return [`ConnectionError::UnknownAccount`] when its
    /// account does not exist and [`ConnectionError::Duplicate`] when the id or the OAuth
    /// state hash is taken; then nothing is stored.
    async fn insert_connection(&self, connection: &ConnectionRecord)
    -> Result<(), ConnectionError>;

    async fn connection(&self, id: &ConnectionId) -> Result<Option<ConnectionRecord>, StoreError>;

    /// The connection whose OAuth state hashes to `state_hash` (hex SHA-256).
    async fn connection_by_state_hash(
        &self,
        state_hash: &str,
    ) -> Result<Option<ConnectionRecord>, StoreError>;

    /// The account's newest connection (by `created_at`, then id) to `provider`, in any state.
    async fn latest_connection(
        &self,
        account: &AccountId,
        provider: &ProviderId,
    ) -> Result<Option<ConnectionRecord>, StoreError>;

    /// The account's newest connection to `provider` that is in `state` (so a newer attempt
    /// that is pending or failed does not hide a working connection).
    async fn latest_connection_in(
        &self,
        account: &AccountId,
        provider: &ProviderId,
        state: ConnectionState,
    ) -> Result<Option<ConnectionRecord>, StoreError>;

    /// Finishes a pending connection as `finish` says (see [`ConnectionFinish::apply`]) and
    /// returns it updated. Only from `pending`: MUST return [`ConnectionError::NotPending`]
    /// with the current record and change nothing otherwise, also when finishes race (exactly
    /// one wins), and [`ConnectionError::NotFound`] for an unknown id.
    async fn finish_connection(
        &self,
        id: &ConnectionId,
        finish: ConnectionFinish,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError>;

    /// Replaces the credentials of a connected connection. MUST return
    /// [`ConnectionError::NotConnected`] with the current record (changing nothing) in any
    /// other state and [`ConnectionError::NotFound`] for an unknown id.
    async fn refresh_credentials(
        &self,
        id: &ConnectionId,
        credentials: SealedSecret,
        credentials_expire_at: Option<DateTime<Utc>>,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError>;

    /// Moves a pending or connected connection to `expired` (its credentials are dropped) and
    /// returns it. A final one is returned unchanged (idempotent). MUST return
    /// [`ConnectionError::NotFound`] for an unknown id.
    async fn expire_connection(
        &self,
        id: &ConnectionId,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError>;
}

/// Every sealed value the store keeps (see [`crate::connections::SealedStore`]).
pub use crate::connections::SealedStore;

#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    #[error("account not found")]
    UnknownAccount,
    #[error("an authority with this id already exists")]
    Duplicate,
    /// No such authority, or it belongs to another account.
    #[error("payment authority not found")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Delegated payment authorities and what they spent. Spending happens only in
/// [`TaskStore::begin_task`] (with the task) and is given back by [`TaskStore::settle_task`]
/// for a failed task whose payment surely did not happen ([`Settlement::release_spend`]).
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait AuthorityStore: Send + Sync {
    /// MUST return [`AuthorityError::UnknownAccount`] for an unknown owner and
    /// [`AuthorityError::Duplicate`] for a taken id; then nothing is stored.
    async fn insert_authority(&self, authority: &PaymentAuthority) -> Result<(), AuthorityError>;

    /// The authority and its usage as of `now` (its spending in the window containing `now`).
    async fn authority(
        &self,
        id: &AuthorityId,
        now: DateTime<Utc>,
    ) -> Result<Option<(PaymentAuthority, AuthorityUsage)>, StoreError>;

    /// The account's authorities with their usage as of `now`, newest first.
    async fn authorities(
        &self,
        account: &AccountId,
        now: DateTime<Utc>,
    ) -> Result<Vec<(PaymentAuthority, AuthorityUsage)>, StoreError>;

    /// Every spend of the authority, given back or not, oldest first.
    async fn authority_spends(
        &self,
        id: &AuthorityId,
    ) -> Result<Vec<AuthoritySpendRecord>, StoreError>;

    /// The spend made with the task, given back or not; `None` when the task paid nothing
    /// under an authority (or is unknown).
    async fn task_spend(&self, task: &TaskId) -> Result<Option<AuthoritySpendRecord>, StoreError>;

    /// Revokes the account's authority at `at` and returns it. Idempotent: revoking again
    /// returns it with the first `revoked_at`. MUST return [`AuthorityError::NotFound`] for an
    /// unknown id and for another account's authority (changing nothing).
    async fn revoke_authority(
        &self,
        account: &AccountId,
        id: &AuthorityId,
        at: DateTime<Utc>,
    ) -> Result<PaymentAuthority, AuthorityError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_store_is_found_under_any_number_of_wrappers() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let task = TaskError::Store(StoreError::unreachable(cause, "settling task"));
        assert!(is_unreachable(&task));
        let wrapped = anyhow::Error::new(task).context("executing");
        assert!(is_unreachable(wrapped.as_ref()));
        assert!(format!("{wrapped:#}").contains("reset by peer"));

        let corrupt = TaskError::Store(StoreError(anyhow::anyhow!("corrupt task row")));
        assert!(!is_unreachable(&corrupt));
        assert!(!is_unreachable(
            anyhow::Error::new(corrupt).context("x").as_ref()
        ));
    }
}
