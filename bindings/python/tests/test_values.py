"""Python values map onto JSON as OpenClaw sees it, so hashes match the event stream's."""

from __future__ import annotations

import datetime
import decimal
import json
import random
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopguard


def args_hash(guard: loopguard.Guard, args) -> str:
    return guard.before_call("hash", "t", args, run="r").args_hash


def line_hash(guard: loopguard.Guard, args_text: str) -> str:
    return guard.event('{"type":"call","session":"hash","run":"r","tool":"t","args":' + args_text + "}")["argsHash"]


# JSON values as json.loads produces them: any str (lone surrogates included), ints of any
# size, finite floats.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


def shuffled(value, rng: random.Random):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=0, max_value=2**32))
def test_key_order_never_changes_a_hash(value, seed) -> None:
    guard = loopguard.Guard()
    assert args_hash(guard, shuffled(value, random.Random(seed))) == args_hash(guard, value)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_a_value_and_its_json_dumps_text_hash_the_same(value) -> None:
    guard = loopguard.Guard()
    # json.dumps escapes every non-ASCII character, lone surrogates included, as \uXXXX.
    assert args_hash(guard, value) == line_hash(guard, json.dumps(value))


def test_numbers_are_javascript_numbers() -> None:
    g = loopguard.Guard()
    # 2^53 + 1 is 2^53 for JavaScript; both hash as the event line with the same digits.
    assert args_hash(g, {"n": 2**53 + 1}) == args_hash(g, {"n": 2**53}) == line_hash(g, '{"n":9007199254740993}')
    assert args_hash(g, {"n": 10**30}) == args_hash(g, {"n": 1e30}) == line_hash(g, '{"n":1000000000000000000000000000000}')
    # Past the double range JavaScript has Infinity, which the canonical form writes as "Infinity".
    assert args_hash(g, {"n": 10**400}) == args_hash(g, {"n": float("inf")}) == line_hash(g, '{"n":1e400}')
    assert args_hash(g, {"n": -(10**400)}) == args_hash(g, {"n": float("-inf")}) == line_hash(g, '{"n":-1e400}')
    # 1.0 and 1 are one number; -0 is 0.
    assert args_hash(g, {"n": 1.0}) == args_hash(g, {"n": 1}) == line_hash(g, '{"n":1}')
    assert args_hash(g, {"n": -0.0}) == args_hash(g, {"n": 0}) == line_hash(g, '{"n":-0}')
    # An int too long for str() (Python's 4300-digit limit) is still Infinity, not an error.
    assert args_hash(g, {"n": 10**5000}) == args_hash(g, {"n": float("inf")})
    # NaN has no JSON form; it is sent as null, as JSON.stringify writes it.
    assert args_hash(g, {"n": float("nan")}) == line_hash(g, '{"n":null}')


def test_infinity_hashes_as_javascript_stable_stringify_does() -> None:
    g = loopguard.Guard()
    # OpenClaw's stableStringify writes non-finite numbers as strings: Infinity and the string
    # "Infinity" have the same canonical form, as in JavaScript.
    assert args_hash(g, {"n": float("inf")}) == args_hash(g, {"n": "Infinity"})


def test_lone_surrogates_are_kept_and_dropped_by_the_canonical_serialiser() -> None:
    g = loopguard.Guard()
    lone = json.loads('"a\\ud800b"')
    assert lone == "a\ud800b"
    # decisions.md item 2: the canonical serialiser drops lone surrogates, so the hash is
    # that of "ab"; the event line with the same escape hashes the same.
    assert args_hash(g, {"s": lone}) == args_hash(g, {"s": "ab"}) == line_hash(g, '{"s":"a\\ud800b"}')
    # Keys too.
    assert args_hash(g, {lone: 1}) == args_hash(g, {"ab": 1})
    # A surrogate pair written as two Python code points is one character for JavaScript.
    assert args_hash(g, {"s": "\ud83d\ude00"}) == args_hash(g, {"s": "\U0001F600"})
    # The string is kept as it was: the decision echoes a session or run with lone surrogates.
    d = g.before_call("s\udc00", "t", {}, run="r\ud800")
    assert d.session == "s\udc00" and d.run == "r\ud800"


class Opaque:
    pass


