"""A local webhook receiver that checks every delivery with the reference Standard Webhooks
library: it listens on a free loopback port, runs COMMAND with its URL appended (e.g. `svc
listen ... --forward-to`), and exits 0 only if COMMAND succeeded and at least one delivery
arrived and every one verified (a tampered copy of each must not).
usage: python webhook_receiver.py WHSEC_SECRET -- COMMAND..."""
import http.server, json, subprocess, sys, threading
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

secret, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
wh = Webhook(secret)
verified, refused = [], []


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0))).decode()
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            event = wh.verify(body, headers)
            try:
                wh.verify(body + " ", headers)
                refused.append("a tampered body verified")
            except WebhookVerificationError:
                verified.append(f'{event["type"]} {headers["webhook-id"]}')
            self.send_response(204)
        except WebhookVerificationError as e:
            refused.append(str(e))
            self.send_response(400)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_port}/webhooks"
done = subprocess.run(command + [url], timeout=60)
server.shutdown()
print(json.dumps({"verified": verified, "refused": refused, "exit": done.returncode}))
sys.exit(0 if done.returncode == 0 and verified and not refused else 1)
