"""Fail open, loudly: what the integrations do when the guard's store cannot be reached."""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, TypeVar

from ._loopguard import StoreError

_log = logging.getLogger("loopguard")

T = TypeVar("T")


def guarded(what: str, tool: str, call: Callable[[], T]) -> Optional[T]:
    """Runs ``call``; on a ``StoreError`` logs a warning and returns None (the tool call goes
    on unchecked, or its outcome is not recorded), as the Claude Code hook does."""
    try:
        return call()
    except StoreError as e:
        _log.warning("loopguard: %s of %s skipped, the store is unavailable (%s); failing open", what, tool, e)
        return None


# What each decision means for the integrations is its ``effect``, computed by the engine
# (loopguard_events::Effect): "proceed", "notice" (give the model the warning), "refuse" (the
# call must not run), "ask" (``loopguard.onCritical: "ask"``: the user decides; the integrations
# have no approval flow yet, so the call is refused) or "end_run" (the run is over: refuse the
# call, or stop after the outcome).


def is_block(decision: Any) -> bool:
    """True when the call must not run: effect "refuse", "ask" or "end_run"."""
    return decision is not None and decision.effect in ("refuse", "ask", "end_run")


def ends_run(decision: Any, stop_on_block: bool) -> bool:
    """True when a call decision ends the agent's run: effect "end_run" (the strict profile's
    ``second_critical_abort``: the engine refuses every further call of the run), or any refused
    call with ``stop_on_block``."""
    return is_block(decision) and (stop_on_block or decision.effect == "end_run")


def aborted(outcome: Any) -> bool:
    """True when an outcome decision ends the run (effect "end_run": the loop survived a
    compaction)."""
    return outcome is not None and outcome.effect == "end_run"


def notice(decision: Any) -> Optional[str]:
    """The warning to show the model (effect "notice"), or None."""
    if decision is None or decision.effect != "notice":
        return None
    return decision.message or None
