//! Payments and actions together: random sequences of two payments' events (paid, refunds,
//! disputes opened and closed) interleaved with actions that hold credits and then complete or
//! fail, played one at a time against a store. Two payments, so two disputes' claims on the
//! same actions in flight are served and capped against each other.
//!
//! After every step: spendable is the sum of the ledger, frozen the sum of the receipts, held
//! the cost of the actions in flight. Once every action settled, with B the credits the account
//! is entitled to (its grant plus what the payment's events leave of it, computed here without
//! the code under test) and S what its completed actions spent: the account has at most B, at
//! least B - S, and exactly B when no action completed, with what open disputes call for
//! frozen. A refund or a dispute while actions hold the payment's credits is where this used to
//! break: the held credits came back spendable when the actions failed.

use proptest::{prelude::*, test_runner::TestCaseError};
use svc_ports::{
    AccountId, BeginOutcome, CreditAmount, Grant, LedgerEntryId, TaskId,
    billing::{EventOutcome, PaymentFact},
};
use ulid::Ulid;

use crate::{
    Backend,
    actions::{new_task, settled},
    billing::{checkout, event, paid},
    scenarios::{BackendFuture, new_account, t0},
};

/// How many payments a case plays.
const PAYMENTS: usize = 2;

#[derive(Debug, Clone)]
enum Step {
    /// The `p`-th payment's events.
    Paid(usize),
    Refund(usize, usize),
    Open(usize, usize),
    Close(usize, usize),
    Begin(i64),
    /// The `n`-th action in flight (modulo how many there are) completes or fails.
    Settle(usize, bool),
    /// An action of this cost, or of what is spendable if less, begins and completes: credits
    /// spent with nothing left in flight.
    Spend(i64),
}

fn step() -> impl Strategy<Value = Step> {
    let p = 0..PAYMENTS;
    prop_oneof![
        2 => p.clone().prop_map(Step::Paid),
        2 => (p.clone(), 0..3usize).prop_map(|(p, r)| Step::Refund(p, r)),
        1 => (p.clone(), 0..2usize).prop_map(|(p, d)| Step::Open(p, d)),
        1 => (p, 0..2usize).prop_map(|(p, d)| Step::Close(p, d)),
        4 => (1..400i64).prop_map(Step::Begin),
        // Failures three times in four: books with nothing spent are checked the closest.
        4 => (any::<usize>(), proptest::bool::weighted(0.25)).prop_map(|(n, c)| Step::Settle(n, c)),
    ]
}

/// The steps of the order property: provider events, and credits spent at once, so that
/// refunds and disputes meet accounts whose credits are spent or frozen. No action is left
/// in flight: what a refund owes and a dispute claims of those is served in the order the
/// events arrived (`run_swapped`).
fn order_step() -> impl Strategy<Value = Step> {
    let p = 0..PAYMENTS;
    prop_oneof![
        2 => p.clone().prop_map(Step::Paid),
        3 => (p.clone(), 0..3usize).prop_map(|(p, r)| Step::Refund(p, r)),
        2 => (p.clone(), 0..2usize).prop_map(|(p, d)| Step::Open(p, d)),
        2 => (p, 0..2usize).prop_map(|(p, d)| Step::Close(p, d)),
        3 => (1..1500i64).prop_map(Step::Spend),
    ]
}

/// Refund amounts and disputes (amount, won) of one payment, fixed per case.
type Payment = ([i64; 3], [(i64, bool); 2]);
type World = [Payment; PAYMENTS];

fn world() -> impl Strategy<Value = World> {
    proptest::array::uniform2((
        proptest::array::uniform3(1..1000i64),
        proptest::array::uniform2((1..1000i64, any::<bool>())),
    ))
}

/// What the account owns of the payments (each 900 for 1000 credits) once these steps were
/// delivered.
fn owned(world: &World, steps: &[Step]) -> i64 {
    (0..PAYMENTS).map(|p| owned_of(world, p, steps)).sum()
}

/// What open disputes should hold frozen of the payments once these steps were delivered.
fn frozen_due(world: &World, steps: &[Step]) -> i64 {
    (0..PAYMENTS).map(|p| frozen_due_of(world, p, steps)).sum()
}

