"""Google ADK: LoopGuardCallbacks on an LlmAgent driven by a scripted BaseLlm."""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncGenerator, List

import pytest

from conftest import framework

framework('google.adk')  # installed by scripts/test-python.sh


from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from loopguard.adk import LoopGuardCallbacks

from conftest import BLOCK_MESSAGE_21

logging.getLogger("google_adk").setLevel(logging.ERROR)


class ScriptedLlm(BaseLlm):
    """Calls `read` with the same arguments `calls` times, then answers."""

    model: str = "scripted"
    calls: int = 25
    turns: int = 0

    async def generate_content_async(self, llm_request, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.turns += 1
        if self.turns <= self.calls:
            part = types.Part(function_call=types.FunctionCall(name="read", args={"path": "a.txt"}, id=f"call-{self.turns}"))
        else:
            part = types.Part(text="giving up")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def run(agent: LlmAgent, session_id: str) -> List[dict]:
    runner = InMemoryRunner(agent=agent, app_name="loopguard-test")
    await runner.session_service.create_session(app_name="loopguard-test", user_id="u", session_id=session_id)
    responses = []
    message = types.Content(role="user", parts=[types.Part(text="read a.txt")])
    async for event in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        for part in event.content.parts if event.content else []:
            if part.function_response:
                responses.append(part.function_response.response)
    return responses


def test_llm_agent_blocks_the_21st_identical_call() -> None:
    runs = {"n": 0}

    def read(path: str) -> str:
        """Reads a file."""
        runs["n"] += 1
        return "the same content"

    lg = LoopGuardCallbacks()
    agent = LlmAgent(
        name="helper",
        model=ScriptedLlm(),
        tools=[read],
        before_tool_callback=lg.before_tool_callback,
        after_tool_callback=lg.after_tool_callback,
        on_tool_error_callback=lg.on_tool_error_callback,
    )
    responses = asyncio.run(run(agent, "session-1"))
    assert runs["n"] == 20
    assert len(responses) == 25
    assert responses[:10] == [{"result": "the same content"}] * 10
    assert responses[10]["result"] == "the same content"
    assert responses[10]["loopguard_warning"].startswith("WARNING: You have called read 10 times with identical arguments")
    assert responses[11:20] == [{"result": "the same content"}] * 9
    for r in responses[20:]:
        assert r["error"] == BLOCK_MESSAGE_21.format(tool="read")
        assert r["loopguard"] == {"decision": "block", "detector": "generic_repeat", "count": 20}


class RecordingGuard:
    """Delegates to a real Guard and keeps the scope of every call it was asked about."""

    def __init__(self) -> None:
        import loopguard

        self.guard = loopguard.Guard()
        self.scopes: list = []

    def before_call(self, session, tool, args, **kw):
        self.scopes.append((session, kw["run"], kw["agent"]))
        return self.guard.before_call(session, tool, args, **kw)

    def after_call(self, *args, **kw):
        return self.guard.after_call(*args, **kw)


def test_session_is_the_adk_session_and_run_the_invocation() -> None:
    def read(path: str) -> str:
        """Reads a file."""
        return "the same content"

    guard = RecordingGuard()
    lg = LoopGuardCallbacks(guard)
    for session in ("a", "b"):
        agent = LlmAgent(name="helper", model=ScriptedLlm(calls=3), tools=[read],
                         before_tool_callback=lg.before_tool_callback, after_tool_callback=lg.after_tool_callback)
        asyncio.run(run(agent, session))
    sessions = [s for s, _, _ in guard.scopes]
    runs = {s: {r for s2, r, _ in guard.scopes if s2 == s} for s in ("a", "b")}
    assert sessions == ["a"] * 3 + ["b"] * 3
    assert len(runs["a"]) == 1 and len(runs["b"]) == 1 and runs["a"] != runs["b"]
    assert all(agent == "helper" for _, _, agent in guard.scopes)


def test_a_loop_that_survives_a_compaction_ends_the_invocation() -> None:
    from conftest import ABORT_PREFIX, CompactedGuard

    def read(path: str) -> str:
        """Reads a file."""
        return "the same content"

    lg = LoopGuardCallbacks(CompactedGuard())
    model = ScriptedLlm(calls=25)
    agent = LlmAgent(name="helper", model=model, tools=[read],
                     before_tool_callback=lg.before_tool_callback, after_tool_callback=lg.after_tool_callback)
    responses = asyncio.run(run(agent, "compacted"))
    assert responses[:2] == [{"result": "the same content"}] * 2
    assert responses[2]["result"] == "the same content"
    assert responses[2]["loopguard_abort"].startswith(ABORT_PREFIX)
    assert responses[2]["loopguard_verdict"]["detector"] == "compaction_loop_persisted"
    assert responses[2]["loopguard_verdict"]["message"] == responses[2]["loopguard_abort"]
    # The abort ended the invocation: that response was the last, the model was not asked again.
    assert (len(responses), model.turns) == (3, 3)


STRICT = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"profile": "strict"}}


