"""Latency added by `loopguard mcp` per tools/call: the same client calls the same stdio
server directly and through the proxy, in interleaved rounds of one run. Two clients: the
SDK's ClientSession (asyncio), and a raw synchronous JSON-RPC client (a blocking write and
readline per call), whose own overhead is smaller and steadier.

A third measure covers streamable HTTP on one kept-alive connection (what real clients do):
`loopguard mcp --listen ADDR -- python server.py` against the same raw client calling the
stdio server directly, with the server's own streamable HTTP listener for reference.

    python bench.py LOOPGUARD_BINARY [CALLS_PER_SIDE]

Prints p50/p90/p99 of both sides and of the difference, for each client.
"""

import http.client
import json
import socket
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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class HttpClient:
    """Streamable HTTP, one kept-alive connection (http.client), a blocking call per request."""

    HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    def __init__(self, command, port):
        self.p = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, self.p)
        self.c = http.client.HTTPConnection("127.0.0.1", port)
        self.n = 0
        self.session = None
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message):
        headers = dict(self.HEADERS)
        if self.session:
            headers["mcp-session-id"] = self.session
        self.c.request("POST", "/mcp", json.dumps(message), headers)
        r = self.c.getresponse()
        body = r.read()
        self.session = r.getheader("mcp-session-id") or self.session
        if r.status >= 300:
            raise RuntimeError(f"HTTP {r.status}: {body[:200]!r}")
        return body

    def request(self, method, params):
        self.n += 1
        body = self.post({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        if b'"id":%d' % self.n not in body.replace(b" ", b""):
            raise RuntimeError(f"no answer to request {self.n}: {body[:200]!r}")
        return body

    def close(self):
        self.c.close()
        self.p.terminate()
        self.p.wait(timeout=20)


def http_bench(loopguard, rounds, per_round):
    """Direct stdio (the baseline) against the proxy's HTTP listener in front of the same stdio
    server; the server's own HTTP listener is measured too, for reference."""
    p1, p2 = free_port(), free_port()
    sides = {
        "direct": RawClient([sys.executable, SERVER]),
        "proxy": HttpClient([loopguard, "mcp", "--listen", f"127.0.0.1:{p1}", "--", sys.executable, SERVER], p1),
        "server_http": HttpClient([sys.executable, SERVER, "--http", str(p2)], p2),
    }
    times = {name: [] for name in sides}
    n = 0
    for c in sides.values():
        for _ in range(50):
            n += 1
            c.request("tools/call", {"name": "same", "arguments": {"path": f"/warm/{n}"}})
    for r in range(rounds):
        names = list(sides) if r % 2 == 0 else list(reversed(sides))
        for name in names:
            for _ in range(per_round):
                n += 1
                t0 = time.perf_counter()
                sides[name].request("tools/call", {"name": "same", "arguments": {"path": f"/bench/{n}"}})
                times[name].append((time.perf_counter() - t0) * 1000)
    for c in sides.values():
        c.close()
    out = summary(times)
    out["server_http"] = {f"p{p}": round(pct(times["server_http"], p), 3) for p in (50, 90, 99)}
    out["note"] = "direct: stdio; proxy: loopguard mcp --listen (HTTP, one kept-alive connection) -- stdio server; server_http: the SDK server's own HTTP"
    return out


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
    out = {
        "sdk_client": summary(times),
        "raw_client": raw_bench(loopguard, rounds, per_round),
        "http_keepalive": http_bench(loopguard, rounds, per_round),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


anyio.run(main)
