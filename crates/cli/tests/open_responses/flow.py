"""The official `openai` Python SDK, unmodified, against a real `openharness serve`'s Open
Responses API (`/v1/responses`): create, stream, continue by `previous_response_id`, continue an
older response (a fork), read back, replay the stream from every sequence number, cancel,
input items, conversations, a question answered by the next input, and the errors.

Run by `crates/cli/tests/open_responses.rs` with OPENHARNESS_URL and OPENHARNESS_API_KEY set.
"""

import os
import sys
import json
import urllib.request

import openai
from openai import OpenAI

BASE = os.environ["OPENHARNESS_URL"]
KEY = os.environ["OPENHARNESS_API_KEY"]
client = OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0)


def native(path):
    """GET a native route (not part of the protocol) to check what the log holds."""
    request = urllib.request.Request(BASE + path, headers={"Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def check(what, condition, shown=None):
    if not condition:
        sys.exit(f"FAILED: {what}: {shown!r}")
    print(f"ok: {what}")


# A new conversation, not streamed.
first = client.responses.create(model="chat", input="Hello there")
check("a response completes", first.status == "completed", first)
check(
    "its text is the reply",
    first.output_text == '(offline) You said "Hello there"; that is message 1 of our conversation.',
    first.output_text,
)
check("its id names a position", first.id.startswith("resp_"), first.id)
session = first.conversation.id

# The next message, streamed, continuing the first response.
kinds = []
with client.responses.stream(model="chat", input="Second", previous_response_id=first.id) as stream:
    for event in stream:
        kinds.append(event.type)
    second = stream.get_final_response()
check("the stream opens with created, in_progress", kinds[:2] == ["response.created", "response.in_progress"], kinds)
check(
    "an item streams as added, part added, deltas, done",
    kinds[2:4] == ["response.output_item.added", "response.content_part.added"]
    and "response.output_text.delta" in kinds
    and kinds[-4:]
    == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ],
    kinds,
)
check("the continuation is message 2", "message 2 of our conversation" in second.output_text, second.output_text)
check("it continues the same conversation", second.conversation.id == session, second.conversation)
check("it names the response it continues", second.previous_response_id == first.id, second.previous_response_id)

# The first response again, now that the session has moved on: a fork right after it.
length = native("/sessions/" + session)["len"]
alternative = client.responses.create(model="chat", input="Another second", previous_response_id=first.id)
check("an older response continues in a fork", alternative.conversation.id != session, alternative.conversation)
check("the fork knows only what came before it", "message 2 of our conversation" in alternative.output_text, alternative.output_text)
forked = native("/sessions/" + alternative.conversation.id)
check("the fork's parent is the conversation", forked.get("parent") == session, forked)
check("the original is untouched", native("/sessions/" + session)["len"] == length, length)

# Read back: the same response, whole and as a stream from every sequence number.
again = client.responses.retrieve(second.id)
def unparsed(value):
    """A dump without the `parsed` fields the SDK's stream helper adds to what it parses."""
    if isinstance(value, dict):
        return {k: unparsed(v) for k, v in value.items() if k != "parsed"}
    if isinstance(value, list):
        return [unparsed(v) for v in value]
    return value


streamed = unparsed(second.model_dump())
read_back = unparsed(again.model_dump())
differs = {k: (streamed.get(k), read_back.get(k)) for k in set(streamed) | set(read_back) if streamed.get(k) != read_back.get(k)}
check("a response reads back as it streamed", not differs, differs)
whole = [event.model_dump() for event in client.responses.retrieve(second.id, stream=True)]
check("its stream reads back", [e["type"] for e in whole] == kinds, [e["type"] for e in whole])
for after in range(len(whole)):
    suffix = [event.model_dump() for event in client.responses.retrieve(second.id, stream=True, starting_after=after)]
    expected = [e for e in whole if e["sequence_number"] > after]
    if suffix != expected:
        sys.exit(f"FAILED: starting_after={after} gave {len(suffix)} events, expected {len(expected)}")
print(f"ok: starting_after at each of {len(whole)} sequence numbers gives exactly the rest")

# The input items of a response.
items = client.responses.input_items.list(second.id)
check("input items hold the user message", items.data[0].content[0].text == "Second", items)

# A conversation by id.
third = client.responses.create(model="chat", input="Third", conversation=session)
check("a conversation id continues the session", "message 3 of our conversation" in third.output_text, third.output_text)

# Conversations: made empty, started by a response, read back with its items, deleted.
made = client.conversations.create(metadata={"topic": "lisbon"})
started = client.responses.create(model="chat", input="In a conversation", conversation=made.id)
check("a made conversation is started by its first response", started.conversation.id == made.id, started.conversation)
continued = client.responses.create(model="chat", input="Still here", conversation=made.id)
check("and continued", "message 2 of our conversation" in continued.output_text, continued.output_text)
check("it reads back", client.conversations.retrieve(made.id).id == made.id)
listed = client.conversations.items.list(made.id, order="asc")
texts = [
    (item.role, item.content[0].text)
    for item in listed.data
]
check(
    "its items are the turns, oldest first",
    texts
    == [
        ("user", "In a conversation"),
        ("assistant", started.output_text),
        ("user", "Still here"),
        ("assistant", continued.output_text),
    ],
    texts,
)
newest = client.conversations.items.list(made.id, limit=1)
check("newest first by default, a page at a time", newest.data[0].content[0].text == continued.output_text and newest.has_more, newest)
every = [item.id for item in client.conversations.items.list(made.id, limit=1, order="asc")]
check("the SDK pages through all of them", len(every) == 4, every)
deleted = client.conversations.delete(made.id)
check("a conversation is deleted", deleted.deleted, deleted)
try:
    client.conversations.retrieve(made.id)
    sys.exit("FAILED: a deleted conversation was found")
except openai.NotFoundError:
    print("ok: a deleted conversation is gone")

# Cancel a running response (the server's scripted model is slow on purpose).
running = client.responses.create(model="chat", input="Take your time", background=True)
check("a background response answers at once", running.status == "in_progress", running.status)
cancelled = client.responses.cancel(running.id)
check("a cancelled response is incomplete", cancelled.status == "incomplete", cancelled.status)
check("it says why", cancelled.incomplete_details.reason == "cancelled", cancelled.incomplete_details)
events = native("/sessions/" + running.conversation.id + "/events?limit=1000")["events"]
check("the stop is an event in the log", any(e["name"] == "stop:requested" for e in events), [e["name"] for e in events])

# A question: the planner-executor asks before it publishes; the next input answers it.
asked = client.responses.create(model="planner-executor", input="Ship the docs")
check("a question is the response's message", "publish" in asked.output_text.lower(), asked.output_text)
answered = client.responses.create(model="planner-executor", input="yes", previous_response_id=asked.id)
check("the next input answers it", answered.status == "completed", answered)
events = native("/sessions/" + asked.conversation.id + "/events?limit=1000")["events"]
check("the answer is input:received", any(e["name"] == "input:received" for e in events), [e["name"] for e in events])
check("the release is published", any(e["name"] == "release:published" for e in events), [e["name"] for e in events])

# Errors, as the SDK raises them.
try:
    client.responses.create(model="no-such-workflow", input="Hi")
    sys.exit("FAILED: an unknown model was accepted")
except openai.NotFoundError as err:
    check("an unknown model is 404 naming the served ones", "chat" in str(err), str(err))
try:
    client.responses.create(
        model="chat",
        input="Hi",
        tools=[{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
    )
    sys.exit("FAILED: client tools were accepted")
except openai.BadRequestError as err:
    check("client tools are refused, naming the parameter", err.body.get("param") == "tools", err.body)
try:
    client.responses.retrieve("resp_999_" + session)
    sys.exit("FAILED: a response past the log was found")
except openai.NotFoundError:
    print("ok: a position past the log is no response")

print("the openai SDK flow passed")
