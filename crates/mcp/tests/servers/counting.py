"""A small MCP server written with the official Python SDK (`mcp`, pinned by the tests), for
the client tests of `openharness-mcp`.

Every tool call appends the tool's name to the file named by `MCP_CALLS_FILE`, so a test can
count the calls that reached the server (zero during a replay, a cassette or a fork's prefix).

    python counting.py stdio
    python counting.py http PORT [TOKEN]   # Streamable HTTP on 127.0.0.1:PORT/mcp; with TOKEN,
                                           # requests need `Authorization: Bearer TOKEN` and
                                           # `X-Team: research`, else 401

Tools: add, slow (sleeps), fail (a tool error), crash (the process exits), garbage (writes
non-MCP lines on stdout, stdio only), grow (adds the tool `grown` and says the list changed).
"""

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("counting", version="1.0.0")


def count(name: str) -> None:
    path = os.environ.get("MCP_CALLS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as calls:
            calls.write(name + "\n")


@server.tool(description="Adds two integers.")
def add(a: int, b: int) -> int:
    count("add")
    return a + b


@server.tool(description="Sleeps for `seconds`, then answers.")
def slow(seconds: float) -> str:
    count("slow")
    time.sleep(seconds)
    return "awake"


@server.tool(description="Always fails with `message`.")
def fail(message: str) -> str:
    count("fail")
    raise ToolError(message)


@server.tool(description="Exits the server process.")
def crash() -> str:
    count("crash")
    sys.stderr.write("counting: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(description="Writes a line that is not JSON-RPC on stdout (stdio), then a reply whose id answers nothing, then answers.")
def garbage() -> str:
    count("garbage")
    sys.stdout.write("this is not JSON-RPC\n")
    sys.stdout.write('{"jsonrpc": "2.0", "id": 987654, "result": {"content": "not a list"}}\n')
    sys.stdout.flush()
    return "after the garbage"


@server.tool(description="Adds the tool `grown` and announces the change.")
async def grow(ctx: Context) -> str:
    count("grow")

    def grown(text: str) -> str:
        count("grown")
        return text.upper()

    server.add_tool(grown, name="grown", description="Upper-cases text.")
    # Protocol 2026-07-28 and later: to the client's `subscriptions/listen` stream; earlier
    # versions: sent unasked on the session.
    await ctx.notify_tools_changed()
    legacy = getattr(ctx.session, "send_tool_list_changed", None)
    if legacy is not None:
        await legacy()
    return "grown"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
        return
    import uvicorn

    port = int(sys.argv[2])
    token = sys.argv[3] if len(sys.argv) > 3 else None
    app = server.streamable_http_app()

    async def guarded(scope, receive, send):
        if token and scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            ok = headers.get(b"authorization") == f"Bearer {token}".encode() and headers.get(
                b"x-team"
            ) == b"research"
            if not ok:
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
