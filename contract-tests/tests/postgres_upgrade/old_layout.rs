//! The rows as the store wrote them before migration 0011: times as BIGINT Unix milliseconds,
//! SHA-256 hashes as hex TEXT, JSON documents as TEXT, `truncated` as 0 or 1.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use svc_ports::{ApiKeyRecord, LedgerEntry, PaymentFact, TaskRecord};

use crate::rows::{HELD, Rows, SPENDABLE, at};

fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub async fn insert(c: &mut PgConnection, x: &Rows) {
    let a = &x.account;
    sqlx::query(
        "INSERT INTO accounts (id, email, plan, environment, spendable, held, frozen, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 0, $7)",
    )
    .bind(a.id.as_str())
    .bind(a.email.as_str())
    .bind(a.plan.as_str())
    .bind(a.environment.as_str())
    .bind(SPENDABLE)
    .bind(HELD)
    .bind(millis(a.created_at))
    .execute(&mut *c)
    .await
    .unwrap();
    for k in &x.keys {
        key(c, k).await;
    }
    billing(c, x).await;
    task(c, &x.done, Some("art_verification")).await;
    task(c, &x.running, None).await;
    for e in &x.entries {
        entry(c, e).await;
    }
    authority(c, x).await;
    identity(c, x).await;
    the_rest(c, x).await;
}

async fn key(c: &mut PgConnection, k: &ApiKeyRecord) {
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, prefix, hash, scopes, label, created_at, revoked_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(k.id.as_str())
    .bind(k.account_id.as_str())
    .bind(k.prefix.as_str())
    .bind(k.hash.to_hex())
    .bind(k.scopes.to_list_string())
    .bind(&k.label)
    .bind(millis(k.created_at))
    .bind(k.revoked_at.map(millis))
    .execute(c)
    .await
    .unwrap();
}

