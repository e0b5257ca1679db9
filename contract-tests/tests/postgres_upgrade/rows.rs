//! One representative row (or two) of every table, as the domain values the store must read
//! back. Times are whole milliseconds, as every row written before 0011 was.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::json;
use svc_ports::{
    Account, AccountId, AgentMap, ApiKeyId, ApiKeyRecord, ApiKeySecret, ArtifactId, AuthorityId,
    AuthoritySpendRecord, ChallengeId, ChallengePurpose, CheckoutId, ConnectionId,
    ConnectionRecord, ConnectionState, Currency, DeviceGrant, DeviceGrantId, DeviceGrantStatus,
    Email, EmailChallenge, Environment, FetchedPage, KeyHash, LedgerEntry, LedgerEntryId,
    MapDocument, MapStatus, MeterEvent, MeterEventId, PaymentAuthority, PaymentFact, Plan,
    Principal, ProviderId, Receipt, RobotsDecision, ScanReport, Scopes, SealedSecret, SessionReach,
    StoredEvent, TaskId, TaskRecord, TaskStatus, UserCode, WebSession,
    authority::{AmountLimit, AuthorityInterval, window_start},
    billing::{CheckoutHandoff, CheckoutRecord, Liens, PaymentPlan, plan_payment},
    connections::oauth_state_hash,
    ledger::EntryKind,
};
use ulid::Ulid;

pub fn t0() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_780_000_000_123).unwrap()
}

pub fn at(ms: i64) -> DateTime<Utc> {
    t0() + Duration::milliseconds(ms)
}

/// What the account's balance columns hold: the sum of the entries below.
pub const SPENDABLE: i64 = 285;
pub const HELD: i64 = 10;

pub struct Rows {
    pub account: Account,
    /// The second one revoked.
    pub keys: Vec<ApiKeyRecord>,
    /// Oldest first.
    pub entries: Vec<LedgerEntry>,
    pub checkout: CheckoutRecord,
    pub paid: PaymentFact,
    /// Not UTF-8, with a NUL.
    pub paid_body: Vec<u8>,
    pub purchase: Receipt,
    /// Settled completed with a payment_completed artifact, and verified.
    pub done: TaskRecord,
    pub running: TaskRecord,
    pub authority: PaymentAuthority,
    /// Oldest first: `done`'s (given back) and `running`'s.
    pub spends: Vec<AuthoritySpendRecord>,
    pub grant: DeviceGrant,
    pub challenge: EmailChallenge,
    pub session: WebSession,
    pub handoff: CheckoutHandoff,
    pub page: FetchedPage,
    /// Newest version first: the published one, then the retired one.
    pub maps: Vec<AgentMap>,
    /// Newest first.
    pub events: Vec<StoredEvent>,
    pub report: ScanReport,
    pub meter: MeterEvent,
    pub connection: ConnectionRecord,
}

fn api_key(account: &Account, n: u8, created_at: DateTime<Utc>) -> ApiKeyRecord {
    let body: String = format!("{n}{}", Ulid::new())
        .chars()
        .chain("abcdefghijklmnopqrstuvwxyz".chars())
        .take(32)
        .collect();
    let secret = ApiKeySecret::from_random(account.environment, &body).unwrap();
    ApiKeyRecord {
        id: ApiKeyId::from_ulid(Ulid::new()),
        account_id: account.id.clone(),
        prefix: secret.prefix(),
        hash: secret.hash(),
        scopes: Scopes::default_for_new_key(),
        label: format!("key {n}"),
        created_at,
        revoked_at: None,
        expires_at: None,
        last_used_at: None,
    }
}

fn map_document(description: &str) -> MapDocument {
    serde_json::from_value(json!({
        "domain": "shop.example.com",
        "base_url": "https://shop.example.com",
        "description": description,
        "actions": [{
            "name": "search_products",
            "description": "Search.",
            "family": "search",
            "params_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "consequential": false,
            "request": {"method": "GET", "path": "/search?q={q}"},
            "verify": {"status": [200]},
            "output_schema": {"type": "object"}
        }]
    }))
    .unwrap()
}

fn scan_report() -> ScanReport {
    svc_contract_tests::samples::sample_report(
        svc_contract_tests::samples::sample_checks("line one\nline two \u{0}"),
        1234,
    )
}

