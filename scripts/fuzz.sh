#!/usr/bin/env bash
# Fuzzes the PDF reader and the HTML extractor with cargo-fuzz (libFuzzer) for a bounded time
# each: any input must come back as an answer, never a crash, a hang (-timeout) or runaway
# memory (-rss_limit_mb). Runs on the stable toolchain (`--sanitizer none`: the targets are
# safe Rust; what is sought is panics, hangs and memory, not undefined behaviour).
#   scripts/fuzz.sh [SECONDS per target, default 60]
# Each adapter holds its harness (adapters/{pdf,extract}/fuzz, naming that adapter and the
# ports only). Seeds: adapters/<crate>/fuzz/seeds/<target> (and the sandbox's demo pages for HTML); the grown corpus stays under target/fuzz/corpus between runs.
# A crash leaves its input in target/fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${SVC_FUZZ_SECONDS:-60}}
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version 0.13.2
export CARGO_TARGET_DIR=$PWD/target/fuzz
root=$PWD
for pair in pdf:read_pdf extract:extract_html; do
  crate=${pair%%:*} target=${pair##*:}
  cd "$root/adapters/$crate/fuzz"
  corpus=$CARGO_TARGET_DIR/corpus/$target
  artifacts=$CARGO_TARGET_DIR/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  cp -n seeds/$target/* "$corpus/"
  # The sandbox's demo pages seed the HTML target too (not copied into the repo twice).
  [ "$target" = extract_html ] && cp -n "$root"/sandbox/src/demo/*.html "$corpus/"
  echo "== fuzzing $target for ${seconds}s"
  log=$CARGO_TARGET_DIR/$target.log
  rc=0
  cargo fuzz run --sanitizer none -O "$target" "$corpus" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=262144 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|SUMMARY|panicked' "$log" || true
  if [ "$rc" != 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: $target failed (exit $rc); inputs in $artifacts, log $log" >&2
    exit 1
  fi
  if [ -n "$(ls -A "$artifacts")" ]; then
    echo "fuzz: $target crashed; inputs in $artifacts" >&2
    exit 1
  fi
done
