"""Guard.remote: the Guard API over `POST /v1/events` (docs/events.md's contract).

The protocol is exercised against a stand-in server on 127.0.0.1 that answers with a local
Guard (the contract: the body is one event, the answer its decision record; 400 with
{"error","field"} for a bad event; 401 without the token; 503 when the store is down), and
against a real `loopguard serve` when LOOPGUARD_SERVE_BIN names a binary that has it
(scripts/test-python.sh sets it when the workspace's `loopguard` has the `serve` command).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

import loopguard

from conftest import BLOCK_MESSAGE_21, PARITY, read_jsonl


class StandIn:
    def __init__(self, token: str | None = None) -> None:
        guard = loopguard.Guard()
        self.down = False
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _session(self, method: str) -> None:
                if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                    return self._answer(401, {"error": "missing or invalid bearer token"})
                name = urllib.parse.unquote(self.path[len("/v1/sessions/"):])
                info = guard.session(name)
                if info is None:
                    return self._answer(404, {"error": f"no session {name!r}", "field": "session"})
                if method == "DELETE":
                    guard.forget(name)
                    self.send_response(204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return self._answer(200, info)

            def do_GET(self) -> None:
                self._session("GET")

            def do_DELETE(self) -> None:
                self._session("DELETE")

            def do_POST(self) -> None:
                outer.requests += 1
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != "/v1/events":
                    return self._answer(404, {"error": "not found"})
                if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                    return self._answer(401, {"error": "missing or invalid bearer token"})
                if outer.down:
                    return self._answer(503, {"error": "store unavailable"})
                try:
                    self._answer(200, guard.event(body))
                except loopguard.EventError as e:
                    self._answer(400, {"error": str(e), "field": e.field})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def real_serve() -> Iterator[str]:
    binary = os.environ["LOOPGUARD_SERVE_BIN"]
    port = free_port()
    proc = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.05)
        else:
            raise AssertionError("loopguard serve did not start listening within 20 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


SERVERS = ["stand-in"] + (["loopguard serve"] if os.environ.get("LOOPGUARD_SERVE_BIN") else [])


@pytest.fixture(params=SERVERS)
def server_url(request) -> Iterator[str]:
    if request.param == "stand-in":
        s = StandIn()
        yield s.url
        s.close()
    else:
        yield from real_serve()


def test_the_readme_loop_remotely(server_url: str) -> None:
    guard = loopguard.Guard.remote(server_url)
    decisions = []
    for i in range(25):
        d = guard.before_call("remote-1", "read", {"path": "a.txt"}, run="r1", call_id=f"c{i}")
        decisions.append(d.decision)
        if d.decision != "block":
            o = guard.after_call("remote-1", "read", {"path": "a.txt"}, result="same", run="r1", call_id=f"c{i}")
            assert o.decision == "recorded"
    assert decisions == ["allow"] * 10 + ["warn"] * 10 + ["block"] * 5
    assert d.message == BLOCK_MESSAGE_21.format(tool="read")
    assert d.args_hash == loopguard.Guard().before_call("x", "read", {"path": "a.txt"}).args_hash
    assert guard.on_compaction("remote-1", run="r1") == "armed"


def test_parity_fixture_remotely(server_url: str) -> None:
    # Enabled-with-defaults fixtures only: the server runs without a config.
    guard = loopguard.Guard.remote(server_url)
    for e, want in zip(read_jsonl(PARITY / "generic_critical_21_reads.events.jsonl"),
                       read_jsonl(PARITY / "generic_critical_21_reads.expected.jsonl")):
        del want["line"]
        e = dict(e, session="parity-remote")
        want["session"] = "parity-remote"
        assert guard.event(e) == want


def test_bad_events_are_event_errors_naming_the_field(server_url: str) -> None:
    guard = loopguard.Guard.remote(server_url)
    with pytest.raises(loopguard.EventError) as e:
        guard.event({"type": "call", "session": "s"})
    assert e.value.field == "tool"
    assert "tool" in str(e.value)
    with pytest.raises(TypeError, match=r'^args\["when"\]'):
        guard.before_call("s", "t", {"when": object()})


def test_unreachable_server_fails_open_and_logs(caplog) -> None:
    guard = loopguard.Guard.remote(f"http://127.0.0.1:{free_port()}", timeout=2)
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        d = guard.before_call("s", "read", {"path": "a.txt"})
        o = guard.after_call("s", "read", {"path": "a.txt"}, result="x")
        r = guard.event({"type": "call", "session": "s", "tool": "read"})
    assert d.decision == "allow" and d.detector is None
    assert o.decision == "ignored"
    assert r["decision"] == "allow" and r["failOpen"] is True
    assert len(caplog.records) == 3
    said = [r.getMessage() for r in caplog.records]
    assert "unreachable" in said[0] and said[0].endswith("failing open: the call is allowed unchecked"), said
    assert said[1].endswith("failing open: the outcome is not recorded"), said


def test_store_down_503_fails_open_then_recovers(caplog) -> None:
    s = StandIn()
    try:
        guard = loopguard.Guard.remote(s.url)
        s.down = True
        with caplog.at_level(logging.WARNING, logger="loopguard"):
            assert guard.before_call("s", "t", {}).decision == "allow"
        assert "503" in caplog.records[-1].getMessage()
        s.down = False
        assert guard.before_call("s", "t", {}).args_hash.startswith("t:")
    finally:
        s.close()


def test_token_is_sent_and_a_wrong_one_is_an_error() -> None:
    s = StandIn(token="sekrit")
    try:
        assert loopguard.Guard.remote(s.url, token="sekrit").before_call("s", "t", {}).decision == "allow"
        with pytest.raises(loopguard.LoopguardError, match="401"):
            loopguard.Guard.remote(s.url, token="wrong").before_call("s", "t", {})
    finally:
        s.close()


def test_threads_share_one_remote_guard() -> None:
    s = StandIn()
    try:
        guard = loopguard.Guard.remote(s.url)

        def worker(n: int) -> None:
            for i in range(20):
                guard.before_call("threads", "t", {"n": n, "i": i})

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert s.requests == 80
    finally:
        s.close()


def test_bad_url() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        loopguard.Guard.remote("localhost:7878")


def test_remote_guard_has_the_guard_api_and_the_same_session_shape(server_url: str) -> None:
    remote = loopguard.Guard.remote(server_url)
    local = loopguard.Guard()
    assert isinstance(remote, loopguard.GuardAPI) and isinstance(local, loopguard.GuardAPI)
    for guard in (remote, local):
        for i in range(12):
            d = guard.before_call("shape/1", "read", {"path": "a.txt"}, run="r1", call_id=f"c{i}")
            guard.after_call("shape/1", "read", {"path": "a.txt"}, result="same", run="r1", call_id=f"c{i}")
        assert d.decision == "warn"
    there, here = remote.session("shape/1"), local.session("shape/1")
    assert there is not None and here is not None

    def untimed(info: dict) -> dict:
        return {**info, "lastSeen": 0, "recent": [{**r, "ts": 0} for r in info["recent"]]}

    # One shape: what loopguard serve answers is what the local guard says, key for key.
    assert untimed(there) == untimed(here)
    assert (there["calls"], there["warnings"], there["recent"][-2]["detector"]) == (12, 2, "generic_repeat")
    # The 12th call's warning was kept back (once per bucket of ten): /v1/events' words.
    assert (there["recent"][-2]["decision"], there["recent"][-2]["emitted"]) == ("warn", False)
    assert (there["recent"][-4]["decision"], there["recent"][-4]["emitted"]) == ("warn", True)
    assert all(v is not None for r in there["recent"] for k, v in r.items() if k not in ("run", "callId"))
    assert remote.session("never-seen") is None
    assert remote.forget("shape/1") is True and remote.forget("shape/1") is False
    assert remote.session("shape/1") is None


def test_remote_session_reads_do_not_fail_open() -> None:
    remote = loopguard.Guard.remote(f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(loopguard.StoreError, match="unreachable"):
        remote.session("s")
    with pytest.raises(loopguard.StoreError, match="unreachable"):
        remote.forget("s")
