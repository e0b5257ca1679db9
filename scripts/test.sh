#!/usr/bin/env bash
# The whole test suite: formatting and lints, every Rust test (unit, contract suite on memory,
# SQLite and a throwaway Postgres server, API and CLI tests), then the real third-party clients.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/postgres.sh start)"
trap 'scripts/postgres.sh stop' EXIT

# The real third-party clients (and aiosmtpd, the SMTP server the mail adapter is tested
# against) live in one virtualenv.
# Absolute, because each test binary runs in its own crate's directory.
venv=$(realpath -m "${SVC_CLIENTS_VENV:-.venv-clients}")
shared=${SVC_SHARED_DIR:-../shared}
bash "$shared/clients/setup.sh" "$venv" >/dev/null
"$venv/bin/pip" install -q --disable-pip-version-check -r clients/requirements.txt
export SVC_TEST_PYTHON="$venv/bin/python"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
cargo build --locked --bin svc
scripts/clients.sh
# Every conformance client at its pinned version and strictest setting (OpenAPI fuzzing, the MCP
# conformance suite and Inspector, both A2A SDKs, openid-client, oauthlib, Standard Webhooks).
scripts/conformance.sh
# Three instances on one Postgres behind haproxy: one-key concurrency, SIGKILL under load, a
# rolling restart, metrics against the ledger (the short version; `scripts/cluster.sh` is full).
scripts/cluster.sh short
# The PDF reader and the HTML extractor under libFuzzer, a bounded time each (issue 21).
scripts/fuzz.sh "${SVC_FUZZ_SECONDS:-60}"
