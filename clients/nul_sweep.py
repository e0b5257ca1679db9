"""Sends a NUL (U+0000) in every string a caller can give, on every JSON, form, query and path
input of the REST API, the MCP tools and A2A, and checks that no answer is a server error: each
is refused with a 4xx problem or stored faithfully. Afterwards the same calls without the NUL
still work: one bad input took nothing with it.

    python nul_sweep.py BASE_URL API_KEY
Exit 0 when every answer is below 500.
"""
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

BASE, KEY = sys.argv[1].rstrip("/"), sys.argv[2]
NUL = "a\u0000b"
failures = []
checked = 0


def call(method, path, body=None, form=None, headers=None, auth=True):
    h = {"Accept": "application/json"}
    if auth:
        h["Authorization"] = f"Bearer {KEY}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    elif form is not None:
        data = urllib.parse.urlencode(form).encode()
        h["Content-Type"] = "application/x-www-form-urlencoded"
    h.update(headers or {})
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def check(label, status, text):
    global checked
    checked += 1
    if status >= 500:
        failures.append(f"{label}: {status} {text[:300]}")
        print(f"FAIL {label}: {status} {text[:200]}")


def poison(value):
    """Every variant of `value` with one string (or key) replaced by one holding a NUL."""
    if isinstance(value, str):
        yield "", NUL
    elif isinstance(value, dict):
        for k, v in value.items():
            for where, p in poison(v):
                yield f"/{k}{where}", {**value, k: p}
        yield "/<key>", {**value, NUL: "x"}
    elif isinstance(value, list):
        for i, v in enumerate(value):
            for where, p in poison(v):
                yield f"/{i}{where}", value[:i] + [p] + value[i + 1:]


JSON_OPS = [
    ("POST", "/agent/identity", {"client_id": "sweep-agent", "agent_name": "Sweep", "scope": "read"}, False),
    ("POST", "/api/connections/booking-sandbox/start", {"expected_account": "someone"}, True),
    ("POST", "/api/discover", {"domain": "shop.sandbox.test"}, True),
    ("POST", "/api/execute", {"domain": "shop.sandbox.test", "action": "search_products",
                              "params": {"query": "tea"}}, True),
    ("POST", "/api/read", {"url": "http://demo.sandbox.test/articles/tides", "format": "markdown",
                           "include_selectors": ["article"], "exclude_selectors": ["nav"]}, True),
    ("POST", "/api/readiness/scan", {"url": "http://ready.sandbox.test/"}, False),
    ("POST", "/api/register", {"email": "sweep@example.com", "agent_name": "Sweep", "scope": "read"}, False),
    ("POST", "/api/verify", {"deviceId": "chl_01JZZZZZZZZZZZZZZZZZZZZZZZ", "code": "123456"}, False),
    ("POST", "/telemetry/agent-event", {
        "event_id": "e-1", "timestamp": "2026-11-21T10:00:00Z", "session_id": "s-1",
        "agent_protocol": "mcp", "discovery_surface": "llms_txt", "task_type": "read_page",
        "conversion_state": "capability_read", "privacy_redactions": [], "notes": {"k": "v"}}, False),
]

for method, path, body, auth in JSON_OPS:
    for where, bad in poison(body):
        status, text = call(method, path, body=bad, auth=auth)
        check(f"{method} {path} {where}", status, text)

