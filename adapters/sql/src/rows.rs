//! Rows into domain values, written once for both stores. Each store reads its own column
//! types into plain values ([`Columns`]: Postgres TIMESTAMPTZ, BYTEA, JSONB and BOOLEAN,
//! SQLite INTEGER milliseconds, hex TEXT, TEXT and INTEGER); the functions here validate them
//! into the ports' types, with the same "corrupt ... in store" error on both. No statement
//! lives here: each store's statements stay beside the code that runs them, and both select
//! the same column names.

use std::fmt::Display;

use anyhow::anyhow;
use chrono::{DateTime, Utc};
use svc_ports::CheckoutId;
use svc_ports::{
    Account, AccountId, AgentMap, ApiKeyId, ApiKeyRecord, ArtifactId, AuthorityId,
    AuthoritySpendRecord, ChallengeId, ChallengePurpose, ConnectionId, ConnectionRecord,
    ConnectionState, DeviceGrant, DeviceGrantId, DeviceGrantStatus, Email, EmailChallenge,
    FetchedPage, KeyHash, KeyPrefix, LedgerEntry, LedgerEntryId, MapDocument, MapStatus,
    MeterEventId, PaymentAuthority, ProviderId, ReceiptId, RobotsDecision, ScanReport, Scopes,
    SealedSecret, TaskId, TaskRecord, TaskStatus, UserCode,
    authority::{AmountLimit, AuthorityInterval, Principal},
    billing::{CheckoutRecord, Currency, Lien, MeterEvent, Receipt, ReceiptKind, TaskFreeze},
    store::StoreError,
};

use crate::errors::corrupt;

