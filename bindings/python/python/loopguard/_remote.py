"""``loopguard.Guard.remote(url, token=None)``: the Guard API answered by ``loopguard serve``.

Each call posts one events.md event to ``POST {url}/v1/events`` (the same bytes the local
``Guard`` applies) and turns the decision record into the same decision objects. One server,
or several behind a load balancer sharing Redis, then holds one loop state for a whole fleet.

Fail open, loudly: when the server cannot be reached (connection refused, timeout, 503 from a
store that is down), the call is allowed, the outcome is not recorded, and a warning is
logged on the ``loopguard`` logger. A malformed event is an ``EventError`` (the server's
message, naming the field), as it is locally; a rejected token is a ``LoopguardError``.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import urllib.parse
from typing import Any, Literal, Optional

from ._loopguard import (
    EventError,
    LoopguardError,
    StoreError,
    _call_line,
    _compaction_line,
    _decision_from_record,
    _event_json,
    _outcome_line,
)

_log = logging.getLogger("loopguard")

# What a call, an outcome and a compaction become when the server is unreachable, and how
# the warning logged then says so.
_FAIL_OPEN = {"call": "allow", "outcome": "ignored", "compaction": "ignored"}
_FAIL_OPEN_SAYS = {
    "call": "the call is allowed unchecked",
    "outcome": "the outcome is not recorded",
    "compaction": "the compaction is not recorded",
}


class RemoteGuard:
    """A client of ``loopguard serve`` with the ``loopguard.Guard`` API
    (``loopguard.GuardAPI``: every method but ``sessions()``, which this client does not
    implement). Safe to share between threads (one keep-alive connection per thread)."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 5.0) -> None:
        parsed = urllib.parse.urlsplit(str(url))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"Guard.remote: expected an http:// or https:// URL, got {url!r}")
        self.url = str(url).rstrip("/")
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port
        self._path = parsed.path.rstrip("/") + "/v1/events"
        self._sessions = parsed.path.rstrip("/") + "/v1/sessions/"
        self._timeout = timeout
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"<loopguard.Guard.remote {self.url}>"

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self._timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _post(self, body: bytes) -> tuple[int, bytes]:
        return self._request("POST", self._path, body)

    def _request(self, method: str, path: str, body: Optional[bytes] = None) -> tuple[int, bytes]:
        # One retry on a fresh connection: a keep-alive connection the server closed fails on
        # first use.
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=self._headers)
                response = conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop_connection()
                if attempt == 1:
                    raise
            except Exception:
                self._drop_connection()
                raise
        raise AssertionError("unreachable")

    def _apply(self, kind: str, body: bytes, echo: dict[str, Any]) -> Optional[dict[str, Any]]:
        """Posts one event; returns its record, or None after failing open."""
        try:
            status, payload = self._post(body)
        except (OSError, http.client.HTTPException) as e:
            _log.warning("loopguard: %s unreachable (%s); failing open: %s", self.url, e, _FAIL_OPEN_SAYS[kind])
            return None
        if status == 200:
            record: dict[str, Any] = json.loads(payload)
            return record
        try:
            error = json.loads(payload)
        except ValueError:
            error = {"error": payload.decode("utf-8", "replace")}
        message = error.get("error", f"HTTP {status}") if isinstance(error, dict) else str(error)
        if status == 503 or status >= 500:
            _log.warning("loopguard: %s answered %s (%s); failing open: %s", self.url, status, message, _FAIL_OPEN_SAYS[kind])
            return None
        if status == 400 or status == 413:
            err = EventError(message)
            err.field = error.get("field") if isinstance(error, dict) else None
            raise err
        raise LoopguardError(f"{self.url}: HTTP {status}: {message}")

    @staticmethod
    def _fail_open_record(kind: str, echo: dict[str, Any]) -> dict[str, Any]:
        record = {"type": kind, "session": echo.get("session", "default"), "run": echo.get("run"), "callId": echo.get("callId")}
        if kind != "compaction":
            record["tool"] = echo.get("tool")
        record["decision"] = _FAIL_OPEN[kind]
        return record

    def _session_request(self, method: str, session: str) -> tuple[int, Any]:
        """``GET`` or ``DELETE /v1/sessions/{session}``: the status and the JSON answer. Unlike
        the decisions, reading or forgetting state does not fail open: an unreachable server
        is a ``StoreError``, as an unreachable store is for the local guard."""
        path = self._sessions + urllib.parse.quote(str(session), safe="")
        try:
            status, payload = self._request(method, path)
        except (OSError, http.client.HTTPException) as e:
            raise StoreError(f"{self.url} unreachable ({e})") from e
        try:
            answer = json.loads(payload) if payload else None
        except ValueError:
            answer = {"error": payload.decode("utf-8", "replace")}
        if status in (200, 204, 404):
            return status, answer
        message = answer.get("error", f"HTTP {status}") if isinstance(answer, dict) else str(answer)
        if status >= 500:
            raise StoreError(f"{self.url}: HTTP {status}: {message}")
        raise LoopguardError(f"{self.url}: HTTP {status}: {message}")

    def session(self, session: str) -> Optional[dict[str, Any]]:
        """The server's ``GET /v1/sessions/{session}`` (the shape ``Guard.session`` returns);
        None when the server has no such session."""
        status, answer = self._session_request("GET", session)
        if status == 404:
            return None
        result: dict[str, Any] = answer
        return result

    def forget(self, session: str) -> bool:
        """``DELETE /v1/sessions/{session}``: True when the server had the session."""
        status, _ = self._session_request("DELETE", session)
        return status != 404

    def before_call(self, session: str, tool: str, args: Any, *, run: Optional[str] = None,
                    call_id: Optional[str] = None, agent: Optional[str] = None) -> Any:
        body = _call_line(session, tool, args, run, call_id, agent)
        record = self._apply("call", body, {})
        if record is None:
            record = self._fail_open_record("call", {"session": session, "run": run, "callId": call_id, "tool": tool})
        return _decision_from_record(record)

    def after_call(self, session: str, tool: str, args: Any, *, run: Optional[str] = None,
                   call_id: Optional[str] = None, agent: Optional[str] = None, **outcome: Any) -> Any:
        body = _outcome_line(session, tool, args, run, call_id, agent, **outcome)
        record = self._apply("outcome", body, {})
        if record is None:
            record = self._fail_open_record("outcome", {"session": session, "run": run, "callId": call_id, "tool": tool})
        return _decision_from_record(record)

    def on_compaction(self, session: str, run: Optional[str] = None, *, agent: Optional[str] = None) -> Literal["armed", "ignored"]:
        record = self._apply("compaction", _compaction_line(session, run, agent), {})
        return "ignored" if record is None or record["decision"] != "armed" else "armed"

    def event(self, event: Any) -> dict[str, Any]:
        if isinstance(event, (bytes, str)):
            body = event.encode("utf-8") if isinstance(event, str) else event
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = {}
        else:
            body = _event_json(event)
            parsed = event
        echo = parsed if isinstance(parsed, dict) else {}
        kind = str(echo["type"]) if echo.get("type") in _FAIL_OPEN else "call"
        record = self._apply(kind, body, echo)
        if record is None:
            record = self._fail_open_record(kind, echo)
            record["failOpen"] = True
        return record
