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
    return decision is not None and decision.decision == "block"
