//! The billing model test: random sequences of provider events, read from raw signed bodies the
//! way the service reads them, delivered to a store (some at once), and the books checked
//! against a model written apart from the code under test.
//!
//! The model: every payment with at least one valid payment event (the checkout it names
//! exists and the amount and currency match it) is credited its checkout's credits once;
//! refunds and lost disputes take back their share (rounded up, at most the price); open
//! disputes hold their share frozen. Credits = verified payments - refunds - lost disputes.
//!
//! Sequences hold duplicates (a webhook delivered again), reorders, payment events with the
//! wrong amount or currency or an unknown checkout, partial and whole refunds, disputes won and
//! lost (closings before openings too), unknown event types, and hostile bodies (a NUL byte, a
//! NUL escape in the type, an oversized id, not JSON). A store error on any of them fails the
//! test: a provider would be told to deliver again forever.

use std::collections::HashMap;

use chrono::Duration;
use futures_util::future::join_all;
use proptest::{prelude::*, test_runner::TestCaseError};
use serde_json::json;
use svc_ports::{
    AccountId, CheckoutId, Plan,
    billing::{CheckoutRecord, Currency, EventOutcome, PaymentEvent, PaymentFact, ReceiptKind},
};
use ulid::Ulid;

use crate::{
    Backend,
    scenarios::{BackendFuture, new_account, t0},
};

