"""Type stubs of loopguard's native module (re-exported by ``loopguard``)."""

import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union, final, overload

from loopguard._detectors import CallDetector, OutcomeDetector
from loopguard._remote import RemoteGuard

__all__ = [
    "DETECTORS",
    "CallDecision",
    "ConfigError",
    "EventError",
    "Guard",
    "LoopguardError",
    "OutcomeDecision",
    "StoreError",
    "_call_line",
    "_compaction_line",
    "_decision_from_record",
    "_event_json",
    "_outcome_line",
]

# What the API accepts as a JSON value: dict (str keys), list, tuple, str, int, float, bool,
# None. Anything else is a TypeError naming its path.
_JSONValue = Union[None, bool, int, float, str, Sequence[Any], Mapping[str, Any]]
_Config = Union[str, "os.PathLike[str]", Mapping[str, Any], None]

DETECTORS: Tuple[str, ...]
"""Every detector name a decision can carry (the engine's list; see ``loopguard._detectors``)."""

class LoopguardError(Exception):
    """Base class of loopguard's own errors."""

class EventError(LoopguardError):
    """An event loopguard cannot apply; ``field`` names the field at fault (or None)."""

    field: Optional[str]

class ConfigError(LoopguardError):
    """An OpenClaw config OpenClaw would reject, or that is not JSON5; ``diagnostics`` lists
    every problem found (``"file: error: line L, column C: key.path: message"``; for a file
    that is not JSON5, the one ``"file: error: line L, column C: message"``). Values that only
    fall back to their defaults are ``"file: warning: …"`` lines, logged, not raised."""

    diagnostics: List[str]

class StoreError(LoopguardError):
    """The guard's session store cannot be reached."""

@final
class CallDecision:
    """The decision before a tool call."""

    @property
    def decision(self) -> Literal["allow", "warn", "block", "ask", "abort"]:
        """"ask" is ``loopguard.onCritical: "ask"`` (refused where nobody can be asked); "abort"
        is a block that also ends the run, as decision records may word it."""
    @property
    def effect(self) -> Literal["proceed", "notice", "refuse", "ask", "end_run"]:
        """What to do, computed by the engine: "proceed" (run the tool); "notice" (run it and show
        the model ``message``: an emitted warning); "refuse" (do not run it, give the model
        ``message``); "ask" (``loopguard.onCritical: "ask"``: ask the user whether it may run,
        refuse it where nobody can be asked); "end_run" (do not run it, give the model ``message``, and stop the run: the
        strict profile's ``second_critical_abort``)."""
    @property
    def blocked(self) -> bool:
        """True when the tool must not run: effect "refuse", "ask" or "end_run" ("block", "ask"
        and "abort")."""
    @property
    def detector(self) -> Optional[CallDetector]: ...
    @property
    def level(self) -> Optional[Literal["warning", "critical"]]: ...
    @property
    def count(self) -> Optional[int]: ...
    @property
    def message(self) -> Optional[str]:
        """The text for the model: on "block" the tool's result; on "warn" show it when ``emitted``."""
    @property
    def emitted(self) -> Optional[bool]:
        """Whether the warning passed the once-per-bucket-of-ten de-duplication (always True for a block)."""
    @property
    def args_hash(self) -> Optional[str]:
        """``"<tool>:<sha256 hex>"``, byte-identical to OpenClaw's."""
    @property
    def warning_key(self) -> Optional[str]: ...
    @property
    def paired_tool(self) -> Optional[str]: ...
    @property
    def session(self) -> str: ...
    @property
    def run(self) -> Optional[str]: ...
    @property
    def call_id(self) -> Optional[str]: ...
    @property
    def tool(self) -> Optional[str]: ...

@final
class OutcomeDecision:
    """The decision after a tool call."""

    @property
    def decision(self) -> Literal["recorded", "ignored", "abort"]: ...
    @property
    def effect(self) -> Literal["proceed", "end_run"]:
        """What to do, computed by the engine: "end_run" when the loop survived a context
        compaction ("abort": stop the run, telling the model ``message``), else "proceed"."""
    @property
    def aborted(self) -> bool:
        """True for "abort" (effect "end_run"): stop the run."""
    @property
    def detector(self) -> Optional[OutcomeDetector]: ...
    @property
    def level(self) -> Optional[Literal["critical"]]: ...
    @property
    def count(self) -> Optional[int]: ...
    @property
    def message(self) -> Optional[str]: ...
    @property
    def args_hash(self) -> Optional[str]: ...
    @property
    def result_hash(self) -> Optional[str]:
        """The outcome hash (64 hex, or ``"error:"`` + 64 hex); None when nothing was recorded."""
    @property
    def session(self) -> str: ...
    @property
    def run(self) -> Optional[str]: ...
    @property
    def call_id(self) -> Optional[str]: ...
    @property
    def tool(self) -> Optional[str]: ...