async fn entry(c: &mut PgConnection, e: &LedgerEntry) {
    sqlx::query(
        "INSERT INTO ledger_entries (id, account_id, kind, delta, balance_after, reference, memo, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(e.id.as_str())
    .bind(e.account_id.as_str())
    .bind(e.kind.as_str())
    .bind(e.delta)
    .bind(e.balance_after)
    .bind(e.reference.as_deref())
    .bind(&e.memo)
    .bind(millis(e.created_at))
    .execute(c)
    .await
    .unwrap();
}

async fn task(c: &mut PgConnection, t: &TaskRecord, verified_artifact_id: Option<&str>) {
    sqlx::query(
        "INSERT INTO tasks (id, account_id, key_id, domain, action, cost, idempotency_key, \
         fingerprint, status, response_status, response_body, artifact_id, artifact, created_at, \
         settled_at, verified_artifact_id, verified_artifact, verified_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
    )
    .bind(t.id.as_str())
    .bind(t.account_id.as_str())
    .bind(t.key_id.as_str())
    .bind(&t.domain)
    .bind(&t.action)
    .bind(t.cost)
    .bind(t.idempotency_key.as_deref())
    .bind(&t.fingerprint)
    .bind(t.status.as_str())
    .bind(t.response_status.map(i64::from))
    .bind(t.response_body.as_deref())
    .bind(t.artifact_id.as_ref().map(|a| a.as_str().to_owned()))
    .bind(t.artifact.as_deref())
    .bind(millis(t.created_at))
    .bind(t.settled_at.map(millis))
    .bind(verified_artifact_id)
    .bind(t.verified_artifact.as_deref())
    .bind(t.verified_at.map(millis))
    .execute(c)
    .await
    .unwrap();
}

/// The checkout, its payment's events (one of another kind) and the purchase receipt.
async fn billing(c: &mut PgConnection, x: &Rows) {
    let k = &x.checkout;
    sqlx::query(
        "INSERT INTO checkouts (id, account_id, sku, plan, credits, amount, currency, \
         provider_session_id, checkout_url, idempotency_key, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(k.id.as_str())
    .bind(k.account_id.as_str())
    .bind(&k.sku)
    .bind(k.plan.as_str())
    .bind(k.credits)
    .bind(k.amount)
    .bind(k.currency.as_str())
    .bind(&k.provider_session_id)
    .bind(&k.checkout_url)
    .bind(k.idempotency_key.as_deref())
    .bind(millis(k.created_at))
    .bind(millis(k.expires_at))
    .execute(&mut *c)
    .await
    .unwrap();
    let other = b"{}".to_vec();
    for (webhook, fact, payment_id, body, status) in [
        ("wh_paid", &x.paid, Some("pay_old"), &x.paid_body, "applied"),
        (
            "wh_other",
            &PaymentFact::Other,
            None,
            &other,
            "acknowledged",
        ),
    ] {
        sqlx::query(
            "INSERT INTO payment_events (provider, webhook_id, event_type, payment_id, fact, \
             body, status, detail, received_at) \
             VALUES ('sandbox', $1, 'x', $2, $3, $4, $5, NULL, $6)",
        )
        .bind(webhook)
        .bind(payment_id)
        .bind(serde_json::to_string(fact).unwrap())
        .bind(body)
        .bind(status)
        .bind(millis(at(2000)))
        .execute(&mut *c)
        .await
        .unwrap();
    }
    let r = &x.purchase;
    sqlx::query(
        "INSERT INTO receipts (id, account_id, kind, credits, spendable_delta, frozen_delta, \
         shortfall, amount, currency, payment_id, checkout_id, reference, note, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(r.id.as_str())
    .bind(r.account_id.as_str())
    .bind(r.kind.as_str())
    .bind(r.credits)
    .bind(r.spendable_delta)
    .bind(r.frozen_delta)
    .bind(r.shortfall)
    .bind(r.amount)
    .bind(r.currency.as_ref().map(|c| c.as_str().to_owned()))
    .bind(r.payment_id.as_deref())
    .bind(r.checkout_id.as_ref().map(|c| c.as_str().to_owned()))
    .bind(&r.reference)
    .bind(&r.note)
    .bind(millis(r.created_at))
    .execute(&mut *c)
    .await
    .unwrap();
}

async fn authority(c: &mut PgConnection, x: &Rows) {
    let a = &x.authority;
    sqlx::query(
        "INSERT INTO payment_authorities (id, account_id, principal_type, principal_id, \
         agent_provider, scope, amount_value, amount_interval, currency, expires_at, \
         revocation_url, receipt_required, verification_required, created_by, created_at, \
         revoked_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL)",
    )
    .bind(a.authority_id.as_str())
    .bind(a.account_id.as_str())
    .bind(&a.principal.kind)
    .bind(&a.principal.id)
    .bind(&a.principal.agent_provider)
    .bind(serde_json::to_string(&a.scope).unwrap())
    .bind(a.amount_limit.value())
    .bind(a.amount_limit.interval().as_str())
    .bind(a.currency.as_str())
    .bind(millis(a.expires_at))
    .bind(&a.revocation_url)
    .bind(a.receipt_required)
    .bind(a.verification_required)
    .bind(&a.created_by)
    .bind(millis(a.created_at))
    .execute(&mut *c)
    .await
    .unwrap();
    for s in &x.spends {
        sqlx::query(
            "INSERT INTO authority_spends (task_id, authority_id, amount, currency, scope, \
             single_use, window_start, spent_at, released_at) \
             VALUES ($1, $2, $3, $4, $5, FALSE, $6, $7, $8)",
        )
        .bind(s.task_id.as_str())
        .bind(s.authority_id.as_str())
        .bind(s.amount)
        .bind(s.currency.as_str())
        .bind(&s.scope)
        .bind(millis(s.window_start))
        .bind(millis(s.spent_at))
        .bind(s.released_at.map(millis))
        .execute(&mut *c)
        .await
        .unwrap();
    }
}

/// The device grant, the email challenge, the web session and the checkout handoff.
async fn identity(c: &mut PgConnection, x: &Rows) {
    let g = &x.grant;
    sqlx::query(
        "INSERT INTO device_grants (id, device_code_hash, user_code, client_id, agent_name, \
         scopes, status, account_id, key_id, interval_secs, created_at, expires_at, \
         last_polled_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(g.id.as_str())
    .bind(g.device_code_hash.to_hex())
    .bind(g.user_code.as_str())
    .bind(&g.client_id)
    .bind(g.agent_name.as_deref())
    .bind(g.scopes.to_list_string())
    .bind(g.status.as_str())
    .bind(g.account_id.as_ref().map(|a| a.as_str().to_owned()))
    .bind(g.key_id.as_ref().map(|k| k.as_str().to_owned()))
    .bind(i64::from(g.interval_secs))
    .bind(millis(g.created_at))
    .bind(millis(g.expires_at))
    .bind(g.last_polled_at.map(millis))
    .execute(&mut *c)
    .await
    .unwrap();
    let e = &x.challenge;
    sqlx::query(
        "INSERT INTO email_challenges (id, purpose, email, code_hash, agent_name, scopes, \
         attempts, created_at, expires_at, consumed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(e.id.as_str())
    .bind(e.purpose.as_str())
    .bind(e.email.as_str())
    .bind(e.code_hash.to_hex())
    .bind(e.agent_name.as_deref())
    .bind(e.scopes.to_list_string())
    .bind(i64::from(e.attempts))
    .bind(millis(e.created_at))
    .bind(millis(e.expires_at))
    .bind(e.consumed_at.map(millis))
    .execute(&mut *c)
    .await
    .unwrap();
    let s = &x.session;
    sqlx::query(
        "INSERT INTO web_sessions (token_hash, account_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(s.token_hash.to_hex())
    .bind(s.account_id.as_str())
    .bind(millis(s.created_at))
    .bind(millis(s.expires_at))
    .execute(&mut *c)
    .await
    .unwrap();
    let h = &x.handoff;
    sqlx::query(
        "INSERT INTO checkout_handoffs (token_hash, account_id, sku, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(h.token_hash.to_hex())
    .bind(h.account_id.as_str())
    .bind(&h.sku)
    .bind(millis(h.created_at))
    .bind(millis(h.expires_at))
    .execute(&mut *c)
    .await
    .unwrap();
}

/// The cached page, the maps, the agent events, the scan, the meter event, the connection.
async fn the_rest(c: &mut PgConnection, x: &Rows) {
    let p = &x.page;
    sqlx::query(
        "INSERT INTO page_cache (cache_key, requested_url, final_url, status, content_type, \
         charset, body, truncated, redirects, robots, fetched_at) \
         VALUES ('k1', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&p.requested_url)
    .bind(&p.final_url)
    .bind(i64::from(p.status))
    .bind(p.content_type.as_deref())
    .bind(&p.charset)
    .bind(p.body.as_bytes())
    .bind(i64::from(p.truncated))
    .bind(serde_json::to_string(&p.redirects).unwrap())
    .bind(serde_json::to_string(&p.robots).unwrap())
    .bind(millis(p.fetched_at))
    .execute(&mut *c)
    .await
    .unwrap();
    for m in &x.maps {
        sqlx::query(
            "INSERT INTO agent_maps (domain, version, status, origin, document, created_at, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(m.document.domain.as_str())
        .bind(i64::from(m.version))
        .bind(m.status.as_str())
        .bind(&m.origin)
        .bind(serde_json::to_string(&m.document).unwrap())
        .bind(millis(m.created_at))
        .bind(millis(m.updated_at))
        .execute(&mut *c)
        .await
        .unwrap();
    }
    for e in &x.events {
        sqlx::query(
            "INSERT INTO agent_events (id, received_at, event_id, session_id, agent_protocol, \
             discovery_surface, conversion_state, task_type, account_id, event) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&e.id)
        .bind(millis(e.received_at))
        .bind(&e.event_id)
        .bind(&e.session_id)
        .bind(&e.agent_protocol)
        .bind(&e.discovery_surface)
        .bind(&e.conversion_state)
        .bind(&e.task_type)
        .bind(e.account_id.as_ref().map(|a| a.as_str().to_owned()))
        .bind(e.event.to_string())
        .execute(&mut *c)
        .await
        .unwrap();
    }
    let r = &x.report;
    sqlx::query(
        "INSERT INTO readiness_scans (id, url, score, level, completed_at, report) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(r.scan_id.as_str())
    .bind(&r.url)
    .bind(i32::try_from(r.score).unwrap())
    .bind(r.level.as_str())
    .bind(millis(r.completed_at))
    .bind(serde_json::to_string(r).unwrap())
    .execute(&mut *c)
    .await
    .unwrap();
    let m = &x.meter;
    sqlx::query(
        "INSERT INTO meter_events (id, identifier, event_name, account_id, value, occurred_at, \
         recorded_at, forwarded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(m.id.as_str())
    .bind(&m.identifier)
    .bind(&m.event_name)
    .bind(m.account_id.as_ref().map(|a| a.as_str().to_owned()))
    .bind(m.value)
    .bind(millis(m.occurred_at))
    .bind(millis(m.recorded_at))
    .bind(m.forwarded_at.map(millis))
    .execute(&mut *c)
    .await
    .unwrap();
    let n = &x.connection;
    sqlx::query(
        "INSERT INTO connections (id, account_id, provider, expected_account, upstream_account, \
         state, oauth_state_hash, pkce_verifier, credentials, credentials_expire_at, \
         link_expires_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(n.id.as_str())
    .bind(n.account_id.as_str())
    .bind(n.provider.as_str())
    .bind(n.expected_account.as_deref())
    .bind(n.upstream_account.as_deref())
    .bind(n.state.as_str())
    .bind(&n.oauth_state_hash)
    .bind(n.pkce_verifier.as_bytes())
    .bind(n.credentials.as_ref().map(|s| s.as_bytes().to_vec()))
    .bind(n.credentials_expire_at.map(millis))
    .bind(millis(n.link_expires_at))
    .bind(millis(n.created_at))
    .bind(millis(n.updated_at))
    .execute(&mut *c)
    .await
    .unwrap();
}
