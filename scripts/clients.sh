#!/usr/bin/env bash
# Runs the real third-party clients from ../shared/clients against a running sandbox: the
# official MCP Python SDK, oauthlib's device flow and the a2a-sdk client.
# Transcripts go to target/client-transcripts/. Ends with "clients: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
shared=${SVC_SHARED_DIR:-../shared}
venv=${SVC_CLIENTS_VENV:-.venv-clients}
out=target/client-transcripts
mkdir -p "$out"
bash "$shared/clients/setup.sh" "$venv" >/dev/null || { echo "client setup failed"; exit 1; }
bin=${SVC_BIN:-${CARGO_TARGET_DIR:-target}/debug/svc}
[ -x "$bin" ] || cargo build -q --bin svc

# Schemathesis sends hundreds of requests: lift the rate limits for this run only. (The files a
# process writes are removed first: a background job truncates its file only once it runs, so
# a wait loop could otherwise read the last run's lines.)
rm -f "$out/sandbox.env" "$out/sandbox.log" "$out/serve-webhooks.log" "$out/sandbox-pg.env" "$out/sandbox-pg.log"
SVC_RATE_LIMIT_PER_IP=100000 SVC_RATE_LIMIT_PER_KEY=100000 SVC_LOG_FORMAT=json SVC_LOG=${SVC_LOG:-trace} \
  "$bin" sandbox --bind 127.0.0.1:0 >"$out/sandbox.env" 2>"$out/sandbox.log" &
sandbox_pid=$!
trap 'kill $sandbox_pid 2>/dev/null; wait $sandbox_pid 2>/dev/null' EXIT
sandbox_ready "$out/sandbox.env" "$out/sandbox.log" || exit 1
set -a; source "$out/sandbox.env"; set +a

# openapi-spec-validator and schemathesis run in scripts/conformance.sh (its OpenAPI section).
# Every served JSON Schema is valid draft 2020-12 (check-jsonschema --check-metaschema).
for schema in agent-traffic-event payment-authority payment-artifact; do
  curl -sf "$SVC_BASE_URL/.well-known/$schema.schema.json" -o "$out/$schema.schema.json"
  check "check-jsonschema-$schema" "$venv/bin/check-jsonschema" --check-metaschema "$out/$schema.schema.json"
done
# The shared script unchanged: no key, so svc_auth_status must say "not authenticated".
check mcp-sdk-no-key "$venv/bin/python" "$shared/clients/mcp_client_check.py" "$SVC_MCP_URL" svc_auth_status '{}'
check mcp-sdk-no-key-says-so grep -q '"authenticated":false' "$out/mcp-sdk-no-key.txt"
check mcp-sdk-with-key "$venv/bin/python" clients/mcp_check.py "$SVC_MCP_URL" svc_auth_status '{}' \
  --key "$SVC_API_KEY" --expect authenticated=true --expect plan='"sandbox"'
check mcp-sdk-unknown-key "$venv/bin/python" clients/mcp_check.py "$SVC_MCP_URL" svc_auth_status '{}' \
  --key "svc_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" --expect authenticated=false --expect failure_class='"invalid_api_key"'
# read_page through the SDK: the SDK checks structuredContent against the tool's outputSchema.
check mcp-sdk-read-page "$venv/bin/python" clients/mcp_check.py "$SVC_MCP_URL" read_page \
  "{\"url\": \"$SVC_DEMO_SITE/articles/tides\"}" --key "$SVC_API_KEY" \
  --expect outcome='"page"' --expect title='"Tides of the North Sea"'
check mcp-sdk-read-page-blocked "$venv/bin/python" clients/mcp_check.py "$SVC_MCP_URL" read_page \
  "{\"url\": \"$SVC_DEMO_SITE/account\"}" --key "$SVC_API_KEY" \
  --expect outcome='"blocked"' --expect reason='"login_wall"'