/// What the account owns of payment `p` once these steps were delivered: refunds and lost
/// disputes take their share, rounded up, at most the price.
fn owned_of(world: &World, p: usize, steps: &[Step]) -> i64 {
    if !steps.iter().any(|s| matches!(s, Step::Paid(q) if *q == p)) {
        return 0;
    }
    let (credits, price) = (1000i128, 900i128);
    let world = &world[p];
    let mut taken = 0i64;
    for r in 0..3 {
        if steps
            .iter()
            .any(|s| matches!(s, Step::Refund(q, x) if *q == p && *x == r))
        {
            taken += world.0[r];
        }
    }
    for d in 0..2 {
        let (opened, closed) = dispute(steps, p, d);
        if opened && closed && !world.1[d].1 {
            taken += world.1[d].0;
        }
    }
    let part = i128::from(taken).min(price);
    (credits - (credits * part + price - 1) / price) as i64
}

/// Whether dispute `d` of payment `p` was opened, and whether closed, in these steps.
fn dispute(steps: &[Step], p: usize, d: usize) -> (bool, bool) {
    let opened = steps
        .iter()
        .any(|s| matches!(s, Step::Open(q, x) if *q == p && *x == d));
    let closed = steps
        .iter()
        .any(|s| matches!(s, Step::Close(q, x) if *q == p && *x == d));
    (opened, closed)
}

/// What open disputes should hold frozen of payment `p` once these steps were delivered: their
/// share of the price, rounded up, at most what the account owns of the payment. A closing
/// counts whenever it came (before its opening too).
fn frozen_due_of(world: &World, p: usize, steps: &[Step]) -> i64 {
    if !steps.iter().any(|s| matches!(s, Step::Paid(q) if *q == p)) {
        return 0;
    }
    let (credits, price) = (1000i128, 900i128);
    let mut open = 0i64;
    for d in 0..2 {
        let (opened, closed) = dispute(steps, p, d);
        if opened && !closed {
            open += world[p].1[d].0;
        }
    }
    let part = i128::from(open).min(price);
    (((credits * part + price - 1) / price) as i64).min(owned_of(world, p, steps))
}

async fn check_books(
    b: &Backend,
    account: &AccountId,
    in_flight: i64,
) -> Result<(), TestCaseError> {
    let balance = b.ledger.balance(account).await.unwrap();
    let entries = b.ledger.entries(account, 10_000).await.unwrap();
    let receipts = b.billing.receipts(account, 10_000).await.unwrap();
    prop_assert_eq!(
        balance.spendable,
        entries.iter().map(|e| e.delta).sum::<i64>()
    );
    prop_assert_eq!(
        balance.frozen,
        receipts.iter().map(|r| r.frozen_delta).sum::<i64>()
    );
    prop_assert_eq!(balance.held, in_flight, "{}", b.name);
    prop_assert!(
        balance.spendable >= 0 && balance.frozen >= 0,
        "{}: {:?}",
        b.name,
        balance
    );
    Ok(())
}

/// A case as played: the account after each step (spendable, frozen, held), the credits
/// spent so far and its liens' credits, and the same once every action settled.
struct Trace {
    steps: Vec<(i64, i64, i64)>,
    spent: Vec<i64>,
    liens: Vec<i64>,
    end: (i64, i64),
    spent_end: i64,
    liens_end: i64,
}

