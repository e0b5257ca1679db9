"""Collects every secret a client run handled and checks that none appears in the service's
logs: API keys, sign-in and user codes, web session cookies and CSRF tokens, connect links, the
webhook secret and every signature the sandbox provider sent, the provider's API key and OAuth
tokens.
usage: python secrets_of_run.py TRANSCRIPT_DIR BASE_URL PROVIDER_URL LOG_FILE...
Exit 0 when no log holds any of them; prints what was checked."""
import glob, json, re, sys, urllib.request

out_dir, base, provider, logs = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3].rstrip("/"), sys.argv[4:]
secrets = {}  # value -> what it is


def add(kind, value):
    if value and len(value) >= 6:
        secrets.setdefault(value, kind)


for path in glob.glob(f"{out_dir}/*.txt") + glob.glob(f"{out_dir}/*.env"):
    text = open(path, errors="replace").read()
    for key in re.findall(r"svc_(?:test|live)_[A-Za-z0-9]{32}", text):
        add("api key", key)
    for token in re.findall(r"/connect\?c=([A-Za-z0-9_-]+)", text):
        add("connect token", token)
    for line in re.findall(r"^SECRETS: (.*)$", text, re.M):
        for kind, value in json.loads(line).items():
            for v in value if isinstance(value, list) else [value]:
                add(kind, v)
with urllib.request.urlopen(f"{base}/sandbox/outbox") as r:
    for m in json.load(r)["messages"]:
        for code in re.findall(r"\b\d{6}\b", m.get("text", "")):
            add("emailed code", code)
        for token in re.findall(r"[?&](?:token|c)=([A-Za-z0-9_-]{16,})", m.get("text", "")):
            add("emailed link token", token)
with urllib.request.urlopen(f"{provider}/qa/deliveries") as r:
    sent = json.load(r)
add("webhook secret", sent["secret"])
add("webhook secret body", sent["secret"].removeprefix("whsec_"))
for d in sent["deliveries"]:
    for sig in (d.get("signature") or "").split():
        add("webhook signature", sig.split(",", 1)[-1])
add("provider API key", "sk_sandbox_payments")

text = "".join(open(p, errors="replace").read() for p in logs)
found = []
for value, kind in secrets.items():
    if value.isdigit():
        hit = re.search(rf"(?<![0-9A-Za-z.]){value}(?![0-9A-Za-z])", text)
    else:
        hit = value in text
    if hit:
        found.append(f"{kind} {value[:6]}...")
kinds = sorted(set(secrets.values()))
print(f"{len(secrets)} secrets of the run checked ({', '.join(kinds)}) in {len(logs)} logs "
      f"({len(text) // 1024} KiB)")
for f in found:
    print("FOUND IN A LOG:", f)
sys.exit(1 if found else 0)
