"""loopguard for the OpenAI Agents SDK (``openai-agents``).

>>> from agents import Agent, function_tool
>>> from loopguard.openai_agents import LoopGuard
>>> lg = LoopGuard()
>>> @function_tool(tool_input_guardrails=[lg.input_guardrail], tool_output_guardrails=[lg.output_guardrail])
... def read(path: str) -> str:
...     '''Reads a file.'''
...     return open(path).read()
>>> # or, for tools you already have: lg.protect(tools)

* ``input_guardrail`` is a tool input guardrail (``@tool_input_guardrail``): a blocked call
  is answered with ``reject_content`` and the block message, so the tool does not run and the
  model is told why;
* ``output_guardrail`` records what the tool returned (the after-call step) and, when the
  call warned and the warning should be shown, hands the model the tool's output with the
  warning appended (through ``reject_content``, the SDK's way to replace a tool's output);
* when the guard ends the run (``loopguard.onCritical: "end-run"``, the next critical loop
  after an ``"ask"``, the strict profile's ``second_critical_abort``, a loop that survived a
  context compaction), or at the first block with ``stop_on_block=True``, the guardrail halts
  the run the SDK's way (``raise_exception``): ``Runner.run`` raises
  ``ToolInputGuardrailTripwireTriggered`` (a blocked call, which did not run) or
  ``ToolOutputGuardrailTripwireTriggered`` (the compaction abort, after the call), whose
  ``.output.output_info`` is a ``loopguard.Verdict``: the loop's summary (``tool``,
  ``detector``, ``count``, ``message``, ``session``, ``effect``, ``decision``);
  ``loopguard.RunEnded(verdict)`` re-raises it as loopguard's own error where a program wants
  one type for every framework;
* ``loopguard.onCritical: "ask"`` is refused as a block (the guardrails have no approval
  flow); the next critical loop of the run ends it.

The session is ``RunConfig.group_id`` (the SDK's conversation id; ``"default"`` without one),
or what ``session=`` says; each ``Runner.run`` is a run (its trace id, or, with tracing
disabled, the run's own context).

Needs ``pip install "loopguard[openai-agents]"``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
import uuid
import weakref
from typing import Any, Callable, Iterable, Optional, Union

from agents.tool import FunctionTool
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.tracing import get_current_trace

from . import CallDecision, Guard, GuardAPI
from ._failopen import aborted, ends_run, guarded, is_block, notice
from ._verdict import Verdict

__all__ = ["LoopGuard"]


# Decisions kept until their tool's result is seen, at most.
_MAX_PENDING = 10_000


def _result(output: Any) -> Any:
    """A tool's output in OpenClaw's tool-result shape."""
    if isinstance(output, str):
        return {"content": [{"type": "text", "text": output}]}
    try:
        json.dumps(output)
    except (TypeError, ValueError):
        # Not JSON (a model object): hash what the model is shown for it.
        return {"content": [{"type": "text", "text": str(output)}]}
    return {"content": output}


class LoopGuard:
    """Tool guardrails that stop tool-call loops with loopguard.

    Args:
        guard: the ``loopguard.Guard`` (or ``Guard.remote(...)``); a fresh ``Guard()`` when omitted.
        session: the session id, or a function of the tool's ``ToolContext`` returning it.
        agent: the agent id for per-agent config (``agents.list[]``); default: none.
        stop_on_block: halt the run at the first blocked call (by default a block only
            answers the call, and the run is halted when the guard ends it).
    """

    def __init__(
        self,
        guard: Optional[GuardAPI] = None,
        *,
        session: Union[str, Callable[[Any], str], None] = None,
        agent: Optional[str] = None,
        stop_on_block: bool = False,
    ) -> None:
        self.guard: GuardAPI = guard if guard is not None else Guard()
        self._session = session
        self.agent = agent
        self.stop_on_block = stop_on_block
        self._lock = threading.Lock()
        # Decisions of calls that ran, until their output is seen (by tool call id).
        self._pending: "OrderedDict[str, CallDecision]" = OrderedDict()
        # Run ids for runs without a trace, keyed by the identity of the run's usage object
        # (one per Runner.run, shared by its tool calls; not hashable, hence the id).
        self._runs: dict[int, tuple[Any, str]] = {}
        self.input_guardrail: ToolInputGuardrail[Any] = tool_input_guardrail(name="loopguard")(self._check)
        self.output_guardrail: ToolOutputGuardrail[Any] = tool_output_guardrail(name="loopguard")(self._record)

    def protect(self, tools: Union[FunctionTool, Iterable[FunctionTool]]) -> Any:
        """Adds both guardrails to a function tool (or each of several); returns what it got."""
        for t in [tools] if isinstance(tools, FunctionTool) else list(tools):
            t.tool_input_guardrails = [*(t.tool_input_guardrails or []), self.input_guardrail]
            t.tool_output_guardrails = [*(t.tool_output_guardrails or []), self.output_guardrail]
        return tools

    def _scope(self, ctx: Any) -> tuple[str, Optional[str]]:
        if callable(self._session):
            session = str(self._session(ctx))
        elif self._session is not None:
            session = self._session
        else:
            run_config = getattr(ctx, "run_config", None)
            group = getattr(run_config, "group_id", None)
            session = group if group else "default"
        trace = get_current_trace()
        trace_id = getattr(trace, "trace_id", None)
        if trace_id and trace_id != "no-op":
            return session, trace_id
        usage = getattr(ctx, "usage", None)
        if usage is None:
            return session, None
        with self._lock:
            entry = self._runs.get(id(usage))
            if entry is not None and entry[0]() is usage:
                return session, entry[1]
            if len(self._runs) >= 1024:
                self._runs = {k: v for k, v in self._runs.items() if v[0]() is not None}
            run = uuid.uuid4().hex
            self._runs[id(usage)] = (weakref.ref(usage), run)
        return session, run

    @staticmethod
    def _args(ctx: Any) -> Any:
        text = getattr(ctx, "tool_arguments", None) or "{}"
        try:
            return json.loads(text)
        except ValueError:
            # Arguments that are not JSON are what the model sent: hash them as the string.
            return text

    def _check(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        session, run = self._scope(ctx)
        decision = guarded(
            "the check",
            ctx.tool_name,
            lambda: self.guard.before_call(
                session, ctx.tool_name, self._args(ctx), run=run, call_id=ctx.tool_call_id, agent=self.agent
            ),
        )
        if decision is None:
            return ToolGuardrailFunctionOutput.allow()
        if ends_run(decision, self.stop_on_block):
            return ToolGuardrailFunctionOutput.raise_exception(output_info=Verdict.of(decision))
        if is_block(decision):
            return ToolGuardrailFunctionOutput.reject_content(decision.message or "", output_info=decision)
        with self._lock:
            self._pending[ctx.tool_call_id] = decision
            while len(self._pending) > _MAX_PENDING:  # outputs that never came (the tool crashed)
                self._pending.popitem(last=False)
        return ToolGuardrailFunctionOutput.allow(output_info=decision)

    def _record(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        session, run = self._scope(ctx)
        with self._lock:
            decision = self._pending.pop(ctx.tool_call_id, None)
        outcome = guarded(
            "recording the outcome",
            ctx.tool_name,
            lambda: self.guard.after_call(
                session,
                ctx.tool_name,
                self._args(ctx),
                result=_result(data.output),
                run=run,
                call_id=ctx.tool_call_id,
                agent=self.agent,
            ),
        )
        if aborted(outcome):
            return ToolGuardrailFunctionOutput.raise_exception(output_info=Verdict.of(outcome))
        note = notice(decision)
        if note:
            output = data.output if isinstance(data.output, str) else json.dumps(_result(data.output)["content"])
            return ToolGuardrailFunctionOutput.reject_content(f"{output}\n\n{note}", output_info=outcome)
        return ToolGuardrailFunctionOutput.allow(output_info=outcome)