# RFC 8628 with oauthlib (the shared script unchanged), while a browserless human signs in
# with the code from the outbox and approves on the real pages.
oauth_out="$out/oauthlib-device-flow.txt"
: >"$oauth_out"
"$venv/bin/python" "$shared/clients/device_flow_oauthlib.py" "$SVC_BASE_URL" oauthlib-agent \
  --device-path /agent/identity --token-path /oauth2/token >"$oauth_out" 2>&1 &
oauth_pid=$!
check human-approves-oauthlib "$venv/bin/python" clients/approve_device.py "$SVC_BASE_URL" \
  --from-transcript "$oauth_out" --email oauthlib-human@example.com
check oauthlib-device-flow wait "$oauth_pid"
check oauthlib-got-a-key grep -q "'access_token': 'svc_test_" "$oauth_out"
# Claim-link signup through the MCP SDK, approved and denied.
check mcp-sdk-claim-link "$venv/bin/python" clients/mcp_claim_link.py "$SVC_MCP_URL" "$SVC_BASE_URL"
check mcp-sdk-claim-link-denied "$venv/bin/python" clients/mcp_claim_link.py "$SVC_MCP_URL" "$SVC_BASE_URL" --deny
# A2A: the shared check unchanged (a plain message gets the help message), then the email-code
# signup with the a2a-sdk client.
check a2a-sdk-message "$venv/bin/python" "$shared/clients/a2a_client_check.py" "$SVC_BASE_URL" "hello"
check a2a-sdk-email-signup "$venv/bin/python" clients/a2a_signup.py "$SVC_BASE_URL"

# Actions: execute through the MCP SDK (it checks structuredContent against the outputSchema),
# and artifacts verified by pyca/cryptography from the served JWKS alone.
check mcp-sdk-execute "$venv/bin/python" clients/mcp_check.py "$SVC_MCP_URL" execute \
  '{"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "MUG-BLUE"}}' --key "$SVC_API_KEY" \
  --expect status='"completed"' --expect credits_charged=1
check artifact-verified-by-cryptography "$venv/bin/python" clients/verify_artifact.py "$SVC_BASE_URL" "$SVC_API_KEY"