async fn run_case(
    b: &Backend,
    world: World,
    grant: i64,
    steps: Vec<Step>,
    last: Vec<bool>,
) -> Result<Trace, TestCaseError> {
    let mut trace = Vec::new();
    let mut spent_after = Vec::new();
    let mut liens_after = Vec::new();
    let tag = Ulid::new().to_string().to_lowercase();
    let account = new_account(b, &format!("money-{tag}@example.com")).await.id;
    if grant > 0 {
        b.ledger
            .grant(&Grant {
                id: LedgerEntryId::from_ulid(Ulid::new()),
                account_id: account.clone(),
                amount: CreditAmount::new(grant).unwrap(),
                reference: None,
                memo: "start".into(),
                at: t0(),
            })
            .await
            .unwrap();
    }
    let mut checkouts = Vec::new();
    for _ in 0..PAYMENTS {
        let c = checkout(&account, None);
        b.billing.insert_checkout(&c).await.unwrap();
        checkouts.push(c);
    }
    let payment = |p: usize| format!("pay_{tag}_{p}");
    let mut in_flight: Vec<(TaskId, i64)> = Vec::new();
    let mut spent = 0;
    for (i, s) in steps.iter().enumerate() {
        let fact = match s {
            Step::Paid(p) => Some(paid(&checkouts[*p], &payment(*p))),
            Step::Refund(p, r) => Some(PaymentFact::Refunded {
                payment_id: payment(*p),
                refund_id: format!("re_{p}_{r}"),
                amount: world[*p].0[*r],
            }),
            Step::Open(p, d) => Some(PaymentFact::DisputeOpened {
                payment_id: payment(*p),
                dispute_id: format!("dp_{p}_{d}"),
                amount: world[*p].1[*d].0,
            }),
            Step::Close(p, d) => Some(PaymentFact::DisputeClosed {
                payment_id: payment(*p),
                dispute_id: format!("dp_{p}_{d}"),
                won: world[*p].1[*d].1,
            }),
            Step::Begin(cost) => {
                let mut task = new_task(&account, *cost, None, "f");
                // Actions in flight are served oldest first: by when they began, not by their
                // random ids, so that two plays of a case serve them alike.
                task.created_at = t0() + chrono::Duration::milliseconds(i as i64);
                match b.tasks.begin_task(&task).await.unwrap() {
                    BeginOutcome::Started { .. } => in_flight.push((task.id, *cost)),
                    BeginOutcome::InsufficientCredits { .. } => {}
                    other => prop_assert!(false, "{}: {other:?}", b.name),
                }
                None
            }
            Step::Spend(most) => {
                let cost = (*most).min(b.ledger.balance(&account).await.unwrap().spendable);
                if cost > 0 {
                    let task = new_task(&account, cost, None, "f");
                    let begun = b.tasks.begin_task(&task).await.unwrap();
                    prop_assert!(
                        matches!(begun, BeginOutcome::Started { .. }),
                        "{}: {begun:?}",
                        b.name
                    );
                    settled(b, &task.id, true).await;
                    spent += cost;
                }
                None
            }
            Step::Settle(n, completed) => {
                if !in_flight.is_empty() {
                    let (task, cost) = in_flight.remove(n % in_flight.len());
                    settled(b, &task, *completed).await;
                    spent += if *completed { cost } else { 0 };
                }
                None
            }
        };
        if let Some(fact) = fact {
            let outcome = b.billing.apply_payment_event(&event(fact)).await.unwrap();
            prop_assert!(!matches!(outcome, EventOutcome::Rejected(_)), "{outcome:?}");
        }
        let held = in_flight.iter().map(|(_, cost)| cost).sum();
        check_books(b, &account, held).await?;
        let delivered = &steps[..=i];
        let now = b.ledger.balance(&account).await.unwrap();
        trace.push((now.spendable, now.frozen, now.held));
        spent_after.push(spent);
        liens_after.push(lien_credits(b, &account).await);
        let frozen = now.frozen;
        prop_assert!(
            frozen <= frozen_due(&world, delivered),
            "{}: {frozen} frozen",
            b.name
        );
    }
    for (i, (task, cost)) in in_flight.drain(..).enumerate() {
        let completed = last.get(i).copied().unwrap_or(false);
        settled(b, &task, completed).await;
        spent += if completed { cost } else { 0 };
    }
    check_books(b, &account, 0).await?;
    let balance = b.ledger.balance(&account).await.unwrap();
    let has = balance.spendable + balance.frozen;
    let entitled = grant + owned(&world, &steps);
    prop_assert!(
        has <= entitled && has >= entitled - spent,
        "{}: has {has}, entitled to {entitled}, spent {spent}",
        b.name
    );
    if spent == 0 {
        prop_assert_eq!(has, entitled, "{}: nothing was spent", b.name);
        // Credits the actions held when a dispute opened came back frozen, not spendable.
        prop_assert_eq!(
            balance.frozen,
            frozen_due(&world, &steps),
            "{}: nothing was spent",
            b.name
        );
    }
    Ok(Trace {
        steps: trace,
        spent: spent_after,
        liens: liens_after,
        end: (balance.spendable, balance.frozen),
        spent_end: spent,
        liens_end: lien_credits(b, &account).await,
    })
}

