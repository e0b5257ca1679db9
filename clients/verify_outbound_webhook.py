"""Verifies one webhook the service sent to a customer's endpoint with the reference Standard
Webhooks library, and that a tampered body is refused.
usage: python verify_outbound_webhook.py WHSEC_SECRET < {"headers": {...}, "body": "..."}
Prints the verified event's type and id."""
import json, sys
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

delivery = json.load(sys.stdin)
wh = Webhook(sys.argv[1])
payload = wh.verify(delivery["body"], delivery["headers"])
try:
    wh.verify(delivery["body"] + " ", delivery["headers"])
    sys.exit("a tampered body verified")
except WebhookVerificationError:
    pass
print(payload["type"], payload["id"])
