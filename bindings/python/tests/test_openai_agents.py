"""OpenAI Agents SDK: LoopGuard's tool guardrails with the SDK's own scripted Model."""

from __future__ import annotations

import asyncio

import pytest

from conftest import framework

framework('agents')  # installed by scripts/test-python.sh


from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call

import loopguard
from loopguard.openai_agents import LoopGuard

from conftest import BLOCK_MESSAGE_21

set_tracing_disabled(True)  # no network: traces would be exported to OpenAI


def scripted(calls: int = 25) -> ScriptedModel:
    steps = [[function_call("read", {"path": "a.txt"}, call_id=f"call-{i}")] for i in range(calls)]
    return ScriptedModel([*steps, [assistant_message("giving up")]])


def make_tool():
    counter = {"runs": 0}

    @function_tool
    def read(path: str) -> str:
        """Reads a file."""
        counter["runs"] += 1
        return "the same content"

    return read, counter


def outputs(result) -> list:
    return [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]


def test_runner_blocks_the_21st_identical_call() -> None:
    read, counter = make_tool()
    lg = LoopGuard()
    lg.protect(read)
    result = Runner.run_sync(Agent(name="helper", model=scripted(), tools=[read]), "read a.txt", max_turns=100)
    assert counter["runs"] == 20
    out = outputs(result)
    assert len(out) == 25
    assert out[:10] == ["the same content"] * 10
    # The 11th call warns; the model sees the output with the warning appended.
    assert out[10].startswith("the same content\n\nWARNING: You have called read 10 times with identical arguments")
    assert out[11:20] == ["the same content"] * 9
    assert out[20:] == [BLOCK_MESSAGE_21.format(tool="read")] * 5
    assert result.final_output == "giving up"


def test_decorator_form_and_async_run_share_a_conversation_session() -> None:
    guard = loopguard.Guard()
    lg = LoopGuard(guard)
    counter = {"runs": 0}

    @function_tool(tool_input_guardrails=[lg.input_guardrail], tool_output_guardrails=[lg.output_guardrail])
    def read(path: str) -> str:
        """Reads a file."""
        counter["runs"] += 1
        return "the same content"

    config = RunConfig(group_id="conversation-9")
    for _ in range(2):
        # Two runs of 15 calls in one conversation: each run is scoped on its own, so all run.
        asyncio.run(Runner.run(Agent(name="helper", model=scripted(15), tools=[read]), "go", run_config=config, max_turns=100))
    assert counter["runs"] == 30
    record = guard.event({"type": "call", "session": "conversation-9", "tool": "read", "args": {"path": "a.txt"}})
    assert record["decision"] == "allow"  # no run: the runs' calls are not in its scope


def test_one_run_without_trace_is_one_run() -> None:
    # Tracing is disabled, so the run id comes from the run itself: 25 calls of one run are
    # counted together (else nothing would ever be blocked).
    read, counter = make_tool()
    LoopGuard(session="fixed").protect([read])
    Runner.run_sync(Agent(name="helper", model=scripted(21), tools=[read]), "go", max_turns=100)
    assert counter["runs"] == 20


def test_a_loop_that_survives_a_compaction_halts_the_run() -> None:
    from conftest import ABORT_PREFIX, CompactedGuard

    from agents.exceptions import ToolOutputGuardrailTripwireTriggered

    read, counter = make_tool()
    LoopGuard(CompactedGuard()).protect(read)
    model = scripted(25)
    # The loop survived a compaction: the run is halted after the third call ran.
    with pytest.raises(ToolOutputGuardrailTripwireTriggered) as stopped:
        Runner.run_sync(Agent(name="helper", model=model, tools=[read]), "go", max_turns=100)
    outcome = stopped.value.output.output_info
    assert (outcome.decision, outcome.detector) == ("abort", "compaction_loop_persisted")
    assert outcome.message.startswith(ABORT_PREFIX)
    assert counter["runs"] == 3


STRICT = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"profile": "strict"}}


def test_the_strict_profile_ending_the_run_halts_the_runner() -> None:
    from agents.exceptions import ToolInputGuardrailTripwireTriggered

    read, counter = make_tool()
    LoopGuard(loopguard.Guard(config=STRICT)).protect(read)
    # A strict detector blocks an identical call (the model is told); the next is the second
    # critical loop of the run: the run is halted, that call never runs.
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as stopped:
        asyncio.run(Runner.run(Agent(name="helper", model=scripted(25), tools=[read]), "go", max_turns=100))
    decision = stopped.value.output.output_info
    assert (decision.decision, decision.detector) == ("block", "second_critical_abort")
    assert "this run is ended" in decision.message
    assert 0 < counter["runs"] < 20


END_RUN = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"onCritical": "end-run"}}


def test_end_run_halts_the_runner_with_a_typed_verdict() -> None:
    from agents.exceptions import ToolInputGuardrailTripwireTriggered

    read, counter = make_tool()
    LoopGuard(loopguard.Guard(config=END_RUN)).protect(read)
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as stopped:
        Runner.run_sync(Agent(name="helper", model=scripted(25), tools=[read]), "go", max_turns=100)
    verdict = stopped.value.output.output_info
    assert isinstance(verdict, loopguard.Verdict)
    assert (verdict.tool, verdict.detector, verdict.count, verdict.effect) == ("read", "generic_repeat", 20, "end_run")
    assert verdict.message == BLOCK_MESSAGE_21.format(tool="read")
    assert str(loopguard.RunEnded(verdict)) == verdict.message
    assert counter["runs"] == 20


def test_stop_on_block_halts_the_run_at_the_first_block() -> None:
    from agents.exceptions import ToolInputGuardrailTripwireTriggered

    read, counter = make_tool()
    LoopGuard(stop_on_block=True).protect(read)
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as stopped:
        Runner.run_sync(Agent(name="helper", model=scripted(25), tools=[read]), "go", max_turns=100)
    decision = stopped.value.output.output_info
    assert (decision.decision, decision.count) == ("block", 20)
    assert decision.message == BLOCK_MESSAGE_21.format(tool="read")
    assert counter["runs"] == 20


def test_an_unreachable_store_fails_open_and_logs(caplog) -> None:
    from conftest import DownGuard, assert_failed_open

    read, counter = make_tool()
    guard = DownGuard()
    LoopGuard(guard).protect(read)
    with caplog.at_level("WARNING", logger="loopguard"):
        result = Runner.run_sync(Agent(name="helper", model=scripted(3), tools=[read]), "go", max_turns=20)
    assert outputs(result) == ["the same content"] * 3
    assert_failed_open(caplog, guard, counter["runs"])
