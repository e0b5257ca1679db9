//! In-memory checkouts, payment events, receipts, handoffs and meter events, under the store's
//! one lock so that an event and the credits it moves change together.

use async_trait::async_trait;
use chrono::{DateTime, SubsecRound, Utc};
use svc_ports::{
    AccountId, CheckoutId, KeyHash, LedgerEntry, MeterEventId, Plan,
    billing::{
        AppliedMovement, CheckoutHandoff, CheckoutOutcome, CheckoutRecord, EventOutcome, Lien,
        Liens, MeterEvent, MeterOutcome, PaymentEvent, PaymentFact, PaymentPlan, Receipt,
        ReceiptKind, TaskFreeze, in_payment_books, named_checkouts, oldest_first, payment_checkout,
        plan_payment, task_receipt,
    },
    store::{BillingError, BillingStore, StoreError},
};

use crate::{MemoryStore, memory::State};

struct StoredPaymentEvent {
    provider: String,
    webhook_id: String,
    payment_id: Option<String>,
    fact: PaymentFact,
    status: String,
}

#[derive(Default)]
pub(crate) struct BillingState {
    checkouts: Vec<CheckoutRecord>,
    events: Vec<StoredPaymentEvent>,
    pub(crate) receipts: Vec<Receipt>,
    /// What each disputed payment still claims of the credits in flight: (account, payment,
    /// credits, since), served oldest first.
    pub(crate) claims: Vec<(AccountId, String, i64, DateTime<Utc>)>,
    /// What failed tasks' refunds froze for those claims.
    pub(crate) task_freezes: Vec<TaskFreeze>,
    /// Write-offs disputes' frozen credits may pay back, per account, oldest first.
    liens: Vec<(AccountId, Lien)>,
    handoffs: Vec<(CheckoutHandoff, bool)>,
    meters: Vec<MeterEvent>,
}

fn apply_facts(
    s: &mut State,
    event: &PaymentEvent,
    payment_id: &str,
    facts: &[PaymentFact],
) -> EventOutcome {
    let checkouts: Vec<CheckoutRecord> = named_checkouts(facts)
        .iter()
        .filter_map(|id| s.billing.checkouts.iter().find(|c| &c.id == id).cloned())
        .collect();
    let (applied, (spendable, unclaimed)) = match payment_checkout(facts, &checkouts) {
        Some(c) => (
            s.billing
                .receipts
                .iter()
                .filter(|r| {
                    r.account_id == c.account_id
                        && r.payment_id.as_deref() == Some(payment_id)
                        && in_payment_books(&r.reference)
                })
                .map(AppliedMovement::from)
                .chain(
                    s.billing
                        .task_freezes
                        .iter()
                        .filter(|f| f.account_id == c.account_id && f.payment_id == payment_id)
                        .map(TaskFreeze::applied),
                )
                .collect(),
            s.balances
                .get(&c.account_id)
                .map(|b| (b.spendable, b.held - in_flight_owed(s, &c.account_id)))
                .unwrap_or((0, 0)),
        ),
        None => (Vec::new(), (0, 0)),
    };
    // Another payment that bought the checkout, first by when it did.
    let bought_by = payment_checkout(facts, &checkouts).and_then(|c| {
        s.billing
            .receipts
            .iter()
            .filter(|r| {
                r.kind == ReceiptKind::Purchase
                    && r.account_id == c.account_id
                    && r.checkout_id.as_ref() == Some(&c.id)
                    && r.payment_id.as_deref() != Some(payment_id)
            })
            .min_by_key(|r| (r.created_at, r.id.clone()))
            .and_then(|r| r.payment_id.clone())
    });
    let liens = match payment_checkout(facts, &checkouts) {
        Some(c) => Liens {
            frozen: s.balances.get(&c.account_id).map_or(0, |b| b.frozen),
            open: open_liens(s, &c.account_id),
            at: event.received_at,
        },
        None => Liens::none(event.received_at),
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
        PaymentPlan::Pending => return EventOutcome::Pending,
        PaymentPlan::Rejected(reason) => return EventOutcome::Rejected(reason),
        PaymentPlan::Moves {
            checkout,
            moves,
            freeze_claim,
            liens,
        } => (checkout, moves, freeze_claim, liens),
    };
    for e in s.billing.events.iter_mut().filter(|e| {
        e.provider == event.provider
            && e.payment_id.as_deref() == Some(payment_id)
            && e.status == "pending"
    }) {
        e.status = "applied".into();
    }
    let mut receipts = Vec::with_capacity(moves.len());
    for m in &moves {
        let balance = s.balances.entry(checkout.account_id.clone()).or_default();
        balance.spendable += m.spendable_delta;
        balance.frozen += m.frozen_delta;
        let balance_after = balance.spendable;
        if m.owed_delta > 0 {
            spread(s, &checkout.account_id, m.owed_delta);
        }
        if m.kind == ReceiptKind::Purchase
            && let Some(account) = s.accounts.get_mut(&checkout.account_id)
            && account.plan == Plan::Free
        {
            account.plan = checkout.plan;
        }
        let (entry, receipt): (LedgerEntry, Receipt) =
            m.records(&checkout, payment_id, balance_after, event.received_at);
        s.entries.push(entry);
        s.billing.receipts.push(receipt.clone());
        receipts.push(receipt);
    }
    if let Some(liens) = liens {
        s.billing.liens.retain(|(a, _)| a != &checkout.account_id);
        s.billing
            .liens
            .extend(liens.into_iter().map(|l| (checkout.account_id.clone(), l)));
    }
    if let Some(claim) = freeze_claim {
        set_claim(
            s,
            &checkout.account_id,
            payment_id,
            claim,
            event.received_at,
        );
    }
    // A refund's claim on the credits in flight comes before any dispute's.
    cap_claims(s, &checkout.account_id);
    if receipts.is_empty() {
        return EventOutcome::Acknowledged;
    }
    EventOutcome::Applied(receipts)
}

