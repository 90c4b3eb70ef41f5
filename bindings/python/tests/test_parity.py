"""Every parity fixture (decisions computed by OpenClaw's own code) through Guard.event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import loopguard

from conftest import PARITY, read_jsonl

CASES = sorted(p.name[: -len(".events.jsonl")] for p in PARITY.glob("*.events.jsonl"))


def test_the_fixtures_are_there() -> None:
    # 15 cases ship with the repository; an empty glob must not pass silently.
    assert len(CASES) >= 15, CASES


def expected(case: str) -> list:
    records = read_jsonl(PARITY / f"{case}.expected.jsonl")
    for r in records:
        del r["line"]
    return records


@pytest.mark.parametrize("case", CASES)
def test_fixture_through_event_dicts(case: str) -> None:
    guard = loopguard.Guard(config=PARITY / f"{case}.config.json")
    events = read_jsonl(PARITY / f"{case}.events.jsonl")
    got = [guard.event(e) for e in events]
    assert got == expected(case)


@pytest.mark.parametrize("case", CASES)
def test_fixture_through_event_lines_and_a_config_dict(case: str) -> None:
    config = json.loads((PARITY / f"{case}.config.json").read_text(encoding="utf-8"))
    guard = loopguard.Guard(config=config)
    lines = [l for l in (PARITY / f"{case}.events.jsonl").read_text(encoding="utf-8").split("\n") if l.strip()]
    got = [guard.event(line) for line in lines]
    assert got == expected(case)


@pytest.mark.parametrize("case", CASES)
def test_fixture_through_before_and_after_call(case: str) -> None:
    # The same streams through the typed API: every field the decision objects carry matches.
    guard = loopguard.Guard(config=str(PARITY / f"{case}.config.json"))
    for event, want in zip(read_jsonl(PARITY / f"{case}.events.jsonl"), expected(case)):
        kind = event["type"]
        scope = dict(run=event.get("run"), agent=event.get("agent"))
        session = event.get("session", "default")
        if kind == "call":
            d = guard.before_call(session, event["tool"], event.get("args", {}), call_id=event.get("callId"), **scope)
            assert (d.decision, d.args_hash, d.detector, d.level, d.count, d.message, d.emitted, d.warning_key) == (
                want["decision"], want["argsHash"], want.get("detector"), want.get("level"), want.get("count"),
                want.get("message"), want.get("emitted"), want.get("warningKey"),
            )
            assert d.paired_tool == want.get("pairedTool")
        elif kind == "outcome":
            payload = {"error": event["error"]} if "error" in event else {"result": event.get("result")}
            if "error" in event and event["error"] is None:
                # error: null is an error outcome in events.md; the typed API's error=None
                # means "no error", so this one goes through event().
                assert guard.event(event) == dict(want)
                continue
            o = guard.after_call(session, event["tool"], event.get("args", {}), call_id=event.get("callId"), **scope, **payload)
            assert (o.decision, o.args_hash, o.result_hash, o.detector, o.count, o.message) == (
                want["decision"], want["argsHash"], want["resultHash"], want.get("detector"), want.get("count"), want.get("message"),
            )
        else:
            assert guard.on_compaction(session, **scope) == want["decision"]
