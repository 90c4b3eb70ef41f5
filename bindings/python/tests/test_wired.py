"""A guard that looks installed but does nothing says so: a given config that leaves detection
off is logged once, naming the setting; a misplaced block and misspelled options are errors;
the store and nesting errors say what is wrong; ``close()`` and ``with`` release the store."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import loopguard


def identical(guard: loopguard.Guard, n: int) -> list:
    out = []
    for _ in range(n):
        out.append(guard.before_call("s", "read", {"path": "/a"}).decision)
        guard.after_call("s", "read", {"path": "/a"}, result="same")
    return out


def test_no_config_is_enabled_and_quiet(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        d = identical(loopguard.Guard(), 21)
    assert d[10] == "warn" and d[20] == "block"
    assert not [r for r in caplog.records if r.name == "loopguard"]


@pytest.mark.parametrize("config", [{}, {"tools": {"loopDetection": {"warningThreshold": 3}}}])
def test_a_given_config_that_leaves_detection_off_is_said_once(caplog, config) -> None:
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        guard = loopguard.Guard(config=config)
        d = identical(guard, 30)
    assert set(d) == {"allow"}, "parity: the rolling detectors are off"
    said = [r.getMessage() for r in caplog.records if r.name == "loopguard"]
    assert len(said) == 1, said
    assert said[0].startswith("config: tools.loopDetection.enabled is not true: the rolling-history detectors are off")


@pytest.mark.parametrize(
    "config",
    [{"loopDetection": {"enabled": True, "warningThreshold": 3}}, {"enabled": True, "warningThreshold": 3}],
)
def test_a_misplaced_block_is_an_error_with_a_hint(config) -> None:
    with pytest.raises(loopguard.ConfigError, match=r"not read at the top level") as e:
        loopguard.Guard(config=config)
    assert "{ tools: { loopDetection: " in str(e.value)


def test_misspelled_options_are_errors() -> None:
    with pytest.raises(TypeError, match="stor"):
        loopguard.Guard(stor="memory")  # type: ignore[call-arg]


def test_a_redis_url_says_this_build_has_no_redis_store() -> None:
    with pytest.raises(loopguard.StoreError) as e:
        loopguard.Guard(store="redis://user:secret@127.0.0.1:6399")
    text = str(e.value)
    assert "no Redis store" in text and "expected `memory`" not in text and "secret" not in text


def open_on(file: Path) -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(file):
                n += 1
        except OSError:
            pass
    return n


def test_close_and_with_release_a_sqlite_store(tmp_path: Path) -> None:
    first = tmp_path / "a.db"
    guard = loopguard.Guard(store=f"sqlite:{first}")
    identical(guard, 3)
    assert open_on(first) > 0
    guard.close()
    assert open_on(first) == 0
    guard.close()  # twice: nothing
    with pytest.raises(RuntimeError, match="the guard is closed"):
        guard.before_call("s", "read", {})
    assert "closed" in repr(guard)
    second = tmp_path / "b.db"
    with loopguard.Guard(store=f"sqlite:{second}") as g:
        identical(g, 2)
        assert open_on(second) > 0
    assert open_on(second) == 0
    again = loopguard.Guard(store=f"sqlite:{second}")
    assert again.session("s")["calls"] == 2
    again.close()


def test_deep_nesting_is_a_clean_error_naming_the_depth() -> None:
    deep: object = "leaf"
    for _ in range(5000):
        deep = {"d": deep}
    with pytest.raises(ValueError, match=r"nesting deeper than \d+ levels"):
        loopguard.Guard().before_call("s", "read", deep)
