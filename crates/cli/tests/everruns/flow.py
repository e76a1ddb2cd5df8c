"""The official Everruns Python SDK's whole flow against a real `openharness serve`.

Run by crates/cli/tests/everruns_sdk.rs with the pinned `everruns-sdk` in a venv, against a
server started with `--api-keys-file` whose default LLM provider is a fake Anthropic server on
127.0.0.1 that answers `echo: <the user's latest message>`. Every call is the SDK's own,
unmodified; only the provider and model rows (which the SDK has no calls for) are created with
plain HTTP. Any failed assertion or SDK error exits non-zero with a traceback.

Environment: EVERRUNS_API_URL (the server), EVERRUNS_API_KEY (a key of its keys file),
FAKE_ANTHROPIC_URL and FAKE_ANTHROPIC_KEY (the fake model server).
"""

import asyncio
import os
import sys
import uuid
import warnings

import httpx

import everruns_sdk
from everruns_sdk import (
    AgentCapabilityConfig,
    AgentClient,
    ApiError,
    AuthenticationError,
    EverrunsError,
    Everruns,
    InitialFile,
    NotFoundError,
    generate_agent_id,
)

BASE = os.environ["EVERRUNS_API_URL"]
KEY = os.environ["EVERRUNS_API_KEY"]
# The deprecation notices of the management client's session calls are expected.
warnings.simplefilter("ignore", DeprecationWarning)


def check(condition, what):
    """Fails the flow, saying what was expected."""
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}")


async def expect_error(call, status, needle, what):
    """Awaits `call`, which must fail with an ApiError of `status` naming `needle`."""
    try:
        await call
    except ApiError as err:
        check(err.status_code == status, f"{what}: {status} (got {err.status_code} {err})")
        check(needle in err.message, f"{what}: the message names {needle!r} ({err.message!r})")
        return err
    raise AssertionError(f"{what}: no error")


async def events_until(client, session_id, kind, turns=1):
    """The session's events once `turns` notifications of `kind` are recorded (bounded)."""
    for _ in range(600):
        events = await client.events.list(session_id, types=[kind])
        if len(events) >= turns:
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind} in session {session_id}")


async def all_events(client, session_id):
    """Every event of a session, paged forward with `after_sequence` as the SDK does."""
    seen, after = [], None
    while True:
        page = await client.events.list(session_id, after_sequence=after, limit=100)
        if not page:
            return seen
        seen.extend(page)
        after = max(e.sequence for e in page)


async def stream_until(stream, kind, stop_after=None):
    """Events of `stream` up to the first of `kind` (or the first `stop_after`), then closed."""
    events = []

    async def follow():
        async for event in stream:
            events.append(event)
            if event.type == kind or (stop_after is not None and len(events) == stop_after):
                return

    try:
        await asyncio.wait_for(follow(), timeout=30)
    finally:
        stream.stop()
        await stream.aclose()
    return events


async def setup_provider():
    """The default LLM provider (the fake Anthropic server) and its default model."""
    async with httpx.AsyncClient(base_url=BASE, headers={"Authorization": KEY}) as http:
        provider = await http.post(
            "/v1/llm-providers",
            json={
                "name": "fake-anthropic",
                "provider_type": "anthropic",
                "base_url": os.environ["FAKE_ANTHROPIC_URL"],
                "api_key": os.environ["FAKE_ANTHROPIC_KEY"],
                "is_default": True,
            },
        )
        check(provider.status_code == 201, f"a provider is created ({provider.text})")
        model = await http.post(
            f"/v1/llm-providers/{provider.json()['id']}/models",
            json={"model_id": "claude-sonnet-4-5", "is_default": True, "features": ["streaming"]},
        )
        check(model.status_code == 201, f"a model is created ({model.text})")
        # Every error has the JSON body, 404 and 405 included, with a sentence to act on.
        nowhere = await http.get("/v1/nowhere")
        check(
            nowhere.status_code == 404 and "openapi.json" in nowhere.json()["error"]["message"],
            f"an unknown path is a JSON 404 ({nowhere.text})",
        )
        wrong = await http.put("/v1/agents")
        check(
            wrong.status_code == 405
            and wrong.json()["error"]["code"] == "method_not_allowed"
            and "does not take PUT" in wrong.json()["error"]["message"],
            f"a wrong method is a JSON 405 ({wrong.text})",
        )
        return model.json()["id"]