# Billing: every QA payment scenario file played against the sandbox through its provider, then
# the provider's signatures checked with the reference standardwebhooks library, and webhooks
# signed by that library (shared script unchanged) sent to a service holding the same secret.
check qa-payment-scenarios "$bin" sandbox play qa/scenarios/*.toml
check provider-signatures-verify-with-standardwebhooks "$venv/bin/python" clients/verify_webhooks.py "$SVC_PAYMENT_PROVIDER_URL"
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
# (Without the sandbox's origins, which are in this shell's environment; on a new database
# each run: one an earlier build left may hold migrations this build does not know, and the
# replay check needs the event unseen.)
rm -f "$out"/webhooks.db "$out"/webhooks.db-wal "$out"/webhooks.db-shm
env -u SVC_BASE_URL -u SVC_SITE_URL -u SVC_MCP_URL \
  SVC_PAYMENT_PROVIDER_URL="$SVC_PAYMENT_PROVIDER_URL" SVC_PAYMENT_PROVIDER_API_KEY=sk_sandbox_payments \
  SVC_PAYMENT_WEBHOOK_SECRETS="whsec_$(printf 'old-secret-being-rotated-out!!!!' | base64),$secret" \
  SVC_LOG=${SVC_LOG:-trace} "$bin" serve --bind 127.0.0.1:0 --database-url "sqlite://$out/webhooks.db" --signing-key-file "$out/webhooks.key" \
  >/dev/null 2>"$out/serve-webhooks.log" &
serve_pid=$!
trap 'kill $sandbox_pid $serve_pid 2>/dev/null; wait $sandbox_pid $serve_pid 2>/dev/null' EXIT
wait_for "$out/serve-webhooks.log" 'service bound' || tail -3 "$out/serve-webhooks.log"
serve_url=http://$(grep -o '"address":"[^"]*"' "$out/serve-webhooks.log" | head -1 | cut -d'"' -f4)
event='{"type":"payment.refunded","data":{"payment_id":"pay_ref_1","refund_id":"re_ref_1","amount":100}}'
check standardwebhooks-signed-accepted "$venv/bin/python" "$shared/clients/sign_webhook.py" "$secret" \
  "$serve_url/api/billing/webhook" --id msg_reference_1 --body "$event"
check standardwebhooks-replay-changes-nothing sh -c "'$venv/bin/python' '$shared/clients/sign_webhook.py' '$secret' \
  '$serve_url/api/billing/webhook' --id msg_reference_1 --body '$event' | grep -q duplicate"
check standardwebhooks-wrong-secret-refused sh -c "! '$venv/bin/python' '$shared/clients/sign_webhook.py' \
  whsec_$(printf 'another-secret-entirely-unknown!' | base64) '$serve_url/api/billing/webhook' --body '$event'"

# Connections: the agent starts one and polls (the human's part is in the Chromium tests).
check connection-start-gives-a-link sh -c "curl -sf -X POST '$SVC_BASE_URL/api/connections/booking-sandbox/start' \
  -H 'Authorization: Bearer $SVC_API_KEY' -H 'Content-Type: application/json' -d '{}' | grep -q '/connect?c='"
check connection-poll-pending sh -c "curl -sf '$SVC_BASE_URL/api/connections/booking-sandbox/poll' \
  -H 'Authorization: Bearer $SVC_API_KEY' | grep -q '\"state\":\"pending\"'"

# The same sandbox on Postgres, whose TEXT refuses a NUL: every QA payment scenario (the NUL
# bodies among them) and a NUL in every string a caller can send; nothing answers 5xx and the
# plain calls still work afterwards.
if [ -n "${SVC_TEST_POSTGRES_URL:-}" ]; then
  pg_url=$(scripts/postgres.sh database "clients_$$")
  env -u SVC_BASE_URL -u SVC_SITE_URL -u SVC_MCP_URL \
    SVC_SANDBOX_DATABASE_URL="$pg_url" SVC_RATE_LIMIT_PER_IP=100000 SVC_RATE_LIMIT_PER_KEY=100000 \
    SVC_LOG_FORMAT=json SVC_LOG=${SVC_LOG:-trace} \
    "$bin" sandbox --bind 127.0.0.1:0 >"$out/sandbox-pg.env" 2>"$out/sandbox-pg.log" &
  pg_pid=$!
  trap 'kill $sandbox_pid $serve_pid $pg_pid 2>/dev/null; wait $sandbox_pid $serve_pid $pg_pid 2>/dev/null' EXIT
  wait_for "$out/sandbox-pg.env" '^SVC_API_KEY='
  check qa-payment-scenarios-on-postgres sh -c "set -a; . '$out/sandbox-pg.env'; set +a; \
    exec '$bin' sandbox play qa/scenarios/*.toml"
  check nul-sweep-on-postgres sh -c "set -a; . '$out/sandbox-pg.env'; set +a; \
    exec '$venv/bin/python' clients/nul_sweep.py \"\$SVC_BASE_URL\" \"\$SVC_API_KEY\""
  logs_pg="$out/sandbox-pg.log"
else
  echo "SKIP the Postgres sandbox: SVC_TEST_POSTGRES_URL is not set (scripts/test.sh sets it)"
  logs_pg=
fi

# No secret in any log line of the whole run, at SVC_LOG=trace: API keys, webhook secrets and
# signatures, provider keys, OAuth tokens and verifiers by their shape; then every code, session,
# CSRF and connect token the run actually handled, by its value.
check no-secrets-in-logs sh -c "! grep -E -e 'svc_(test|live)_[A-Za-z0-9]{32}' -e 'whsec_[A-Za-z0-9+/=]{16}' -e 'sk_sandbox' \
  -e 'sbx(at|rt|c)\.' -e 'code_verifier' -e '\"access_token\"' '$out/sandbox.log' '$out/serve-webhooks.log' $logs_pg"
check no-secret-of-the-run-in-logs "$venv/bin/python" clients/secrets_of_run.py "$out" "$SVC_BASE_URL" \
  "$SVC_PAYMENT_PROVIDER_URL" "$out/sandbox.log" "$out/serve-webhooks.log" $logs_pg

echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
