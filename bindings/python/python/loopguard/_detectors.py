"""The detector names a decision can carry, as ``Literal`` types.

``Detector`` lists every detector: OpenClaw's, then the strict profile's (the
``loopguard: { profile: "strict" }`` config block). The native module's ``DETECTORS`` is the
engine's own list; tests/test_api.py checks that the two are the same.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CallDetector", "Detector", "OutcomeDetector"]

#: What ``CallDecision.detector`` can be (every detector but the post-compaction guard's).
CallDetector = Literal[
    "generic_repeat",
    "unknown_tool_repeat",
    "known_poll_no_progress",
    "global_circuit_breaker",
    "ping_pong",
    "identical_failure_streak",
    "identical_outcome_streak",
    "error_despite_changing_args",
    "argument_churn",
    "loop_across_compactions",
    "second_critical_abort",
    "near_repeat_no_progress",
    "no_progress_cycle",
    "same_call_changing_error",
    "empty_search_sweep",
    "unrunnable_commands",
    "error_cascade",
    "same_call_changing_counts",
]

#: What ``OutcomeDecision.detector`` can be: the post-compaction guard.
OutcomeDetector = Literal["compaction_loop_persisted"]

#: Every detector.
Detector = Literal[CallDetector, OutcomeDetector]