/// What the account's liens will take back of the credits disputes release.
async fn lien_credits(b: &Backend, account: &AccountId) -> i64 {
    let liens = b.billing.liens(account).await.unwrap();
    liens.iter().map(|l| l.credits).sum()
}

/// A provider event that adds no credits of its own: a refund or a dispute's opening or close.
fn is_swappable(s: &Step) -> bool {
    matches!(s, Step::Refund(..) | Step::Open(..) | Step::Close(..))
}

/// Two provider events that arrive together (no action between them) leave the same books in
/// either order: the same case is played twice, once with one such pair swapped, and the
/// account must be the same after every other step and at the end, but for the two known
/// ways of `alike` while a dispute is open or once the orders spent differently. A refund of
/// one payment and the close of another's dispute gave 1000 credits in one order and none in
/// the other.
async fn run_swapped(
    b: &Backend,
    world: World,
    grant: i64,
    steps: Vec<Step>,
    last: Vec<bool>,
    pick: prop::sample::Index,
) -> Result<(), TestCaseError> {
    let one = run_case(b, world, grant, steps.clone(), last.clone()).await?;
    // Pairs that arrive with no action in flight: what a refund owes and a dispute claims of
    // credits in flight is served in the order they arrived. Nor a purchase: a refund or a
    // dispute takes or freezes what the account holds when it arrives, and credits bought
    // after it are the customer's, as no debt is carried (see the README, "Disputes").
    let pairs: Vec<usize> = (0..steps.len().saturating_sub(1))
        .filter(|&i| is_swappable(&steps[i]) && is_swappable(&steps[i + 1]))
        .filter(|&i| i == 0 || one.steps[i - 1].2 == 0)
        .collect();
    prop_assume!(!pairs.is_empty());
    let at = pairs[pick.index(pairs.len())];
    let mut swapped = steps.clone();
    swapped.swap(at, at + 1);
    let other = run_case(b, world, grant, swapped, last).await?;
    for (i, (x, y)) in one.steps.iter().zip(&other.steps).enumerate() {
        if i == at {
            continue;
        }
        let (sx, sy) = (one.spent[i], other.spent[i]);
        let (lx, ly) = (one.liens[i], other.liens[i]);
        if disputed(&steps[..=i]) || sx != sy {
            prop_assert!(
                x.2 == y.2 && alike((x.0, x.1, sx, lx), (y.0, y.1, sy, ly)),
                "{}: after step {} (steps {} and {} swapped): {:?} against {:?}, \
                 spent {} against {}, liens {} against {}",
                b.name,
                i,
                at,
                at + 1,
                x,
                y,
                sx,
                sy,
                lx,
                ly
            );
            continue;
        }
        prop_assert_eq!(
            x,
            y,
            "{}: after step {} (steps {} and {} swapped)",
            b.name,
            i,
            at,
            at + 1
        );
    }
    let (x, y) = (one.end, other.end);
    let (sx, sy) = (one.spent_end, other.spent_end);
    let (lx, ly) = (one.liens_end, other.liens_end);
    if disputed(&steps) || sx != sy {
        prop_assert!(
            alike((x.0, x.1, sx, lx), (y.0, y.1, sy, ly)),
            "{}: at the end: {x:?} against {y:?}, spent {sx} against {sy}, liens {lx} against {ly}",
            b.name
        );
    } else {
        prop_assert_eq!(x, y, "{}: at the end", b.name);
    }
    Ok(())
}

/// Two plays of a case agree, each given as (spendable, frozen, spent so far, liens), in the
/// two known ways the orders may differ while a dispute is open. What one order wrote off the
/// other holds frozen under a lien, which the disputes' release pays back. Or the same credits
/// are split otherwise between spendable and frozen (a dispute that opened short of spendable
/// credits, or a refund that took its own dispute's frozen ones, before another dispute's
/// release; see `a_refund_beside_its_own_open_dispute_splits_alike_once_it_closes`): what one
/// order froze the other left spendable, and credits spent from there on spend the
/// difference. Either way what each spent and still holds, less what liens will take back,
/// adds up alike, during the disputes and after them.
/// Spendable alike, or held alike, as before credits are spent, is accepted too: a model of
/// the plan finds orders that spent otherwise and were both left with nothing spendable about
/// once in 20,000 swaps (freezes made for different payments' disputes), not fixed.
fn alike(x: (i64, i64, i64, i64), y: (i64, i64, i64, i64)) -> bool {
    x.0 == y.0 || x.0 + x.1 == y.0 + y.1 || x.0 + x.1 + x.2 - x.3 == y.0 + y.1 + y.2 - y.3
}

