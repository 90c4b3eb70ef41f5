"""Shared helpers for loopguard's Python tests."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

# The repository's own parity fixtures (tests/fixtures/parity at the repository root).
REPO = Path(__file__).resolve().parents[3]
PARITY = REPO / "tests" / "fixtures" / "parity"

# What the guard answers for 25 identical calls with identical results, with OpenClaw's
# default thresholds: calls 1-20 run (warnings from the 10th), the 21st is blocked.
BLOCK_MESSAGE_21 = (
    "CRITICAL: Called {tool} with identical arguments and identical outcomes 20 times. "
    "Session execution blocked to prevent runaway loops."
)


@pytest.fixture
def parity_dir() -> Path:
    assert PARITY.is_dir(), f"parity fixtures missing at {PARITY}"
    return PARITY


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def framework(module: str):
    """Imports a framework the integration tests need. scripts/test-python.sh installs them all
    and sets LOOPGUARD_REQUIRE_FRAMEWORKS=1, so there a missing one is an error; elsewhere
    (a venv without the extras) those tests are skipped, and pytest says so."""
    if os.environ.get("LOOPGUARD_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)


class CompactedGuard:
    """A real Guard, with a context compaction reported at the start of every run it sees
    (as an agent runtime would after compacting): the post-compaction guard then aborts
    the run at its third identical outcome."""

    def __init__(self) -> None:
        import loopguard

        self.guard = loopguard.Guard()
        self.armed: set = set()

    def before_call(self, session, tool, args, **kw):
        key = (session, kw.get("run"))
        if key not in self.armed:
            self.armed.add(key)
            assert self.guard.on_compaction(session, kw.get("run")) == "armed"
        return self.guard.before_call(session, tool, args, **kw)

    def after_call(self, *args, **kw):
        return self.guard.after_call(*args, **kw)


ABORT_PREFIX = "CRITICAL: tool read repeated 3 times with identical arguments and identical results within 3 attempts after auto-compaction."


class DownGuard:
    """Fault injection: a guard whose store is unreachable (every call raises StoreError, as
    a real Guard does when its SQLite file or Redis cannot be used)."""

    def __init__(self) -> None:
        self.calls = 0

    def _down(self, *args, **kw):
        import loopguard

        self.calls += 1
        raise loopguard.StoreError("sqlite:/var/lib/loopguard.sqlite3: database is locked")

    before_call = after_call = _down


def assert_failed_open(caplog, guard: DownGuard, tool_runs: int) -> None:
    assert tool_runs == 3 and guard.calls == 6
    messages = [r.getMessage() for r in caplog.records if r.name == "loopguard"]
    assert len(messages) == 6 and all("failing open" in m and "database is locked" in m for m in messages)
