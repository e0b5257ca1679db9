"""Email-code signup through A2A with the official a2a-sdk (1.0 client), end to end:
start_api_key_signup as a data part, the code read from the sandbox outbox, then
complete_api_key_signup; GetTask shows the finished task without the key; the key works on
/api/usage. Exits 0 only if every step holds.
usage: python a2a_signup.py BASE_URL [--email E]"""
import argparse, asyncio, re, sys
import httpx
from google.protobuf.json_format import MessageToDict
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers.proto_helpers import new_message, new_data_part, get_data_parts
from a2a.types import SendMessageRequest, GetTaskRequest, Role, TaskState


async def send(client, data):
    msg = new_message(parts=[new_data_part(data, media_type="application/json")], role=Role.ROLE_USER)
    task = None
    async for resp in client.send_message(SendMessageRequest(message=msg)):
        if resp.HasField("task"):
            task = resp.task
    if task is None:
        sys.exit("no task in the answer")
    state = TaskState.Name(task.status.state)
    results = [d for art in task.artifacts for d in get_data_parts(art.parts)]
    print(data.get("task_type"), "->", state, results)
    if task.status.state != TaskState.TASK_STATE_COMPLETED or not results:
        sys.exit(f"{data.get('task_type')} did not complete")
    return task, results[0]


async def main(a):
    base = a.base.rstrip("/")
    async with httpx.AsyncClient(timeout=60) as hc:
        card = await A2ACardResolver(hc, base).get_agent_card()
        print("card:", card.name, [(i.protocol_binding, i.url, i.protocol_version) for i in card.supported_interfaces])
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=hc)).create(card)
        _, started = await send(client, {"task_type": "start_api_key_signup", "email": a.email, "agent_name": "a2a-sdk check"})
        mail = (await hc.get(f"{base}/sandbox/outbox", params={"to": a.email})).json()["messages"][0]
        code = re.search(r"\b(\d{6})\b", mail["text"]).group(1)
        task, done = await send(client, {"task_type": "complete_api_key_signup", "deviceId": started["deviceId"], "code": code})
        key = done.get("api_key", "")
        if not key.startswith("svc_") or "welcome_message" not in done or "mcp_setup_command" not in done:
            sys.exit("no key, welcome message or setup command in the result")
        again = MessageToDict(await client.get_task(GetTaskRequest(id=task.id)))
        if key in str(again):
            sys.exit("GetTask showed the key a second time")
        print("get_task state:", again["status"]["state"])
        usage = await hc.get(f"{base}/api/usage", headers={"Authorization": f"Bearer {key}"})
        print("usage with the new key:", usage.status_code, usage.text[:200])
        return 0 if usage.status_code == 200 else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("base"); p.add_argument("--email", default="a2a-human@example.com")
    sys.exit(asyncio.run(main(p.parse_args())))
