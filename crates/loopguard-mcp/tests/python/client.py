"""The MCP client of the loopguard-mcp tests (reference Python SDK, `mcp` 2.x ClientSession).

    python client.py SCENARIO --url URL          # streamable HTTP
    python client.py SCENARIO -- COMMAND ARGS... # stdio: starts COMMAND

Prints one JSON document describing what the client saw.
"""

import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


def call_record(result):
    return {"isError": bool(result.is_error), "texts": texts(result)}


@asynccontextmanager
async def connect(target, **callbacks):
    if target[0] == "--url":
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(target[1]) as streams:
            async with ClientSession(streams[0], streams[1], **callbacks) as s:
                await s.initialize()
                yield s
    else:
        # The SDK passes the child only a few variables; the tests' own go through.
        env = {k: v for k, v in os.environ.items() if k.startswith(("LOOPGUARD", "RUST_"))}
        params = StdioServerParameters(command=target[0], args=target[1:], env=env)
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w, **callbacks) as s:
                await s.initialize()
                yield s


async def loop(target):
    async with connect(target) as s:
        return [call_record(await s.call_tool("same", {"path": "/etc/hosts"})) for _ in range(25)]


async def repeat(target):
    n = int(os.environ["LOOPGUARD_TEST_N"])
    async with connect(target) as s:
        return [call_record(await s.call_tool("same", {"path": "/etc/hosts"})) for _ in range(n)]


async def counter(target):
    async with connect(target) as s:
        return [call_record(await s.call_tool("counter", {})) for _ in range(25)]


async def ask(target):
    """`loopguard.onCritical: "ask"`: $LOOPGUARD_TEST_N calls of `same` (25 by default). The
    elicitation callback answers every question with $LOOPGUARD_TEST_ANSWER: `yes` (accept,
    run: true), `no` (accept, run: false), `decline`, `cancel`, `slow` (yes, after 5 s), or
    `none`: the client has no callback, so it declares no elicitation capability."""
    answer = os.environ.get("LOOPGUARD_TEST_ANSWER", "none")
    n = int(os.environ.get("LOOPGUARD_TEST_N", "25"))
    questions = []

    async def elicitation(context, params):
        questions.append(
            {
                "after_calls": len(calls),
                "mode": getattr(params, "mode", None),
                "message": params.message,
                "schema": params.requested_schema,
            }
        )
        if answer == "slow":
            await anyio.sleep(5)
        if answer in ("yes", "slow"):
            return types.ElicitResult(action="accept", content={"run": True})
        if answer == "no":
            return types.ElicitResult(action="accept", content={"run": False})
        return types.ElicitResult(action=answer)

    callbacks = {} if answer == "none" else {"elicitation_callback": elicitation}
    calls = []
    async with connect(target, **callbacks) as s:
        for _ in range(n):
            calls.append(call_record(await s.call_tool("same", {"path": "/etc/hosts"})))
    return {"calls": calls, "questions": questions}


async def transparency(target):
    logs = []

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="forty-two"), model="scripted"
        )

    notifications = []

    async def on_message(message):
        if type(message).__name__.endswith("Notification"):
            notifications.append(type(message).__name__)

    async def elicitation(context, params):
        return types.ElicitResult(action="accept", content={"name": "Ana"})

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def logging_cb(params):
        logs.append({"level": params.level, "data": params.data})

    out = {}
    async with connect(
        target,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=list_roots,
        logging_callback=logging_cb,
        message_handler=on_message,
    ) as s:
        out["tools"] = (await s.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)
        out["resources"] = (await s.list_resources()).model_dump(mode="json", by_alias=True, exclude_none=True)
        out["resource"] = (await s.read_resource("data://greeting")).model_dump(mode="json", by_alias=True, exclude_none=True)
        out["prompts"] = (await s.list_prompts()).model_dump(mode="json", by_alias=True, exclude_none=True)
        out["prompt"] = (await s.get_prompt("review", {"code": "x = 1"})).model_dump(mode="json", by_alias=True, exclude_none=True)
        out["completion"] = (
            await s.complete(types.PromptReference(type="ref/prompt", name="review"), {"name": "code", "value": "print"})
        ).model_dump(mode="json", by_alias=True, exclude_none=True)
        progress = []

        async def on_progress(p, total, message):
            progress.append([p, total, message])

        slow = await s.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
        out["progress"] = progress
        out["slow"] = call_record(slow)
        out["weather"] = (await s.call_tool("weather", {"city": "Oslo"})).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        # Cancellation: the waiting call is abandoned, the session goes on.
        cancelled = "not cancelled"
        with anyio.move_on_after(0.5) as scope:
            await s.call_tool("hang", {})
        if scope.cancelled_caught:
            cancelled = "cancelled"
        out["cancellation"] = cancelled
        out["after_cancel"] = call_record(await s.call_tool("counter", {}))
        out["sampling"] = call_record(await s.call_tool("ask", {"question": "the answer?"}))
        out["elicitation"] = call_record(await s.call_tool("who", {}))
        out["roots"] = call_record(await s.call_tool("roots", {}))
        out["logging"] = call_record(await s.call_tool("chatty", {}))
        out["grow"] = call_record(await s.call_tool("grow", {}))
        await anyio.sleep(0.1)
        out["tools_after_change"] = sorted(t.name for t in (await s.list_tools()).tools)
        out["notifications"] = notifications
        out["log_messages"] = logs
    return out


async def crash(target):
    async with connect(target) as s:
        try:
            with anyio.fail_after(10):
                result = await s.call_tool("crash", {})
            return {"outcome": "result", "result": call_record(result)}
        except Exception as e:  # the point: the client gets an error, whatever its class
            return {"outcome": "error", "type": type(e).__name__, "message": str(e)}


SCENARIOS = {"ask": ask, "loop": loop, "repeat": repeat, "counter": counter, "transparency": transparency, "crash": crash}

if __name__ == "__main__":
    scenario = sys.argv[1]
    rest = sys.argv[2:]
    target = rest if rest[0] == "--url" else rest[rest.index("--") + 1 :]
    result = anyio.run(SCENARIOS[scenario], target)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
