//! `BillingStore`: checkouts, verified payment events (their fact JSONB, their body BYTEA),
//! receipts, checkout handoffs and meter events. Applying a payment event is one transaction
//! that stores the event (`(provider, webhook_id)` is unique) and every movement it calls for
//! (each receipt and ledger entry unique per account and reference), so a replay, or the same
//! event delivered to two instances at once, moves nothing twice.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, Transaction, types::Json};
use svc_ports::{
    AccountId, CheckoutId, KeyHash, MeterEventId,
    billing::{
        AppliedMovement, CheckoutHandoff, CheckoutOutcome, CheckoutRecord, Currency, EventOutcome,
        Liens, MeterEvent, MeterOutcome, PaymentEvent, PaymentFact, PaymentPlan, RECOVERY_PREFIX,
        Receipt, ReceiptKind, named_checkouts, payment_checkout, plan_payment, task_receipt,
    },
    store::{BillingError, BillingStore, StoreError},
};

use super::{
    PostgresStore, backend, col, corrupt, is_foreign_key_violation, is_unique_violation,
    jsonb_safe, ledger::insert_entry, liens, ms, parsed,
};
use crate::errors::{refused, undecodable};
use crate::rows;

async fn insert_receipt(conn: &mut PgConnection, r: &Receipt) -> Result<(), sqlx::Error> {
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
    .bind(r.currency.as_ref().map(Currency::as_str))
    .bind(r.payment_id.as_deref())
    .bind(r.checkout_id.as_ref().map(CheckoutId::as_str))
    .bind(&r.reference)
    .bind(&r.note)
    .bind(ms(r.created_at))
    .execute(conn)
    .await
    .map(|_| ())
}

