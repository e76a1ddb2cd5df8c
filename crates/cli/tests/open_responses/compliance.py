"""The Open Responses compliance cases, re-implemented from the specification repository's
suite (`openresponses/openresponses`, `src/lib/compliance-tests.ts` at commit
18e565604fdf7a08ad3a06bbc30d1ddaee999ea4; its runner is a bun script in that repository, which
CI cannot reach). The same requests, sent concurrently with raw HTTP as the suite sends them
(`POST {base}/responses`, `Authorization: Bearer`), the same validators (output present, status
`completed`, stream events present), and the resource and every stream event checked against
the fields the specification's schemas require (`ResponseResource`'s required list, the
message and `output_text` item fields, each streaming event's fields).

Every case runs against a `/v1` agent (`agent:weather`, whose model is the fake OpenAI server
at FAKE_OPENAI_URL: it calls `get_weather` when offered, else answers with text), set up here
through `/v1`; the seven without tools run against the offline `chat` workflow too. The two
cases with function tools (`tool-calling`, `function-call-roundtrip`) need a `/v1` agent (a
workflow of its own code takes no client tools): against `chat` they are checked to be refused
with `400` naming `tools`. The optional `file-search` and `offline-web-search` cases are skipped,
as the suite skips them without configuration.
"""

import json
import os
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

BASE = os.environ["OPENHARNESS_URL"] + "/v1"
KEY = os.environ["OPENHARNESS_API_KEY"]
AGENT = "agent:weather"

RESOURCE_REQUIRED = [
    "id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
    "previous_response_id", "instructions", "output", "error", "tools", "tool_choice",
    "truncation", "parallel_tool_calls", "text", "top_p", "presence_penalty",
    "frequency_penalty", "top_logprobs", "temperature", "reasoning", "user", "usage",
    "max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "metadata",
    "safety_identifier", "prompt_cache_key",
]
EVENT_REQUIRED = {
    "response.created": ["response"],
    "response.in_progress": ["response"],
    "response.completed": ["response"],
    "response.incomplete": ["response"],
    "response.failed": ["response"],
    "response.output_item.added": ["output_index", "item"],
    "response.output_item.done": ["output_index", "item"],
    "response.content_part.added": ["item_id", "output_index", "content_index", "part"],
    "response.content_part.done": ["item_id", "output_index", "content_index", "part"],
    "response.output_text.delta": ["item_id", "output_index", "content_index", "delta", "logprobs"],
    "response.output_text.done": ["item_id", "output_index", "content_index", "text", "logprobs"],
    "response.function_call_arguments.delta": ["item_id", "output_index", "delta"],
    "response.function_call_arguments.done": ["item_id", "output_index", "arguments"],
    "error": ["code", "message"],
}
HEART = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzFew/eG4AHz+MBSAHKBiJRGFKwIgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938csPn7PwHTKSoViCIEAYEAMhmoKsU2mUCWEQqB5xEMIp/HaGQG2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4vcRKk8dz9eg6IpF7tt9fzGY0gCgafFRFo5Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXjkQDmczJgquGQAPp9WwCNBgG027YACgUC6HRsAZRKBDAY2AJoNv/ZnwzA6WScznG3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHTNPz8MEj//LxuFPo+UBS8vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTpCkh9MFAZpmuVXo+mO/w+/HZvNgbblcUCxaSo/Hyck80Yu6XXDcvfVZr79cvMZjuN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7+e3n8Fhf/Llo2kxi8AQyGRoDkmAhAAAAAASUVORK5CYII="
)
PDF = (
    "data:application/pdf;base64,JVBERi0xLjEKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyAvUGFnZXMgMiAwIFIgPj4KZW5kb2JqCjIgMCBvYmoKPDwgL1R5cGUgL1BhZ2VzIC9LaWRzIFszIDAgUl0gL0NvdW50IDEgPj4KZW5kb2JqCjMgMCBvYmoKPDwgL1R5cGUgL1BhZ2UgL1BhcmVudCAyIDAgUiAvTWVkaWFCb3ggWzAgMCAzMDAgMTQ0XSAvQ29udGVudHMgNCAwIFIgL1Jlc291cmNlcyA8PCAvRm9udCA8PCAvRjEgNSAwIFIgPj4gPj4gPj4KZW5kb2JqCjQgMCBvYmoKPDwgL0xlbmd0aCA3NCA+PgpzdHJlYW0KQlQKL0YxIDEyIFRmCjcyIDcyIFRkCihUaXRsZTogT3BlblJlc3BvbnNlcyBGaWxlIElucHV0IEZpeHR1cmUpIFRqCkVUCmVuZHN0cmVhbQplbmRvYmoKNSAwIG9iago8PCAvVHlwZSAvRm9udCAvU3VidHlwZSAvVHlwZTEgL0Jhc2VGb250IC9IZWx2ZXRpY2EgPj4KZW5kb2JqCnRyYWlsZXIKPDwgL1Jvb3QgMSAwIFIgPj4KJSVFT0Y="
)
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
        "required": ["location"],
    },
}


