"""``GuardAPI``: what ``loopguard.Guard`` and ``loopguard.Guard.remote(...)`` both offer.

The integrations accept either. ``Guard.sessions()`` (every session held) is local only: the
remote client does not call ``loopguard serve``'s ``GET /v1/sessions``.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional, Protocol, overload, runtime_checkable

from ._loopguard import CallDecision, OutcomeDecision

__all__ = ["GuardAPI"]


@runtime_checkable
class GuardAPI(Protocol):
    """The guard methods shared by the local ``Guard`` and the remote client."""

    def before_call(
        self,
        session: str,
        tool: str,
        args: Any,
        *,
        run: Optional[str] = None,
        call_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> CallDecision: ...

    @overload
    def after_call(
        self,
        session: str,
        tool: str,
        args: Any,
        *,
        result: Any,
        run: Optional[str] = None,
        call_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> OutcomeDecision: ...

    @overload
    def after_call(
        self,
        session: str,
        tool: str,
        args: Any,
        *,
        error: Any,
        run: Optional[str] = None,
        call_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> OutcomeDecision: ...

    def on_compaction(self, session: str, run: Optional[str] = None, *, agent: Optional[str] = None) -> Literal["armed", "ignored"]: ...

    def event(self, event: Any) -> Dict[str, Any]: ...

    def session(self, session: str) -> Optional[Dict[str, Any]]: ...

    def forget(self, session: str) -> bool: ...
