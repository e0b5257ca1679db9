"""A2A with the official a2a-sdk (1.0 client, unchanged) against the sandbox: send, stream and
get. The card must declare streaming; SendStreamingMessage must yield the task (submitted),
a working status, the artifact and a final completed status, in that order; a plain send and
GetTask must agree; SubscribeToTask on the finished task replays its final state.
With --api-key, the same for a streamed execute_action (the key travels in the httpx client's
Authorization header): submitted, working, the artifact with the typed result and its signed
artifact, completed; GetTask without the key must not find it.
Exits 0 only if every step holds.
usage: python a2a_stream.py BASE_URL [--email E] [--api-key KEY]"""
import argparse, asyncio, sys
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers.proto_helpers import new_message, new_data_part, get_data_parts
from a2a.types import SendMessageRequest, GetTaskRequest, SubscribeToTaskRequest, Role, TaskState


def start(email):
    data = {"task_type": "start_api_key_signup", "email": email, "agent_name": "a2a-sdk stream check"}
    msg = new_message(parts=[new_data_part(data, media_type="application/json")], role=Role.ROLE_USER)
    return SendMessageRequest(message=msg)


def describe(event):
    if event.HasField("task"):
        return ("task", TaskState.Name(event.task.status.state))
    if event.HasField("status_update"):
        return ("status", TaskState.Name(event.status_update.status.state))
    if event.HasField("artifact_update"):
        return ("artifact", event.artifact_update.artifact.artifact_id)
    return ("message", "")


def fail(why):
    print("FAIL:", why)
    sys.exit(1)


async def main(a):
    base = a.base.rstrip("/")
    async with httpx.AsyncClient(timeout=60) as hc:
        card = await A2ACardResolver(hc, base).get_agent_card()
        print("card:", card.name, "streaming:", card.capabilities.streaming)
        if not card.capabilities.streaming:
            fail("the card does not declare streaming")

        # send (no streaming)
        plain = ClientFactory(ClientConfig(streaming=False, httpx_client=hc)).create(card)
        sent = [e async for e in plain.send_message(start(a.email))]
        if len(sent) != 1 or not sent[0].HasField("task"):
            fail(f"send: one task expected, got {sent}")
        task = sent[0].task
        print("send:", TaskState.Name(task.status.state), task.id)
        if task.status.state != TaskState.TASK_STATE_COMPLETED:
            fail("send did not complete")

        # get
        got = await plain.get_task(GetTaskRequest(id=task.id))
        print("get:", TaskState.Name(got.status.state))
        if got.id != task.id or got.status.state != TaskState.TASK_STATE_COMPLETED:
            fail("GetTask does not show the finished task")

        # stream
        streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=hc)).create(card)
        events = [e async for e in streaming.send_message(start(a.email))]
        kinds = [describe(e) for e in events]
        print("stream:", kinds)
        if [k for k, _ in kinds] != ["task", "status", "artifact", "status"]:
            fail("stream: task, status, artifact, status expected")
        if kinds[0][1] != "TASK_STATE_SUBMITTED" or kinds[1][1] != "TASK_STATE_WORKING" \
                or kinds[3][1] != "TASK_STATE_COMPLETED":
            fail("stream: submitted, working, completed expected")
        data = get_data_parts(events[2].artifact_update.artifact.parts)
        if not data or "deviceId" not in data[0]:
            fail(f"stream: the artifact has no deviceId: {data}")
        streamed_id = events[0].task.id

        # subscribe to the finished task: its final state, replayed
        replay = [describe(e) async for e in streaming.subscribe(SubscribeToTaskRequest(id=streamed_id))]
        print("subscribe:", replay)
        if not replay or replay[-1][1] != "TASK_STATE_COMPLETED":
            fail("subscribe did not replay the completed task")
        got = await streaming.get_task(GetTaskRequest(id=streamed_id))
        if got.status.state != TaskState.TASK_STATE_COMPLETED:
            fail("GetTask on the streamed task")
        if a.api_key:
            await execute(base, card, a.api_key)
        print("all good")
        return 0


async def execute(base, card, key):
    data = {"task_type": "execute_action", "domain": "shop.sandbox.test", "action": "search_products",
            "params": {"query": "tea"}, "idempotency_key": "a2a-sdk-python-execute"}
    msg = new_message(parts=[new_data_part(data, media_type="application/json")], role=Role.ROLE_USER)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as hc:
        keyed = ClientFactory(ClientConfig(streaming=True, httpx_client=hc)).create(card)
        events = [e async for e in keyed.send_message(SendMessageRequest(message=msg))]
        kinds = [describe(e) for e in events]
        print("execute stream:", kinds)
        if [k for k, _ in kinds] != ["task", "status", "artifact", "status"] \
                or kinds[3][1] != "TASK_STATE_COMPLETED":
            fail("execute stream: task, working, artifact, completed expected")
        result = get_data_parts(events[2].artifact_update.artifact.parts)[0]
        if result.get("status") != "completed" or "signature" not in result.get("artifact", {}):
            fail(f"execute stream: no completed result with a signed artifact: {result}")
        task_id = events[0].task.id
    async with httpx.AsyncClient(timeout=60) as anonymous:
        plain = ClientFactory(ClientConfig(streaming=False, httpx_client=anonymous)).create(card)
        try:
            await plain.get_task(GetTaskRequest(id=task_id))
            fail("GetTask without the key found the execute task")
        except Exception as e:  # the SDK raises its task-not-found error
            print("get without key:", type(e).__name__)


if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("base"); p.add_argument("--email", default="a2a-stream@example.com")
    p.add_argument("--api-key")
    sys.exit(asyncio.run(main(p.parse_args())))