/// Whether a dispute is open once these steps were delivered.
fn disputed(steps: &[Step]) -> bool {
    (0..PAYMENTS).any(|p| {
        (0..2).any(|d| {
            let (opened, closed) = dispute(steps, p, d);
            opened && !closed
        })
    })
}

/// Runs random sequences twice, once with two provider events that arrive together swapped
/// (`run_swapped`): half the billing model's count. Without liens, about one sequence in a few
/// hundred tells the orders apart; the test
/// `a_refund_and_a_won_dispute_of_another_payment_swap_without_a_difference` is the case itself.
pub fn money_order_property(make: impl Fn() -> BackendFuture) {
    let cases = crate::billing_model::cases() / 2;
    let (runtime, mut runner) = crate::property::runner(ProptestConfig {
        max_shrink_iters: 200,
        // A sequence with no pair to swap is drawn again, and many have none: proptest's
        // default of 1,024 redraws ran out before 2,000 cases.
        max_global_rejects: (cases * 8).max(1024),
        ..crate::property::config(cases)
    });
    let backend = runtime.block_on(make());
    let strategy = (
        world(),
        0..300i64,
        proptest::collection::vec(order_step(), 2..24),
        proptest::collection::vec(proptest::bool::weighted(0.25), 0..8),
        any::<prop::sample::Index>(),
    );
    runner
        .run(&strategy, |(world, grant, steps, last, pick)| {
            runtime.block_on(run_swapped(&backend, world, grant, steps, last, pick))
        })
        .unwrap();
}

