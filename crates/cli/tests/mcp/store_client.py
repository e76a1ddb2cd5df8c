"""Drives `openharness mcp serve` with the official Python MCP client (`mcp`, pinned by
crates/cli/tests/mcp_serve.rs), as a coding assistant would.

    python store_client.py stdio OPENHARNESS STORE read-only|read-write
    python store_client.py http URL [KEY]

Prints one JSON line of findings; the Rust test asserts on them.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def call(client, name, **arguments):
    result = await client.call_tool(name, arguments)
    if result.is_error:
        return {"error": " ".join(c.text for c in result.content if getattr(c, "text", None))}
    return result.structured_content


async def explore(client, writes):
    found = {}
    tools = await client.list_tools()
    found["tools"] = sorted(t.name for t in tools.tools)
    found["workflows"] = (await call(client, "list_workflows"))["workflows"]
    listed = await call(client, "list_sessions")
    found["total"] = listed["total"]
    first = listed["sessions"][-1]  # oldest
    found["first"] = {"workflow": first["workflow"], "len": first["len"], "status": first["status"]}
    page = await call(client, "read_events", session=first["id"], limit=5)
    found["page"] = {"names": [e["name"] for e in page["events"]], "next_after": page["nextAfter"], "len": page["len"]}
    rest = await call(client, "read_events", session=first["id"], after=page["nextAfter"], limit=1000)
    found["rest"] = len(rest["events"])
    found["state_end"] = await call(client, "state_at", session=first["id"])
    found["state_0"] = await call(client, "state_at", session=first["id"], position=0)
    found["bad_session"] = await call(client, "read_events", session="not-a-session")
    found["bad_args"] = await call(client, "state_at", position=3)
    found["same"] = await call(client, "diff_sessions", a=first["id"], b=first["id"])
    fork = await call(client, "fork_session", session=first["id"], position=first["len"], input="And another thing?")
    found["fork"] = fork
    if writes and "session" in fork:
        found["fork_diff"] = await call(client, "diff_sessions", a=first["id"], b=fork["session"])
        found["after_fork_total"] = (await call(client, "list_sessions"))["total"]
    return found


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        program, store, access = sys.argv[2], sys.argv[3], sys.argv[4]
        args = ["--store", store, "mcp", "serve"] + (["--allow-writes"] if access == "read-write" else [])
        params = StdioServerParameters(command=program, args=args)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                found = await explore(session, access == "read-write")
    else:
        url = sys.argv[2]
        key = sys.argv[3] if len(sys.argv) > 3 else None
        headers = {"Authorization": f"Bearer {key}"} if key else None
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    found = await explore(session, False)
    print(json.dumps(found))


asyncio.run(main())
