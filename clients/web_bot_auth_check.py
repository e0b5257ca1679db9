"""Web Bot Auth, checked by an independent RFC 9421 implementation (pyauth's
http-message-signatures, pinned in clients/requirements.txt).

Two modes:

  live SVC_BIN        starts `svc serve` on a temporary SQLite database with a capture server
                      pinned as `capture.test`, makes a key with `svc keys create`, reads a page
                      of the capture server through `GET /api/read`, and verifies every request
                      the service sent (robots.txt, then the page) against the key directory the
                      service serves. Stops the server it started.
  captured FILE       verifies the requests in FILE (JSON: {"directory": JWKS, "agent": origin,
                      "requests": [{"method", "url", "headers": [[name, value], ...]}]}), as
                      written by the Rust test that captures a real outbound request with wiremock.

Each request must carry a `Signature-Agent` dictionary whose member (keyed by the signature's
label) names the service's origin, and a `Signature-Input` covering `@authority` and that
member, with `created`, `expires`, `keyid` = the RFC 7638 thumbprint of a key in the directory
(computed here, not read from it) and `tag="web-bot-auth"`. The directory must be served as
`application/http-message-signatures-directory+json` without a redirect.
"""

import base64
import hashlib
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import http_sf
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from http_message_signatures import HTTPMessageVerifier, HTTPSignatureKeyResolver, algorithms