async def management(client, model_id):
    """The management client: agents, sessions, messages, events, models, capabilities."""
    # Capabilities and models.
    capabilities = await client.capabilities.list()
    check("current_time" in [c.id for c in capabilities], "capabilities.list has current_time")
    page = await client.capabilities.list_page(limit=2)
    check(len(page.data) == 2 and page.total >= 2, "capabilities.list_page pages")
    check((await client.capabilities.get("current_time")).name == "Current time", "capabilities.get")
    models = await client.models.list()
    check(model_id in [m.id for m in models], "models.list has the model")
    model = await client.models.get(model_id)
    check(
        model.provider_name == "fake-anthropic" and model.enabled and model.provider_type == "anthropic",
        "models.get has its provider",
    )

    # Agents: create, get, list with search, apply, apply_by_name, delete (archive).
    suffix = uuid.uuid4().hex[:8]
    agent = await client.agents.create(
        f"travel-{suffix}", "You plan trips. Be brief.", description="Trips", tags=["demo"]
    )
    check(agent.status == "active" and agent.harness_id == "agent-chat", "agents.create")
    check((await client.agents.get(agent.id)).name == agent.name, "agents.get")
    found = await client.agents.list(search=f"travel-{suffix}")
    check([a.id for a in found] == [agent.id], "agents.list(search=) finds it")
    check(agent.id not in [a.id for a in await client.agents.list(search="no-such-agent")],
          "agents.list(search=) leaves out others")
    check(agent.id in [a.id for a in await client.agents.list()], "agents.list")
    await expect_error(
        client.agents.create(f"x-{suffix}", "p", capabilities=[AgentCapabilityConfig(ref="research")]),
        422, "research", "a capability that is coming soon is refused",
    )
    await expect_error(
        client.agents.create(f"y-{suffix}", "p", capabilities=[AgentCapabilityConfig(ref="teleport")]),
        422, "teleport", "an unknown capability is refused",
    )
    await expect_error(
        client.agents.create(f"z-{suffix}", "p", initial_files=[InitialFile(path="a.txt", content="x")]),
        422, "initial_files", "initial files are refused",
    )

    chosen = generate_agent_id()
    applied = await client.agents.apply(chosen, f"applied-{suffix}", "v1")
    check(uuid.UUID(applied.id).hex == chosen.removeprefix("agent_"), "agents.apply creates with its id")
    again = await client.agents.apply(chosen, f"applied-{suffix}", "v2")
    check(again.id == applied.id and again.system_prompt == "v2", "agents.apply updates it")
    check((await client.agents.get(chosen)).id == applied.id, "agents.get takes the agent_ spelling")
    by_name = await client.agents.apply_by_name(f"named-{suffix}", "v1")
    renamed = await client.agents.apply_by_name(
        f"named-{suffix}", "v2", capabilities=[AgentCapabilityConfig(ref="current_time")]
    )
    check(renamed.id == by_name.id and renamed.system_prompt == "v2", "agents.apply_by_name updates it")
    check([c.ref for c in renamed.capabilities] == ["current_time"], "apply_by_name sets capabilities")

    # Sessions: create by agent_id and by agent_name, list (filtered), get.
    session = await client.sessions.create(agent_id=agent.id, title="Lisbon")
    check(session.status == "started" and session.organization_id, "sessions.create(agent_id=)")
    named = await client.sessions.create(agent_name=by_name.name, title="Named")
    check(named.agent_id == by_name.id, "sessions.create(agent_name=)")
    everything = [s.id for s in await client.sessions.list()]
    check(session.id in everything and named.id in everything, "sessions.list")
    mine = [s.id for s in await client.sessions.list(agent_id=agent.id)]
    check(mine == [session.id], "sessions.list(agent_id=) filters")
    check((await client.sessions.get(session.id)).title == "Lisbon", "sessions.get")
    await expect_error(client.sessions.get(str(uuid.uuid4())), 404, "session", "an unknown session is 404")

    # Messages: create, then the turn runs; list.
    posted = await client.messages.create(session.id, "Three days in Lisbon: where do I start?")
    check(posted.role == "user" and posted.content[0].text.startswith("Three days"), "messages.create")
    await events_until(client, session.id, "turn.completed")
    messages = await client.messages.list(session.id)
    check([m.role for m in messages] == ["user", "agent"], f"messages.list roles ({messages})")
    check(
        messages[1].content[0].text == "echo: Three days in Lisbon: where do I start?",
        f"the agent's reply ({messages[1].content[0].text!r})",
    )
    check((await client.sessions.get(session.id)).status == "idle", "the session is idle after its turn")

    # Events: list with since_id, after_sequence, types, exclude; every one has ts.
    events = await all_events(client, session.id)
    kinds = [e.type for e in events]
    check(all(e.ts and e.session_id == session.id for e in events), "every event has ts")
    for kind in ["message.created", "output.message.completed", "turn.completed"]:
        check(kind in kinds, f"the events have {kind}")
    ids = [e.id for e in events]
    check(len(set(ids)) == len(ids), "event ids are unique")
    middle = len(events) // 2
    since = await client.events.list(session.id, since_id=events[middle].id, limit=100)
    check([e.id for e in since] == ids[middle + 1:], "events.list(since_id=) is the rest")
    after = await client.events.list(session.id, after_sequence=events[middle].sequence, limit=100)
    check(all(e.sequence > events[middle].sequence for e in after), "events.list(after_sequence=)")
    only = await client.events.list(session.id, types=["turn.completed", "message.created"])
    check({e.type for e in only} == {"turn.completed", "message.created"}, "events.list(types=)")
    quiet = await client.events.list(session.id, exclude=["message.delta", "step.generating"], limit=100)
    check(quiet and not {"message.delta", "step.generating"} & {e.type for e in quiet}, "events.list(exclude=)")
    check("message.delta" in kinds, "the reply streamed as message.delta")
    no_deltas = await stream_until(
        client.events.stream(session.id, exclude=["output.message.delta", "reason.thinking.delta"]),
        "turn.completed",
    )
    check(
        [e.id for e in no_deltas] == [e.id for e in events if e.type != "message.delta"],
        "the stream's exclude_deltas leaves out message.delta",
    )

    # The SSE stream, cut in the middle and reconnected with since_id: nothing lost or repeated.
    first = await stream_until(client.events.stream(session.id), "turn.completed", stop_after=middle)
    check(len(first) == middle, f"the stream gave {middle} events before the cut")
    rest = await stream_until(client.events.stream(session.id, since_id=first[-1].id), "turn.completed")
    check([e.id for e in first + rest] == ids, "the stream reconnected with since_id loses and repeats nothing")

    # Live: a second turn followed on the stream from the last event seen.
    follow = asyncio.create_task(
        stream_until(client.events.stream(session.id, since_id=ids[-1]), "turn.completed")
    )
    await asyncio.sleep(0.2)
    await client.messages.create(session.id, "And on day two?")
    live = await follow
    check(live[0].sequence > events[-1].sequence, "the live stream starts after the last event seen")
    replies = [e for e in live if e.type == "output.message.completed"]
    check(
        replies and replies[0].data["message"]["content"][0]["text"] == "echo: And on day two?",
        "the live stream carries the second answer",
    )

    # Cancel: nothing runs (no change), then a turn whose model hangs.
    await client.sessions.cancel(session.id)
    check((await client.sessions.get(session.id)).status == "idle", "sessions.cancel of an idle session")
    slow = await client.sessions.create(agent_id=agent.id, title="Slow")
    await client.messages.create(slow.id, "Take your time [hang]")
    check((await client.sessions.get(slow.id)).status == "active", "a session is active during its turn")
    await client.sessions.cancel(slow.id)
    ended = await events_until(client, slow.id, "turn.failed")
    check(ended[0].data["error_code"] == "cancelled", f"sessions.cancel ends the turn ({ended[0].data})")
    check((await client.sessions.get(slow.id)).status == "idle", "the cancelled session is idle")

    # Delete a session, delete (archive) an agent.
    await client.sessions.delete(named.id)
    await expect_error(client.sessions.get(named.id), 404, "session", "sessions.delete deletes")
    await client.agents.delete(applied.id)
    archived = await client.agents.get(applied.id)
    check(archived.status == "archived", "agents.delete archives")
    return agent


