"""loopguard for Google's Agent Development Kit (``google-adk``).

>>> from google.adk.agents import LlmAgent
>>> from loopguard.adk import LoopGuardCallbacks
>>> lg = LoopGuardCallbacks()
>>> agent = LlmAgent(name="helper", model=model, tools=[read],            # doctest: +SKIP
...                  before_tool_callback=lg.before_tool_callback,
...                  after_tool_callback=lg.after_tool_callback,
...                  on_tool_error_callback=lg.on_tool_error_callback)

* ``before_tool_callback`` checks the call; for a blocked call it returns
  ``{"error": MESSAGE, "loopguard": {...}}``, which ADK uses as the tool's result without
  running it;
* ``after_tool_callback`` records the tool's response and, when the call warned and the
  warning should be shown, returns the response with ``"loopguard_warning": MESSAGE`` added;
  a loop that survived a compaction adds ``"loopguard_abort": MESSAGE``;
* ``on_tool_error_callback`` records a tool's exception as the call's error (and lets ADK
  go on handling it);
* when the guard ends the run (``loopguard.onCritical: "end-run"``, the next critical loop
  after an ``"ask"``, the strict profile's ``second_critical_abort``, a loop that survived a
  context compaction), or at the first block with ``stop_on_block=True``, the invocation is
  ended the ADK way (``end_invocation`` on the invocation context): the tool's response
  (with ``"loopguard": {..., "ended": true, "verdict": {...}}``, or ``"loopguard_abort"`` and
  ``"loopguard_verdict"``) is the last event, and the model is not called again. The verdict
  is ``loopguard.Verdict.to_dict()`` (tool, detector, count, message, session, effect), and
  ``callbacks.verdict`` holds the last ``loopguard.Verdict`` of a run so ended;
* ``loopguard.onCritical: "ask"`` is refused as a block (the callbacks have no approval
  flow); the next critical loop of the run ends it.

The session is the ADK session id, each invocation (``invocation_id``) is a run, and the
agent's name selects its ``agents.list[]`` entry of the config (``agent=`` overrides it).

Needs ``pip install "loopguard[adk]"``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Optional

from . import CallDecision, Guard, GuardAPI
from ._failopen import aborted, ends_run, guarded, is_block, notice
from ._verdict import Verdict

__all__ = ["LoopGuardCallbacks", "before_tool_callback", "after_tool_callback"]


# Decisions kept until their tool's result is seen, at most.
_MAX_PENDING = 10_000


def _result(response: Any) -> Any:
    if isinstance(response, str):
        return {"content": [{"type": "text", "text": response}]}
    return {"content": response}


class LoopGuardCallbacks:
    """ADK tool callbacks that stop tool-call loops with loopguard.

    Args:
        guard: the ``loopguard.Guard`` (or ``Guard.remote(...)``); a fresh ``Guard()`` when omitted.
        agent: the agent id for per-agent config; default: the ADK agent's name.
        stop_on_block: end the invocation at the first blocked call (by default a block only
            answers the call, and the invocation ends when the guard ends the run).
    """

    def __init__(self, guard: Optional[GuardAPI] = None, *, agent: Optional[str] = None, stop_on_block: bool = False) -> None:
        self.guard: GuardAPI = guard if guard is not None else Guard()
        self.agent = agent
        self.stop_on_block = stop_on_block
        self._lock = threading.Lock()
        self._pending: "OrderedDict[str, CallDecision]" = OrderedDict()
        #: The verdict of the last run these callbacks ended (``None`` until one is).
        self.verdict: Optional[Verdict] = None

    def _scope(self, ctx: Any) -> tuple[str, Optional[str], Optional[str], Optional[str]]:
        session = getattr(getattr(ctx, "session", None), "id", None) or "default"
        run = getattr(ctx, "invocation_id", None)
        call_id = getattr(ctx, "function_call_id", None)
        agent = self.agent if self.agent is not None else getattr(ctx, "agent_name", None)
        return session, run, call_id, agent

    def before_tool_callback(self, tool: Any, args: dict[str, Any], tool_context: Any) -> Optional[dict[str, Any]]:
        session, run, call_id, agent = self._scope(tool_context)
        decision = guarded(
            "the check",
            tool.name,
            lambda: self.guard.before_call(session, tool.name, args, run=run, call_id=call_id, agent=agent),
        )
        if decision is None:
            return None
        if is_block(decision):
            blocked: dict[str, Any] = {
                "error": decision.message,
                "loopguard": {"decision": "block", "detector": decision.detector, "count": decision.count},
            }
            if ends_run(decision, self.stop_on_block):
                _end_invocation(tool_context)
                self.verdict = Verdict.of(decision)
                blocked["loopguard"]["ended"] = True
                blocked["loopguard"]["verdict"] = self.verdict.to_dict()
            return blocked
        if call_id is not None:
            with self._lock:
                self._pending[call_id] = decision
                while len(self._pending) > _MAX_PENDING:  # results that never came
                    self._pending.popitem(last=False)
        return None

    def after_tool_callback(self, tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> Optional[dict[str, Any]]:
        session, run, call_id, agent = self._scope(tool_context)
        with self._lock:
            decision = self._pending.pop(call_id, None) if call_id is not None else None
        if decision is None and call_id is not None:
            # Not a call this guard let through (a blocked call's replacement result).
            return None
        outcome = guarded(
            "recording the outcome",
            tool.name,
            lambda: self.guard.after_call(
                session, tool.name, args, result=_result(tool_response), run=run, call_id=call_id, agent=agent
            ),
        )
        extra: dict[str, Any] = {}
        if outcome is None:
            return None
        if aborted(outcome):
            extra["loopguard_abort"] = outcome.message
            self.verdict = Verdict.of(outcome)
            extra["loopguard_verdict"] = self.verdict.to_dict()
            _end_invocation(tool_context)
        elif (warning := notice(decision)) is not None:
            extra["loopguard_warning"] = warning
        if not extra:
            return None
        base = dict(tool_response) if isinstance(tool_response, dict) else {"result": tool_response}
        return {**base, **extra}

    def on_tool_error_callback(self, tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> Optional[dict[str, Any]]:
        session, run, call_id, agent = self._scope(tool_context)
        with self._lock:
            if call_id is not None:
                self._pending.pop(call_id, None)
        guarded(
            "recording the error",
            tool.name,
            lambda: self.guard.after_call(session, tool.name, args, error=str(error), run=run, call_id=call_id, agent=agent),
        )
        return None


def _end_invocation(tool_context: Any) -> None:
    """Ends the ADK invocation after this tool's response: the model is not called again."""
    invocation = getattr(tool_context, "_invocation_context", None)
    if invocation is not None:
        invocation.end_invocation = True


_default: Optional[LoopGuardCallbacks] = None
_default_lock = threading.Lock()


def _callbacks() -> LoopGuardCallbacks:
    global _default
    with _default_lock:
        if _default is None:
            _default = LoopGuardCallbacks()
        return _default


def before_tool_callback(tool: Any, args: dict[str, Any], tool_context: Any) -> Optional[dict[str, Any]]:
    """``before_tool_callback`` backed by one module-wide ``Guard()``."""
    return _callbacks().before_tool_callback(tool, args, tool_context)


def after_tool_callback(tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> Optional[dict[str, Any]]:
    """``after_tool_callback`` backed by the same module-wide ``Guard()``."""
    return _callbacks().after_tool_callback(tool, args, tool_context, tool_response)