DIRECTORY_TYPE = "application/http-message-signatures-directory+json"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict) -> str:
    # RFC 7638 with RFC 8037's required members for an OKP key, in lexicographic order.
    canonical = json.dumps({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"]}, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode()).digest())


class Headers:
    """Field lines as received, repeated names kept."""

    def __init__(self, pairs):
        self.pairs = [(str(n), str(v)) for n, v in pairs]

    def items(self):
        return list(self.pairs)

    def __iter__(self):
        return iter(dict.fromkeys(n for n, _ in self.pairs))

    def __contains__(self, name):
        return any(n.lower() == name.lower() for n, _ in self.pairs)

    def get(self, name):
        return next((v for n, v in self.pairs if n.lower() == name.lower()), None)


class Message:
    def __init__(self, method, url, headers):
        self.method, self.url, self.headers = method, url, Headers(headers)


class Directory(HTTPSignatureKeyResolver):
    def __init__(self, jwks: dict):
        self.keys = {}
        for jwk in jwks["keys"]:
            assert jwk["kty"] == "OKP" and jwk["crv"] == "Ed25519", jwk
            kid = thumbprint(jwk)
            assert jwk.get("kid", kid) == kid, f"kid {jwk.get('kid')} is not the key's thumbprint {kid}"
            raw = base64.urlsafe_b64decode(jwk["x"] + "=" * (-len(jwk["x"]) % 4))
            self.keys[kid] = Ed25519PublicKey.from_public_bytes(raw)

    def resolve_public_key(self, key_id):
        return self.keys.get(key_id)


def verify_request(message: Message, directory: Directory, agent: str) -> str:
    verifier = HTTPMessageVerifier(signature_algorithm=algorithms.ED25519, key_resolver=directory)
    results = verifier.verify(message, expect_tag="web-bot-auth", max_age=None)
    assert len(results) == 1, results
    result = results[0]
    covered = result.covered_components
    params = result.parameters
    member = f'"signature-agent";key="{result.label}"'
    assert '"@authority"' in covered, covered
    assert member in covered, f"{member} not covered: {list(covered)}"
    for p in ("created", "expires", "keyid", "tag"):
        assert p in params, f"{p} missing from {params}"
    assert params["tag"] == "web-bot-auth", params
    assert params["keyid"] in directory.keys, params["keyid"]
    now = time.time()
    assert params["created"] <= now + 5 and params["expires"] > now - 5, params
    assert params["expires"] - params["created"] <= 24 * 3600, "longer than the draft recommends"
    agents = http_sf.parse(message.headers.get("signature-agent").encode(), tltype="dictionary")
    value = agents[result.label][0]
    assert value == agent, f"Signature-Agent {value!r}, expected {agent!r}"
    return f"{message.method} {message.url}: verified, keyid {params['keyid']}, agent {value}"


def fetch_directory(base: str):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            raise AssertionError("the directory must be served without a redirect")

    opener = urllib.request.build_opener(NoRedirect)
    with opener.open(f"{base}/.well-known/http-message-signatures-directory") as r:
        assert r.status == 200, r.status
        ctype = r.headers.get("Content-Type", "")
        assert ctype.split(";")[0].strip() == DIRECTORY_TYPE, ctype
        body = r.read()
        digest = r.headers.get("Content-Digest")
        expected = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
        assert digest == expected, f"Content-Digest {digest} does not match the body"
        assert "binding=" in (r.headers.get("Signature-Input") or ""), "no directory proof"
    jwks = json.loads(body)
    assert jwks["keys"], "empty directory"
    return jwks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def live(svc_bin: str) -> int:
    captured = []

    class Capture(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            captured.append(Message("GET", f"http://{self.headers['Host']}{self.path}", self.headers.items()))
            if self.path == "/robots.txt":
                body, ctype = b"User-agent: *\nAllow: /\n", "text/plain"
            else:
                body = b"<html><head><title>Captured</title></head><body><main><h1>Captured</h1><p>A page read by the service.</p></main></body></html>"
                ctype = "text/html; charset=utf-8"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    capture_port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", capture_port), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    svc_port = free_port()
    base = f"http://127.0.0.1:{svc_port}"
    with tempfile.TemporaryDirectory() as tmp:
        # Nothing of the caller's SVC_* settings (a sandbox's origins, payment provider...).
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SVC_")},
            "SVC_DATABASE_URL": f"sqlite://{tmp}/svc.db",
            "SVC_BIND": f"127.0.0.1:{svc_port}",
            "SVC_READ_PINNED_HOSTS": f"capture.test=127.0.0.1:{capture_port}",
            "SVC_WEB_BOT_AUTH": "on",
            "SVC_LOG": "warn",
        }
        key = subprocess.run(
            [svc_bin, "keys", "create", "--email", "wba@example.com", "--scopes", "read"],
            cwd=tmp, env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()
        log = open(os.path.join(tmp, "svc.log"), "wb")
        proc = subprocess.Popen([svc_bin, "serve"], cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"{base}/health/live", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                with open(os.path.join(tmp, "svc.log"), errors="replace") as f:
                    print("svc serve did not start:", f.read())
                return 1
            req = urllib.request.Request(
                f"{base}/api/read?url=http://capture.test:{capture_port}/page&max_age=0",
                headers={"Authorization": f"Bearer {key}"},
            )
            with urllib.request.urlopen(req) as r:
                answer = json.load(r)
            assert answer.get("outcome") != "blocked", answer
            directory = Directory(fetch_directory(base))
            paths = [m.url.split(f":{capture_port}", 1)[1] for m in captured]
            assert paths == ["/robots.txt", "/page"], paths
            for message in captured:
                print(verify_request(message, directory, base))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()
            server.shutdown()
    print(f"web bot auth: {len(captured)} requests verified")
    return 0


def captured_file(path: str) -> int:
    with open(path) as f:
        data = json.load(f)
    directory = Directory(data["directory"])
    for r in data["requests"]:
        print(verify_request(Message(r["method"], r["url"], r["headers"]), directory, data["agent"]))
    # A tampered authority must not verify.
    r = data["requests"][0]
    forged = Message(r["method"], r["url"].replace("://", "://forged.", 1), r["headers"])
    try:
        verify_request(forged, directory, data["agent"])
    except Exception:
        print("a request replayed to another authority is refused")
    else:
        print("a forged authority verified")
        return 1
    print(f"web bot auth: {len(data['requests'])} captured requests verified")
    return 0


if __name__ == "__main__":
    mode, arg = sys.argv[1], os.path.abspath(sys.argv[2])
    sys.exit(live(arg) if mode == "live" else captured_file(arg))