def counted_read():
    runs = {"n": 0}

    def read(path: str) -> str:
        """Reads a file."""
        runs["n"] += 1
        return "the same content"

    return read, runs


def test_the_strict_profile_ending_the_run_ends_the_invocation() -> None:
    import loopguard

    read, runs = counted_read()
    lg = LoopGuardCallbacks(loopguard.Guard(config=STRICT))
    model = ScriptedLlm(calls=25)
    agent = LlmAgent(name="helper", model=model, tools=[read],
                     before_tool_callback=lg.before_tool_callback, after_tool_callback=lg.after_tool_callback)
    responses = asyncio.run(run(agent, "strict"))
    # A strict detector blocks a call; the next ends the run and the invocation.
    n = runs["n"]
    assert 0 < n < 20
    assert (len(responses), model.turns) == (n + 2, n + 2)
    assert responses[n]["loopguard"]["detector"] != "second_critical_abort"
    ended = dict(responses[n + 1]["loopguard"])
    verdict = ended.pop("verdict")
    assert ended == {"decision": "block", "detector": "second_critical_abort", "count": 2, "ended": True}
    assert "this run is ended" in responses[n + 1]["error"]
    # The run's verdict: in the response (JSON) and on the callbacks (typed).
    assert isinstance(lg.verdict, loopguard.Verdict)
    assert verdict == lg.verdict.to_dict()
    assert (verdict["tool"], verdict["detector"], verdict["effect"]) == ("read", "second_critical_abort", "end_run")
    assert verdict["message"] == responses[n + 1]["error"]


def test_stop_on_block_ends_the_invocation_at_the_first_block() -> None:
    read, runs = counted_read()
    lg = LoopGuardCallbacks(stop_on_block=True)
    model = ScriptedLlm(calls=25)
    agent = LlmAgent(name="helper", model=model, tools=[read],
                     before_tool_callback=lg.before_tool_callback, after_tool_callback=lg.after_tool_callback)
    responses = asyncio.run(run(agent, "stop-on-block"))
    assert (runs["n"], len(responses), model.turns) == (20, 21, 21)
    assert responses[20]["error"] == BLOCK_MESSAGE_21.format(tool="read")
    assert responses[20]["loopguard"]["ended"] is True


def test_an_unreachable_store_fails_open_and_logs(caplog) -> None:
    from conftest import DownGuard, assert_failed_open

    runs = {"n": 0}

    def read(path: str) -> str:
        """Reads a file."""
        runs["n"] += 1
        return "the same content"

    guard = DownGuard()
    lg = LoopGuardCallbacks(guard)
    agent = LlmAgent(name="helper", model=ScriptedLlm(calls=3), tools=[read],
                     before_tool_callback=lg.before_tool_callback, after_tool_callback=lg.after_tool_callback)
    with caplog.at_level("WARNING", logger="loopguard"):
        responses = asyncio.run(run(agent, "down"))
    assert responses == [{"result": "the same content"}] * 3
    # ADK: the outcome of a call that was not checked is not recorded either.
    assert runs["n"] == 3 and guard.calls == 3
    messages = [r.getMessage() for r in caplog.records if r.name == "loopguard"]
    assert len(messages) == 3 and all("failing open" in m for m in messages)