/// Sequences per store: 1,000 in CI; `SVC_MODEL_CASES` asks for more (the nightly profile).
pub fn cases() -> u32 {
    std::env::var("SVC_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

/// The two checkouts of a case: (price, currency, credits). Payment `p` pays checkout `p`.
const CHECKOUTS: [(i64, &str, i64); 2] = [(900, "usd", 1000), (2500, "eur", 3000)];

#[derive(Debug, Clone, Copy)]
enum Flaw {
    None,
    Amount,
    Currency,
    UnknownCheckout,
}

#[derive(Debug, Clone)]
enum Op {
    Paid {
        p: usize,
        announce: bool,
        flaw: Flaw,
    },
    Refund {
        p: usize,
        r: usize,
    },
    Open {
        p: usize,
        d: usize,
    },
    Close {
        p: usize,
        d: usize,
    },
    Other,
    Hostile(u8),
    /// The `n`-th delivery so far, again (same webhook-id and body).
    Replay(usize),
}

/// What the provider would never change for one id: refund amounts, dispute amounts and how
/// each dispute ends.
#[derive(Debug, Clone)]
struct World {
    refunds: [[i64; 3]; 2],
    disputes: [[(i64, bool); 2]; 2],
}

fn world() -> impl Strategy<Value = World> {
    (
        proptest::array::uniform2(proptest::array::uniform3(1..3000i64)),
        proptest::array::uniform2(proptest::array::uniform2((1..3000i64, any::<bool>()))),
    )
        .prop_map(|(refunds, disputes)| World { refunds, disputes })
}

fn op() -> impl Strategy<Value = Op> {
    let flaw = prop_oneof![
        6 => Just(Flaw::None),
        1 => Just(Flaw::Amount),
        1 => Just(Flaw::Currency),
        1 => Just(Flaw::UnknownCheckout),
    ];
    prop_oneof![
        5 => (0..2usize, any::<bool>(), flaw).prop_map(|(p, announce, flaw)| Op::Paid { p, announce, flaw }),
        3 => (0..2usize, 0..3usize).prop_map(|(p, r)| Op::Refund { p, r }),
        2 => (0..2usize, 0..2usize).prop_map(|(p, d)| Op::Open { p, d }),
        2 => (0..2usize, 0..2usize).prop_map(|(p, d)| Op::Close { p, d }),
        1 => Just(Op::Other),
        1 => (0..6u8).prop_map(Op::Hostile),
        2 => (0..30usize).prop_map(Op::Replay),
    ]
}

fn share(credits: i64, part: i64, price: i64) -> i64 {
    // Rounded up, computed without the code under test.
    let part = part.clamp(0, price) as i128;
    ((credits as i128 * part + price as i128 - 1) / price as i128) as i64
}

/// A delivery: its webhook-id and raw body.
type Delivery = (String, Vec<u8>);

struct Case {
    tag: String,
    account: AccountId,
    checkouts: Vec<CheckoutRecord>,
}

impl Case {
    fn payment(&self, p: usize) -> String {
        format!("pay_{}_{p}", self.tag)
    }

    fn body(&self, world: &World, op: &Op) -> Vec<u8> {
        let envelope = |ty: &str, data: serde_json::Value| {
            json!({"type": ty, "timestamp": "2026-11-24T00:00:00Z", "data": data})
                .to_string()
                .into_bytes()
        };
        match op {
            Op::Paid { p, announce, flaw } => {
                let c = &self.checkouts[*p];
                let mut data = json!({
                    "payment_id": self.payment(*p),
                    "client_reference_id": c.id.as_str(),
                    "amount": c.amount,
                    "currency": c.currency.as_str().to_uppercase(),
                });
                match flaw {
                    Flaw::None => {}
                    Flaw::Amount => data["amount"] = json!(c.amount - 1),
                    Flaw::Currency => data["currency"] = json!("jpy"),
                    Flaw::UnknownCheckout => {
                        data["client_reference_id"] =
                            json!(CheckoutId::from_ulid(Ulid::new()).as_str())
                    }
                }
                let ty = if *announce {
                    "checkout.completed"
                } else {
                    "payment.succeeded"
                };
                envelope(ty, data)
            }
            Op::Refund { p, r } => envelope(
                "payment.refunded",
                json!({"payment_id": self.payment(*p), "refund_id": format!("re_{r}"),
                       "amount": world.refunds[*p][*r]}),
            ),
            Op::Open { p, d } => envelope(
                "dispute.created",
                json!({"payment_id": self.payment(*p), "dispute_id": format!("dp_{d}"),
                       "amount": world.disputes[*p][*d].0}),
            ),
            Op::Close { p, d } => envelope(
                "dispute.closed",
                json!({"payment_id": self.payment(*p), "dispute_id": format!("dp_{d}"),
                       "status": if world.disputes[*p][*d].1 { "won" } else { "lost" }}),
            ),
            Op::Other => envelope("invoice.finalized", json!({"id": "in_1"})),
            Op::Hostile(0) => {
                // A raw NUL byte in the body: not JSON, signed all the same.
                let mut b = envelope("payment.refunded", json!({"payment_id": self.payment(0)}));
                b.insert(10, 0);
                b
            }
            Op::Hostile(1) => envelope(
                "payment.refunded\u{0}",
                json!({"payment_id": self.payment(0), "refund_id": "re_9", "amount": 1}),
            ),
            Op::Hostile(2) => envelope(
                "payment.refunded",
                json!({"payment_id": "p".repeat(100_000), "refund_id": "re_9", "amount": 1}),
            ),
            Op::Hostile(3) => envelope(
                "dispute.created",
                json!({"payment_id": format!("{}\u{0}", self.payment(1)), "dispute_id": "dp_9",
                       "amount": 5}),
            ),
            // A key given twice, a NUL in it: the refusal quotes the key (a review found
            // Postgres unable to store that refusal, answering 503 to every redelivery).
            Op::Hostile(4) => {
                br#"{"type":"payment.refunded","a\u0000":1,"a\u0000":2,"data":{}}"#.to_vec()
            }
            Op::Hostile(_) => b"\xff\xfe not json at all".to_vec(),
            Op::Replay(_) => unreachable!("a replay resends an earlier delivery"),
        }
    }
}

/// The model's books for a case: (spendable, frozen, payments credited).
fn model(case: &Case, world: &World, delivered: &[Op]) -> (i64, i64, usize) {
    let (mut spendable, mut frozen, mut credited) = (0, 0, 0);
    for p in 0..2 {
        let paid = delivered
            .iter()
            .any(|o| matches!(o, Op::Paid { p: q, flaw: Flaw::None, .. } if *q == p));
        if !paid {
            continue;
        }
        credited += 1;
        let (price, credits) = (case.checkouts[p].amount, case.checkouts[p].credits);
        let mut refunded = [false; 3];
        let mut opened = [false; 2];
        let mut closed = [false; 2];
        for o in delivered {
            match o {
                Op::Refund { p: q, r } if *q == p => refunded[*r] = true,
                Op::Open { p: q, d } if *q == p => opened[*d] = true,
                Op::Close { p: q, d } if *q == p => closed[*d] = true,
                _ => {}
            }
        }
        let refunds: i64 = (0..3)
            .filter(|r| refunded[*r])
            .map(|r| world.refunds[p][r])
            .sum();
        let lost: i64 = (0..2)
            .filter(|d| opened[*d] && closed[*d] && !world.disputes[p][*d].1)
            .map(|d| world.disputes[p][d].0)
            .sum();
        let open: i64 = (0..2)
            .filter(|d| opened[*d] && !closed[*d])
            .map(|d| world.disputes[p][d].0)
            .sum();
        let owned = credits - share(credits, refunds + lost, price);
        let held = share(credits, open, price).min(owned);
        spendable += owned - held;
        frozen += held;
    }
    (spendable, frozen, credited)
}

async fn run_case(
    b: &Backend,
    world: World,
    ops: Vec<Op>,
    chunks: Vec<usize>,
) -> Result<(), TestCaseError> {
    let tag = Ulid::new().to_string().to_lowercase();
    let account = new_account(b, &format!("model-{tag}@example.com")).await;
    let mut checkouts = Vec::new();
    for (price, currency, credits) in CHECKOUTS {
        let c = CheckoutRecord {
            id: CheckoutId::from_ulid(Ulid::new()),
            account_id: account.id.clone(),
            sku: "starter".into(),
            plan: Plan::Starter,
            credits,
            amount: price,
            currency: Currency::parse(currency).unwrap(),
            provider_session_id: format!("cs_{tag}"),
            checkout_url: "https://pay.example/cs".into(),
            idempotency_key: None,
            created_at: t0(),
            expires_at: t0() + Duration::hours(1),
        };
        b.billing.insert_checkout(&c).await.unwrap();
        checkouts.push(c);
    }
    let case = Case {
        tag,
        account: account.id.clone(),
        checkouts,
    };

    // Turn the ops into deliveries; a replay resends an earlier one (or is dropped if none).
    let mut deliveries: Vec<(Delivery, Op)> = Vec::new();
    for op in ops {
        match op {
            Op::Replay(n) if !deliveries.is_empty() => {
                let again = deliveries[n % deliveries.len()].clone();
                deliveries.push(again);
            }
            Op::Replay(_) => {}
            op => {
                let id = format!("msg_{}_{}", case.tag, deliveries.len());
                deliveries.push(((id, case.body(&world, &op)), op));
            }
        }
    }
    // Delivered in chunks; a chunk's deliveries race each other.
    let mut outcomes: HashMap<String, Vec<EventOutcome>> = HashMap::new();
    let mut rest = deliveries.as_slice();
    let mut sizes = chunks.into_iter().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        let (now, later) = rest.split_at(n);
        rest = later;
        let results = join_all(now.iter().map(|((id, body), _)| {
            let (event_type, fact) = PaymentFact::from_payload(body);
            let event = PaymentEvent {
                provider: "model".into(),
                webhook_id: id.clone(),
                event_type,
                fact,
                body: body.clone(),
                received_at: t0(),
            };
            async move { b.billing.apply_payment_event(&event).await }
        }))
        .await;
        for (((id, _), op), result) in now.iter().zip(results) {
            let outcome = result.map_err(|e| {
                TestCaseError::fail(format!("{}: a store error on {op:?}: {e:#}", b.name))
            })?;
            outcomes.entry(id.clone()).or_default().push(outcome);
        }
    }

    // Each webhook-id was applied once; every later delivery of it was a duplicate.
    for (id, seen) in &outcomes {
        let firsts = seen
            .iter()
            .filter(|o| !matches!(o, EventOutcome::Duplicate { .. }))
            .count();
        prop_assert_eq!(firsts, 1, "{}: {}: {:?}", b.name, id, seen);
    }
    // A flawed payment event and a hostile body are refused, never applied.
    for ((id, _), op) in &deliveries {
        let first = outcomes[id]
            .iter()
            .find(|o| !matches!(o, EventOutcome::Duplicate { .. }))
            .unwrap();
        let flawed = matches!(
            op,
            Op::Paid {
                flaw: Flaw::Amount | Flaw::Currency | Flaw::UnknownCheckout,
                ..
            }
        );
        // A type with a NUL is a type this service does not know: stored and acknowledged.
        let ok = match op {
            _ if flawed => matches!(first, EventOutcome::Rejected(_)),
            Op::Hostile(1) => matches!(first, EventOutcome::Acknowledged),
            Op::Hostile(_) => matches!(first, EventOutcome::Rejected(_)),
            _ => !matches!(first, EventOutcome::Rejected(_)),
        };
        prop_assert!(ok, "{}: {:?} was {:?}", b.name, op, first);
    }

    let delivered: Vec<Op> = deliveries.iter().map(|(_, op)| op.clone()).collect();
    let (want_spendable, want_frozen, credited) = model(&case, &world, &delivered);
    let balance = b.ledger.balance(&case.account).await.unwrap();
    let entries = b.ledger.entries(&case.account, 10_000).await.unwrap();
    let receipts = b.billing.receipts(&case.account, 10_000).await.unwrap();
    prop_assert_eq!(
        (balance.spendable, balance.frozen),
        (want_spendable, want_frozen),
        "{}: the books differ from the model after {:?}",
        b.name,
        delivered
    );
    prop_assert_eq!(
        balance.spendable,
        entries.iter().map(|e| e.delta).sum::<i64>(),
        "{}: spendable is not the sum of the ledger",
        b.name
    );
    prop_assert_eq!(
        balance.frozen,
        receipts.iter().map(|r| r.frozen_delta).sum::<i64>(),
        "{}: frozen is not the sum of the receipts",
        b.name
    );
    let purchases = receipts
        .iter()
        .filter(|r| r.kind == ReceiptKind::Purchase)
        .count();
    prop_assert_eq!(purchases, credited, "{}: {:?}", b.name, receipts);
    prop_assert!(receipts.iter().all(|r| r.shortfall == 0));
    let mut references: Vec<&str> = receipts.iter().map(|r| r.reference.as_str()).collect();
    references.sort_unstable();
    references.dedup();
    prop_assert_eq!(
        references.len(),
        receipts.len(),
        "{}: a movement twice",
        b.name
    );
    Ok(())
}

/// Runs [`cases`] random sequences against one store (one database, a new account per case).
pub fn billing_model_property(make: impl Fn() -> BackendFuture) {
    let (runtime, mut runner) = crate::property::runner(ProptestConfig {
        // Shrinking re-runs against the store: keep it bounded.
        max_shrink_iters: 200,
        ..crate::property::config(cases())
    });
    let backend = runtime.block_on(make());
    let strategy = (
        world(),
        proptest::collection::vec(op(), 0..24),
        proptest::collection::vec(1..6usize, 1..4),
    );
    runner
        .run(&strategy, |(world, ops, chunks)| {
            runtime.block_on(run_case(&backend, world, ops, chunks))
        })
        .unwrap();
}
