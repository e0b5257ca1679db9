#!/usr/bin/env bash
# The whole test suite: formatting and lints, every Rust test (unit, contract suite on memory,
# SQLite and a throwaway Postgres server, API and CLI tests), then the real third-party clients.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/postgres.sh start)"
trap 'scripts/postgres.sh stop' EXIT

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
cargo build --locked --bin svc
scripts/clients.sh
