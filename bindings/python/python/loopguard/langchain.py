"""loopguard for LangChain v1 agents (``create_agent``).

>>> from langchain.agents import create_agent
>>> from loopguard.langchain import LoopGuardMiddleware
>>> agent = create_agent(model, tools, middleware=[LoopGuardMiddleware()])  # doctest: +SKIP

Every tool call goes through the guard before it runs (``wrap_tool_call`` /
``awrap_tool_call``):

* a blocked call does not run: the model gets a ``ToolMessage`` with the block message and
  ``status="error"`` instead;
* a warning that should be shown (once per bucket of ten) is appended to the tool's message;
* the outcome (the ``ToolMessage`` content, or its error) is recorded after the tool ran;
* when the guard ends the run (``loopguard.onCritical: "end-run"``, the next critical loop
  after an ``"ask"``, the strict profile's ``second_critical_abort``, a loop that survived a
  context compaction), or at the first block with ``stop_on_block=True``, the agent jumps to
  the end: the tool's message is the last one, the model is not called again, and the state's
  ``loopguard_stop`` says why. With ``raise_on_end=True`` the middleware raises
  ``loopguard.RunEnded`` instead, out of ``invoke`` / ``ainvoke``, whose ``.verdict``
  (``loopguard.Verdict``) is the loop's summary (tool, detector, count, message, session).
  The default ends the run inside the graph, so the thread's messages stay a valid
  conversation (every tool call answered) for its next invocation.
* ``loopguard.onCritical: "ask"`` is refused as a block: the middleware has no approval
  flow of its own (wire LangChain's ``HumanInTheLoopMiddleware`` for that); the next critical
  loop of the run ends it.

The session is the LangGraph thread id (``config["configurable"]["thread_id"]``, ``"default"``
without one) and each invocation of the agent is a run: calls of earlier invocations on the
same thread do not count toward a loop, as OpenClaw scopes history by run.

Needs ``pip install "loopguard[langchain]"`` (langchain >= 1.0).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Awaitable, Callable, Optional, Union

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import PrivateStateAttr, hook_config
from langchain_core.messages import ToolMessage
from langgraph.types import Command
from typing_extensions import Annotated, NotRequired

from . import CallDecision, Guard, GuardAPI
from ._failopen import aborted, ends_run, guarded, is_block, notice
from ._verdict import RunEnded

__all__ = ["LoopGuardMiddleware", "LoopGuardState"]

_log = logging.getLogger("loopguard")


class LoopGuardState(AgentState):
    """The agent state with the id of the current invocation (loopguard's run) and, once the
    guard ended the run, why."""

    loopguard_run: NotRequired[Annotated[str, PrivateStateAttr]]
    loopguard_stop: NotRequired[Annotated[Optional[str], PrivateStateAttr]]


def _content_result(content: Any) -> Any:
    """A ToolMessage's content in OpenClaw's tool-result shape (``{"content": [...]}``)."""
    if isinstance(content, str):
        return {"content": [{"type": "text", "text": content}]}
    return {"content": content}


def _with_warning(message: ToolMessage, warning: str) -> ToolMessage:
    content = message.content
    if isinstance(content, str):
        new_content: Any = f"{content}\n\n{warning}" if content else warning
    else:
        new_content = [*content, {"type": "text", "text": warning}]
    return message.model_copy(update={"content": new_content})


class LoopGuardMiddleware(AgentMiddleware):
    """LangChain v1 middleware that stops tool-call loops with loopguard.

    Args:
        guard: the ``loopguard.Guard`` (or ``Guard.remote(...)``) to use; a fresh ``Guard()``
            (loop detection enabled, OpenClaw's defaults) when omitted.
        agent: the agent id, selecting its ``agents.list[]`` entry of the guard's config.
        stop_on_block: end the agent's run at the first blocked call (by default a block only
            answers the call, and the run ends when the guard ends it).
        raise_on_end: when the run is ended, raise ``loopguard.RunEnded`` (with its
            ``verdict``) out of the agent's ``invoke`` instead of ending the graph quietly.
    """

    state_schema = LoopGuardState

    def __init__(
        self,
        guard: Optional[GuardAPI] = None,
        *,
        agent: Optional[str] = None,
        stop_on_block: bool = False,
        raise_on_end: bool = False,
    ) -> None:
        super().__init__()
        self.guard: GuardAPI = guard if guard is not None else Guard()
        self.agent = agent
        self.stop_on_block = stop_on_block
        self.raise_on_end = raise_on_end

    # A new run for every invocation of the agent.
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"loopguard_run": uuid.uuid4().hex, "loopguard_stop": None}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return self.before_agent(state, runtime)

    # A run the guard ended goes to the end instead of back to the model.
    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> Optional[dict[str, Any]]:
        if isinstance(state, dict) and state.get("loopguard_stop"):
            return {"jump_to": "end"}
        return None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> Optional[dict[str, Any]]:
        return self.before_model(state, runtime)

    def _stop(self, message: ToolMessage, reason: str, decision: Any) -> Command[Any]:
        if self.raise_on_end:
            raise RunEnded.of(decision)
        # The tool's message, and the state that makes `before_model` jump to the end.
        return Command(update={"messages": [message], "loopguard_stop": reason})

    def _scope(self, request: Any) -> tuple[str, Optional[str]]:
        config = getattr(request.runtime, "config", None) or {}
        thread = (config.get("configurable") or {}).get("thread_id")
        state = request.state
        run = state.get("loopguard_run") if isinstance(state, dict) else None
        return (str(thread) if thread is not None else "default"), run

    def _before(self, request: Any) -> tuple[Optional[CallDecision], str, Optional[str], dict[str, Any], Any]:
        call = request.tool_call
        session, run = self._scope(request)
        args = call.get("args") or {}
        decision = guarded(
            "the check",
            call["name"],
            lambda: self.guard.before_call(session, call["name"], args, run=run, call_id=call.get("id"), agent=self.agent),
        )
        return decision, session, run, args, call

    def _blocked(self, decision: CallDecision, call: dict[str, Any]) -> ToolMessage:
        return ToolMessage(
            content=decision.message,
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error",
        )

    def _after(
        self,
        decision: Optional[CallDecision],
        session: str,
        run: Optional[str],
        args: dict[str, Any],
        call: dict[str, Any],
        response: Any,
    ) -> Any:
        if not isinstance(response, ToolMessage):
            # A Command (state update) has no tool result to compare; nothing is recorded.
            _log.debug("loopguard: %s returned %s; outcome not recorded", call["name"], type(response).__name__)
            return response
        if response.status == "error":
            kwargs: dict[str, Any] = {"error": response.content}
        else:
            kwargs = {"result": _content_result(response.content)}
        outcome = guarded(
            "recording the outcome",
            call["name"],
            lambda: self.guard.after_call(
                session, call["name"], args, run=run, call_id=call.get("id"), agent=self.agent, **kwargs
            ),
        )
        if aborted(outcome) and outcome is not None and outcome.message:
            response = _with_warning(response, outcome.message).model_copy(update={"status": "error"})
            return self._stop(response, outcome.message, outcome)
        elif (warning := notice(decision)) is not None:
            response = _with_warning(response, warning)
        return response

    def _failed(self, session: str, run: Optional[str], args: dict[str, Any], call: dict[str, Any], exc: BaseException) -> None:
        # The tool raised: its error is the outcome (a string error is its message).
        guarded(
            "recording the error",
            call["name"],
            lambda: self.guard.after_call(
                session, call["name"], args, run=run, call_id=call.get("id"), agent=self.agent, error=str(exc)
            ),
        )

    def wrap_tool_call(
        self,
        request: Any,
        handler: Callable[[Any], Union[ToolMessage, Any]],
    ) -> Union[ToolMessage, Any]:
        decision, session, run, args, call = self._before(request)
        if is_block(decision) and decision is not None:
            if ends_run(decision, self.stop_on_block):
                return self._stop(self._blocked(decision, call), decision.message or "loopguard ended the run", decision)
            return self._blocked(decision, call)
        try:
            response = handler(request)
        except Exception as exc:
            self._failed(session, run, args, call, exc)
            raise
        return self._after(decision, session, run, args, call, response)

    async def awrap_tool_call(
        self,
        request: Any,
        handler: Callable[[Any], Awaitable[Union[ToolMessage, Any]]],
    ) -> Union[ToolMessage, Any]:
        decision, session, run, args, call = self._before(request)
        if is_block(decision) and decision is not None:
            if ends_run(decision, self.stop_on_block):
                return self._stop(self._blocked(decision, call), decision.message or "loopguard ended the run", decision)
            return self._blocked(decision, call)
        try:
            response = await handler(request)
        except Exception as exc:
            self._failed(session, run, args, call, exc)
            raise
        return self._after(decision, session, run, args, call, response)
