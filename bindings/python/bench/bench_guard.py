"""Benchmark of the Python API, with its baselines measured in the same run.

    python bindings/python/bench/bench_guard.py [--quick]

1. ``before_call`` + ``after_call`` with small arguments (a ~100-byte result, a 30-call
   history) against the least a pure-Python loop detector must do per call:
   ``hashlib.sha256(json.dumps(x, sort_keys=True).encode())`` three times (the arguments
   before the call, the arguments and the result after it).
2. ``LoopGuardMiddleware.wrap_tool_call`` around a tool that returns at once, against calling
   the tool's handler directly: the middleware's overhead per tool call (target < 50 us).

Each figure is the best of several repeats (per-call time = total / calls); the calls vary
their arguments over 1,000 files so that nothing is ever blocked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from types import SimpleNamespace

import loopguard


def best_per_call(fn, calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(calls)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


ARGS = [{"path": f"/home/ana/work/site/src/file-{i}.txt", "limit": 200} for i in range(1000)]
RESULT = {"content": [{"type": "text", "text": "x" * 60}], "details": {"bytes": 60}}


def guard_pair(calls: int, guard: loopguard.Guard) -> None:
    for i in range(calls):
        args = ARGS[i % 1000]
        d = guard.before_call("bench", "read", args, run="run-1")
        guard.after_call("bench", "read", args, result=RESULT, run="run-1")
    assert d.decision == "allow"


def python_baseline(calls: int) -> None:
    for i in range(calls):
        args = ARGS[i % 1000]
        hashlib.sha256(json.dumps(args, sort_keys=True).encode()).hexdigest()
        hashlib.sha256(json.dumps(args, sort_keys=True).encode()).hexdigest()
        hashlib.sha256(json.dumps(RESULT, sort_keys=True).encode()).hexdigest()


def langchain_figures(calls: int, repeats: int) -> tuple[float, float]:
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from loopguard.langchain import LoopGuardMiddleware

    middleware = LoopGuardMiddleware()
    runtime = SimpleNamespace(config={"configurable": {"thread_id": "bench-thread"}})
    requests = [
        ToolCallRequest(
            tool_call={"name": "read", "args": ARGS[i], "id": f"call-{i}", "type": "tool_call"},
            tool=None,
            state={"messages": [], "loopguard_run": "run-1"},
            runtime=runtime,
        )
        for i in range(1000)
    ]
    answer = "x" * 60

    def handler(request):
        return ToolMessage(content=answer, tool_call_id=request.tool_call["id"], name="read")

    def bare(n: int) -> None:
        for i in range(n):
            handler(requests[i % 1000])

    def wrapped(n: int) -> None:
        for i in range(n):
            m = middleware.wrap_tool_call(requests[i % 1000], handler)
        assert m.status == "success" and m.content == answer

    return best_per_call(bare, calls, repeats), best_per_call(wrapped, calls, repeats)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    opts = parser.parse_args()
    calls, repeats = (2_000, 2) if opts.quick else (20_000, 5)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    guard = loopguard.Guard()
    pair = best_per_call(lambda n: guard_pair(n, guard), calls, repeats)
    base = best_per_call(python_baseline, calls, repeats)
    print(f"before_call + after_call, small args:          {pair * 1e6:7.2f} us")
    print(f"pure-Python baseline (3 x sha256(json.dumps)): {base * 1e6:7.2f} us")
    print(f"  ratio: {pair / base:.2f} x the baseline ({'faster' if pair < base else 'SLOWER'})")
    try:
        bare, wrapped = langchain_figures(calls, repeats)
    except ImportError as e:
        print(f"LangChain not installed ({e}); middleware overhead not measured")
        return
    print(f"LangChain tool handler alone:                  {bare * 1e6:7.2f} us")
    print(f"  through LoopGuardMiddleware.wrap_tool_call:  {wrapped * 1e6:7.2f} us")
    print(f"  middleware overhead per tool call:           {(wrapped - bare) * 1e6:7.2f} us (target < 50 us)")


if __name__ == "__main__":
    main()
