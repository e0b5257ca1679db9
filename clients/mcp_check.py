"""The official MCP Python SDK client against the service, with an optional API key.

Wraps ../shared/clients/mcp_client_check.py's flow (initialize, list tools, call one tool) and
adds the Authorization header the SDK needs for tools that take a key, as that script's README
asks. Prints a transcript; exits 1 when the call is an error or an expectation fails.

usage: python mcp_check.py URL TOOL JSON_ARGS [--key svc_...] [--expect KEY=VALUE ...]
"""
import argparse, json, sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(a):
    headers = {"Authorization": f"Bearer {a.key}"} if a.key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(a.url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                init = await s.initialize()
                print("protocolVersion:", init.protocol_version)
                print("serverInfo:", init.server_info.name, init.server_info.version)
                tools = (await s.list_tools()).tools
                print("tools:", [t.name for t in tools])
                r = await s.call_tool(a.tool, json.loads(a.args))
                dumped = r.model_dump(by_alias=True, exclude_none=True, mode="json")
                print("call", a.tool, "->", json.dumps(dumped))
                if dumped.get("isError"):
                    return 1
                structured = dumped.get("structuredContent") or {}
                for expectation in a.expect:
                    key, want = expectation.split("=", 1)
                    got = json.dumps(structured.get(key))
                    if got != want:
                        print(f"expected {key}={want}, got {got}")
                        return 1
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("tool")
    p.add_argument("args", nargs="?", default="{}")
    p.add_argument("--key")
    p.add_argument("--expect", action="append", default=[])
    sys.exit(anyio.run(main, p.parse_args()))
