"""Runs one action on the sandbox and verifies its artifact with nothing but the served JWKS
and a generic Ed25519 library (pyca/cryptography), as an outside party would.
usage: python verify_artifact.py BASE_URL API_KEY
Canonical JSON here is json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False):
RFC 8785 for artifacts, whose numbers are integers and whose keys are ASCII."""
import base64, json, sys
import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))

def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

def verify(artifact, jwks):
    sig = artifact["signature"]
    key = next(k for k in jwks["keys"] if k["kid"] == sig["kid"])
    assert (key["kty"], key["crv"], sig["alg"]) == ("OKP", "Ed25519", "EdDSA"), key
    unsigned = {k: v for k, v in artifact.items() if k != "signature"}
    Ed25519PublicKey.from_public_bytes(b64url(key["x"])).verify(b64url(sig["value"]), canonical(unsigned))

base, key = sys.argv[1].rstrip("/"), sys.argv[2]
jwks = requests.get(f"{base}/.well-known/jwks.json").json()
auth = {"Authorization": f"Bearer {key}"}
done = requests.post(f"{base}/api/execute", headers=auth,
                     json={"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "TEA-BLACK"}}).json()
failed = requests.post(f"{base}/api/execute", headers=auth,
                       json={"domain": "flaky.sandbox.test", "action": "server_error", "params": {}}).json()
for answer in (done, failed):
    verify(answer["artifact"], jwks)
    print("verified", answer["artifact"]["artifact_id"], answer["artifact"]["status"], "kid", answer["artifact"]["signature"]["kid"])
tampered = dict(done["artifact"], status="verified")
try:
    verify(tampered, jwks)
    sys.exit("a tampered artifact verified")
except InvalidSignature:
    print("a tampered artifact is refused")