/// Runs random sequences against one store (one database, a new account per case): a quarter
/// of the billing model's count, as each step here is a round trip of its own.
pub fn money_model_property(make: impl Fn() -> BackendFuture) {
    let (runtime, mut runner) = crate::property::runner(ProptestConfig {
        max_shrink_iters: 200,
        ..crate::property::config(crate::billing_model::cases() / 4)
    });
    let backend = runtime.block_on(make());
    let strategy = (
        world(),
        0..300i64,
        proptest::collection::vec(step(), 0..24),
        proptest::collection::vec(proptest::bool::weighted(0.25), 0..8),
    );
    runner
        .run(&strategy, |(world, grant, steps, last)| {
            runtime
                .block_on(run_case(&backend, world, grant, steps, last))
                .map(drop)
        })
        .unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index a deterministic runner draws first: the same pair is swapped on every run.
    fn first_pick() -> prop::sample::Index {
        use proptest::strategy::ValueTree;
        any::<prop::sample::Index>()
            .new_tree(&mut proptest::test_runner::TestRunner::deterministic())
            .unwrap()
            .current()
    }

    /// The case the order property exists for: payment 0 fully disputed, payment 1's credits
    /// spent, payment 1 refunded and payment 0's dispute won, in either order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refund_and_a_won_dispute_of_another_payment_swap_without_a_difference() {
        let b = crate::memory().await;
        let world = [
            ([1, 1, 1], [(900, true), (1, true)]),
            ([900, 1, 1], [(1, true), (1, true)]),
        ];
        let steps = vec![
            Step::Paid(0),
            Step::Paid(1),
            Step::Open(0, 0),
            Step::Spend(1000),
            Step::Refund(1, 0),
            Step::Close(0, 0),
        ];
        // The one pair to swap: the refund and the close.
        let pick = first_pick();
        run_swapped(&b, world, 0, steps, Vec::new(), pick)
            .await
            .unwrap();
    }

    /// Found by the order property: payment 0's small dispute open, the credits spent, then
    /// payment 1's dispute won and payment 0 refunded, in either order. Refunded first, short
    /// of spendable credits, the refund takes one credit of payment 0's own frozen ones; after
    /// the release it would take spendable ones. Both orders hold the same credits all along
    /// and the same split once payment 0's dispute closes, won or lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refund_beside_its_own_open_dispute_splits_alike_once_it_closes() {
        let b = crate::memory().await;
        for won in [true, false] {
            let world = [
                ([1, 1, 1], [(1, won), (1, false)]),
                ([1, 1, 1], [(1, false), (118, true)]),
            ];
            let steps = vec![
                Step::Paid(0),
                Step::Spend(73),
                Step::Open(1, 1),
                Step::Spend(424),
                Step::Paid(1),
                Step::Open(0, 0),
                Step::Spend(1368),
                Step::Close(1, 1),
                Step::Refund(0, 0),
                Step::Close(0, 0),
            ];
            let mut swapped = steps.clone();
            swapped.swap(7, 8);
            let one = run_case(&b, world, 0, steps, Vec::new()).await.unwrap();
            let other = run_case(&b, world, 0, swapped, Vec::new()).await.unwrap();
            let (one, end_one, other, end_other) = (one.steps, one.end, other.steps, other.end);
            let held = |t: &(i64, i64, i64)| t.0 + t.1;
            assert_eq!(held(&one[8]), held(&other[8]), "won: {won}");
            assert_eq!(one[9], other[9], "won: {won}");
            assert_eq!(end_one, end_other, "won: {won}");
            // The residual itself, while payment 0's dispute is open.
            assert_eq!((one[8].0, other[8].0), (131, 132), "won: {won}");
        }
    }

    /// Found by the order property in CI: payment 1's dispute (won later) opens before payment
    /// 1 is paid, the credits are spent, then payment 1's dispute closes and payment 0's opens,
    /// in either order. Opened first, payment 0's dispute finds 671 credits spendable and
    /// freezes them, two short of its share of 673; the release then leaves 157 spendable,
    /// not 155, and spending 156 spends one credit more. What each order spent and still holds
    /// adds up alike (2000, the two payments' credits); the split is the documented residual.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_split_that_credits_are_spent_from_adds_up_alike() {
        let b = crate::memory().await;
        let world = [
            ([1, 1, 1], [(1, false), (605, false)]),
            ([1, 1, 1], [(1, false), (141, true)]),
        ];
        let steps = vec![
            Step::Paid(0),
            Step::Open(1, 1),
            Step::Paid(1),
            Step::Spend(379),
            Step::Spend(793),
            Step::Close(1, 1),
            Step::Open(0, 1),
            Step::Spend(156),
        ];
        let mut swapped = steps.clone();
        swapped.swap(5, 6);
        let one = run_case(&b, world, 0, steps.clone(), Vec::new())
            .await
            .unwrap();
        let other = run_case(&b, world, 0, swapped, Vec::new()).await.unwrap();
        assert_eq!(one.steps[7], (0, 673, 0));
        assert_eq!(other.steps[7], (1, 671, 0));
        assert_eq!((one.spent_end, other.spent_end), (1327, 1328));
        assert_eq!((one.liens[7], other.liens[7]), (0, 0));
        assert!(alike((0, 673, 1327, 0), (1, 671, 1328, 0)));
        // Spent from, the split is no longer one of spendable alike.
        assert!(!alike((0, 673, 1327, 0), (1, 671, 1327, 0)));
        let pick = first_pick();
        run_swapped(&b, world, 0, steps, Vec::new(), pick)
            .await
            .unwrap();
    }

    /// The split at its largest, found by a model of the plan: payment 0's credits spent,
    /// payment 1 bought and its dispute open, then payment 0's dispute opens and payment 1's
    /// closes won, in either order. Opened first, payment 0's dispute finds nothing spendable
    /// and freezes nothing, and the release leaves 1000 credits spendable; closed first, the
    /// opening freezes the released 1000. Both disputes won: one order spends a whole
    /// payment's credits that the other keeps until the end, each within what it may have.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_split_of_a_whole_payment_spent_in_one_order_is_kept_in_the_other() {
        let b = crate::memory().await;
        let world = [
            ([1, 1, 1], [(900, true), (1, true)]),
            ([1, 1, 1], [(900, true), (1, true)]),
        ];
        let steps = vec![
            Step::Paid(0),
            Step::Spend(1000),
            Step::Paid(1),
            Step::Open(1, 0),
            Step::Open(0, 0),
            Step::Close(1, 0),
            Step::Spend(1000),
            Step::Close(0, 0),
        ];
        let mut swapped = steps.clone();
        swapped.swap(4, 5);
        let one = run_case(&b, world, 0, steps, Vec::new()).await.unwrap();
        let other = run_case(&b, world, 0, swapped, Vec::new()).await.unwrap();
        assert_eq!((one.end, one.spent_end), ((0, 0), 2000));
        assert_eq!((other.end, other.spent_end), ((1000, 0), 1000));
        assert!(alike((0, 0, 2000, 0), (1000, 0, 1000, 0)));
    }

    /// Found by a model of the plan: payment 0's dispute opens with nothing spendable, then
    /// payment 0's refund and payment 1's dispute arrive together. Refunded first, the refund
    /// takes 366 spendable credits and payment 0's dispute freezes the other 456; opened first,
    /// payment 1's dispute freezes 507 and the refund writes off 51 it cannot take, a lien on
    /// those. Once payment 0's dispute is won, one order has 456 spendable and the other 507
    /// frozen under a 51-credit lien: alike only with the lien counted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lien_beside_a_split_adds_up_alike() {
        let b = crate::memory().await;
        let world = [
            ([329, 975, 956], [(413, true), (63, false)]),
            ([449, 160, 944], [(444, true), (456, true)]),
        ];
        let steps = vec![
            Step::Refund(1, 1),
            Step::Paid(0),
            Step::Spend(1479),
            Step::Spend(1072),
            Step::Open(0, 0),
            Step::Spend(507),
            Step::Paid(1),
            Step::Paid(1),
            Step::Paid(1),
            Step::Refund(0, 0),
            Step::Open(1, 1),
            Step::Paid(1),
            Step::Close(0, 0),
            Step::Paid(0),
            Step::Close(0, 1),
            Step::Open(1, 1),
        ];
        let mut swapped = steps.clone();
        swapped.swap(9, 10);
        let one = run_case(&b, world, 118, steps.clone(), Vec::new())
            .await
            .unwrap();
        let other = run_case(&b, world, 118, swapped, Vec::new()).await.unwrap();
        assert_eq!((one.steps[12], one.liens[12]), ((456, 0, 0), 0));
        assert_eq!((other.steps[12], other.liens[12]), ((0, 507, 0), 51));
        let pick = first_pick();
        // And as the property plays it (it may pick the last two events instead).
        run_swapped(&b, world, 118, steps, Vec::new(), pick)
            .await
            .unwrap();
    }

    #[test]
    fn the_model_takes_refunds_and_lost_disputes_rounded_up() {
        let one = ([450, 1, 1], [(900, false), (900, true)]);
        let world = [one, ([900, 900, 900], [(1, false), (1, false)])];
        assert_eq!(owned(&world, &[Step::Refund(0, 0)]), 0);
        assert_eq!(owned(&world, &[Step::Paid(0), Step::Refund(0, 0)]), 500);
        assert_eq!(owned(&world, &[Step::Paid(0), Step::Refund(0, 1)]), 998);
        assert_eq!(
            owned(
                &world,
                &[Step::Paid(0), Step::Close(0, 0), Step::Open(0, 0)]
            ),
            0
        );
        assert_eq!(
            owned(
                &world,
                &[Step::Paid(0), Step::Open(0, 1), Step::Close(0, 1)]
            ),
            1000
        );
        assert_eq!(owned(&world, &[Step::Paid(0), Step::Open(0, 0)]), 1000);
        // Each payment's events count for that payment only.
        assert_eq!(owned(&world, &[Step::Paid(1), Step::Refund(0, 0)]), 1000);
        assert_eq!(
            owned(&world, &[Step::Paid(0), Step::Paid(1), Step::Refund(1, 2)]),
            1000
        );
        assert_eq!(
            frozen_due(
                &world,
                &[
                    Step::Paid(0),
                    Step::Paid(1),
                    Step::Open(0, 1),
                    Step::Open(1, 0)
                ]
            ),
            1000 + 2
        );
    }
}
