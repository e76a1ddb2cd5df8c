"""The official A2A Python SDK (a2a-sdk, unmodified) against a real `openharness serve`.

Run by crates/cli/tests/a2a_sdk.rs with A2A_BASE (a server serving `chat` and
`planner-executor`, `--chat-workflow chat`), A2A_SLOW_BASE (the same, with a slow scripted
model: a turn to cancel) and A2A_KEY (the API key both servers ask for).
"""

import asyncio
import os
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

BASE = os.environ["A2A_BASE"]
SLOW = os.environ["A2A_SLOW_BASE"]
KEY = os.environ["A2A_KEY"]


def message(text, context_id="", task_id="", message_id=None):
    return Message(
        message_id=message_id or str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )


async def client(http, base, streaming):
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    return await factory.create_from_url(base)


async def one(client, request):
    """The only response of a blocking send: the task."""
    responses = [response async for response in client.send_message(request)]
    assert len(responses) == 1, responses
    assert responses[0].HasField("task"), responses[0]
    return responses[0].task


def state(name):
    return TaskState.Value(name)


async def cards(http):
    # The workflow's card, where the client looks for it, and the default one at the root.
    card = await A2ACardResolver(http, f"{BASE}/a2a/chat").get_agent_card()
    assert card.name == "chat", card
    assert card.supported_interfaces[0].url == f"{BASE}/a2a/chat", card
    assert card.supported_interfaces[0].protocol_binding == "JSONRPC"
    assert card.supported_interfaces[0].protocol_version == "1.0"
    assert card.capabilities.streaming
    assert "bearer" in card.security_schemes
    root = await A2ACardResolver(http, BASE).get_agent_card()
    assert root.name == "chat", root
    # Cards need no key; the endpoint does.
    async with httpx.AsyncClient() as bare:
        public = await bare.get(f"{BASE}/a2a/planner-executor/.well-known/agent-card.json")
        assert public.status_code == 200, public.text
        assert public.json()["name"] == "planner-executor"
        refused = await bare.post(f"{BASE}/a2a/chat", json={})
        assert refused.status_code == 401, refused.text
    print("cards: ok")


async def send_stream_get(http):
    blocking = await client(http, f"{BASE}/a2a/chat", streaming=False)
    first = await one(blocking, SendMessageRequest(message=message("Hello there", message_id="m-1")))
    assert first.status.state == state("TASK_STATE_COMPLETED"), first
    assert first.id.startswith("task_") and first.context_id, first
    reply = first.artifacts[0].parts[0].text
    assert 'You said "Hello there"' in reply, reply
    assert first.history[0].message_id == "m-1", first.history
    assert first.history[0].role == Role.ROLE_USER
    print("send:", reply)
    # Sent again (a client that lost the answer): the same task, nothing recorded.
    before = (await http.get(f"{BASE}/sessions/{first.context_id}")).json()["len"]
    again = await one(blocking, SendMessageRequest(message=message("Hello there", context_id=first.context_id, message_id="m-1")))
    assert again.id == first.id, (again.id, first.id)
    assert (await http.get(f"{BASE}/sessions/{first.context_id}")).json()["len"] == before

    # The same context, streamed: the task first, the reply in chunks, then completed.
    streaming = await client(http, f"{BASE}/a2a/chat", streaming=True)
    request = SendMessageRequest(message=message("And again", context_id=first.context_id))
    events = [event async for event in streaming.send_message(request)]
    assert events[0].HasField("task"), events[0]
    second = events[0].task
    assert second.context_id == first.context_id
    assert second.id != first.id
    assert second.status.state == state("TASK_STATE_WORKING"), second
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert chunks, events
    assert not chunks[0].append and chunks[-1].last_chunk, chunks
    assert all(c.task_id == second.id and c.context_id == first.context_id for c in chunks)
    text = "".join(part.text for c in chunks for part in c.artifact.parts)
    assert 'You said "And again"' in text and "message 2" in text, text
    assert events[-1].HasField("status_update"), events[-1]
    assert events[-1].status_update.status.state == state("TASK_STATE_COMPLETED")
    print("stream:", len(events), "events:", text)

    # Read back: the same task, the same text.
    read = await streaming.get_task(GetTaskRequest(id=second.id))
    assert read.status.state == state("TASK_STATE_COMPLETED"), read
    assert read.artifacts[0].parts[0].text == text, read
    assert read.history[0].parts[0].text == "And again"
    trimmed = await streaming.get_task(GetTaskRequest(id=first.id, history_length=0))
    assert len(trimmed.history) == 0, trimmed
    # The context's tasks, newest first.
    listed = await streaming.list_tasks(ListTasksRequest(context_id=first.context_id))
    assert [t.id for t in listed.tasks] == [second.id, first.id], listed
    assert listed.total_size == 2 and listed.next_page_token == "", listed
    # A task that is over takes no more messages, and cannot be canceled.
    try:
        await one(blocking, SendMessageRequest(message=message("more", task_id=first.id)))
        raise AssertionError("a finished task took a message")
    except UnsupportedOperationError as err:
        print("a finished task refuses a message:", err)
    try:
        await blocking.cancel_task(CancelTaskRequest(id=first.id))
        raise AssertionError("a finished task was canceled")
    except TaskNotCancelableError:
        pass
    try:
        await blocking.get_task(GetTaskRequest(id="task_9999_nowhere"))
        raise AssertionError("a task that does not exist was found")
    except TaskNotFoundError:
        pass
    print("get: ok")