async def agent_client(agent):
    """AgentClient, rooted at the agent's URL, with `Authorization: Bearer <key>`."""
    async with AgentClient(f"{BASE}/v1/agents/{agent.id}", KEY) as client:
        card = await client.card()
        check(card["id"] == agent.id and card["name"] == agent.name, "card")
        session = await client.create_session(title="From code")
        listed = await client.list_sessions()
        check(session["id"] in [s["id"] for s in listed["data"]], "list_sessions")
        check((await client.get_session(session["id"]))["title"] == "From code", "get_session")
        sent = await client.send_message(session["id"], "Where to eat?")
        check(sent["role"] == "user", "send_message")
        streamed = await stream_until(client.stream_events(session["id"], after_sequence=0), "turn.completed")
        check(streamed[-1].type == "turn.completed", "stream_events follows the turn to its end")
        listed_events = await client.list_events(session["id"], after_sequence=0)
        check(listed_events and all(e.sequence > 0 for e in listed_events), "list_events(after_sequence=)")
        await client.cancel(session["id"])
        answer = await asyncio.wait_for(client.run("What should I pack?"), timeout=30)
        check(answer == "echo: What should I pack?", f"run ends with the answer ({answer!r})")
        again = await asyncio.wait_for(client.run("And shoes?", session_id=session["id"]), timeout=30)
        check(again == "echo: And shoes?", f"run on an existing session ({again!r})")


async def main():
    print(f"everruns-sdk {everruns_sdk.__version__ if hasattr(everruns_sdk, '__version__') else ''}")
    model_id = await setup_provider()
    # The management client sends the key bare in `Authorization`.
    async with Everruns(api_key=KEY, base_url=BASE) as client:
        agent = await management(client, model_id)
    async with Everruns(api_key="not-the-key", base_url=BASE) as wrong:
        try:
            await wrong.agents.list()
            raise AssertionError("a wrong key was accepted")
        except AuthenticationError as err:
            check(err.code == "unauthorized" and err.message, "a wrong bare key is 401")
    await agent_client(agent)
    print("the Everruns SDK flow passed")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except (AssertionError, EverrunsError, NotFoundError) as err:
        print(f"FAILED: {type(err).__name__}: {err}", file=sys.stderr)
        raise
