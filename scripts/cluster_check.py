#!/usr/bin/env python3
"""The scenarios scripts/cluster.sh runs against three `svc serve` instances behind haproxy.

Standard library only. Each scenario prints PASS or FAIL with its figures; the exit status is 1
when any failed. Instances are controlled through the work directory cluster.sh prepared:
`start_node.sh N` starts instance N (its pid in `node-N.pid`).
"""

import argparse
import concurrent.futures as cf
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

BODY = json.dumps(
    {"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "TEA-GREEN"}}
).encode()


class Cluster:
    def __init__(self, args):
        self.lb = args.lb.rstrip("/")
        self.key = args.key
        self.work = args.work
        self.db = args.db
        self.nodes = args.nodes.split(",")
        self.metrics = args.metrics.split(",")
        self.failures = []

    # --- HTTP -------------------------------------------------------------------------------
    def request(self, method, url, body=None, headers=None, timeout=40):
        req = urllib.request.Request(url, data=body, method=method)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
            return 0, str(e).encode()

    def execute(self, idem, base=None):
        return self.request(
            "POST",
            (base or self.lb) + "/api/execute",
            BODY,
            {
                "Authorization": f"Bearer {self.key}",
                "Content-Type": "application/json",
                "Idempotency-Key": idem,
            },
        )

    def spendable(self):
        _, body = self.request(
            "GET", self.lb + "/api/usage", headers={"Authorization": f"Bearer {self.key}"}
        )
        return json.loads(body)["balance"]["spendable"]

    # --- instances ----------------------------------------------------------------------------
    def pid(self, n):
        with open(os.path.join(self.work, f"node-{n}.pid")) as f:
            return int(f.read().strip())

    def start(self, n):
        subprocess.run(["bash", os.path.join(self.work, "start_node.sh"), str(n)], check=True)

    def wait_ready(self, n, seconds=60):
        url = f"http://{self.nodes[n - 1]}/health/ready"
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.request("GET", url, timeout=2)[0] == 200:
                return True
            time.sleep(0.1)
        return False

    def wait_exit(self, pid, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            # A child of cluster.sh's shell, not ours: reaped there; /proc tells a zombie.
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ")[1].startswith("Z"):
                        return True
            except FileNotFoundError:
                return True
            time.sleep(0.05)
        return False

    # --- the books ----------------------------------------------------------------------------
    def sql(self, query):
        out = subprocess.run(
            ["psql", self.db, "-Atc", query], check=True, capture_output=True, text=True
        ).stdout
        return out.strip()

    def books(self):
        """Every account: spendable = sum of its entries, nothing held; every task settled
        once; a capture exactly for each completed task."""
        unbalanced = self.sql(
            "SELECT count(*) FROM accounts a WHERE a.held <> 0 OR a.spendable <> "
            "(SELECT COALESCE(sum(delta), 0) FROM ledger_entries l WHERE l.account_id = a.id)"
        )
        running = self.sql("SELECT count(*) FROM tasks WHERE status = 'in_flight'")
        twice = self.sql(
            "SELECT count(*) FROM (SELECT split_part(reference, ':', 2) t FROM ledger_entries "
            "WHERE kind IN ('capture', 'refund') AND reference LIKE 'task:%' "
            "GROUP BY 1 HAVING count(*) > 1) x"
        )
        completed = self.sql("SELECT count(*) FROM tasks WHERE status = 'completed'")
        captures = self.sql("SELECT count(*) FROM ledger_entries WHERE kind = 'capture'")
        return {
            "unbalanced_accounts": int(unbalanced),
            "tasks_running": int(running),
            "tasks_settled_twice": int(twice),
            "completed": int(completed),
            "captures": int(captures),
        }

    def check(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            self.failures.append(name)

    # --- scenarios ----------------------------------------------------------------------------
    def one_key_many_instances(self, n):
        before = self.spendable()
        idem = f"cluster-same-{uuid.uuid4()}"
        with cf.ThreadPoolExecutor(max_workers=n) as pool:
            answers = list(pool.map(lambda _: self.execute(idem), range(n)))
        statuses = sorted({s for s, _ in answers})
        # While the first is running, the others are told 409 (retryable: the same key is in
        # flight); every 200 carries the one task's body, and so does a retry afterwards.
        in_flight_ok = all(
            json.loads(b).get("retryable") is True for s, b in answers if s == 409
        )
        replay_status, replay = self.execute(idem)
        bodies = {b for s, b in answers if s == 200} | {replay}
        charged = before - self.spendable()
        ok = (
            set(statuses) <= {200, 409}
            and in_flight_ok
            and replay_status == 200
            and len(bodies) == 1
            and charged == 1
        )
        self.check(
            f"{n} concurrent executes with one Idempotency-Key",
            ok,
            f"statuses {statuses} ({sum(1 for s, _ in answers if s == 200)} x 200, the rest "
            f"409 retryable), {len(bodies)} distinct body among the 200s and the replay, "
            f"{charged} credit(s) charged",
        )

    def kill_one_under_load(self, total, victim=2):
        keys = [f"cluster-kill-{uuid.uuid4()}" for _ in range(total)]
        outcomes = {}
        killed_at = total // 3

        def run(i):
            if i == killed_at:
                pid = self.pid(victim)
                os.kill(pid, signal.SIGKILL)
                # Its port is free only once it is gone: started earlier, the new instance
                # cannot bind and exits.
                self.wait_exit(pid, 10)
                self.start(victim)
            return keys[i], self.execute(keys[i])

        started = time.time()
        with cf.ThreadPoolExecutor(max_workers=32) as pool:
            for key, (status, body) in pool.map(run, range(total)):
                outcomes[key] = (status, body)
        elapsed = time.time() - started
        failed = [k for k, (s, _) in outcomes.items() if s != 200]
        print(
            f"  {total} executes in {elapsed:.1f} s, instance {victim} killed with SIGKILL "
            f"after {killed_at}; {len(failed)} not answered 200",
            flush=True,
        )
        if not self.wait_ready(victim):
            raise SystemExit(f"instance {victim} did not come back after SIGKILL: see its log")
        return outcomes, failed

    def settled_after_recovery(self, failed, recover_after):
        # Tasks the killed instance held are refunded by recovery once they are older than the
        # window; wait for it, then every key the client saw fail must answer its settled outcome.
        deadline = time.time() + recover_after + 60
        while time.time() < deadline and self.books()["tasks_running"] > 0:
            time.sleep(1)
        books = self.books()
        settled = 0
        wrong = []
        for key in failed:
            status, body = self.execute(key)
            try:
                doc = json.loads(body)
            except ValueError:
                doc = {}
            # A replay returns the task's settled outcome: completed (200) or the refund's problem.
            if status == 200 or doc.get("failure_class") in ("interrupted", "upstream_unreachable",
                                                              "upstream_error", "upstream_timeout"):
                settled += 1
            else:
                wrong.append((key, status, body[:200]))
        ok = (
            books["unbalanced_accounts"] == 0
            and books["tasks_running"] == 0
            and books["tasks_settled_twice"] == 0
            and books["completed"] == books["captures"]
            and not wrong
        )
        self.check(
            "after SIGKILL and recovery: the books add up and every failed key has its outcome",
            ok,
            f"{books}; retried {len(failed)} failed keys, {settled} answered their settled "
            f"outcome{'; unexpected: ' + repr(wrong[:3]) if wrong else ''}",
        )

    def rolling_restart(self, seconds_per_node):
        stop = time.time() + 3600
        results = []

        def load():
            while time.time() < stop:
                results.append(self.execute(f"cluster-roll-{uuid.uuid4()}")[0])

        with cf.ThreadPoolExecutor(max_workers=8) as pool:
            workers = [pool.submit(load) for _ in range(8)]
            try:
                time.sleep(1)
                for n in range(1, len(self.nodes) + 1):
                    pid = self.pid(n)
                    os.kill(pid, signal.SIGTERM)
                    exited = self.wait_exit(pid, 40)
                    self.start(n)
                    ready = self.wait_ready(n)
                    print(f"  instance {n}: drained and exited {exited}, back ready {ready}",
                          flush=True)
                    if not ready:
                        raise SystemExit(f"instance {n} did not come back: see its log")
                    time.sleep(seconds_per_node)
            finally:
                # The load stops whatever happened above, so a failure ends the run instead of
                # leaving the pool waiting for its workers' hour.
                stop = time.time()
            for w in workers:
                w.result()
        bad = [s for s in results if s != 200]
        self.check(
            "rolling restart (SIGTERM each instance in turn) under steady load",
            not bad,
            f"{len(results)} requests through the balancer, {len(bad)} failed "
            f"({sorted(set(bad))})",
        )

    def brute_force(self, limit):
        """Wrong e-mail codes through the balancer, each request with another forged
        X-Forwarded-For entry, from 127.0.0.2 (not the trusted proxy's address): the instances
        take the address haproxy saw, and the lockout, kept in the store, holds across all three."""
        host, port = self.lb.split("//")[1].split(":")

        def post(path, doc, forged, source="127.0.0.2"):
            conn = http.client.HTTPConnection(host, int(port), timeout=30,
                                              source_address=(source, 0))
            conn.request("POST", path, json.dumps(doc), {
                "Content-Type": "application/json", "X-Forwarded-For": forged,
                "Forwarded": f"for={forged}"})
            r = conn.getresponse()
            body = r.read()
            conn.close()
            return r.status, body

        wrong, locked, device, seen = 0, None, None, set()
        for i in range(limit * 2):
            forged = f"203.0.113.{i % 250 + 1}"
            if i % 5 == 0:  # a code dies after 5 wrong tries: ask for another
                status, body = post("/api/register", {"email": f"victim{i}@cluster.example"},
                                    forged)
                if status != 200:
                    locked = (wrong, status, body[:160])
                    break
                device = json.loads(body)["deviceId"]
            status, body = post("/api/verify", {"deviceId": device, "code": "000000"}, forged)
            doc = json.loads(body or b"{}")
            seen.add(doc.get("failure_class"))
            if doc.get("failure_class") == "locked_out":
                locked = (wrong, status, doc.get("detail"))
                break
            wrong += 1
        # Another client (127.0.0.3) is not locked out by the first one's failures.
        status, body = post("/api/register", {"email": "other@cluster.example"}, "198.51.100.7",
                            source="127.0.0.3")
        other = json.loads(body).get("deviceId") if status == 200 else None
        other_status = post("/api/verify", {"deviceId": other, "code": "000000"}, "198.51.100.7",
                            source="127.0.0.3")[1] if other else b""
        other_ok = other is not None and b"locked_out" not in other_status
        ok = locked is not None and locked[0] == limit and other_ok
        self.check(
            "code brute force through three instances with forged X-Forwarded-For",
            ok,
            f"locked out after {locked[0] if locked else wrong} wrong codes (limit {limit}; "
            f"answer {locked[1] if locked else '-'}), failure classes seen {sorted(map(str, seen))}"
            f", another client unaffected: {other_ok}",
        )

    def metrics_agree(self, n):
        def scrape():
            total = {}
            for target in self.metrics:
                _, body = self.request("GET", f"http://{target}/metrics")
                for line in body.decode().splitlines():
                    if line.startswith("#") or not line.strip():
                        continue
                    name, _, value = line.rpartition(" ")
                    if name.startswith("svc_credits_"):
                        total[name] = total.get(name, 0.0) + float(value)
            return total

        captures_before = int(self.sql("SELECT count(*) FROM ledger_entries WHERE kind = 'capture'"))
        before = scrape()
        with cf.ThreadPoolExecutor(max_workers=16) as pool:
            statuses = list(pool.map(lambda _: self.execute(f"cluster-m-{uuid.uuid4()}")[0],
                                     range(n)))
        after = scrape()
        captures = int(self.sql("SELECT count(*) FROM ledger_entries WHERE kind = 'capture'"))
        charged = sum(v for k, v in after.items() if k.startswith("svc_credits_charged")) - sum(
            v for k, v in before.items() if k.startswith("svc_credits_charged"))
        ok = charged == captures - captures_before and statuses.count(200) == n
        self.check(
            "metrics agree with the ledger",
            ok,
            f"{n} executes: svc_credits_charged grew by {charged:.0f} over the three instances, "
            f"the ledger gained {captures - captures_before} captures",
        )

    def balancer_answers_problems(self):
        """What haproxy answers itself when no instance can take a request is a problem like
        the service's own errors, never its HTML page; a request it cannot read is a 400."""
        import socket

        host, port = self.lb.split("//")[1].split(":")

        def problem(status, headers, body, want_status, want_class):
            try:
                p = json.loads(body)
            except ValueError:
                return False
            return (
                status == want_status
                and headers.get("content-type") == "application/problem+json"
                and p.get("status") == want_status
                and p.get("failure_class") == want_class
                and p.get("type") == f"/problems/{want_class}"
            )

        # A header line without a colon: haproxy refuses it before any instance sees it.
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n")
            raw = b""
            while chunk := s.recv(65536):
                raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        # haproxy before 3.2 answers a request it cannot parse with its built-in page, not
        # the configured one (haproxy issue 3032): only the status is asked of it here.
        malformed_status, malformed_kind = status, headers.get("content-type")
        # Every instance stopped: the balancer has nowhere to send the request. They are
        # started again whatever happens, for the scenarios and checks after this one.
        pids = [self.pid(n) for n in (1, 2, 3)]
        try:
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
            for pid in pids:
                if not self.wait_exit(pid, 30):
                    # Its port must be free before a new instance can bind it.
                    os.kill(pid, signal.SIGKILL)
                    self.wait_exit(pid, 10)
            status, headers, body = 0, {}, b""
            try:
                with urllib.request.urlopen(self.lb + "/health/ready", timeout=10) as r:
                    status, headers, body = r.status, dict(r.headers), r.read()
            except urllib.error.HTTPError as e:
                status, headers, body = e.code, dict(e.headers), e.read()
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                body = str(e).encode()
        finally:
            for n in (1, 2, 3):
                self.start(n)
        headers = {k.lower(): v for k, v in headers.items()}
        unavailable = problem(status, headers, body, 503, "unavailable") and headers.get(
            "retry-after"
        ) == "1"
        back = all(self.wait_ready(n) for n in (1, 2, 3))
        self.check(
            "the balancer's own answers are problems",
            malformed_status == 400 and unavailable and back,
            f"a malformed request: {malformed_status} ({malformed_kind}); every instance "
            f"stopped: "
            f"{'503 unavailable with Retry-After' if unavailable else f'{status} {body[:80]!r}'}"
            f"; the instances {'came back' if back else 'did not come back'}",
        )

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lb", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--nodes", required=True)
    p.add_argument("--metrics", required=True)
    p.add_argument("--same-key", type=int, default=200)
    p.add_argument("--distinct", type=int, default=2000)
    p.add_argument("--recover-after", type=int, default=30)
    p.add_argument("--roll-seconds", type=float, default=3)
    p.add_argument("--code-limit", type=int, default=20)
    args = p.parse_args()
    c = Cluster(args)
    c.one_key_many_instances(args.same_key)
    _, failed = c.kill_one_under_load(args.distinct)
    c.settled_after_recovery(failed, args.recover_after)
    c.rolling_restart(args.roll_seconds)
    c.brute_force(args.code_limit)
    c.metrics_agree(200)
    c.balancer_answers_problems()
    if c.failures:
        print(f"{len(c.failures)} scenario(s) failed: {', '.join(c.failures)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