async def cancel(http):
    # A slow turn, sent without waiting, then canceled: the log records the stop.
    polling = await client(http, f"{SLOW}/a2a/chat", streaming=False)
    polling._config.polling = True
    task = await one(polling, SendMessageRequest(message=message("Take your time")))
    assert task.status.state == state("TASK_STATE_WORKING"), task
    await asyncio.sleep(0.5)
    canceled = await polling.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == state("TASK_STATE_CANCELED"), canceled
    events = await http.get(f"{SLOW}/sessions/{task.context_id}/events")
    names = [event["name"] for event in events.json()["events"]]
    assert "stop:requested" in names, names
    again = await polling.get_task(GetTaskRequest(id=task.id))
    assert again.status.state == state("TASK_STATE_CANCELED"), again
    print("cancel: ok", names[-2:])

    # A running task followed from another connection ends with it.
    streaming = await client(http, f"{SLOW}/a2a/chat", streaming=True)
    task = await one(polling, SendMessageRequest(message=message("Slowly", context_id=task.context_id)))
    followed = [e async for e in streaming.subscribe(SubscribeToTaskRequest(id=task.id))]
    assert followed[0].HasField("task"), followed[0]
    assert followed[-1].status_update.status.state == state("TASK_STATE_COMPLETED"), followed[-1]
    print("subscribe: ok", len(followed), "events")


async def answer(http):
    # The planner-executor asks before it publishes: input required, answered in the same task.
    streaming = await client(http, f"{BASE}/a2a/planner-executor", streaming=True)
    events = [e async for e in streaming.send_message(SendMessageRequest(message=message("Ship version 0.1")))]
    last = events[-1]
    assert last.HasField("status_update"), last
    status = last.status_update.status
    assert status.state == state("TASK_STATE_INPUT_REQUIRED"), status
    question = status.message.parts[0].text
    request_id = status.message.metadata["requestId"]
    task_id = last.status_update.task_id
    print("input required:", question, request_id)
    data = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert any(p.HasField("data") for a in data for p in a.artifact.parts), data

    blocking = await client(http, f"{BASE}/a2a/planner-executor", streaming=False)
    answered = await one(blocking, SendMessageRequest(message=message("yes", task_id=task_id)))
    assert answered.id == task_id, answered
    assert answered.status.state == state("TASK_STATE_COMPLETED"), answered
    roles = [(m.role, m.parts[0].text) for m in answered.history]
    assert roles[0] == (Role.ROLE_USER, "Ship version 0.1"), roles
    assert (Role.ROLE_AGENT, question) in roles and roles[-1] == (Role.ROLE_USER, "yes"), roles
    events = await http.get(f"{BASE}/sessions/{answered.context_id}/events")
    received = [e for e in events.json()["events"] if e["name"] == "input:received"]
    assert received and received[0]["payload"]["requestId"] == request_id, received
    assert received[0]["payload"]["via"] == "a2a", received
    print("answer: ok", answered.status.state)


async def versions(http):
    # A client of another protocol version is told so, in JSON-RPC.
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "task_1_x"}}
    old = await http.post(f"{BASE}/a2a/chat", json=body, headers={"A2A-Version": "0.3"})
    assert old.status_code == 200 and old.json()["error"]["code"] == -32009, old.text
    unknown = await http.post(f"{BASE}/a2a/chat", json={**body, "method": "message/send"})
    assert unknown.json()["error"]["code"] == -32601, unknown.text
    assert unknown.json()["id"] == 1
    print("versions: ok")


async def main():
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        await cards(http)
        await send_stream_get(http)
        await cancel(http)
        await answer(http)
        await versions(http)
    print("the A2A SDK flow passed")


asyncio.run(main())
