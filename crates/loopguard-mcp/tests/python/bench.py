"""Latency added by `loopguard mcp` per tools/call: the same client calls the same stdio
server directly and through the proxy, in interleaved rounds of one run. Two clients: the
SDK's ClientSession (asyncio), and a raw synchronous JSON-RPC client (a blocking write and
readline per call), whose own overhead is smaller and steadier.

    python bench.py LOOPGUARD_BINARY [CALLS_PER_SIDE]

Prints p50/p90/p99 of both sides and of the difference, for each client.
"""

import json
import statistics
import subprocess
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


def summary(times):
    out = {}
    for name in ("direct", "proxy"):
        out[name] = {f"p{p}": round(pct(times[name], p), 3) for p in (50, 90, 99)}
        out[name]["mean"] = round(statistics.fmean(times[name]), 3)
        out[name]["calls"] = len(times[name])
    out["added"] = {k: round(out["proxy"][k] - out["direct"][k], 3) for k in ("p50", "p90", "p99", "mean")}
    return out


class RawClient:
    def __init__(self, command):
        self.p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.out = self.p.stdout
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def request(self, method, params):
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}).encode() + b"\n")
        while True:
            line = self.out.readline()
            if not line:
                raise RuntimeError("server closed")
            if b'"id":%d' % self.n in line and b'"method"' not in line:
                return line

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=20)


def raw_bench(loopguard, rounds, per_round):
    sides = {
        "direct": RawClient([sys.executable, SERVER]),
        "proxy": RawClient([loopguard, "mcp", "--", sys.executable, SERVER]),
    }
    times = {"direct": [], "proxy": []}
    n = 0
    for c in sides.values():
        for _ in range(50):
            n += 1
            c.request("tools/call", {"name": "same", "arguments": {"path": f"/warm/{n}"}})
    for r in range(rounds):
        names = ["direct", "proxy"] if r % 2 == 0 else ["proxy", "direct"]
        for name in names:
            for _ in range(per_round):
                n += 1
                t0 = time.perf_counter()
                sides[name].request("tools/call", {"name": "same", "arguments": {"path": f"/bench/{n}"}})
                times[name].append((time.perf_counter() - t0) * 1000)
    for c in sides.values():
        c.close()
    return summary(times)


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
    out = {"sdk_client": summary(times), "raw_client": raw_bench(loopguard, rounds, per_round)}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


anyio.run(main)
