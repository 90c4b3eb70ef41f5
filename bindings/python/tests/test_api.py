"""The Guard API: the Python guide's loop (docs/python.md), configs, errors, compaction."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

import loopguard

from conftest import BLOCK_MESSAGE_21, REPO


def readme_python_example() -> str:
    text = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, "docs/python.md has no python example"
    return match.group(1)


def test_the_readme_example_runs_and_blocks_the_21st_call(capsys) -> None:
    # The guide's Python example, executed as written: a tool called 25 times with the
    # same arguments and the same result.
    namespace: dict = {}
    exec(compile(readme_python_example(), "docs/python.md", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert namespace["runs"] == 20
    assert out[0] == "call 11: warn (generic_repeat, count 10)"
    assert out[1] == "call 21: block: " + BLOCK_MESSAGE_21.format(tool="read")


def test_the_readme_loop_through_before_call_and_after_call() -> None:
    guard = loopguard.Guard()
    decisions = []
    effects = []
    for i in range(25):
        d = guard.before_call("session-1", "read", {"path": "a.txt"}, run="run-1", call_id=f"call-{i}")
        decisions.append((d.decision, d.count, d.emitted))
        effects.append(d.effect)
        if d.decision == "block":
            o = guard.after_call("session-1", "read", {"path": "a.txt"}, result=d.message, run="run-1", call_id=f"call-{i}")
            assert o.decision == "ignored" and o.result_hash is None and o.effect == "proceed"
            continue
        o = guard.after_call("session-1", "read", {"path": "a.txt"}, result={"content": [{"type": "text", "text": "same"}]},
                             run="run-1", call_id=f"call-{i}")
        assert o.decision == "recorded" and len(o.result_hash) == 64
    assert decisions[:10] == [("allow", None, None)] * 10
    assert decisions[10] == ("warn", 10, True)
    assert effects[:10] == ["proceed"] * 10 and effects[10] == "notice"
    assert effects[11:20] == ["proceed"] * 9 and effects[20:] == ["refuse"] * 5
    assert decisions[11:20] == [("warn", n, False) for n in range(11, 20)]
    assert decisions[20:] == [("block", 20, True)] * 5
    assert d.blocked and d.level == "critical" and d.detector == "generic_repeat"
    assert d.args_hash.startswith("read:") and d.warning_key.startswith("run-1:generic:read:")
    assert (d.session, d.run, d.call_id, d.tool) == ("session-1", "run-1", "call-24", "read")
    assert "CallDecision(decision='block'" in repr(d)


def test_post_compaction_guard_aborts() -> None:
    guard = loopguard.Guard()
    assert guard.on_compaction("s", run="r") == "armed"
    outcomes = []
    for i in range(3):
        guard.before_call("s", "gateway", {"action": "status"}, run="r")
        outcomes.append(guard.after_call("s", "gateway", {"action": "status"}, run="r", error="503 unavailable"))
    assert [o.decision for o in outcomes] == ["recorded", "recorded", "abort"]
    assert [o.effect for o in outcomes] == ["proceed", "proceed", "end_run"]
    assert outcomes[2].aborted and outcomes[2].detector == "compaction_loop_persisted" and outcomes[2].count == 3
    assert outcomes[2].result_hash.startswith("error:")


def test_config_none_is_enabled_and_an_empty_config_is_openclaws_default() -> None:
    def warns_at_11(guard: loopguard.Guard) -> bool:
        for _ in range(10):
            guard.before_call("s", "t", {})
            guard.after_call("s", "t", {}, result="x")
        return guard.before_call("s", "t", {}).decision == "warn"

    assert warns_at_11(loopguard.Guard())
    assert warns_at_11(loopguard.Guard(config=None))
    # A config without `enabled: true` is OpenClaw's: the detectors are off.
    assert not warns_at_11(loopguard.Guard(config={}))


def test_config_file_path_and_per_agent_overrides(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json5"
    path.write_text("""{
      // JSON5, as OpenClaw reads it
      tools: { loopDetection: { enabled: true, warningThreshold: 5 } },
      agents: { list: [ { id: "Strict", tools: { loopDetection: { warningThreshold: 2 } } } ] },
    }""")
    guard = loopguard.Guard(config=path)

    def first_warning(agent):
        for i in range(1, 12):
            d = guard.before_call(f"s-{agent}", "t", {}, agent=agent)
            guard.after_call(f"s-{agent}", "t", {}, result="x", agent=agent)
            if d.decision == "warn":
                return i

    assert first_warning(None) == 6
    assert first_warning(" strict ") == 3


def test_config_errors_are_loopguards_messages(tmp_path: Path, caplog) -> None:
    with pytest.raises(loopguard.ConfigError) as e:
        loopguard.Guard(config={"tools": {"loopDetection": {"enabeld": True}}})
    assert "tools.loopDetection.enabeld" in str(e.value) and "enabled" in str(e.value)
    assert "OpenClaw would reject this config" in str(e.value)
    bad = tmp_path / "bad.json5"
    bad.write_text("{ tools: ")
    with pytest.raises(loopguard.ConfigError, match=r"bad\.json5: syntax error at line 1") as syntax:
        loopguard.Guard(config=str(bad))
    # The syntax error is a diagnostic too, saying where.
    [diagnostic] = syntax.value.diagnostics
    assert diagnostic.startswith(f"{bad}: error: line 1, column "), diagnostic
    with pytest.raises(OSError, match=r"cannot read config .*missing\.json5"):
        loopguard.Guard(config=tmp_path / "missing.json5")
    with pytest.raises(TypeError, match="config: expected a path"):
        loopguard.Guard(config=42)
    # Out-of-range numbers fall back at run time, with a warning on the loopguard logger.
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        loopguard.Guard(config={"tools": {"loopDetection": {"enabled": True, "historySize": -1}}})
    [fallback] = [r.getMessage() for r in caplog.records if "historySize" in r.getMessage()]
    # It runs, so it is a warning, not an error.
    assert ": warning: line 1, column " in fallback and "error" not in fallback, fallback


def test_after_call_needs_a_result_or_an_error() -> None:
    guard = loopguard.Guard()
    guard.before_call("s", "t", {})
    with pytest.raises(ValueError, match=r"give result= .* or error="):
        guard.after_call("s", "t", {})
    with pytest.raises(ValueError, match=r"give result= .* or error="):
        guard.after_call("s", "t", {}, error=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'reslt'"):
        guard.after_call("s", "t", {}, reslt="x")
    with pytest.raises(ValueError, match="not both"):
        guard.after_call("s", "t", {}, result="x", error="boom")
    # A tool that returned None says so.
    assert guard.after_call("s", "t", {}, result=None).result_hash is not None
    assert guard.after_call("s", "t", {}, error="boom").result_hash.startswith("error:")
    remote = loopguard.Guard.remote("http://127.0.0.1:9")
    with pytest.raises(ValueError, match=r"give result= .* or error="):
        remote.after_call("s", "t", {})


def test_detector_literals_are_the_engines_list() -> None:
    import typing

    assert set(typing.get_args(loopguard.Detector)) == set(loopguard.DETECTORS)
    assert set(typing.get_args(loopguard.CallDetector)) | set(typing.get_args(loopguard.OutcomeDetector)) == set(
        loopguard.DETECTORS
    )
    # A strict-profile detector reaches Python as one of them.
    guard = loopguard.Guard(config={"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"profile": "strict"}})
    seen = set()
    for i in range(12):
        d = guard.before_call("s", "exec", {"command": "npm test"}, run="r")
        seen.add(d.detector)
        if d.detector == "second_critical_abort":
            # The local record's word is "block"; the engine's effect says the run is over.
            assert (d.decision, d.effect, d.blocked) == ("block", "end_run", True)
        elif d.decision == "block":
            assert d.effect == "refuse"
        if d.decision != "block":
            guard.after_call("s", "exec", {"command": "npm test"}, error="Exit code 1: Cannot find module 'jest'", run="r")
    assert {"identical_failure_streak", "second_critical_abort"} <= seen, seen
    assert seen - {None} <= set(typing.get_args(loopguard.CallDetector))


def test_bad_events_raise_event_error_naming_the_field() -> None:
    guard = loopguard.Guard()
    cases = [
        ({"type": "call"}, "tool"),
        ({"type": "outcome", "tool": "t", "result": 1, "error": "x"}, "error"),
        ({"type": "hop"}, "type"),
        ({"type": "call", "tool": "t", "session": 5}, "session"),
    ]
    for event, field in cases:
        with pytest.raises(loopguard.EventError) as e:
            guard.event(event)
        assert e.value.field == field, (event, str(e.value))
        assert f"`{field}`" in str(e.value)
    with pytest.raises(loopguard.EventError, match="not valid JSON"):
        guard.event('{"type": "call", ')
    with pytest.raises(TypeError, match="expected a dict"):
        guard.event(["call"])
    with pytest.raises(ValueError, match="either result or error"):
        guard.after_call("s", "t", {}, result=1, error="x")
    assert issubclass(loopguard.EventError, loopguard.LoopguardError)


def test_integrations_are_imported_lazily() -> None:
    import sys

    import loopguard as lg
    from conftest import framework

    framework("langchain.agents")

    assert lg.langchain.LoopGuardMiddleware.__name__ == "LoopGuardMiddleware"
    assert "loopguard.langchain" in sys.modules
    with pytest.raises(AttributeError):
        lg.nothing_here


def test_sessions_counters_forget_and_a_sqlite_store(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    a = loopguard.Guard(store=f"sqlite:{path}")
    for _ in range(3):
        a.before_call("s1", "t", {"x": 1})
        a.after_call("s1", "t", {"x": 1}, result="r")
    info = a.session("s1")
    assert info["session"] == "s1"
    # The shape of loopguard serve's GET /v1/sessions/{id} (test_remote.py compares the two).
    assert (info["calls"], info["outcomes"], info["warnings"], info["blocks"], info["aborts"]) == (3, 3, 0, 0, 0)
    assert set(info) == {"session", "calls", "outcomes", "warnings", "blocks", "aborts", "lastSeen", "recent"}
    assert [row["decision"] for row in info["recent"]][-2:] == ["allow", "recorded"]
    # A second Guard on the same file (another process would do the same) continues the session.
    b = loopguard.Guard(store=f"sqlite:{path}")
    for _ in range(7):
        b.before_call("s1", "t", {"x": 1})
        b.after_call("s1", "t", {"x": 1}, result="r")
    d = b.before_call("s1", "t", {"x": 1})
    assert (d.decision, d.count) == ("warn", 10)
    assert [s["session"] for s in a.sessions()] == ["s1"]
    assert a.forget("s1") is True and a.session("s1") is None and b.forget("s1") is False
    with pytest.raises(loopguard.StoreError, match="floppy"):
        loopguard.Guard(store="floppy:/x")
    with pytest.raises(ValueError, match="idle_ttl"):
        loopguard.Guard(idle_ttl=0)


def test_a_call_record_that_says_abort_is_a_block_that_ends_the_run() -> None:
    # A server that words a run-ending block "abort" in its decision records (one vocabulary
    # for "the run is over"): the remote client's CallDecision must still stop the call.
    from loopguard._loopguard import _decision_from_record
    from loopguard._failopen import ends_run, is_block

    d = _decision_from_record({"type": "call", "session": "s", "tool": "read", "decision": "abort",
                               "detector": "second_critical_abort", "level": "critical", "count": 2,
                               "message": "CRITICAL: … this run is ended."})
    assert (d.decision, d.blocked, d.effect) == ("abort", True, "end_run")
    assert is_block(d) and ends_run(d, stop_on_block=False)
    plain = _decision_from_record({"type": "call", "session": "s", "tool": "read", "decision": "block",
                                   "detector": "generic_repeat", "level": "critical", "count": 20, "message": "x"})
    assert plain.blocked and not ends_run(plain, stop_on_block=False) and ends_run(plain, stop_on_block=True)
    assert plain.effect == "refuse"
    quiet = _decision_from_record({"type": "call", "session": "s", "tool": "read", "decision": "warn",
                                   "detector": "generic_repeat", "level": "warning", "count": 11, "message": "x",
                                   "emitted": False})
    assert (quiet.effect, quiet.blocked) == ("proceed", False)
    shown = _decision_from_record({"type": "call", "session": "s", "tool": "read", "decision": "warn",
                                   "detector": "generic_repeat", "level": "warning", "count": 10, "message": "x",
                                   "emitted": True})
    assert shown.effect == "notice"


def test_remote_records_with_strict_detectors_are_read() -> None:
    # A strict-profile server's records name its detectors; the remote client reads them all.
    from loopguard._loopguard import _decision_from_record

    for name in loopguard.DETECTORS:
        kind = "outcome" if name == "compaction_loop_persisted" else "call"
        decision = "abort" if kind == "outcome" else "block"
        d = _decision_from_record({"type": kind, "session": "s", "tool": "t", "decision": decision,
                                   "detector": name, "level": "critical", "count": 1, "message": "m"})
        assert d.detector == name


ASK = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"onCritical": "ask"}}
END_RUN = {"tools": {"loopDetection": {"enabled": True}}, "loopguard": {"onCritical": "end-run"}}


def _loop(guard: loopguard.Guard, n: int = 25) -> list:
    """`n` identical calls of `read` with identical results in run "r"; the decisions."""
    decisions = []
    for i in range(n):
        d = guard.before_call("s", "read", {"path": "a.txt"}, run="r", call_id=f"c{i}")
        decisions.append(d)
        if not d.blocked:
            guard.after_call("s", "read", {"path": "a.txt"}, result="same", run="r", call_id=f"c{i}")
    return decisions


def test_end_run_gives_a_typed_verdict_with_the_loops_summary() -> None:
    decisions = _loop(loopguard.Guard(config=END_RUN))
    assert [d.effect for d in decisions[:20]] == ["proceed"] * 10 + ["notice"] + ["proceed"] * 9
    ended = decisions[20]
    assert ended.effect == "end_run"
    verdict = loopguard.Verdict.of(ended)
    assert (verdict.session, verdict.run, verdict.tool, verdict.call_id) == ("s", "r", "read", "c20")
    assert (verdict.detector, verdict.count, verdict.level, verdict.effect) == ("generic_repeat", 20, "critical", "end_run")
    assert verdict.message == ended.message and verdict.message.startswith("CRITICAL: ")
    assert verdict.to_dict()["detector"] == "generic_repeat"
    error = loopguard.RunEnded(verdict)
    assert isinstance(error, Exception) and error.verdict is verdict and str(error) == verdict.message
    assert loopguard.RunEnded.of(ended).verdict == verdict
    # Every later call of the run is refused with the run's end.
    assert all(d.effect == "end_run" for d in decisions[21:])
    assert decisions[24].message.startswith("CRITICAL: This run was ended after a critical loop (generic_repeat)")


def test_ask_is_refused_where_nobody_is_asked_and_the_next_critical_ends_the_run() -> None:
    decisions = _loop(loopguard.Guard(config=ASK))
    assert (decisions[20].decision, decisions[20].effect, decisions[20].blocked) == ("ask", "ask", True)
    assert decisions[20].message == BLOCK_MESSAGE_21.format(tool="read")
    assert [d.effect for d in decisions[21:]] == ["end_run"] * 4
    verdict = loopguard.Verdict.of(decisions[21])
    assert (verdict.tool, verdict.detector, verdict.effect) == ("read", "generic_repeat", "end_run")


def test_a_remote_ask_record_is_a_refused_call() -> None:
    # `loopguard serve` answers "ask" under onCritical "ask": the remote client reads it as a
    # call to refuse (the integrations cannot ask), not as an unknown decision.
    from loopguard._loopguard import _decision_from_record

    d = _decision_from_record({"type": "call", "session": "s", "tool": "read", "decision": "ask",
                               "detector": "generic_repeat", "level": "critical", "count": 20, "message": "x"})
    assert (d.decision, d.effect, d.blocked) == ("ask", "ask", True)