@final
class Guard:
    """Sessions, OpenClaw's detectors, one decision per event. Safe to share between threads.

    >>> guard = Guard()                       # loop detection on, OpenClaw's defaults
    >>> guard = Guard(config="openclaw.json5")  # an OpenClaw config file (JSON5 or JSON)
    >>> guard = Guard(config={"tools": {"loopDetection": {"enabled": True, "warningThreshold": 5}}})
    """

    def __new__(cls, config: _Config = None, *, store: str = "memory", idle_ttl: float = 86400.0) -> "Guard":
        """``store``: ``"memory"`` (bounded LRU) or ``"sqlite:PATH"`` (shared by processes using
        the file); sessions idle for ``idle_ttl`` seconds are forgotten."""
    def before_call(
        self,
        session: str,
        tool: str,
        args: _JSONValue,
        *,
        run: Optional[str] = None,
        call_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> CallDecision:
        """The before-tool-call check; on "block" do not run the tool and give the model ``message``."""
    @overload
    def after_call(
        self,
        session: str,
        tool: str,
        args: _JSONValue,
        *,
        result: _JSONValue,
        run: Optional[str] = None,
        call_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> OutcomeDecision:
        """Records what the tool returned (None included); on "abort" stop the run."""
    @overload
    def after_call(
        self,
        session: str,
        tool: str,
        args: _JSONValue,
        *,
        error: _JSONValue,
        run: Optional[str] = None,
        call_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> OutcomeDecision:
        """Records what the tool raised; giving neither ``result`` nor ``error`` is a ValueError."""
    def on_compaction(
        self, session: str, run: Optional[str] = None, *, agent: Optional[str] = None
    ) -> Literal["armed", "ignored"]:
        """A context compaction finished: arms the post-compaction guard of (session, run)."""
    def event(self, event: Union[Mapping[str, Any], str, bytes]) -> Dict[str, Any]:
        """One events.md event (a dict, or one JSON line) in; its decision record out, as
        ``loopguard replay --json`` writes it (without "line")."""
    def session(self, session: str) -> Optional[Dict[str, Any]]:
        """``loopguard serve``'s ``GET /v1/sessions/{id}`` shape: ``{"session", "calls",
        "outcomes", "warnings", "blocks", "aborts", "lastSeen", "recent": [{"seq", "ts", "type",
        "run", "tool", "callId", "decision", "detector", "count", "message"}]}``."""
    def sessions(self) -> List[Dict[str, Any]]:
        """Every session held, each as ``session()`` describes it (local guards only)."""
    def forget(self, session: str) -> bool: ...
    def close(self) -> None:
        """Lets go of the engine and its store (a SQLite file is released); later calls raise."""
    def __enter__(self) -> "Guard": ...
    def __exit__(self, *exc: object) -> bool: ...
    @staticmethod
    def remote(url: str, token: Optional[str] = None, *, timeout: float = 5.0) -> RemoteGuard:
        """The ``loopguard.GuardAPI`` methods answered by ``loopguard serve`` at ``url``
        (all of ``Guard``'s but ``sessions()``); decisions fail open (logged) when unreachable."""

def _call_line(
    session: str,
    tool: str,
    args: _JSONValue,
    run: Optional[str] = None,
    call_id: Optional[str] = None,
    agent: Optional[str] = None,
) -> bytes: ...
def _outcome_line(
    session: str,
    tool: str,
    args: _JSONValue,
    run: Optional[str] = None,
    call_id: Optional[str] = None,
    agent: Optional[str] = None,
    **outcome: _JSONValue,
) -> bytes: ...
def _compaction_line(session: str, run: Optional[str] = None, agent: Optional[str] = None) -> bytes: ...
def _event_json(event: Mapping[str, Any]) -> bytes: ...
def _decision_from_record(record: Mapping[str, Any]) -> Union[CallDecision, OutcomeDecision]: ...