FORM_OPS = [
    ("/agent/identity", {"client_id": "sweep-agent", "agent_name": "Sweep", "scope": "read"}),
    ("/oauth2/token", {"grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                       "device_code": "dc_x", "client_id": "sweep-agent"}),
]
for path, form in FORM_OPS:
    for k in form:
        status, text = call("POST", path, form={**form, k: NUL}, auth=False)
        check(f"POST {path} form {k}", status, text)

QUERY_OPS = [
    "/api/read?url={}",
    "/api/read?url=http://demo.sandbox.test/&include_selectors={}",
    "/api/discover?domain={}",
    "/api/connections/{}",
    "/api/connections/booking-sandbox/poll?wait_ms={}",
    "/api/payment-authorities/{}",
    "/api/payment-authorities/{}/revocation",
    "/api/readiness/scans/{}",
    "/api/tasks/{}",
    "/api/tasks?domain={}",
    "/api/tasks?cursor={}",
    "/api/tasks?status={}",
    "/api/tasks?since={}",
    "/api/usage/history?from={}",
    "/api/telemetry/funnel?hours={}",
    "/readiness/{}",
    "/signin?next={}",
    "/device?user_code={}",
    "/connect?c={}",
    "/billing/return?checkout={}",
]
for template in QUERY_OPS:
    path = template.format(urllib.parse.quote(NUL))
    status, text = call("GET", path)
    check(f"GET {template}", status, text)
for path in ["/api/tasks/{}/verify", "/api/payment-authorities/{}/revocation"]:
    status, text = call("POST", path.format(urllib.parse.quote(NUL)))
    check(f"POST {path}", status, text)
status, text = call("POST", "/api/execute", body=JSON_OPS[3][2], headers={"Idempotency-Key": "a\tb"})
check("POST /api/execute Idempotency-Key with a tab", status, text)

# MCP: every tool's string arguments.
MCP = BASE + "/mcp"


def mcp(payload, session=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": f"Bearer {KEY}", "MCP-Protocol-Version": "2025-06-18"}
    if session:
        h["Mcp-Session-Id"] = session
    req = urllib.request.Request(MCP, data=json.dumps(payload).encode(), method="POST", headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Mcp-Session-Id"), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, None, e.read().decode("utf-8", "replace")


status, session, text = mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "nul-sweep", "version": "1"}}})
check("MCP initialize", status, text)
mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
TOOLS = [
    ("read_page", {"url": "http://demo.sandbox.test/articles/tides"}),
    ("discover", {"domain": "shop.sandbox.test"}),
    ("list_actions", {"domain": "shop.sandbox.test"}),
    ("execute", {"domain": "shop.sandbox.test", "action": "search_products", "params": {"query": "tea"},
                 "idempotency_key": "sweep-1"}),
    ("svc_start_claim_link_signup", {"client_id": "sweep", "agent_name": "Sweep"}),
    ("svc_start_api_key_signup", {"email": "sweep-mcp@example.com", "agent_name": "Sweep"}),
    ("svc_complete_api_key_signup", {"deviceId": "chl_01JZZZZZZZZZZZZZZZZZZZZZZZ", "code": "123456"}),
    ("svc_start_connection", {"provider": "booking-sandbox", "expected_account": "x"}),
    ("svc_create_checkout_session", {"plan": "starter"}),
    ("svc_verify_task", {"task_id": "task_01JZZZZZZZZZZZZZZZZZZZZZZZ"}),
    ("svc_list_tasks", {"status": "completed", "domain": "shop.sandbox.test", "cursor": "x",
                        "since": "2026-01-01T00:00:00Z", "until": "2026-02-01T00:00:00Z"}),
    ("svc_usage_history", {"from": "2026-01-01", "to": "2026-01-31"}),
]
for i, (tool, args) in enumerate(TOOLS):
    for where, bad in poison(args):
        status, _, text = mcp({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                               "params": {"name": tool, "arguments": bad}}, session)
        check(f"MCP {tool} {where}", status, text)
        if '"code":-32603' in text or "Internal error" in text:
            failures.append(f"MCP {tool} {where}: internal error {text[:200]}")
            print(f"FAIL MCP {tool} {where}: internal error")

# A2A: a message whose text and data hold a NUL.
for part in [{"kind": "text", "text": NUL},
             {"kind": "data", "data": {"task_type": "start_api_key_signup", "email": NUL}}]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "role": "user", "messageId": "m-1", "kind": "message", "parts": [part]}}}
    status, text = call("POST", "/a2a", body=body, auth=False)
    check(f"A2A {part['kind']}", status, text)

# Nothing was taken down: the plain calls still work.
status, text = call("POST", "/api/execute", body=JSON_OPS[3][2])
check("execute after the sweep", status, text)
if status != 200:
    failures.append(f"execute after the sweep: {status} {text[:200]}")
status, text = call("GET", "/api/usage")
if status != 200:
    failures.append(f"usage after the sweep: {status}")

print(f"nul-sweep: {checked} inputs, {len(failures)} server errors")
sys.exit(1 if failures else 0)