/// One row as plain values: how a store decodes each kind of column.
pub(crate) trait Columns {
    fn text(&self, name: &str) -> Result<String, StoreError>;
    fn text_opt(&self, name: &str) -> Result<Option<String>, StoreError>;
    fn int(&self, name: &str) -> Result<i64, StoreError>;
    fn int_opt(&self, name: &str) -> Result<Option<i64>, StoreError>;
    fn flag(&self, name: &str) -> Result<bool, StoreError>;
    fn bytes(&self, name: &str) -> Result<Vec<u8>, StoreError>;
    fn bytes_opt(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    fn time(&self, name: &str) -> Result<DateTime<Utc>, StoreError>;
    fn time_opt(&self, name: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
    /// A SHA-256 (32 bytes, or 64 hex digits).
    fn hash(&self, name: &str) -> Result<KeyHash, StoreError>;
    /// A SHA-256 the port speaks as hex.
    fn hash_hex(&self, name: &str) -> Result<String, StoreError>;
    /// A JSON document.
    fn json(&self, name: &str) -> Result<serde_json::Value, StoreError>;

    /// A text column parsed into a domain type.
    fn parsed<T, E: Display>(
        &self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, StoreError> {
        parse(&self.text(name)?).map_err(|e| corrupt_column(name, e))
    }

    /// A nullable text column parsed into a domain type.
    fn parsed_opt<T, E: Display>(
        &self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, StoreError> {
        self.text_opt(name)?
            .map(|s| parse(&s))
            .transpose()
            .map_err(|e| corrupt_column(name, e))
    }
}

pub(crate) fn corrupt_column(name: &str, e: impl Display) -> StoreError {
    StoreError(anyhow!("corrupt `{name}` in store: {e}"))
}

/// For enum `parse` functions that answer `Option`.
pub(crate) fn known<T>(value: Option<T>) -> Result<T, &'static str> {
    value.ok_or("unknown value")
}

/// Column names of an account in a row: its own, or renamed beside another table's
/// (`id, email, plan, environment, created_at` in that order).
pub(crate) type AccountColumns = [&'static str; 5];
pub(crate) const ACCOUNT: AccountColumns = ["id", "email", "plan", "environment", "created_at"];

pub(crate) fn account(r: &impl Columns, c: AccountColumns) -> Result<Account, StoreError> {
    Ok(Account {
        id: r.parsed(c[0], AccountId::parse)?,
        email: r.parsed(c[1], Email::parse)?,
        plan: r.parsed(c[2], str::parse)?,
        environment: r.parsed(c[3], str::parse)?,
        created_at: r.time(c[4])?,
    })
}

/// `id, account_id, prefix, hash, scopes, label, created_at, revoked_at, expires_at,
/// last_used_at`.
pub(crate) fn api_key(r: &impl Columns) -> Result<ApiKeyRecord, StoreError> {
    Ok(ApiKeyRecord {
        id: r.parsed("id", ApiKeyId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        prefix: r.parsed("prefix", KeyPrefix::parse)?,
        hash: r.hash("hash")?,
        scopes: r.parsed("scopes", Scopes::parse_list)?,
        label: r.text("label")?,
        created_at: r.time("created_at")?,
        revoked_at: r.time_opt("revoked_at")?,
        expires_at: r.time_opt("expires_at")?,
        last_used_at: r.time_opt("last_used_at")?,
    })
}

/// `id, device_code_hash, user_code, client_id, agent_name, scopes, status, account_id,
/// key_id, interval_secs, created_at, expires_at, last_polled_at`.
pub(crate) fn device_grant(r: &impl Columns) -> Result<DeviceGrant, StoreError> {
    Ok(DeviceGrant {
        id: r.parsed("id", DeviceGrantId::parse)?,
        device_code_hash: r.hash("device_code_hash")?,
        user_code: r.parsed("user_code", UserCode::parse)?,
        client_id: r.text("client_id")?,
        agent_name: r.text_opt("agent_name")?,
        scopes: r.parsed("scopes", Scopes::parse_list)?,
        status: r.parsed("status", |s| known(DeviceGrantStatus::parse(s)))?,
        account_id: r.parsed_opt("account_id", AccountId::parse)?,
        key_id: r.parsed_opt("key_id", ApiKeyId::parse)?,
        interval_secs: u32::try_from(r.int("interval_secs")?).map_err(corrupt("grant interval"))?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
        last_polled_at: r.time_opt("last_polled_at")?,
    })
}

/// `id, purpose, email, code_hash, agent_name, scopes, attempts, created_at, expires_at,
/// consumed_at`.
pub(crate) fn email_challenge(r: &impl Columns) -> Result<EmailChallenge, StoreError> {
    Ok(EmailChallenge {
        id: r.parsed("id", ChallengeId::parse)?,
        purpose: r.parsed("purpose", |s| known(ChallengePurpose::parse(s)))?,
        email: r.parsed("email", Email::parse)?,
        code_hash: r.hash("code_hash")?,
        agent_name: r.text_opt("agent_name")?,
        scopes: r.parsed("scopes", Scopes::parse_list)?,
        attempts: u32::try_from(r.int("attempts")?).map_err(corrupt("challenge attempts"))?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
        consumed_at: r.time_opt("consumed_at")?,
        known_browser: r.flag("known_browser")?,
    })
}

/// `id, account_id, principal_type, principal_id, agent_provider, scope, amount_value,
/// amount_interval, currency, expires_at, revocation_url, receipt_required,
/// verification_required, created_by, created_at, revoked_at`.
pub(crate) fn authority(r: &impl Columns) -> Result<PaymentAuthority, StoreError> {
    let interval = r.parsed("amount_interval", |s| known(AuthorityInterval::parse(s)))?;
    Ok(PaymentAuthority {
        authority_id: r.parsed("id", AuthorityId::parse)?,
        principal: Principal {
            kind: r.text("principal_type")?,
            id: r.text("principal_id")?,
            agent_provider: r.text("agent_provider")?,
        },
        scope: r.parsed("scope", |s| serde_json::from_str(s))?,
        amount_limit: AmountLimit::new(r.int("amount_value")?, interval)
            .map_err(corrupt("authority amount"))?,
        currency: r.parsed("currency", Currency::parse)?,
        expires_at: r.time("expires_at")?,
        revocation_url: r.text("revocation_url")?,
        receipt_required: r.flag("receipt_required")?,
        verification_required: r.flag("verification_required")?,
        created_at: r.time("created_at")?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        created_by: r.text("created_by")?,
        revoked_at: r.time_opt("revoked_at")?,
    })
}

/// `task_id, authority_id, amount, currency, scope, window_start, spent_at, released_at`.
pub(crate) fn authority_spend(r: &impl Columns) -> Result<AuthoritySpendRecord, StoreError> {
    Ok(AuthoritySpendRecord {
        authority_id: r.parsed("authority_id", AuthorityId::parse)?,
        task_id: r.parsed("task_id", TaskId::parse)?,
        amount: r.int("amount")?,
        currency: r.parsed("currency", Currency::parse)?,
        scope: r.text("scope")?,
        window_start: r.time("window_start")?,
        spent_at: r.time("spent_at")?,
        released_at: r.time_opt("released_at")?,
    })
}

/// `id, account_id, sku, plan, credits, amount, currency, provider_session_id, checkout_url,
/// idempotency_key, created_at, expires_at`.
pub(crate) fn checkout(r: &impl Columns) -> Result<CheckoutRecord, StoreError> {
    Ok(CheckoutRecord {
        id: r.parsed("id", CheckoutId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        sku: r.text("sku")?,
        plan: r.parsed("plan", str::parse)?,
        credits: r.int("credits")?,
        amount: r.int("amount")?,
        currency: r.parsed("currency", Currency::parse)?,
        provider_session_id: r.text("provider_session_id")?,
        checkout_url: r.text("checkout_url")?,
        idempotency_key: r.text_opt("idempotency_key")?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
    })
}

/// `id, account_id, kind, credits, spendable_delta, frozen_delta, shortfall, amount,
/// currency, payment_id, checkout_id, reference, note, created_at`.
pub(crate) fn receipt(r: &impl Columns) -> Result<Receipt, StoreError> {
    Ok(Receipt {
        id: r.parsed("id", ReceiptId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        kind: r.parsed("kind", |s| known(ReceiptKind::parse(s)))?,
        credits: r.int("credits")?,
        spendable_delta: r.int("spendable_delta")?,
        frozen_delta: r.int("frozen_delta")?,
        shortfall: r.int("shortfall")?,
        amount: r.int_opt("amount")?,
        currency: r.parsed_opt("currency", Currency::parse)?,
        payment_id: r.text_opt("payment_id")?,
        checkout_id: r.parsed_opt("checkout_id", CheckoutId::parse)?,
        task_id: None,
        artifact_id: None,
        reference: r.text("reference")?,
        note: r.text("note")?,
        created_at: r.time("created_at")?,
    })
}

/// `reference, payment_id, kind, credits, since` of `write_off_liens`.
pub(crate) fn lien(r: &impl Columns) -> Result<Lien, StoreError> {
    Ok(Lien {
        reference: r.text("reference")?,
        payment_id: r.text("payment_id")?,
        kind: r.parsed("kind", |s| known(ReceiptKind::parse(s)))?,
        credits: r.int("credits")?,
        since: r.time("since")?,
    })
}

/// `task_id, account_id, payment_id, credits, created_at` of `task_freezes`.
pub(crate) fn task_freeze(r: &impl Columns) -> Result<TaskFreeze, StoreError> {
    Ok(TaskFreeze {
        task_id: r.parsed("task_id", TaskId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        payment_id: r.text("payment_id")?,
        credits: r.int("credits")?,
        at: r.time("created_at")?,
    })
}

/// `id, identifier, event_name, account_id, value, occurred_at, recorded_at, forwarded_at`.
pub(crate) fn meter_event(r: &impl Columns) -> Result<MeterEvent, StoreError> {
    Ok(MeterEvent {
        id: r.parsed("id", MeterEventId::parse)?,
        identifier: r.text("identifier")?,
        event_name: r.text("event_name")?,
        account_id: r.parsed_opt("account_id", AccountId::parse)?,
        value: r.int("value")?,
        occurred_at: r.time("occurred_at")?,
        recorded_at: r.time("recorded_at")?,
        forwarded_at: r.time_opt("forwarded_at")?,
    })
}

/// `id, account_id, provider, expected_account, upstream_account, state, oauth_state_hash,
/// pkce_verifier, credentials, credentials_expire_at, link_expires_at, created_at,
/// updated_at`.
/// A task row with the `balance_after` of its capture entry.
pub(crate) fn low_charge(r: &impl Columns) -> Result<svc_ports::LowCharge, StoreError> {
    Ok(svc_ports::LowCharge {
        task: task(r)?,
        spendable: r.int("balance_after")?,
    })
}

/// A task's columns, its spend's `authority_id` and `window_start`, and its authority's
/// `currency`, `amount_interval` and `expires_at`.
pub(crate) fn exhaustion(r: &impl Columns) -> Result<svc_ports::Exhaustion, StoreError> {
    let interval = r.parsed("amount_interval", |s| known(AuthorityInterval::parse(s)))?;
    let (window_start, expires_at) = (r.time("window_start")?, r.time("expires_at")?);
    Ok(svc_ports::Exhaustion {
        task: task(r)?,
        authority_id: r.parsed("authority_id", AuthorityId::parse)?,
        currency: r.parsed("currency", Currency::parse)?,
        window_end: svc_ports::authority::window_end(interval, window_start, expires_at),
    })
}

/// A sealed value as `SealedStore::sealed_values` reads it: `id`, `sealed`.
pub(crate) fn sealed_value(r: &impl Columns) -> Result<(String, SealedSecret), StoreError> {
    Ok((r.text("id")?, SealedSecret::new(r.bytes("sealed")?)))
}

pub(crate) fn connection(r: &impl Columns) -> Result<ConnectionRecord, StoreError> {
    Ok(ConnectionRecord {
        id: r.parsed("id", ConnectionId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        provider: r.parsed("provider", ProviderId::parse)?,
        expected_account: r.text_opt("expected_account")?,
        upstream_account: r.text_opt("upstream_account")?,
        state: r.parsed("state", |s| known(ConnectionState::parse(s)))?,
        oauth_state_hash: r.hash_hex("oauth_state_hash")?,
        pkce_verifier: SealedSecret::new(r.bytes("pkce_verifier")?),
        credentials: r.bytes_opt("credentials")?.map(SealedSecret::new),
        credentials_expire_at: r.time_opt("credentials_expire_at")?,
        link_expires_at: r.time("link_expires_at")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

/// `id, account_id, kind, delta, balance_after, reference, memo, created_at`.
pub(crate) fn ledger_entry(r: &impl Columns) -> Result<LedgerEntry, StoreError> {
    Ok(LedgerEntry {
        id: r.parsed("id", LedgerEntryId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        kind: r.parsed("kind", str::parse)?,
        delta: r.int("delta")?,
        balance_after: r.int("balance_after")?,
        reference: r.text_opt("reference")?,
        memo: r.text("memo")?,
        created_at: r.time("created_at")?,
    })
}

/// `version, status, origin, document, created_at, updated_at` (the document as TEXT in both
/// stores: a learned map quotes a site's labels, which may hold a NUL that JSONB refuses).
pub(crate) fn agent_map(r: &impl Columns) -> Result<AgentMap, StoreError> {
    Ok(AgentMap {
        document: r.parsed("document", |s| serde_json::from_str::<MapDocument>(s))?,
        version: u32::try_from(r.int("version")?).map_err(corrupt("map version"))?,
        status: r.parsed("status", |s| known(MapStatus::parse(s)))?,
        origin: r.text("origin")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

/// The `charset` of a cached page whose `body` column holds a document's bytes, not text.
pub(crate) const BINARY_CHARSET: &str = "binary";

/// What a page is stored as: its charset and its body's bytes (the text's, or the document's).
pub(crate) fn page_body(page: &FetchedPage) -> (&str, &[u8]) {
    match &page.raw {
        Some(bytes) => (BINARY_CHARSET, bytes),
        None => (&page.charset, page.body.as_bytes()),
    }
}

/// `requested_url, final_url, status, content_type, charset, body, truncated, redirects,
/// robots, fetched_at`.
pub(crate) fn fetched_page(r: &impl Columns) -> Result<FetchedPage, StoreError> {
    let charset = r.text("charset")?;
    let bytes = r.bytes("body")?;
    // A document kept as bytes (a PDF) is stored as they came, marked by its charset.
    let (body, raw) = if charset == BINARY_CHARSET {
        (String::new(), Some(bytes))
    } else {
        let body = String::from_utf8(bytes).map_err(corrupt("cached page body"))?;
        (body, None)
    };
    Ok(FetchedPage {
        requested_url: r.text("requested_url")?,
        final_url: r.text("final_url")?,
        status: u16::try_from(r.int("status")?).map_err(corrupt("page status"))?,
        content_type: r.text_opt("content_type")?,
        headers: Vec::new(),
        charset,
        body,
        raw,
        truncated: r.flag("truncated")?,
        redirects: serde_json::from_value(r.json("redirects")?)
            .map_err(|e| corrupt_column("redirects", e))?,
        robots: serde_json::from_value::<RobotsDecision>(r.json("robots")?)
            .map_err(|e| corrupt_column("robots", e))?,
        fetched_at: r.time("fetched_at")?,
    })
}

/// `id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, status,
/// response_status, response_body, artifact_id, artifact, created_at, settled_at,
/// verified_artifact, verified_at`.
pub(crate) fn task(r: &impl Columns) -> Result<TaskRecord, StoreError> {
    Ok(TaskRecord {
        id: r.parsed("id", TaskId::parse)?,
        account_id: r.parsed("account_id", AccountId::parse)?,
        key_id: r.parsed("key_id", ApiKeyId::parse)?,
        domain: r.text("domain")?,
        action: r.text("action")?,
        cost: r.int("cost")?,
        idempotency_key: r.text_opt("idempotency_key")?,
        fingerprint: r.text("fingerprint")?,
        status: r.parsed("status", |s| known(TaskStatus::parse(s)))?,
        response_status: r
            .int_opt("response_status")?
            .map(u16::try_from)
            .transpose()
            .map_err(corrupt("response status"))?,
        response_body: r.text_opt("response_body")?,
        artifact_id: r.parsed_opt("artifact_id", ArtifactId::parse)?,
        artifact: r.text_opt("artifact")?,
        created_at: r.time("created_at")?,
        settled_at: r.time_opt("settled_at")?,
        verified_artifact: r.text_opt("verified_artifact")?,
        verified_at: r.time_opt("verified_at")?,
    })
}

/// A readiness report as the JSON text both stores keep (TEXT: it quotes the scanned pages,
/// which may hold a NUL that JSONB refuses).
pub(crate) fn scan_json(report: &ScanReport) -> Result<String, StoreError> {
    serde_json::to_string(report)
        .map_err(|e| StoreError(anyhow::Error::new(e).context("encoding a scan")))
}

/// A stored readiness report, exactly as it was stored.
pub(crate) fn scan_report(json: Option<String>) -> Result<Option<ScanReport>, StoreError> {
    json.map(|j| serde_json::from_str(&j))
        .transpose()
        .map_err(|e| StoreError(anyhow::Error::new(e).context("decoding a stored scan")))
}