pub fn rows() -> Rows {
    let account = Account {
        id: AccountId::from_ulid(Ulid::new()),
        email: Email::parse("old@example.com").unwrap(),
        plan: Plan::Starter,
        environment: Environment::Live,
        created_at: t0(),
    };
    let key = api_key(&account, 1, t0());
    let mut revoked = api_key(&account, 2, at(1000));
    revoked.revoked_at = Some(at(2000));
    let usd = Currency::parse("usd").unwrap();
    let checkout = CheckoutRecord {
        id: CheckoutId::from_ulid(Ulid::new()),
        account_id: account.id.clone(),
        sku: "credits-100".into(),
        plan: Plan::Starter,
        credits: 100,
        amount: 900,
        currency: usd.clone(),
        provider_session_id: "cs_old".into(),
        checkout_url: "https://pay.example/cs_old".into(),
        idempotency_key: Some("ck-old".into()),
        created_at: t0(),
        expires_at: at(3_600_000),
    };
    let paid = PaymentFact::Paid {
        payment_id: "pay_old".into(),
        checkout_id: checkout.id.clone(),
        amount: 900,
        currency: usd.clone(),
    };
    // The purchase as the billing plan computes it: its receipt and its entry.
    let PaymentPlan::Moves { moves, .. } = plan_payment(
        std::slice::from_ref(&paid),
        std::slice::from_ref(&checkout),
        &[],
        200,
        0,
        None,
        &Liens::none(at(2000)),
    ) else {
        panic!("the payment moves credits")
    };
    let (purchase_entry, purchase) = moves[0].records(&checkout, "pay_old", 300, at(2000));
    let done = TaskRecord {
        id: TaskId::from_ulid(Ulid::new()),
        account_id: account.id.clone(),
        key_id: key.id.clone(),
        domain: "shop.example.com".into(),
        action: "place_order".into(),
        cost: 5,
        idempotency_key: Some("k-done".into()),
        fingerprint: "fp-done".into(),
        status: TaskStatus::Completed,
        response_status: Some(200),
        // Third-party text, kept verbatim: an escaped NUL and keys in no particular order.
        response_body: Some(r#"{"text":"ok \u0000","status":"completed"}"#.into()),
        artifact_id: Some(ArtifactId::from_ulid(Ulid::new())),
        artifact: Some(r#"{"status":"payment_completed","b":1,"a":2}"#.into()),
        created_at: at(3000),
        settled_at: Some(at(3500)),
        verified_artifact: Some(json!({"status": "verified"}).to_string()),
        verified_at: Some(at(4000)),
    };
    let running = TaskRecord {
        id: TaskId::from_ulid(Ulid::new()),
        cost: 10,
        idempotency_key: None,
        fingerprint: "fp-running".into(),
        status: TaskStatus::InFlight,
        response_status: None,
        response_body: None,
        artifact_id: None,
        artifact: None,
        created_at: at(5000),
        settled_at: None,
        verified_artifact: None,
        verified_at: None,
        ..done.clone()
    };
    let entry = |kind, delta, balance, task: &TaskRecord, t| {
        LedgerEntry::for_task(
            LedgerEntryId::from_ulid(Ulid::new()),
            account.id.clone(),
            &task.id,
            kind,
            delta,
            balance,
            t,
        )
    };
    let entries = vec![
        LedgerEntry {
            id: LedgerEntryId::from_ulid(Ulid::new()),
            account_id: account.id.clone(),
            kind: EntryKind::Grant,
            delta: 200,
            balance_after: 200,
            reference: Some("welcome".into()),
            memo: "welcome credits".into(),
            created_at: at(500),
        },
        purchase_entry,
        entry(EntryKind::Hold, -5, 295, &done, at(3000)),
        entry(EntryKind::Capture, 0, 295, &done, at(3500)),
        entry(EntryKind::Hold, -10, SPENDABLE, &running, at(5000)),
    ];
    let authority = PaymentAuthority {
        authority_id: AuthorityId::from_ulid(Ulid::new()),
        principal: Principal {
            kind: "agent".into(),
            id: "agent-7".into(),
            agent_provider: "example-agents".into(),
        },
        scope: vec!["order".into(), "booking".into()],
        amount_limit: AmountLimit::new(500, AuthorityInterval::Day).unwrap(),
        currency: usd.clone(),
        expires_at: at(90 * 86_400_000),
        revocation_url: "https://svc.example/authorities/revoke".into(),
        receipt_required: true,
        verification_required: false,
        created_at: t0(),
        account_id: account.id.clone(),
        created_by: "human@example.com".into(),
        revoked_at: None,
    };
    let spend = |task: &TaskRecord, amount, released_at| AuthoritySpendRecord {
        authority_id: authority.authority_id.clone(),
        task_id: task.id.clone(),
        amount,
        currency: usd.clone(),
        scope: "order".into(),
        window_start: window_start(&authority, task.created_at),
        spent_at: task.created_at,
        released_at,
    };
    let spends = vec![spend(&done, 20, Some(at(3500))), spend(&running, 50, None)];
    let user_code: String = svc_ports::identity::USER_CODE_ALPHABET[..8]
        .iter()
        .map(|b| char::from(*b))
        .collect();
    let grant = DeviceGrant {
        id: DeviceGrantId::from_ulid(Ulid::new()),
        device_code_hash: KeyHash::of("device code"),
        user_code: UserCode::parse(&user_code).unwrap(),
        client_id: "old-agent".into(),
        agent_name: Some("Old Agent".into()),
        scopes: Scopes::default_for_new_key(),
        status: DeviceGrantStatus::Issued,
        account_id: Some(account.id.clone()),
        key_id: Some(key.id.clone()),
        interval_secs: 5,
        created_at: t0(),
        expires_at: at(900_000),
        last_polled_at: Some(at(7000)),
    };
    let challenge_id = ChallengeId::from_ulid(Ulid::new());
    let challenge = EmailChallenge {
        code_hash: EmailChallenge::code_hash_of(&challenge_id, "123456"),
        id: challenge_id,
        purpose: ChallengePurpose::SignIn,
        email: account.email.clone(),
        agent_name: Some("Old Agent".into()),
        scopes: Scopes::default_for_new_key(),
        attempts: 2,
        created_at: t0(),
        expires_at: at(600_000),
        consumed_at: Some(at(60_000)),
        known_browser: false,
    };
    let session = WebSession {
        token_hash: KeyHash::of("session token"),
        account_id: account.id.clone(),
        reach: SessionReach::Account,
        created_at: t0(),
        expires_at: at(30 * 86_400_000),
    };
    let handoff = CheckoutHandoff {
        token_hash: KeyHash::of("handoff token"),
        account_id: account.id.clone(),
        sku: "credits-100".into(),
        created_at: t0(),
        expires_at: at(600_000),
    };
    let page = FetchedPage {
        requested_url: "https://example.com/a".into(),
        final_url: "https://example.com/b".into(),
        status: 404,
        content_type: None,
        headers: Vec::new(),
        charset: "utf-8".into(),
        body: "<p>héllo ✓ 你好 \u{0} end</p>".into(),
        raw: None,
        truncated: true,
        redirects: vec![
            "https://example.com/a".into(),
            "https://example.com/a/".into(),
        ],
        robots: RobotsDecision {
            checked: true,
            allowed: true,
            robots_url: "https://example.com/robots.txt".into(),
            basis: "rules".into(),
        },
        fetched_at: t0(),
    };
    let map = |version: u32, status: MapStatus, description: &str| AgentMap {
        document: map_document(description),
        version,
        status,
        origin: "learned".into(),
        created_at: t0(),
        updated_at: at(i64::from(version) * 1000),
    };
    let event = |n: i64, account_id: Option<AccountId>| StoredEvent {
        id: format!("evt_{}", Ulid::new()),
        received_at: at(n * 1000),
        event_id: format!("e{n}"),
        session_id: "s".into(),
        agent_protocol: "mcp".into(),
        discovery_surface: "llms_txt".into(),
        conversion_state: "discovered".into(),
        task_type: "read_page".into(),
        account_id,
        event: json!({"event_id": format!("e{n}"), "nested": {"a": [1, 2.5, "x"], "b": null}}),
    };
    Rows {
        keys: vec![key, revoked],
        entries,
        paid_body: b"{\"type\":\"payment.succeeded\"}\0\xff".to_vec(),
        purchase,
        authority,
        spends,
        grant,
        challenge,
        session,
        handoff,
        page,
        // A learned map quotes a site's labels, NUL and all.
        maps: vec![
            map(2, MapStatus::Published, "two \u{0} (a label with a NUL)"),
            map(1, MapStatus::Retired, "one"),
        ],
        events: vec![event(2, None), event(1, Some(account.id.clone()))],
        report: scan_report(),
        meter: MeterEvent {
            id: MeterEventId::from_ulid(Ulid::new()),
            identifier: "m-old".into(),
            event_name: "actions".into(),
            account_id: Some(account.id.clone()),
            value: 3,
            occurred_at: t0(),
            recorded_at: at(1000),
            forwarded_at: Some(at(2000)),
        },
        connection: ConnectionRecord {
            id: ConnectionId::from_ulid(Ulid::new()),
            account_id: account.id.clone(),
            provider: ProviderId::parse("shop-example").unwrap(),
            expected_account: Some("guest-42".into()),
            upstream_account: Some("guest-42".into()),
            state: ConnectionState::Connected,
            oauth_state_hash: oauth_state_hash("old state"),
            pkce_verifier: SealedSecret::new(vec![0, 1, 2, 255, 254]),
            credentials: Some(SealedSecret::new(b"sealed\0credentials".to_vec())),
            credentials_expire_at: Some(at(3_600_000)),
            link_expires_at: at(900_000),
            created_at: t0(),
            updated_at: at(30_000),
        },
        checkout,
        paid,
        done,
        running,
        account,
    }
}