/// Holds what disputes claim to what the account's actions in flight hold that refunds do not
/// claim (the rule of `svc_ports::billing::serve_claims`, given the room): the newest claims
/// shrink first.
pub(crate) fn cap_claims(s: &mut State, account: &AccountId) {
    let room = s.balances.get(account).map_or(0, |b| b.held) - in_flight_owed(s, account);
    let mut claims: Vec<(String, i64, DateTime<Utc>)> = s
        .billing
        .claims
        .iter()
        .filter(|(a, _, _, _)| a == account)
        .map(|(_, p, credits, since)| (p.clone(), *credits, *since))
        .collect();
    claims.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
    let order: Vec<(String, i64)> = claims.iter().map(|(p, c, _)| (p.clone(), *c)).collect();
    let kept = svc_ports::billing::serve_claims(room, &order);
    s.billing.claims.retain_mut(|(a, p, credits, _)| {
        if a != account {
            return true;
        }
        match kept.iter().find(|(k, _)| k == p) {
            Some((_, keep)) => {
                *credits = *keep;
                true
            }
            None => false,
        }
    });
}

/// The account's open liens, oldest first.
fn open_liens(s: &State, account: &AccountId) -> Vec<Lien> {
    let mut open: Vec<Lien> = s
        .billing
        .liens
        .iter()
        .filter(|(a, _)| a == account)
        .map(|(_, l)| l.clone())
        .collect();
    oldest_first(&mut open);
    open
}

/// The account's tasks in flight, oldest first.
fn in_flight<'s>(s: &'s State, account: &AccountId) -> Vec<&'s svc_ports::TaskRecord> {
    let mut tasks: Vec<&svc_ports::TaskRecord> = s
        .actions
        .tasks
        .values()
        .filter(|t| &t.account_id == account && t.status == svc_ports::TaskStatus::InFlight)
        .collect();
    tasks.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    tasks
}

/// Sets what `payment` claims of the account's credits in flight for its open disputes: at most
/// what its actions in flight hold that refunds and other payments' claims do not. A claim
/// keeps its place in the order claims are served in.
fn set_claim(s: &mut State, account: &AccountId, payment: &str, claim: i64, at: DateTime<Utc>) {
    let held = s.balances.get(account).map_or(0, |b| b.held);
    let others: i64 = s
        .billing
        .claims
        .iter()
        .filter(|(a, p, _, _)| a == account && p != payment)
        .map(|(_, _, credits, _)| credits)
        .sum();
    let credits = claim.min(held - in_flight_owed(s, account) - others).max(0);
    let existing = s
        .billing
        .claims
        .iter()
        .position(|(a, p, _, _)| a == account && p == payment);
    match (existing, credits > 0) {
        (Some(i), true) => s.billing.claims[i].2 = credits,
        (Some(i), false) => {
            s.billing.claims.remove(i);
        }
        (None, true) => s
            .billing
            .claims
            // To the millisecond, as the SQL stores keep it: claims made within one
            // millisecond are served in payment id order on every store.
            .push((
                account.clone(),
                payment.to_owned(),
                credits,
                at.trunc_subsecs(3),
            )),
        (None, false) => {}
    }
}

