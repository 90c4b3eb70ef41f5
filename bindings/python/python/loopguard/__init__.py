"""loopguard: OpenClaw's tool-call loop detection for Python agents.

>>> import loopguard
>>> guard = loopguard.Guard()
>>> guard.before_call("session-1", "read", {"path": "a.txt"}).decision
'allow'

The engine is loopguard's Rust core (the same decisions, hashes and messages as OpenClaw's
``tools.loopDetection``, as ``loopguard replay`` and ``loopguard serve``). Framework
integrations are imported on first use: ``loopguard.langchain``, ``loopguard.openai_agents``
and ``loopguard.adk``. When the guard ends a run (``effect == "end_run"``),
``loopguard.Verdict.of(decision)`` summarises the loop, and the integrations raise
``loopguard.RunEnded`` (its ``.verdict``) where their framework lets an exception stop the run.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._api import GuardAPI
from ._detectors import CallDetector, Detector, OutcomeDetector
from ._verdict import RunEnded, Verdict
from ._loopguard import (
    DETECTORS,
    CallDecision,
    ConfigError,
    EventError,
    Guard,
    LoopguardError,
    OutcomeDecision,
    StoreError,
)

__all__ = [
    "DETECTORS",
    "CallDecision",
    "CallDetector",
    "Detector",
    "GuardAPI",
    "OutcomeDetector",
    "ConfigError",
    "EventError",
    "Guard",
    "LoopguardError",
    "OutcomeDecision",
    "RunEnded",
    "StoreError",
    "Verdict",
]

_INTEGRATIONS = ("langchain", "openai_agents", "adk")


def __getattr__(name: str) -> Any:
    # `loopguard.langchain` and friends import their framework only when used.
    if name in _INTEGRATIONS:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
