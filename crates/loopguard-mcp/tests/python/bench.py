"""Latency added by `loopguard mcp` per tools/call: the same SDK client calls the same stdio
server directly and through the proxy, in interleaved rounds of one run.

    python bench.py LOOPGUARD_BINARY [CALLS_PER_SIDE]

Prints p50/p90/p99 of both sides and of the difference.
"""

import json
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = str(Path(__file__).with_name("server.py"))


async def open_session(stack, command, args):
    r, w = await stack.enter_async_context(stdio_client(StdioServerParameters(command=command, args=args)))
    s = await stack.enter_async_context(ClientSession(r, w))
    await s.initialize()
    return s


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def main():
    loopguard = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds, per_round = 20, max(1, total // 20)
    async with AsyncExitStack() as stack:
        direct = await open_session(stack, sys.executable, [SERVER])
        proxied = await open_session(stack, loopguard, ["mcp", "--", sys.executable, SERVER])
        times = {"direct": [], "proxy": []}
        n = 0
        # Warm-up, then interleaved rounds so both sides see the same machine load.
        for s in (direct, proxied):
            for _ in range(50):
                n += 1
                await s.call_tool("same", {"path": f"/warm/{n}"})
        for r in range(rounds):
            order = [("direct", direct), ("proxy", proxied)] if r % 2 == 0 else [("proxy", proxied), ("direct", direct)]
            for name, s in order:
                for _ in range(per_round):
                    n += 1  # distinct arguments: no warnings, plain forwarding plus the guard
                    t0 = time.perf_counter()
                    await s.call_tool("same", {"path": f"/bench/{n}"})
                    times[name].append((time.perf_counter() - t0) * 1000)
    out = {}
    for name in ("direct", "proxy"):
        out[name] = {f"p{p}": round(pct(times[name], p), 3) for p in (50, 90, 99)}
        out[name]["mean"] = round(statistics.fmean(times[name]), 3)
        out[name]["calls"] = len(times[name])
    out["added"] = {k: round(out["proxy"][k] - out["direct"][k], 3) for k in ("p50", "p90", "p99", "mean")}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


anyio.run(main)