/// Freezes, for the account's claims oldest first, what a failed task gave back after its
/// clawback (`returned`): the freezes written, each a receipt of its payment's.
pub(crate) fn serve_claims(
    s: &mut State,
    task: &svc_ports::TaskRecord,
    returned: i64,
    at: DateTime<Utc>,
) -> Vec<TaskFreeze> {
    let mut claims: Vec<&(AccountId, String, i64, DateTime<Utc>)> = s
        .billing
        .claims
        .iter()
        .filter(|(a, _, _, _)| a == &task.account_id)
        .collect();
    claims.sort_by(|a, b| (a.3, &a.1).cmp(&(b.3, &b.1)));
    let order: Vec<(String, i64)> = claims.iter().map(|c| (c.1.clone(), c.2)).collect();
    let mut frozen = Vec::new();
    for (payment, credits) in svc_ports::billing::serve_claims(returned, &order) {
        if let Some(i) = s
            .billing
            .claims
            .iter()
            .position(|(a, p, _, _)| a == &task.account_id && *p == payment)
        {
            s.billing.claims[i].2 -= credits;
            if s.billing.claims[i].2 == 0 {
                s.billing.claims.remove(i);
            }
        }
        let freeze = TaskFreeze {
            task_id: task.id.clone(),
            account_id: task.account_id.clone(),
            payment_id: payment,
            credits,
            at,
        };
        s.billing.task_freezes.push(freeze.clone());
        frozen.push(freeze);
    }
    frozen
}

#[async_trait]
impl BillingStore for MemoryStore {
    async fn insert_checkout(
        &self,
        checkout: &CheckoutRecord,
    ) -> Result<CheckoutOutcome, BillingError> {
        let mut s = self.lock();
        if !s.accounts.contains_key(&checkout.account_id) {
            return Err(BillingError::UnknownAccount);
        }
        if let Some(key) = &checkout.idempotency_key
            && let Some(existing) = s.billing.checkouts.iter().find(|c| {
                c.account_id == checkout.account_id && c.idempotency_key.as_ref() == Some(key)
            })
        {
            return Ok(CheckoutOutcome::Existing(existing.clone()));
        }
        s.billing.checkouts.push(checkout.clone());
        Ok(CheckoutOutcome::Created(checkout.clone()))
    }

    async fn checkout_by_key(
        &self,
        account: &AccountId,
        idempotency_key: &str,
    ) -> Result<Option<CheckoutRecord>, StoreError> {
        Ok(self
            .lock()
            .billing
            .checkouts
            .iter()
            .find(|c| {
                &c.account_id == account && c.idempotency_key.as_deref() == Some(idempotency_key)
            })
            .cloned())
    }

    async fn checkout(&self, id: &CheckoutId) -> Result<Option<CheckoutRecord>, StoreError> {
        Ok(self
            .lock()
            .billing
            .checkouts
            .iter()
            .find(|c| &c.id == id)
            .cloned())
    }

    async fn apply_payment_event(&self, event: &PaymentEvent) -> Result<EventOutcome, StoreError> {
        let mut guard = self.lock();
        let s = &mut *guard;
        if let Some(seen) = s
            .billing
            .events
            .iter()
            .find(|e| e.provider == event.provider && e.webhook_id == event.webhook_id)
        {
            return Ok(EventOutcome::Duplicate {
                status: seen.status.clone(),
            });
        }
        let payment_id = event.fact.payment_id().map(str::to_owned);
        let outcome = match (&event.fact, &payment_id) {
            (PaymentFact::Malformed { reason }, _) => EventOutcome::Rejected(reason.clone()),
            (_, None) => EventOutcome::Acknowledged,
            (fact, Some(pid)) => {
                let mut facts: Vec<PaymentFact> = s
                    .billing
                    .events
                    .iter()
                    .filter(|e| e.provider == event.provider && e.payment_id.as_ref() == Some(pid))
                    .map(|e| e.fact.clone())
                    .collect();
                facts.push(fact.clone());
                apply_facts(s, event, pid, &facts)
            }
        };
        s.billing.events.push(StoredPaymentEvent {
            provider: event.provider.clone(),
            webhook_id: event.webhook_id.clone(),
            payment_id,
            fact: event.fact.clone(),
            status: outcome.status().to_owned(),
        });
        Ok(outcome)
    }