impl PostgresStore {
    async fn try_apply_payment_event(
        &self,
        event: &PaymentEvent,
        fact: &serde_json::Value,
    ) -> Result<EventOutcome, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let payment_id = event.fact.payment_id();
        if let Some(pid) = payment_id {
            // Events of one payment are applied one at a time across every instance: a
            // transaction advisory lock on the payment, released at commit or rollback.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(format!("{}\n{pid}", event.provider))
                .execute(&mut *tx)
                .await?;
        }
        let seen: Option<String> = sqlx::query_scalar(
            "SELECT status FROM payment_events WHERE provider = $1 AND webhook_id = $2",
        )
        .bind(&event.provider)
        .bind(&event.webhook_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(status) = seen {
            return Ok(EventOutcome::Duplicate { status });
        }
        let outcome = match (&event.fact, payment_id) {
            (PaymentFact::Malformed { reason }, _) => EventOutcome::Rejected(reason.clone()),
            (_, None) => EventOutcome::Acknowledged,
            (fact, Some(pid)) => {
                let earlier: Vec<Json<PaymentFact>> = sqlx::query_scalar(
                    "SELECT fact FROM payment_events WHERE provider = $1 AND payment_id = $2 \
                     ORDER BY seq",
                )
                .bind(&event.provider)
                .bind(pid)
                .fetch_all(&mut *tx)
                .await?;
                let mut facts: Vec<PaymentFact> = earlier.into_iter().map(|f| f.0).collect();
                facts.push(fact.clone());
                apply_facts(&mut tx, event, pid, &facts).await?
            }
        };
        let detail = match &outcome {
            EventOutcome::Rejected(reason) => Some(reason.as_str()),
            _ => None,
        };
        sqlx::query(
            "INSERT INTO payment_events (provider, webhook_id, event_type, payment_id, fact, \
             body, status, detail, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&event.provider)
        .bind(&event.webhook_id)
        .bind(&event.event_type)
        .bind(payment_id)
        .bind(fact)
        .bind(&event.body)
        .bind(outcome.status())
        .bind(detail)
        .bind(ms(event.received_at))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(outcome)
    }
}

/// Works out and applies what all of a payment's events call for, inside the event's
/// transaction (the payment is locked).
async fn apply_facts(
    tx: &mut Transaction<'static, Postgres>,
    event: &PaymentEvent,
    payment_id: &str,
    facts: &[PaymentFact],
) -> Result<EventOutcome, sqlx::Error> {
    let ids: Vec<String> = named_checkouts(facts)
        .into_iter()
        .map(|id| id.as_str().to_owned())
        .collect();
    // In the order the facts name them.
    let checkouts = sqlx::query(
        "SELECT id, account_id, sku, plan, credits, amount, currency, provider_session_id, \
         checkout_url, idempotency_key, created_at, expires_at \
         FROM checkouts WHERE id = ANY($1) ORDER BY array_position($1, id)",
    )
    .bind(&ids)
    .fetch_all(&mut **tx)
    .await?
    .iter()
    .map(rows::checkout)
    .collect::<Result<Vec<_>, _>>()
    .map_err(undecodable)?;
    let (applied, (spendable, unclaimed), bought_by, liens) =
        match payment_checkout(facts, &checkouts) {
            Some(c) => {
                // The account is locked before anything of it is read: settlements write what they
                // freeze for the payment's claim under this lock, so the receipts read after it
                // are all there are.
                let (spendable, held, frozen): (i64, i64, i64) = sqlx::query_as(
                    "SELECT spendable, held, frozen FROM accounts WHERE id = $1 FOR UPDATE",
                )
                .bind(c.account_id.as_str())
                .fetch_one(&mut **tx)
                .await?;
                let liens = liens::read(tx, &c.account_id, frozen, event.received_at).await?;
                // The payment's receipts, and what failed tasks froze for it.
                let applied = sqlx::query(
                    "SELECT reference, spendable_delta, frozen_delta, shortfall FROM receipts \
                 WHERE account_id = $1 AND payment_id = $2 \
                     AND reference NOT LIKE $3 \
                 UNION ALL \
                 SELECT 'task:' || task_id || ':freeze:' || payment_id, -credits, credits, 0 \
                 FROM task_freezes WHERE account_id = $1 AND payment_id = $2",
                )
                .bind(c.account_id.as_str())
                .bind(payment_id)
                // Recoveries are the liens' books, not the payment's own (`Movement::in_payment_books`).
                .bind(format!("{RECOVERY_PREFIX}%"))
                .fetch_all(&mut **tx)
                .await?
                .iter()
                .map(|r| {
                    Ok(AppliedMovement {
                        reference: col(r, "reference")?,
                        spendable_delta: col(r, "spendable_delta")?,
                        frozen_delta: col(r, "frozen_delta")?,
                        shortfall: col(r, "shortfall")?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()
                .map_err(undecodable)?;
                // A statement of its own, after the lock: settlements wait for it, so the shares
                // read now are the ones the spread below adds to (a subquery of the locking
                // statement would read them as they were before it waited).
                let owed: i64 = sqlx::query_scalar(IN_FLIGHT_OWED)
                    .bind(c.account_id.as_str())
                    .fetch_one(&mut **tx)
                    .await?;
                // Another payment that bought the checkout. Payments of one checkout are of one
                // account, whose lock is held: a second payment applied at once waits for it, and
                // reads the purchase it committed.
                let bought_by: Option<String> = sqlx::query_scalar(BOUGHT_BY)
                    .bind(c.account_id.as_str())
                    .bind(c.id.as_str())
                    .bind(payment_id)
                    .fetch_optional(&mut **tx)
                    .await?;
                (applied, (spendable, held - owed), bought_by, liens)
            }
            None => (Vec::new(), (0, 0), None, Liens::none(event.received_at)),
        };
    let (checkout, moves, freeze_claim, liens) = match plan_payment(
        facts,
        &checkouts,
        &applied,
        spendable,
        unclaimed,
        bought_by.as_deref(),
        &liens,
    ) {
        PaymentPlan::Pending => return Ok(EventOutcome::Pending),
        PaymentPlan::Rejected(reason) => return Ok(EventOutcome::Rejected(reason)),
        PaymentPlan::Moves {
            checkout,
            moves,
            freeze_claim,
            liens,
        } => (checkout, moves, freeze_claim, liens),
    };
    // Events that waited for this payment are now accounted for.
    sqlx::query(
        "UPDATE payment_events SET status = 'applied' \
         WHERE provider = $1 AND payment_id = $2 AND status = 'pending'",
    )
    .bind(&event.provider)
    .bind(payment_id)
    .execute(&mut **tx)
    .await?;
    let mut receipts = Vec::with_capacity(moves.len());
    for m in &moves {
        // The plan is raised from `free` to the checkout's with a purchase.
        let balance_after: i64 = sqlx::query_scalar(
            "UPDATE accounts SET spendable = spendable + $1, frozen = frozen + $2, \
             plan = CASE WHEN $4 AND plan = 'free' THEN $5 ELSE plan END \
             WHERE id = $3 RETURNING spendable",
        )
        .bind(m.spendable_delta)
        .bind(m.frozen_delta)
        .bind(checkout.account_id.as_str())
        .bind(m.kind == ReceiptKind::Purchase)
        .bind(checkout.plan.as_str())
        .fetch_one(&mut **tx)
        .await?;
        if m.owed_delta > 0 {
            spread_owed(tx, &checkout.account_id, m.owed_delta).await?;
        }
        let (entry, receipt) = m.records(&checkout, payment_id, balance_after, event.received_at);
        insert_entry(tx, &entry).await?;
        insert_receipt(tx, &receipt).await?;
        receipts.push(receipt);
    }
    if let Some(liens) = liens {
        liens::keep(tx, &checkout.account_id, &liens).await?;
    }
    if let Some(claim) = freeze_claim {
        set_claim(
            tx,
            &checkout.account_id,
            payment_id,
            claim,
            event.received_at,
        )
        .await?;
    }
    // A refund's claim on the credits in flight comes before any dispute's.
    sqlx::query("SELECT svc_cap_claims($1)")
        .bind(checkout.account_id.as_str())
        .execute(&mut **tx)
        .await?;
    if receipts.is_empty() {
        return Ok(EventOutcome::Acknowledged);
    }
    Ok(EventOutcome::Applied(receipts))
}

/// Sets what `payment` claims of the account's credits in flight for its open disputes: at most
/// what its actions in flight hold that refunds and other payments' claims do not. A claim
/// keeps its place in the order claims are served in (`since`). The account row is locked.
async fn set_claim(
    tx: &mut Transaction<'static, Postgres>,
    account: &AccountId,
    payment: &str,
    claim: i64,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let credits: i64 = sqlx::query_scalar(
        "SELECT GREATEST(0, LEAST($3, held \
             - (SELECT COALESCE(SUM(owed), 0) FROM tasks \
                WHERE account_id = $1 AND status = 'in_flight') \
             - (SELECT COALESCE(SUM(credits), 0) FROM freeze_claims \
                WHERE account_id = $1 AND payment_id <> $2)))::BIGINT \
         FROM accounts WHERE id = $1",
    )
    .bind(account.as_str())
    .bind(payment)
    .bind(claim)
    .fetch_one(&mut **tx)
    .await?;
    if credits > 0 {
        sqlx::query(
            "INSERT INTO freeze_claims (account_id, payment_id, credits, since) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (account_id, payment_id) DO UPDATE SET credits = EXCLUDED.credits",
        )
        .bind(account.as_str())
        .bind(payment)
        .bind(credits)
        // To the millisecond, as every time stored: claims made within one millisecond are
        // served in payment id order, as on the other stores.
        .bind(ms(at))
        .execute(&mut **tx)
        .await?;
    } else {
        sqlx::query("DELETE FROM freeze_claims WHERE account_id = $1 AND payment_id = $2")
            .bind(account.as_str())
            .bind(payment)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// The first other payment that bought a checkout of the account: (account, checkout, this
/// payment).
const BOUGHT_BY: &str = "SELECT payment_id FROM receipts \
     WHERE account_id = $1 AND checkout_id = $2 AND kind = 'purchase' AND payment_id <> $3 \
     ORDER BY created_at, id LIMIT 1";

/// What refunded payments claim of the account's actions in flight: the sum of their shares.
const IN_FLIGHT_OWED: &str = "SELECT COALESCE(SUM(owed), 0)::BIGINT FROM tasks \
     WHERE account_id = $1 AND status = 'in_flight'";

/// Spreads a claim of `owed` credits over the account's tasks in flight, oldest first, each up
/// to its cost (`svc_ports::ledger::spread_owed`, in SQL).
async fn spread_owed(
    tx: &mut Transaction<'static, Postgres>,
    account: &AccountId,
    owed: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE tasks SET owed = tasks.owed + LEAST(room.room, $2 - room.before) \
         FROM (SELECT id, cost - owed AS room, \
                   COALESCE(SUM(cost - owed) OVER (ORDER BY created_at, id \
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::BIGINT AS before \
               FROM tasks WHERE account_id = $1 AND status = 'in_flight' AND cost > owed) AS room \
         WHERE tasks.id = room.id AND room.before < $2",
    )
    .bind(account.as_str())
    .bind(owed)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[async_trait]
impl BillingStore for PostgresStore {
    async fn insert_checkout(
        &self,
        checkout: &CheckoutRecord,
    ) -> Result<CheckoutOutcome, BillingError> {
        let r = sqlx::query(
            "INSERT INTO checkouts (id, account_id, sku, plan, credits, amount, currency, \
             provider_session_id, checkout_url, idempotency_key, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(checkout.id.as_str())
        .bind(checkout.account_id.as_str())
        .bind(&checkout.sku)
        .bind(checkout.plan.as_str())
        .bind(checkout.credits)
        .bind(checkout.amount)
        .bind(checkout.currency.as_str())
        .bind(&checkout.provider_session_id)
        .bind(&checkout.checkout_url)
        .bind(checkout.idempotency_key.as_deref())
        .bind(ms(checkout.created_at))
        .bind(ms(checkout.expires_at))
        .execute(&self.pool)
        .await;
        match r {
            Ok(_) => Ok(CheckoutOutcome::Created(checkout.clone())),
            Err(e) if is_foreign_key_violation(&e) => Err(BillingError::UnknownAccount),
            Err(e) if is_unique_violation(&e) => {
                let key = checkout.idempotency_key.as_deref().unwrap_or_default();
                match self.checkout_by_key(&checkout.account_id, key).await? {
                    Some(existing) => Ok(CheckoutOutcome::Existing(existing)),
                    None => Err(backend(e, "storing checkout").into()),
                }
            }
            Err(e) => Err(backend(e, "storing checkout").into()),
        }
    }

    async fn checkout_by_key(
        &self,
        account: &AccountId,
        idempotency_key: &str,
    ) -> Result<Option<CheckoutRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, sku, plan, credits, amount, currency, provider_session_id, \
             checkout_url, idempotency_key, created_at, expires_at \
             FROM checkouts WHERE account_id = $1 AND idempotency_key = $2",
        )
        .bind(account.as_str())
        .bind(idempotency_key)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading checkout"))?
        .map(|r| rows::checkout(&r))
        .transpose()
    }

    async fn checkout(&self, id: &CheckoutId) -> Result<Option<CheckoutRecord>, StoreError> {
        sqlx::query(
            "SELECT id, account_id, sku, plan, credits, amount, currency, provider_session_id, \
             checkout_url, idempotency_key, created_at, expires_at FROM checkouts WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading checkout"))?
        .map(|r| rows::checkout(&r))
        .transpose()
    }

    async fn apply_payment_event(&self, event: &PaymentEvent) -> Result<EventOutcome, StoreError> {
        let fact = serde_json::to_value(&event.fact).map_err(corrupt("payment fact"))?;
        jsonb_safe(&fact, "a payment fact")?;
        // A lost race with the same delivery (unique webhook id) or the same movement
        // (unique reference) rolled back whole: what is stored now is the answer.
        let mut last = None;
        for _ in 0..3 {
            match self.try_apply_payment_event(event, &fact).await {
                Ok(outcome) => return Ok(outcome),
                Err(e) if is_unique_violation(&e) => last = Some(e),
                Err(e) => return Err(backend(e, "applying payment event")),
            }
        }
        Err(backend(
            last.unwrap_or(sqlx::Error::RowNotFound),
            "applying payment event",
        ))
    }

    async fn liens(
        &self,
        account: &AccountId,
    ) -> Result<Vec<svc_ports::billing::Lien>, StoreError> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| backend(e, "reading liens"))?;
        liens::open(&mut conn, account)
            .await
            .map_err(|e| backend(e, "reading liens"))
    }

    async fn receipts(&self, account: &AccountId, limit: u32) -> Result<Vec<Receipt>, StoreError> {
        let mut out = sqlx::query(
            "SELECT id, account_id, kind, credits, spendable_delta, frozen_delta, shortfall, \
             amount, currency, payment_id, checkout_id, reference, note, created_at \
             FROM receipts WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
        )
        .bind(account.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing receipts"))?
        .iter()
        .map(rows::receipt)
        .collect::<Result<Vec<_>, _>>()?;
        let tasks = sqlx::query(
            "SELECT id, account_id, key_id, domain, action, cost, idempotency_key, fingerprint, \
             status, response_status, response_body, artifact_id, artifact, created_at, \
             settled_at, verified_artifact, verified_at \
             FROM tasks WHERE account_id = $1 AND settled_at IS NOT NULL \
             ORDER BY settled_at DESC LIMIT $2",
        )
        .bind(account.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing task receipts"))?;
        for row in &tasks {
            out.extend(task_receipt(&rows::task(row)?));
        }
        // What failed tasks' refunds froze for disputed payments: receipts of those payments.
        for row in sqlx::query(
            "SELECT task_id, account_id, payment_id, credits, created_at FROM task_freezes \
             WHERE account_id = $1 ORDER BY created_at DESC LIMIT $2",
        )
        .bind(account.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "listing task freezes"))?
        {
            out.push(rows::task_freeze(&row)?.receipt());
        }
        out.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(out)
    }

    async fn insert_handoff(&self, handoff: &CheckoutHandoff) -> Result<(), BillingError> {
        sqlx::query(
            "INSERT INTO checkout_handoffs (token_hash, account_id, sku, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(handoff.token_hash.as_bytes().as_slice())
        .bind(handoff.account_id.as_str())
        .bind(&handoff.sku)
        .bind(ms(handoff.created_at))
        .bind(ms(handoff.expires_at))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(refused("storing checkout handoff"))
    }

    async fn handoff(
        &self,
        token_hash: &KeyHash,
    ) -> Result<Option<(CheckoutHandoff, bool)>, StoreError> {
        let row = sqlx::query(
            "SELECT account_id, sku, created_at, expires_at, taken_at IS NOT NULL AS taken \
             FROM checkout_handoffs WHERE token_hash = $1",
        )
        .bind(token_hash.as_bytes().as_slice())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading checkout handoff"))?;
        let Some(r) = row else { return Ok(None) };
        let handoff = CheckoutHandoff {
            token_hash: *token_hash,
            account_id: parsed(&r, "account_id", AccountId::parse)?,
            sku: col(&r, "sku")?,
            created_at: col(&r, "created_at")?,
            expires_at: col(&r, "expires_at")?,
        };
        Ok(Some((handoff, col(&r, "taken")?)))
    }

    async fn take_handoff(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<CheckoutHandoff>, StoreError> {
        // One statement: only the first take matches `taken_at IS NULL`.
        let row = sqlx::query(
            "UPDATE checkout_handoffs SET taken_at = $1 \
             WHERE token_hash = $2 AND taken_at IS NULL AND expires_at > $1 \
             RETURNING account_id, sku, created_at, expires_at",
        )
        .bind(ms(now))
        .bind(token_hash.as_bytes().as_slice())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "taking checkout handoff"))?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(CheckoutHandoff {
            token_hash: *token_hash,
            account_id: parsed(&r, "account_id", AccountId::parse)?,
            sku: col(&r, "sku")?,
            created_at: col(&r, "created_at")?,
            expires_at: col(&r, "expires_at")?,
        }))
    }

    async fn record_meter_event(&self, event: &MeterEvent) -> Result<MeterOutcome, StoreError> {
        let done = sqlx::query(
            "INSERT INTO meter_events (id, identifier, event_name, account_id, value, \
             occurred_at, recorded_at, forwarded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (identifier) DO NOTHING",
        )
        .bind(event.id.as_str())
        .bind(&event.identifier)
        .bind(&event.event_name)
        .bind(event.account_id.as_ref().map(AccountId::as_str))
        .bind(event.value)
        .bind(ms(event.occurred_at))
        .bind(ms(event.recorded_at))
        .bind(event.forwarded_at.map(ms))
        .execute(&self.pool)
        .await
        .map_err(|e| backend(e, "recording meter event"))?;
        if done.rows_affected() == 1 {
            return Ok(MeterOutcome::Recorded(event.clone()));
        }
        // A new statement sees the row that conflicted (it may have committed after this
        // INSERT's snapshot was taken).
        let row = sqlx::query(
            "SELECT id, identifier, event_name, account_id, value, occurred_at, recorded_at, \
             forwarded_at FROM meter_events WHERE identifier = $1",
        )
        .bind(&event.identifier)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| backend(e, "reading meter event"))?;
        Ok(MeterOutcome::Existing(rows::meter_event(&row)?))
    }

    async fn mark_meter_forwarded(
        &self,
        id: &MeterEventId,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE meter_events SET forwarded_at = $1 WHERE id = $2 AND forwarded_at IS NULL",
        )
        .bind(ms(at))
        .bind(id.as_str())
        .execute(&self.pool)
        .await
        .map_err(|e| backend(e, "marking meter event forwarded"))?;
        Ok(())
    }
}
