"""LangChain v1 create_agent with LoopGuardMiddleware and a scripted chat model."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

import pytest

from conftest import framework

framework('langchain.agents')  # installed by scripts/test-python.sh


from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

import loopguard
from loopguard.langchain import LoopGuardMiddleware

from conftest import BLOCK_MESSAGE_21


class ScriptedChatModel(BaseChatModel):
    """Calls `tool` with the same arguments `calls` times, then answers."""

    tool_name: str = "read"
    tool_args: dict = {"path": "a.txt"}
    calls: int = 25
    turns: int = 0
    seen: List[List[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self

    def _generate(self, messages: List[BaseMessage], stop: Optional[List[str]] = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.turns += 1
        self.seen.append(list(messages))
        if self.turns <= self.calls:
            message = AIMessage(
                content="",
                tool_calls=[{"name": self.tool_name, "args": dict(self.tool_args), "id": f"call-{self.turns}", "type": "tool_call"}],
            )
        else:
            message = AIMessage(content="giving up")
        return ChatResult(generations=[ChatGeneration(message=message)])


def make_tool():
    counter = {"runs": 0}

    @tool
    def read(path: str) -> str:
        """Reads a file."""
        counter["runs"] += 1
        return "the same content"

    return read, counter


def tool_messages(result: dict) -> List[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def check_25_calls(result: dict, counter: dict) -> None:
    assert counter["runs"] == 20
    messages = tool_messages(result)
    assert len(messages) == 25
    for m in messages[:20]:
        assert m.status == "success"
    # The 11th call (10 identical calls before it) warns; the warning is shown to the model,
    # appended to the tool's result, once per bucket of ten.
    assert all("WARNING" not in m.content for m in messages[:10])
    assert messages[10].content.startswith("the same content\n\nWARNING: You have called read 10 times with identical arguments")
    assert all("WARNING" not in m.content for m in messages[11:20])
    for m in messages[20:]:
        assert m.status == "error"
        assert m.content == BLOCK_MESSAGE_21.format(tool="read")
    assert result["messages"][-1].content == "giving up"


def test_create_agent_blocks_the_21st_identical_call() -> None:
    read, counter = make_tool()
    model = ScriptedChatModel()
    agent = create_agent(model, [read], middleware=[LoopGuardMiddleware()], checkpointer=InMemorySaver())
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "read a.txt"}]},
        {"configurable": {"thread_id": "thread-1"}, "recursion_limit": 200},
    )
    check_25_calls(result, counter)


def test_create_agent_async_blocks_the_21st_identical_call() -> None:
    read, counter = make_tool()
    agent = create_agent(ScriptedChatModel(), [read], middleware=[LoopGuardMiddleware()])
    result = asyncio.run(
        agent.ainvoke({"messages": [{"role": "user", "content": "read a.txt"}]}, {"recursion_limit": 200})
    )
    check_25_calls(result, counter)


def test_session_is_the_thread_and_each_invocation_a_run() -> None:
    guard = loopguard.Guard()
    read, counter = make_tool()
    model = ScriptedChatModel(calls=15)
    agent = create_agent(model, [read], middleware=[LoopGuardMiddleware(guard)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "thread-7"}, "recursion_limit": 200}
    agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    # A second invocation on the same thread is a new run: its 15 calls all run, although the
    # thread has now seen 30 identical calls.
    model.turns = 0
    agent.invoke({"messages": [{"role": "user", "content": "again"}]}, config)
    assert counter["runs"] == 30
    # The calls were recorded in session "thread-7": the next call in a run of its own is
    # checked against that session (and allowed: different run).
    d = guard.before_call("thread-7", "read", {"path": "a.txt"}, run="other")
    assert d.decision == "allow"
    records = guard.event({"type": "call", "session": "thread-7", "tool": "read", "args": {"path": "a.txt"}})
    assert records["session"] == "thread-7"


class RecordingGuard:
    """Delegates to a real Guard and keeps every outcome decision it returned."""

    def __init__(self) -> None:
        self.guard = loopguard.Guard()
        self.outcomes: list = []

    def before_call(self, *args: Any, **kwargs: Any) -> Any:
        return self.guard.before_call(*args, **kwargs)

    def after_call(self, *args: Any, **kwargs: Any) -> Any:
        o = self.guard.after_call(*args, **kwargs)
        self.outcomes.append((kwargs, o))
        return o


def test_a_raising_tool_is_recorded_as_an_error_and_the_exception_goes_on() -> None:
    # LangChain v1 lets a tool's exception propagate out of the agent (no handler configured);
    # the middleware records it as the call's error outcome first.
    guard = RecordingGuard()
    runs = {"n": 0}

    @tool
    def flaky(path: str) -> str:
        """Always fails."""
        runs["n"] += 1
        raise ValueError("disk on fire")

    agent = create_agent(ScriptedChatModel(tool_name="flaky"), [flaky], middleware=[LoopGuardMiddleware(guard)])
    with pytest.raises(ValueError, match="disk on fire"):
        agent.invoke({"messages": [{"role": "user", "content": "go"}]}, {"recursion_limit": 200})
    assert runs["n"] == 1
    [(kwargs, outcome)] = guard.outcomes
    assert kwargs["error"] == "disk on fire"
    assert outcome.decision == "recorded"
    assert outcome.result_hash.startswith("error:")


def test_a_loop_that_survives_a_compaction_is_reported_on_the_tool_message() -> None:
    from conftest import ABORT_PREFIX, CompactedGuard

    read, counter = make_tool()
    model = ScriptedChatModel(calls=25)
    agent = create_agent(model, [read], middleware=[LoopGuardMiddleware(CompactedGuard())])
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, {"recursion_limit": 200})
    messages = tool_messages(result)
    assert [m.status for m in messages] == ["success", "success", "error"]
    assert messages[2].content.startswith("the same content\n\n" + ABORT_PREFIX)
    # The guard aborted the run: the agent jumped to the end, the model was not asked again.
    assert model.turns == 3 and isinstance(result["messages"][-1], ToolMessage)


STRICT = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"profile": "strict"}}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_strict_profile_ending_the_run_ends_the_agent(asynchronous: bool) -> None:
    # A strict detector blocks an identical call; the next one is the second critical loop of
    # the run (second_critical_abort): the agent goes to the end there.
    read, counter = make_tool()
    model = ScriptedChatModel(calls=25)
    agent = create_agent(model, [read], middleware=[LoopGuardMiddleware(loopguard.Guard(config=STRICT))])
    request = {"messages": [{"role": "user", "content": "read a.txt"}]}
    config = {"recursion_limit": 200}
    result = asyncio.run(agent.ainvoke(request, config)) if asynchronous else agent.invoke(request, config)
    messages = tool_messages(result)
    runs = counter["runs"]
    assert 0 < runs < 20
    # One block the model was shown, then the call that ended the run: nothing after it.
    assert model.turns == runs + 2, "the model was asked again after the run was ended"
    assert [m.status for m in messages[runs:]] == ["error", "error"]
    assert "this run is ended" in messages[-1].content
    assert isinstance(result["messages"][-1], ToolMessage)


ASK = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"onCritical": "ask"}}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_raise_on_end_raises_run_ended_with_the_verdict(asynchronous: bool) -> None:
    # onCritical "ask": the middleware cannot ask, so call 21 is refused (the model is told);
    # call 22 is the run's next critical: the run is ended, and `invoke` raises RunEnded.
    read, counter = make_tool()
    model = ScriptedChatModel(calls=25)
    middleware = LoopGuardMiddleware(loopguard.Guard(config=ASK), raise_on_end=True)
    agent = create_agent(model, [read], middleware=[middleware])
    request = {"messages": [{"role": "user", "content": "read a.txt"}]}
    config = {"recursion_limit": 200}
    with pytest.raises(loopguard.RunEnded) as ended:
        asyncio.run(agent.ainvoke(request, config)) if asynchronous else agent.invoke(request, config)
    verdict = ended.value.verdict
    assert isinstance(verdict, loopguard.Verdict)
    assert (verdict.tool, verdict.detector, verdict.effect) == ("read", "generic_repeat", "end_run")
    assert verdict.call_id == "call-22" and verdict.message.startswith("CRITICAL: ")
    assert str(ended.value) == verdict.message
    assert (counter["runs"], model.turns) == (20, 22)


def test_without_raise_on_end_an_ended_run_goes_to_the_end_quietly() -> None:
    read, counter = make_tool()
    model = ScriptedChatModel(calls=25)
    agent = create_agent(model, [read], middleware=[LoopGuardMiddleware(loopguard.Guard(config=ASK))])
    result = agent.invoke({"messages": [{"role": "user", "content": "read a.txt"}]}, {"recursion_limit": 200})
    messages = tool_messages(result)
    assert (counter["runs"], model.turns, len(messages)) == (20, 22, 22)
    assert messages[20].content == BLOCK_MESSAGE_21.format(tool="read")
    assert [m.status for m in messages[20:]] == ["error", "error"]


def test_stop_on_block_ends_the_agent_at_the_first_block() -> None:
    read, counter = make_tool()
    model = ScriptedChatModel(calls=25)
    agent = create_agent(model, [read], middleware=[LoopGuardMiddleware(stop_on_block=True)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-stop"}, "recursion_limit": 200}
    result = agent.invoke({"messages": [{"role": "user", "content": "read a.txt"}]}, config)
    messages = tool_messages(result)
    assert (counter["runs"], model.turns, len(messages)) == (20, 21, 21)
    assert messages[-1].content == BLOCK_MESSAGE_21.format(tool="read")
    # The next invocation on the thread is a new run: the model is asked again.
    model.turns, model.calls = 0, 1
    agent.invoke({"messages": [{"role": "user", "content": "try something else"}]}, config)
    assert (counter["runs"], model.turns) == (21, 2)


def test_an_unreachable_store_fails_open_and_logs(caplog) -> None:
    from conftest import DownGuard, assert_failed_open

    read, counter = make_tool()
    guard = DownGuard()
    agent = create_agent(ScriptedChatModel(calls=3), [read], middleware=[LoopGuardMiddleware(guard)])
    with caplog.at_level("WARNING", logger="loopguard"):
        result = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, {"recursion_limit": 50})
    assert [m.content for m in tool_messages(result)] == ["the same content"] * 3
    assert_failed_open(caplog, guard, counter["runs"])
