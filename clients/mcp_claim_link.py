"""Claim-link signup through MCP with the official MCP Python SDK, no key: start, have the
human approve on the real pages (approve_device.py's browserless walk), poll to the key, then
call svc_auth_status with it. Exits 0 only if every step holds.
usage: python mcp_claim_link.py MCP_URL BASE_URL [--deny]"""
import argparse, json, subprocess, sys, os, time

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

HERE = os.path.dirname(os.path.abspath(__file__))


async def call(url, tool, args, key=None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                r = await s.call_tool(tool, args)
                d = r.model_dump(by_alias=True, exclude_none=True, mode="json")
                if d.get("isError"):
                    sys.exit(f"{tool} failed: {json.dumps(d)}")
                return d["structuredContent"]


async def main(a):
    started = await call(a.mcp, "svc_start_claim_link_signup", {"agent_name": "MCP SDK check"})
    print("start ->", {k: v for k, v in started.items() if k != "deviceCode"})
    link = started["verification_uri_complete"]
    human = [sys.executable, os.path.join(HERE, "approve_device.py"), a.base, link] + (["--deny"] if a.deny else [])
    print(subprocess.run(human, check=True, capture_output=True, text=True).stdout.strip())
    for _ in range(20):
        polled = await call(a.mcp, "svc_poll_claim_link_signup", {"deviceCode": started["deviceCode"]})
        print("poll ->", {k: (v[:16] + "…" if k == "api_key" else v) for k, v in polled.items()})
        if polled["status"] in ("pending", "slow_down"):
            time.sleep(polled.get("interval", 5))
            continue
        break
    if a.deny:
        return 0 if polled["status"] == "denied" else 1
    if polled["status"] != "complete" or "welcome_message" not in polled:
        return 1
    status = await call(a.mcp, "svc_auth_status", {}, key=polled["api_key"])
    print("svc_auth_status with the new key ->", status)
    return 0 if status.get("authenticated") else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("mcp"); p.add_argument("base"); p.add_argument("--deny", action="store_true")
    sys.exit(anyio.run(main, p.parse_args()))
