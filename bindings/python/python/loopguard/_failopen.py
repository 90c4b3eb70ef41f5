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


def is_block(decision: Any) -> bool:
    """True when the call must not run: "block", or "abort" (a block that ends the run, as
    run-ending blocks are worded in decision records)."""
    return decision is not None and decision.decision in ("block", "abort")


#: The strict profile's detector that ends a run (after a block, another critical loop).
ENDS_RUN = "second_critical_abort"


def ends_run(decision: Any, stop_on_block: bool) -> bool:
    """True when a call decision ends the agent's run: a block by ``second_critical_abort``
    (the engine blocks every further call of the run), or any block with ``stop_on_block``."""
    return is_block(decision) and (stop_on_block or decision.decision == "abort" or decision.detector == ENDS_RUN)


def aborted(outcome: Any) -> bool:
    """True when an outcome decision ends the run (the loop survived a compaction)."""
    return outcome is not None and outcome.decision == "abort"
