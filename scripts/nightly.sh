#!/usr/bin/env bash
# The nightly profile: the model-based and property tests at twenty times CI's size, on memory,
# SQLite and a throwaway Postgres. CI runs 1,000 billing sequences per store; this runs 20,000
# (SVC_MODEL_CASES overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/postgres.sh start)"
trap 'scripts/postgres.sh stop' EXIT
export SVC_MODEL_CASES=${SVC_MODEL_CASES:-20000}
export PROPTEST_CASES=${PROPTEST_CASES:-5000}
cargo nextest run --workspace --locked --no-fail-fast \
  -E 'test(billing_books_equal_the_model) | test(movements_reach_the_target) | test(the_order_of_arrival) | test(money_invariants) | test(balance_always_equals) | test(refunds_and_disputes_never_return) | test(either_order)'