def post(body, streaming=False, path="/responses"):
    """The suite's request: JSON with `stream` set, the bearer key; (status, text)."""
    data = json.dumps({**body, "stream": streaming} if path == "/responses" else body).encode()
    request = urllib.request.Request(
        BASE + path,
        data=data,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def parse_sse(text):
    """The suite's SSE parser: `data:` JSON events, the final resource from the last of
    `response.completed`/`failed`/`incomplete`, and schema errors per event."""
    events, errors, final = [], [], None
    for block in text.split("\n\n"):
        data = [line[len("data:"):].strip() for line in block.split("\n") if line.startswith("data:")]
        if not data or data[-1] == "[DONE]":
            continue
        event = json.loads(data[-1])
        events.append(event)
        kind = event.get("type")
        missing = [f for f in EVENT_REQUIRED.get(kind, []) + ["sequence_number"] if f not in event]
        if kind not in EVENT_REQUIRED:
            errors.append(f"unknown event type {kind!r}")
        if missing:
            errors.append(f"{kind}: missing {missing}")
        if kind in ("response.completed", "response.failed", "response.incomplete"):
            final = event["response"]
    numbers = [e.get("sequence_number") for e in events]
    if numbers != list(range(len(events))):
        errors.append(f"sequence numbers are not 0..n: {numbers}")
    return events, errors, final


def schema_errors(resource):
    """What the specification's `ResponseResource` schema would refuse."""
    if not isinstance(resource, dict):
        return ["no response resource"]
    errors = [f"missing `{f}`" for f in RESOURCE_REQUIRED if f not in resource]
    for item in resource.get("output", []):
        if item.get("type") == "function_call":
            errors += [f"function_call item lacks `{f}`" for f in ["type", "id", "call_id", "name", "arguments", "status"] if f not in item]
        if item.get("type") == "message":
            errors += [f"message item lacks `{f}`" for f in ["id", "type", "status", "role", "content"] if f not in item]
            for part in item.get("content", []):
                errors += [f"output_text lacks `{f}`" for f in ["type", "text", "annotations", "logprobs"] if f not in part]
    return errors


def checked(status, text, streaming=False):
    """(resource, errors, events) of an answer, as the suite's `parseResponse` reads it."""
    if status != 200:
        return None, [f"HTTP {status}: {text}"], []
    if streaming:
        events, errors, resource = parse_sse(text)
    else:
        events, errors, resource = [], [], json.loads(text)
    return resource, errors + schema_errors(resource), events


def has_output(resource):
    return [] if resource.get("output") else ["Response has no output items"]


def completed(resource):
    status = resource.get("status")
    return [] if status == "completed" else [f'Expected status "completed" but got "{status}"']


def single(body, streaming=False):
    resource, errors, events = checked(*post(body, streaming), streaming)
    if resource is None or errors:
        return errors
    if streaming and not events:
        return ["No streaming events received"]
    return has_output(resource) + completed(resource)


def previous_response_id(model):
    first, errors, _ = checked(*post({"model": model, "input": "Remember this code word: papaya. Reply with only OK."}))
    if errors:
        return errors
    second, errors, _ = checked(*post({
        "model": model,
        "previous_response_id": first["id"],
        "input": "What code word did I ask you to remember?",
    }))
    return errors or has_output(second) + completed(second)


def function_calls(resource):
    return [item for item in resource.get("output", []) if item.get("type") == "function_call"]


def tool_calling(model):
    resource, errors, _ = checked(*post({
        "model": model,
        "input": [message("What's the weather like in San Francisco?")],
        "tools": [WEATHER_TOOL],
    }))
    if errors:
        return errors
    return [] if function_calls(resource) else ["Expected a function_call output item"]


def function_call_roundtrip(model):
    first, errors, _ = checked(*post({
        "model": model,
        "input": "Use the weather tool to get the temperature in San Francisco.",
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "function", "name": "get_weather"},
    }))
    if errors:
        return errors
    calls = function_calls(first)
    if not calls:
        return ["Expected a function_call output item"]
    second, errors, _ = checked(*post({
        "model": model,
        "previous_response_id": first["id"],
        "input": [{"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "64 degrees and clear"}],
        "tools": [WEATHER_TOOL],
    }))
    return errors or has_output(second) + completed(second)


def refused_client_tools(body):
    """Function tools for a workflow of its own code: a 400 naming `tools`."""
    status, text = post(body)
    error = json.loads(text).get("error", {}) if text.startswith("{") else {}
    if status == 400 and error.get("param") == "tools":
        return []
    return [f"expected 400 naming `tools`, got {status}: {text}"]


def message(content, role="user"):
    return {"type": "message", "role": role, "content": content}


def cases(model):
    return {
        "basic-response": lambda: single({"model": model, "input": [message("Say hello in exactly 3 words.")]}),
        "streaming-response": lambda: single({"model": model, "input": [message("Count from 1 to 5.")]}, streaming=True),
        "system-prompt": lambda: single({"model": model, "input": [
            message("You are a pirate. Always respond in pirate speak.", role="system"),
            message("Say hello."),
        ]}),
        "image-input": lambda: single({"model": model, "input": [message([
            {"type": "input_text", "text": "What do you see in this image? Answer in one sentence."},
            {"type": "input_image", "image_url": HEART},
        ])]}),
        "file-input": lambda: single({"model": model, "input": [message([
            {"type": "input_text", "text": "Read the attached file and answer with its title only."},
            {"type": "input_file", "filename": "openresponses-fixture.pdf", "file_data": PDF},
        ])]}),
        "multi-turn": lambda: single({"model": model, "input": [
            message("My name is Alice."),
            message("Hello Alice! Nice to meet you. How can I help you today?", role="assistant"),
            message("What is my name?"),
        ]}),
        "previous-response-id": lambda: previous_response_id(model),
    }


def setup_agent():
    """The fake OpenAI server as the default model of a provider, and the agent `weather`."""
    status, text = post({
        "name": "fake-openai", "provider_type": "openai", "base_url": os.environ["FAKE_OPENAI_URL"],
        "api_key": os.environ["FAKE_OPENAI_KEY"], "is_default": True,
    }, path="/llm-providers")
    assert status == 201, f"a provider is created ({status} {text})"
    provider = json.loads(text)["id"]
    status, text = post({"model_id": "gpt-test", "is_default": True}, path=f"/llm-providers/{provider}/models")
    assert status == 201, f"a model is created ({status} {text})"
    status, text = post({"name": "weather", "system_prompt": "Answer briefly."}, path="/agents")
    assert status == 201, f"the agent is created ({status} {text})"


setup_agent()
CASES = {f"{name} ({AGENT})": case for name, case in cases(AGENT).items()}
CASES[f"tool-calling ({AGENT})"] = lambda: tool_calling(AGENT)
CASES[f"function-call-roundtrip ({AGENT})"] = lambda: function_call_roundtrip(AGENT)
CASES.update({f"{name} (chat)": case for name, case in cases("chat").items()})
CASES["tool-calling (chat: refused, no client tools)"] = lambda: refused_client_tools({
    "model": "chat",
    "input": [message("What's the weather like in San Francisco?")],
    "tools": [WEATHER_TOOL],
})

# Concurrently, as the suite runs them.
with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
    results = dict(zip(CASES, pool.map(lambda case: case(), CASES.values())))
failed = {name: errors for name, errors in results.items() if errors}
for name, errors in results.items():
    print(("FAILED " if errors else "passed ") + name + (f": {errors}" if errors else ""))
if failed:
    sys.exit(f"{len(failed)} compliance case(s) failed")
print(f"the Open Responses compliance cases passed ({len(results)} cases)")