@pytest.mark.parametrize(
    "args, message",
    [
        ({"when": datetime.datetime(2026, 1, 1)}, 'args["when"]: a datetime is not a JSON value'),
        ({"items": [1, {"x": b"raw"}]}, 'args["items"][1]["x"]: a bytes is not a JSON value (decode it to str first)'),
        ({"tags": {"a", "b"}}, 'args["tags"]: a set is not a JSON value'),
        ({"price": decimal.Decimal("1.5")}, 'args["price"]: a Decimal is not a JSON value'),
        ({"obj": Opaque()}, 'args["obj"]: an Opaque is not a JSON value'),
        ({"n": {1: "x"}}, 'args["n"]: key 1 is a int; JSON object keys are str'),
        ([1, 2, object()], "args[2]: an object is not a JSON value"),
    ],
)
def test_other_objects_are_a_type_error_naming_the_path(args, message) -> None:
    g = loopguard.Guard()
    with pytest.raises(TypeError) as e:
        g.before_call("s", "t", args)
    assert str(e.value).startswith(message)
    # Nothing was recorded: the next identical-but-valid call starts from zero.
    assert g.before_call("s", "t", {}).decision == "allow"


def test_results_and_ids_are_checked_too() -> None:
    g = loopguard.Guard()
    with pytest.raises(TypeError, match=r'^result\["at"\]: a date is not a JSON value'):
        g.after_call("s", "t", {}, result={"at": datetime.date(2026, 1, 1)})
    with pytest.raises(TypeError, match=r"^session: expected a str, got a int"):
        g.before_call(7, "t", {})
    with pytest.raises(TypeError, match=r"^tool: expected a str, got a NoneType"):
        g.before_call("s", None, {})
    with pytest.raises(TypeError, match=r'^event\["args"\]\["x"\]: a complex is not a JSON value'):
        g.event({"type": "call", "tool": "t", "args": {"x": 1j}})


def test_a_value_that_contains_itself_is_an_error_not_a_crash() -> None:
    g = loopguard.Guard()
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nesting deeper than"):
        g.before_call("s", "t", {"loop": loop})


def test_tuples_and_subclasses_are_json_as_json_dumps_sees_them() -> None:
    g = loopguard.Guard()

    class Tag(str):
        pass

    assert args_hash(g, {"xs": (1, 2)}) == args_hash(g, {"xs": [1, 2]})
    assert args_hash(g, {"t": Tag("x")}) == args_hash(g, {"t": "x"})
    assert args_hash(g, {"b": True}) != args_hash(g, {"b": 1})


def test_threads_sharing_one_guard_lose_no_update() -> None:
    # 8 threads x 50 identical calls in one session and run; large arguments, so the GIL is
    # released while they are hashed. The 401st call then sees exactly 400 earlier ones.
    config = {"tools": {"loopDetection": {"enabled": True, "historySize": 1000, "warningThreshold": 400,
                                          "criticalThreshold": 5000, "globalCircuitBreakerThreshold": 10000}}}
    guard = loopguard.Guard(config=config)
    args = {"blob": "x" * 20_000}
    errors: list = []

    def worker() -> None:
        try:
            for _ in range(50):
                d = guard.before_call("shared", "read", args, run="r")
                assert d.decision == "allow", d
                guard.after_call("shared", "read", args, run="r", result="same")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    d = guard.before_call("shared", "read", args, run="r")
    assert (d.decision, d.detector, d.count) == ("warn", "generic_repeat", 400)
    stats = guard.session("shared")
    assert (stats["calls"], stats["outcomes"], stats["warnings"]) == (401, 400, 1)


def test_the_gil_is_released_while_a_large_value_is_hashed() -> None:
    # While one thread's before_call parses and hashes a 64 MB argument, another Python thread
    # runs. The call is one bytecode instruction: with the GIL held throughout, the other
    # thread could only run before the call starts (for one switch interval, 5 ms) and after
    # it returns, never in the middle.
    import time

    guard = loopguard.Guard()
    big = {"blob": "x" * (64 << 20)}
    stamps: list = []
    done = threading.Event()

    def spinner() -> None:
        while not done.is_set():
            stamps.append(time.perf_counter())

    t = threading.Thread(target=spinner)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    guard.before_call("big", "write", big)
    t1 = time.perf_counter()
    done.set()
    t.join()
    margin = 6 * sys.getswitchinterval()
    inside = [s for s in stamps if t0 + margin < s < t1 - margin]
    assert t1 - t0 > 2 * margin, "the call was too fast to tell"
    assert len(inside) > 100, f"the other thread ran {len(inside)} times inside a {t1 - t0:.3f} s call"
