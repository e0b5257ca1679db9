// Standard Webhooks with the reference npm library (standardwebhooks), unchanged.
//   node standard_webhooks.mjs verify PROVIDER_URL
//     every delivery the sandbox payment provider sent: the library verifies exactly those the
//     service accepted (2xx), and refuses the rest.
//   node standard_webhooks.mjs send SECRET URL ID BODY [--expect-status N] [--expect-text T]
//     signs BODY with the library and POSTs it to the service's webhook endpoint.
import { Webhook, WebhookVerificationError } from "standardwebhooks";

const [mode, ...args] = process.argv.slice(2);

if (mode === "verify") {
  const provider = args[0].replace(/\/$/, "");
  const sent = await (await fetch(`${provider}/qa/deliveries`)).json();
  const wh = new Webhook(sent.secret);
  let good = 0, bad = 0;
  for (const d of sent.deliveries) {
    if (!d.signature || d.timestamp === 0) continue;
    const headers = { "webhook-id": d.webhook_id, "webhook-timestamp": String(d.timestamp), "webhook-signature": d.signature };
    let verified;
    try {
      wh.verify(d.body, headers, { jsonParse: false });
      verified = true;
    } catch (e) {
      if (!(e instanceof WebhookVerificationError)) throw e;
      verified = false;
    }
    const accepted = d.status >= 200 && d.status < 300;
    if (verified !== accepted) {
      console.log("MISMATCH", d.webhook_id, "library:", verified, "service status:", d.status);
      process.exit(1);
    }
    verified ? good++ : bad++;
  }
  console.log(`${good} deliveries verified by standardwebhooks (npm), ${bad} refused by both`);
  if (good < 5 || bad < 3) { console.log("too few deliveries to judge"); process.exit(1); }
} else if (mode === "send") {
  const [secret, url, id, body, ...rest] = args;
  const opt = (name) => { const i = rest.indexOf(name); return i < 0 ? undefined : rest[i + 1]; };
  const ts = new Date();
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(ts.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(id, ts, body),
    "content-type": "application/json",
  };
  const r = await fetch(url, { method: "POST", headers, body });
  const text = await r.text();
  console.log("POST ->", r.status, text.slice(0, 300));
  const want = Number(opt("--expect-status") ?? 200);
  if (r.status !== want) process.exit(1);
  const needle = opt("--expect-text");
  if (needle && !text.includes(needle)) { console.log("expected", needle); process.exit(1); }
} else {
  console.log("usage: standard_webhooks.mjs verify PROVIDER_URL | send SECRET URL ID BODY");
  process.exit(2);
}
