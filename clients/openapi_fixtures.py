"""Creates, through the sandbox's real pages and API, the resources schemathesis reads back, and
prints them as shell assignments for clients/schemathesis.toml: a task (an execute of the
demo shop) and the webhook delivery it left, an endpoint to delete, a readiness scan, a payment authority (created by the sandbox key's human on the
account page), that human's web session with its CSRF token (for /api/billing/*), and device
codes the human approved (a libFuzzer dictionary file, one code per line: each yields its key
to `POST /oauth2/token` once, then answers 400 `invalid_grant` as RFC 6749 has it).
usage: python openapi_fixtures.py BASE_URL API_KEY SHOP_DOMAIN READY_SITE_URL DEVICE_CODES_FILE"""
import re, shlex, sys
import requests

SANDBOX_EMAIL = "agent@sandbox.example.com"  # the sandbox key's account (services/src/keys.rs)


def csrf_of(html):
    m = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    if not m:
        sys.exit("no CSRF token on the page:\n" + html[:500])
    return m.group(1)


def main():
    base, key, shop, ready, codes_file = sys.argv[1].rstrip("/"), *sys.argv[2:6]
    api = {"Authorization": f"Bearer {key}"}
    # A webhook endpoint first, so that the task below leaves a delivery to replay.
    r = requests.post(f"{base}/api/webhook-endpoints", headers=api, timeout=30,
                      json={"url": "https://example.com/schemathesis", "events": ["task.completed"]})
    r.raise_for_status()
    # And one that DELETE may delete (again and again: deleting is idempotent).
    r = requests.post(f"{base}/api/webhook-endpoints", headers=api, timeout=30,
                      json={"url": "https://example.com/deletable", "events": ["credits.low"]})
    r.raise_for_status()
    deletable = r.json()["endpoint"]["id"]
    r = requests.post(f"{base}/api/execute", headers=api, timeout=30,
                      json={"domain": shop, "action": "get_product", "params": {"sku": "MUG-BLUE"}})
    r.raise_for_status()
    task_id = r.json()["task_id"]
    deliveries = requests.get(f"{base}/api/webhook-deliveries", headers=api, timeout=30).json()["deliveries"]
    if not deliveries:
        sys.exit("the task left no webhook delivery")
    r = requests.post(f"{base}/api/readiness/scan", json={"url": ready}, timeout=60)
    r.raise_for_status()
    scan_id = r.json()["scan_id"]

    # The human of the sandbox key signs in with the emailed code and creates an authority.
    s = requests.Session()
    origin = {"Origin": base}
    r = s.get(f"{base}/signin", params={"next": "/account"})
    r.raise_for_status()
    r = s.post(f"{base}/signin", data={"csrf": csrf_of(r.text), "email": SANDBOX_EMAIL, "next": "/account"},
               headers=origin)
    r.raise_for_status()
    challenge = re.search(r'name="challenge" value="([^"]+)"', r.text).group(1)
    mail = s.get(f"{base}/sandbox/outbox", params={"to": SANDBOX_EMAIL}).json()["messages"][0]
    code = re.search(r"\b(\d{6})\b", mail["text"]).group(1)
    r = s.post(f"{base}/signin/code", data={"csrf": csrf_of(r.text), "challenge": challenge, "code": code,
                                            "next": "/account"}, headers=origin)
    r.raise_for_status()
    r = s.post(f"{base}/account/payment-authorities", headers=origin, data={
        "csrf": csrf_of(r.text), "scope_order": "1", "amount": "1000", "interval": "day", "currency": "usd",
        "expires_in_days": "30", "agent_provider": "schemathesis", "receipt_required": "1"})
    r.raise_for_status()
    authorities = requests.get(f"{base}/api/payment-authorities", headers=api, timeout=30).json()["authorities"]
    if not authorities:
        sys.exit("the authority was not created:\n" + r.text[:800])
    codes = []
    for i in range(200):
        grant = requests.post(f"{base}/agent/identity", data={"client_id": f"schemathesis-{i}"}, timeout=30).json()
        page = s.get(f"{base}/device", params={"user_code": grant["user_code"]})
        r = s.post(f"{base}/device", headers=origin, data={
            "csrf": csrf_of(page.text), "user_code": grant["user_code"], "decision": "approve"})
        r.raise_for_status()
        codes.append(grant["device_code"])
    with open(codes_file, "w") as f:
        f.write("".join(f'"{c}"\n' for c in codes))
    page = s.get(f"{base}/account")
    spare = requests.post(f"{base}/api/keys", headers=api, timeout=30,
                          json={"name": "schemathesis spare", "scopes": ["read"]})
    if spare.status_code != 201:
        sys.exit("the spare key was not created:\n" + spare.text[:800])
    fixtures = {
        "ST_KEY_PREFIX": spare.json()["key"]["prefix"],
        "ST_TASK_ID": task_id,
        "ST_DELIVERY_ID": deliveries[0]["id"],
        "ST_ENDPOINT_ID": deletable,
        "ST_SCAN_ID": scan_id,
        "ST_AUTHORITY_ID": authorities[0]["authority_id"],
        "ST_SESSION": s.cookies["svc_session"],
        "ST_CSRF_SEED": s.cookies["svc_csrf"],
        "ST_CSRF_TOKEN": csrf_of(page.text),
    }
    for k, v in fixtures.items():
        print(f"{k}={shlex.quote(v)}")


if __name__ == "__main__":
    main()
