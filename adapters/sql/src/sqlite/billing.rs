//! `BillingStore`: checkouts, verified payment events, receipts, checkout handoffs and meter
//! events. Applying a payment event is one transaction that stores the event (its
//! `(provider, webhook_id)` is unique) and every movement it calls for (each receipt and
//! ledger entry unique per account and reference), so a replay moves nothing twice. SQLite's
//! one writer applies the events of a payment one at a time.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, SqliteConnection};
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
    SqliteStore, Tx, backend, corrupt, from_millis, is_foreign_key_violation, is_unique_violation,
    ledger::insert_entry, liens, millis, undecodable,
};
use crate::errors::refused;
use crate::rows;

async fn insert_receipt(tx: &mut SqliteConnection, r: &Receipt) -> Result<(), sqlx::Error> {
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
    .bind(millis(r.created_at))
    .execute(tx)
    .await
    .map(|_| ())
}

impl SqliteStore {
    async fn try_apply_payment_event(
        &self,
        event: &PaymentEvent,
    ) -> Result<EventOutcome, sqlx::Error> {
        let payment_id = event.fact.payment_id();
        let mut tx = self.begin_write().await?;
        // This delivery if it was stored before, and the earlier events of its payment, in
        // one read.
        let rows = sqlx::query(
            "SELECT webhook_id = $2 AS this_delivery, status, fact FROM payment_events \
             WHERE provider = $1 AND (webhook_id = $2 OR payment_id = $3) ORDER BY seq",
        )
        .bind(&event.provider)
        .bind(&event.webhook_id)
        .bind(payment_id)
        .fetch_all(&mut *tx)
        .await?;
        for r in &rows {
            if r.try_get::<bool, _>("this_delivery")? {
                return Ok(EventOutcome::Duplicate {
                    status: r.try_get("status")?,
                });
            }
        }
        let outcome = match (&event.fact, payment_id) {
            (PaymentFact::Malformed { reason }, _) => EventOutcome::Rejected(reason.clone()),
            (_, None) => EventOutcome::Acknowledged,
            (fact, Some(pid)) => {
                let mut facts = rows
                    .iter()
                    .map(|r| {
                        serde_json::from_str::<PaymentFact>(r.try_get("fact")?)
                            .map_err(|e| undecodable(corrupt("payment fact")(e)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                facts.push(fact.clone());
                self.apply_facts(&mut tx, event, pid, &facts).await?
            }
        };
        let fact = serde_json::to_string(&event.fact).unwrap_or_default();
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
        .bind(millis(event.received_at))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(outcome)
    }

    /// Applies what the payment's events (`facts`, the new one last) call for.
    async fn apply_facts(
        &self,
        tx: &mut Tx,
        event: &PaymentEvent,
        payment_id: &str,
        facts: &[PaymentFact],
    ) -> Result<EventOutcome, sqlx::Error> {
        let mut checkouts = Vec::new();
        for id in named_checkouts(facts) {
            let found = sqlx::query(
                "SELECT id, account_id, sku, plan, credits, amount, currency, \
                 provider_session_id, checkout_url, idempotency_key, created_at, expires_at \
                 FROM checkouts WHERE id = $1",
            )
            .bind(id.as_str())
            .fetch_optional(&mut **tx)
            .await?;
            if let Some(r) = found {
                checkouts.push(rows::checkout(&r).map_err(undecodable)?);
            }
        }
        let (applied, (spendable, unclaimed), bought_by, liens) =
            match payment_checkout(facts, &checkouts) {
                Some(c) => {
                    // The payment's receipts, and what failed tasks froze for it.
                    let rows = sqlx::query(
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
                    .await?;
                    let applied = rows
                        .iter()
                        .map(|r| {
                            Ok(AppliedMovement {
                                reference: r.try_get("reference")?,
                                spendable_delta: r.try_get("spendable_delta")?,
                                frozen_delta: r.try_get("frozen_delta")?,
                                shortfall: r.try_get("shortfall")?,
                            })
                        })
                        .collect::<Result<Vec<_>, sqlx::Error>>()?;
                    let (spendable, held, frozen): (i64, i64, i64) = sqlx::query_as(
                        "SELECT spendable, held, frozen FROM accounts WHERE id = $1",
                    )
                    .bind(c.account_id.as_str())
                    .fetch_one(&mut **tx)
                    .await?;
                    let liens = liens::read(tx, &c.account_id, frozen, event.received_at).await?;
                    let owed: i64 = sqlx::query_scalar(IN_FLIGHT_OWED)
                        .bind(c.account_id.as_str())
                        .fetch_one(&mut **tx)
                        .await?;
                    // Another payment that bought the checkout (the one writer reads it alone).
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
            // A purchase also raises a free account to the checkout's plan.
            let balance_after: i64 = sqlx::query_scalar(
                "UPDATE accounts SET spendable = spendable + $1, frozen = frozen + $2, \
                 plan = CASE WHEN $3 AND plan = 'free' THEN $4 ELSE plan END \
                 WHERE id = $5 RETURNING spendable",
            )
            .bind(m.spendable_delta)
            .bind(m.frozen_delta)
            .bind(m.kind == ReceiptKind::Purchase)
            .bind(checkout.plan.as_str())
            .bind(checkout.account_id.as_str())
            .fetch_one(&mut **tx)
            .await?;
            if m.owed_delta > 0 {
                spread_owed(tx, &checkout.account_id, m.owed_delta).await?;
            }
            let (entry, receipt) =
                m.records(&checkout, payment_id, balance_after, event.received_at);
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
        cap_claims(tx, &checkout.account_id).await?;
        if receipts.is_empty() {
            return Ok(EventOutcome::Acknowledged);
        }
        Ok(EventOutcome::Applied(receipts))
    }
}

/// Sets what `payment` claims of the account's credits in flight for its open disputes: at most
/// what its actions in flight hold that refunds and other payments' claims do not. A claim
/// keeps its place in the order claims are served in (`since`).
async fn set_claim(
    tx: &mut SqliteConnection,
    account: &AccountId,
    payment: &str,
    claim: i64,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let credits: i64 = sqlx::query_scalar(
        "SELECT max(0, min($3, held \
             - (SELECT COALESCE(SUM(owed), 0) FROM tasks \
                WHERE account_id = $1 AND status = 'in_flight') \
             - (SELECT COALESCE(SUM(credits), 0) FROM freeze_claims \
                WHERE account_id = $1 AND payment_id <> $2))) \
         FROM accounts WHERE id = $1",
    )
    .bind(account.as_str())
    .bind(payment)
    .bind(claim)
    .fetch_one(&mut *tx)
    .await?;
    if credits > 0 {
        sqlx::query(
            "INSERT INTO freeze_claims (account_id, payment_id, credits, since) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (account_id, payment_id) DO UPDATE SET credits = excluded.credits",
        )
        .bind(account.as_str())
        .bind(payment)
        .bind(credits)
        .bind(millis(at))
        .execute(&mut *tx)
        .await?;
    } else {
        sqlx::query("DELETE FROM freeze_claims WHERE account_id = $1 AND payment_id = $2")
            .bind(account.as_str())
            .bind(payment)
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Holds what disputes claim to what the account's actions in flight hold that refunds do not
/// claim (`billing::serve_claims`, given the room): the newest claims shrink first, as the
/// oldest are served first. Run after a payment's event (refunds may claim more) and after a
/// settlement of an account with claims (tasks.rs: the credits in flight went down).
pub(super) async fn cap_claims(
    tx: &mut SqliteConnection,
    account: &AccountId,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        r#"
        DELETE FROM freeze_claims
        WHERE account_id = $1 AND payment_id IN (
            SELECT c.payment_id
            FROM (SELECT payment_id,
                      COALESCE(SUM(credits) OVER (ORDER BY since, payment_id
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
                  FROM freeze_claims WHERE account_id = $1) AS c,
                (SELECT held - (SELECT COALESCE(SUM(owed), 0) FROM tasks
                                WHERE account_id = $1 AND status = 'in_flight') AS room
                 FROM accounts WHERE id = $1) AS r
            WHERE c.before >= r.room);

        UPDATE freeze_claims SET credits = c.room - c.before
        FROM (SELECT payment_id, credits,
                  COALESCE(SUM(credits) OVER (ORDER BY since, payment_id
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
                  (SELECT held - (SELECT COALESCE(SUM(owed), 0) FROM tasks
                                  WHERE account_id = $1 AND status = 'in_flight')
                   FROM accounts WHERE id = $1) AS room
              FROM freeze_claims WHERE account_id = $1) AS c
        WHERE freeze_claims.account_id = $1 AND freeze_claims.payment_id = c.payment_id
            AND c.before + c.credits > c.room
        "#,
    )
    .bind(account.as_str())
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The first other payment that bought a checkout of the account: (account, checkout, this
/// payment).
const BOUGHT_BY: &str = "SELECT payment_id FROM receipts \
     WHERE account_id = $1 AND checkout_id = $2 AND kind = 'purchase' AND payment_id <> $3 \
     ORDER BY created_at, id LIMIT 1";

/// What refunded payments claim of the account's actions in flight: the sum of their shares.
const IN_FLIGHT_OWED: &str = "SELECT COALESCE(SUM(owed), 0) FROM tasks \
     WHERE account_id = $1 AND status = 'in_flight'";

/// Spreads a claim of `owed` credits over the account's tasks in flight, oldest first, each up
/// to its cost (`svc_ports::ledger::spread_owed`, in SQL).
async fn spread_owed(
    tx: &mut SqliteConnection,
    account: &AccountId,
    owed: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE tasks SET owed = tasks.owed + min(room.room, $2 - room.before) \
         FROM (SELECT id, cost - owed AS room, \
                   COALESCE(SUM(cost - owed) OVER (ORDER BY created_at, id \
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before \
               FROM tasks WHERE account_id = $1 AND status = 'in_flight' AND cost > owed) AS room \
         WHERE tasks.id = room.id AND room.before < $2",
    )
    .bind(account.as_str())
    .bind(owed)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[async_trait]
impl BillingStore for SqliteStore {
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
        .bind(millis(checkout.created_at))
        .bind(millis(checkout.expires_at))
        .execute(self.writer())
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
        // A lost race with the same delivery (unique webhook id) or the same movement (unique
        // reference) rolled back whole: what is stored now is the answer.
        let mut last = None;
        for _ in 0..3 {
            match self.try_apply_payment_event(event).await {
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
        // Settled tasks are receipts too (their charge or refund).
        for row in sqlx::query(
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
        .map_err(|e| backend(e, "listing task receipts"))?
        {
            out.extend(task_receipt(&rows::task(&row)?));
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
        .bind(handoff.token_hash.to_hex())
        .bind(handoff.account_id.as_str())
        .bind(&handoff.sku)
        .bind(millis(handoff.created_at))
        .bind(millis(handoff.expires_at))
        .execute(self.writer())
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
        .bind(token_hash.to_hex())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend(e, "reading checkout handoff"))?;
        let Some(r) = row else { return Ok(None) };
        let err = |e| backend(e, "reading checkout handoff");
        let handoff = CheckoutHandoff {
            token_hash: *token_hash,
            account_id: AccountId::parse(r.try_get("account_id").map_err(err)?)
                .map_err(corrupt("account id"))?,
            sku: r.try_get("sku").map_err(err)?,
            created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
            expires_at: from_millis(r.try_get("expires_at").map_err(err)?)?,
        };
        Ok(Some((handoff, r.try_get("taken").map_err(err)?)))
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
        .bind(millis(now))
        .bind(token_hash.to_hex())
        .fetch_optional(self.writer())
        .await
        .map_err(|e| backend(e, "taking checkout handoff"))?;
        let Some(r) = row else { return Ok(None) };
        let err = |e| backend(e, "reading checkout handoff");
        Ok(Some(CheckoutHandoff {
            token_hash: *token_hash,
            account_id: AccountId::parse(r.try_get("account_id").map_err(err)?)
                .map_err(corrupt("account id"))?,
            sku: r.try_get("sku").map_err(err)?,
            created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
            expires_at: from_millis(r.try_get("expires_at").map_err(err)?)?,
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
        .bind(millis(event.occurred_at))
        .bind(millis(event.recorded_at))
        .bind(event.forwarded_at.map(millis))
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "recording meter event"))?;
        if done.rows_affected() == 1 {
            return Ok(MeterOutcome::Recorded(event.clone()));
        }
        let row = sqlx::query(
            "SELECT id, identifier, event_name, account_id, value, occurred_at, recorded_at, \
             forwarded_at FROM meter_events WHERE identifier = $1",
        )
        .bind(&event.identifier)
        .fetch_one(self.writer())
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
        .bind(millis(at))
        .bind(id.as_str())
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "marking meter event forwarded"))?;
        Ok(())
    }
}