    async fn liens(&self, account: &AccountId) -> Result<Vec<Lien>, StoreError> {
        Ok(open_liens(&self.lock(), account))
    }

    async fn receipts(&self, account: &AccountId, limit: u32) -> Result<Vec<Receipt>, StoreError> {
        let s = self.lock();
        let mut out: Vec<Receipt> = s
            .billing
            .receipts
            .iter()
            .filter(|r| &r.account_id == account)
            .cloned()
            .collect();
        out.extend(
            s.actions
                .tasks
                .values()
                .filter(|t| &t.account_id == account)
                .filter_map(task_receipt),
        );
        out.extend(
            s.billing
                .task_freezes
                .iter()
                .filter(|f| &f.account_id == account)
                .map(TaskFreeze::receipt),
        );
        out.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(out)
    }

    async fn insert_handoff(&self, handoff: &CheckoutHandoff) -> Result<(), BillingError> {
        let mut s = self.lock();
        if !s.accounts.contains_key(&handoff.account_id) {
            return Err(BillingError::UnknownAccount);
        }
        s.billing.handoffs.push((handoff.clone(), false));
        Ok(())
    }

    async fn handoff(
        &self,
        token_hash: &KeyHash,
    ) -> Result<Option<(CheckoutHandoff, bool)>, StoreError> {
        let s = self.lock();
        Ok(s.billing
            .handoffs
            .iter()
            .find(|(h, _)| &h.token_hash == token_hash)
            .map(|(h, taken)| (h.clone(), *taken)))
    }

    async fn take_handoff(
        &self,
        token_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<CheckoutHandoff>, StoreError> {
        let mut s = self.lock();
        let found = s
            .billing
            .handoffs
            .iter_mut()
            .find(|(h, taken)| &h.token_hash == token_hash && !taken && h.expires_at > now);
        Ok(found.map(|(h, taken)| {
            *taken = true;
            h.clone()
        }))
    }

    async fn record_meter_event(&self, event: &MeterEvent) -> Result<MeterOutcome, StoreError> {
        let mut s = self.lock();
        if let Some(existing) = s
            .billing
            .meters
            .iter()
            .find(|m| m.identifier == event.identifier)
        {
            return Ok(MeterOutcome::Existing(existing.clone()));
        }
        s.billing.meters.push(event.clone());
        Ok(MeterOutcome::Recorded(event.clone()))
    }

    async fn mark_meter_forwarded(
        &self,
        id: &MeterEventId,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut s = self.lock();
        if let Some(m) = s
            .billing
            .meters
            .iter_mut()
            .find(|m| &m.id == id && m.forwarded_at.is_none())
        {
            m.forwarded_at = Some(at);
        }
        Ok(())
    }
}

/// Spreads a claim of `owed` over the account's tasks in flight, oldest first
/// (`svc_ports::ledger::spread_owed`).
fn spread(s: &mut State, account: &svc_ports::AccountId, owed: i64) {
    let claimed: Vec<(svc_ports::TaskId, i64, i64)> = in_flight(s, account)
        .into_iter()
        .map(|t| {
            let owed = s.actions.owed.get(&t.id).copied().unwrap_or(0);
            (t.id.clone(), t.cost, owed)
        })
        .collect();
    let shares: Vec<(i64, i64)> = claimed.iter().map(|(_, c, o)| (*c, *o)).collect();
    for ((id, _, _), add) in claimed
        .iter()
        .zip(svc_ports::ledger::spread_owed(owed, &shares))
    {
        if add > 0 {
            *s.actions.owed.entry(id.clone()).or_default() += add;
        }
    }
}

/// What refunded payments claim of the account's actions in flight: the sum of their shares.
fn in_flight_owed(s: &State, account: &AccountId) -> i64 {
    s.actions
        .owed
        .iter()
        .filter(|(task, _)| {
            s.actions
                .tasks
                .get(*task)
                .is_some_and(|t| &t.account_id == account)
        })
        .map(|(_, owed)| owed)
        .sum()
}
