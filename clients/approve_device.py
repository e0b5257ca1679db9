"""Plays the human of the device flow against the sandbox's real web pages, without a browser:
signs in with the code from /sandbox/outbox, then approves (or denies) a user code.
usage: python approve_device.py BASE_URL VERIFICATION_URI_COMPLETE_OR_USER_CODE [--email E] [--deny]
   or: python approve_device.py BASE_URL --from-transcript FILE   (waits for the user code in
       an oauthlib/SDK transcript that is still being written, then approves it)"""
import argparse, json, re, sys, time
import requests

def csrf_of(html):
    m = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    if not m:
        sys.exit("no CSRF token on the page:\n" + html[:500])
    return m.group(1)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("base"); p.add_argument("code", nargs="?")
    p.add_argument("--email", default="human@example.com"); p.add_argument("--deny", action="store_true")
    p.add_argument("--from-transcript")
    a = p.parse_args()
    base = a.base.rstrip("/")
    code = a.code
    if a.from_transcript:
        deadline = time.time() + 60
        while time.time() < deadline and not code:
            try:
                m = re.search(r"user_code['\"]?:\s*['\"]([A-Z]{4}-[A-Z]{4})", open(a.from_transcript).read())
                code = m and m.group(1)
            except FileNotFoundError:
                pass
            time.sleep(0.2)
        if not code:
            sys.exit("no user code appeared in " + a.from_transcript)
    m = re.search(r"user_code=([A-Za-z-]+)", code or "")
    user_code = m.group(1) if m else code
    s = requests.Session()
    origin = {"Origin": base}
    # The link the agent showed: not signed in yet, so it leads to sign-in.
    r = s.get(f"{base}/device", params={"user_code": user_code})
    r.raise_for_status()
    assert "/signin" in r.url, r.url
    r = s.post(f"{base}/signin", data={"csrf": csrf_of(r.text), "email": a.email, "next": f"/device?user_code={user_code}"}, headers=origin)
    r.raise_for_status()
    challenge = re.search(r'name="challenge" value="([^"]+)"', r.text).group(1)
    mail = s.get(f"{base}/sandbox/outbox", params={"to": a.email}).json()["messages"][0]
    sign_in_code = re.search(r"\b(\d{6})\b", mail["text"]).group(1)
    r = s.post(f"{base}/signin/code", data={"csrf": csrf_of(r.text), "challenge": challenge, "code": sign_in_code,
               "next": f"/device?user_code={user_code}"}, headers=origin)
    r.raise_for_status()
    assert "Approve" in r.text, r.text[:800]
    decision = "deny" if a.deny else "approve"
    r = s.post(f"{base}/device", data={"csrf": csrf_of(r.text), "user_code": user_code, "decision": decision}, headers=origin)
    r.raise_for_status()
    print(f"{decision}d {user_code} as {a.email}:", re.search(r'<h1 id="heading">([^<]+)', r.text).group(1))
    # What must never appear in the service's logs (scripts/clients.sh greps for each).
    print("SECRETS:", json.dumps({"code": sign_in_code, "user_code": user_code,
                                  "session": list(s.cookies.values()), "csrf": csrf_of(r.text) if 'name="csrf"' in r.text else ""}))

if __name__ == "__main__":
    main()
