"""The MCP server the loopguard-mcp tests talk to (reference Python SDK, `mcp` 2.x MCPServer).

Every call of the `same` tool is appended to the file named by $LOOPGUARD_TEST_CALLS, so a
test can tell how many calls really reached the server.

    python server.py              # stdio
    python server.py --http PORT  # streamable HTTP on 127.0.0.1:PORT/mcp
"""

import asyncio
import os
import sys
import warnings

# Sampling, roots and logging are deprecated as of 2026-07-28; they are exercised on purpose.
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("loopguard-test-server")
_counter = 0


def _note(tool: str, arg: str) -> None:
    path = os.environ.get("LOOPGUARD_TEST_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{tool} {arg}\n")


@server.tool(description="Returns the same text forever.")
def same(path: str) -> str:
    _note("same", path)
    return f"contents of {path}: unchanged"


@server.tool(description="A counter: a new number on every call.")
def counter() -> str:
    global _counter
    _counter += 1
    return f"count {_counter}"


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(description="Structured output.")
def weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@server.tool(description="Reports progress three times, then answers.")
async def slow(steps: int, ctx: Context) -> str:
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"done after {steps} steps"


@server.tool(description="Waits until cancelled.")
async def hang(ctx: Context) -> str:
    await asyncio.sleep(60)
    return "woke up"


@server.tool(description="Asks the client's model (sampling).")
async def ask(question: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=20,
    )
    return f"the model said: {result.content.text}"


@server.tool(description="Adds a tool and says so (notifications/tools/list_changed).")
async def grow(ctx: Context) -> str:
    def added() -> str:
        return "I am new"

    server.add_tool(added, name="added", description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    return "grown"


class Name(BaseModel):
    name: str


@server.tool(description="Asks the user for a name (elicitation).")
async def who(ctx: Context) -> str:
    result = await ctx.elicit("Your name?", Name)
    return f"{result.action}: {result.data.name if result.action == 'accept' else '-'}"


@server.tool(description="Lists the client's roots.")
async def roots(ctx: Context) -> str:
    result = await ctx.session.list_roots()
    return ",".join(str(r.uri) for r in result.roots)


@server.tool(description="Logs, then answers.")
async def chatty(ctx: Context) -> str:
    await ctx.info("hello from the server")
    return "said hello"


@server.tool(description="Crashes the server in the middle of the call.")
def crash() -> str:
    sys.stderr.write("test server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.resource("data://greeting", description="A fixed greeting.", mime_type="text/plain")
def greeting() -> str:
    return "hello, resource"


@server.prompt(description="Review some code.")
def review(code: str) -> str:
    return f"Please review this code:\n{code}"


@server.completion()
async def complete(ref, argument, context):
    if argument.name == "code":
        return types.Completion(values=[v for v in ["print(1)", "print(2)"] if v.startswith(argument.value)])
    return None


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
