"""``Verdict`` and ``RunEnded``: what a program reads when loopguard ended an agent's run.

A run is ended by a decision whose ``effect`` is ``"end_run"``: ``loopguard.onCritical:
"end-run"`` (the first critical loop), the next critical loop after an ``"ask"``, the strict
profile's ``second_critical_abort``, a loop that survived a context compaction, and every
later call of a run so ended. The integrations raise ``RunEnded`` (or hand over its
``Verdict``) where their framework lets an exception stop the run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

__all__ = ["RunEnded", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """The summary of the loop that ended a run.

    >>> import loopguard
    >>> guard = loopguard.Guard(config={"tools": {"loopDetection": {"enabled": True}},
    ...                                 "loopguard": {"onCritical": "end-run"}})
    >>> for i in range(21):
    ...     d = guard.before_call("s", "read", {"path": "a"}, run="r")
    ...     if d.effect == "end_run":
    ...         break
    ...     _ = guard.after_call("s", "read", {"path": "a"}, result="same", run="r")
    >>> v = loopguard.Verdict.of(d)
    >>> (v.tool, v.detector, v.count, v.effect)
    ('read', 'generic_repeat', 20, 'end_run')
    """

    session: str
    """The session whose run was ended."""
    run: Optional[str]
    """The run (``None`` for events without one)."""
    tool: Optional[str]
    """The tool whose call ended the run (``None`` for a compaction)."""
    detector: Optional[str]
    """The detector that found the loop (``second_critical_abort``, ``generic_repeat``, ...)."""
    count: Optional[int]
    """How many times it saw the repetition."""
    message: str
    """The message the model was given (``CRITICAL: ...``)."""
    effect: str
    """The decision's effect: ``"end_run"`` (or ``"refuse"``, when an integration's
    ``stop_on_block`` ended the run at a plain block)."""
    decision: str
    """The decision's word as the API gives it (``"block"``, ``"abort"``)."""
    level: Optional[str] = None
    """``"critical"`` for a loop."""
    call_id: Optional[str] = None
    """The id of the call that ended the run, when the runtime gave one."""

    @classmethod
    def of(cls, decision: Any) -> "Verdict":
        """The verdict of a ``CallDecision`` or ``OutcomeDecision`` (local or remote)."""
        return cls(
            session=decision.session,
            run=decision.run,
            tool=decision.tool,
            detector=decision.detector,
            count=decision.count,
            message=decision.message or "loopguard ended the run",
            effect=decision.effect,
            decision=decision.decision,
            level=decision.level,
            call_id=decision.call_id,
        )

    def to_dict(self) -> Dict[str, Any]:
        """The verdict as a plain dict (JSON-ready)."""
        return asdict(self)


class RunEnded(Exception):
    """loopguard ended the agent's run; ``verdict`` says which loop and why.

    ``str(error)`` is the verdict's message.
    """

    verdict: Verdict

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict

    @classmethod
    def of(cls, decision: Any) -> "RunEnded":
        """The error for a decision that ended the run."""
        return cls(Verdict.of(decision))
