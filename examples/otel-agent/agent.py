"""An agent instrumented with OpenTelemetry, sending its traces to `loopguard serve`.

The agent traces each tool call as a GenAI `execute_tool` span (docs/traces/opentelemetry.md)
and exports its spans with the OpenTelemetry SDK's OTLP/HTTP exporter to serve's
POST /v1/traces, as it would to any collector. Its model is stuck: it reads the same file 25
times. serve judges the trace once it is quiet, in observe mode (the calls already ran), and
GET /v1/sessions/{conversation id} shows what the guard found: 10 warnings (calls 11 to 20),
5 blocks (calls 21 to 25) and the last decisions. Nothing in the agent knows about loopguard
but the exporter's URL.

Run it (scripts/setup-otel.sh installs the SDK into target/otel-venv):
    target/otel-venv/bin/python examples/otel-agent/agent.py
LOOPGUARD=path/to/loopguard to use another binary than the `loopguard` on PATH.
"""

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def start_serve(log):
    """`loopguard serve` on a free loopback port; a trace is judged 300 ms after its last span."""
    cmd = [os.environ.get("LOOPGUARD", "loopguard"), "serve", "--listen", "127.0.0.1:0", "--trace-wait", "300ms"]
    server = subprocess.Popen(cmd, stderr=log)
    for _ in range(200):
        found = re.search(r"listening on (http://\S+)", Path(log.name).read_text())
        if found:
            return server, found.group(1)
        time.sleep(0.1)
    server.kill()
    raise SystemExit("loopguard serve did not start: " + Path(log.name).read_text())


def read_file(path):
    return "port: 8080"  # the same answer every time


def run_agent(tracer, conversation):
    """The looping agent: every tool call is a span with its arguments and result."""
    with tracer.start_as_current_span("invoke_agent", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "looper",
        "gen_ai.conversation.id": conversation,  # loopguard's session
    }):
        for n in range(1, 26):  # the model asks for the same call, 25 times
            args = {"path": "/srv/app/config.yaml"}
            with tracer.start_as_current_span("execute_tool read_file", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
                "gen_ai.tool.call.id": f"call-{n}", "gen_ai.tool.call.arguments": json.dumps(args),
            }) as span:
                span.set_attribute("gen_ai.tool.call.result", read_file(**args))


def read_session(url, session_id):
    """GET /v1/sessions/{id} once serve has applied the trace (it waits for the trace to be
    quiet; 404 until then): 30 s at the most."""
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/v1/sessions/{session_id}") as answer:
                session = json.load(answer)
            if session["calls"] == 25:
                return session
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
        time.sleep(0.1)
    raise SystemExit("the session never reached 25 calls")


def main():
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server, url = start_serve(log)
        try:
            print("loopguard serve listening on", url)
            provider = TracerProvider(resource=Resource.create({"service.name": "loop-agent"}))
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
            conversation = str(uuid.uuid4())
            run_agent(provider.get_tracer("example"), conversation)
            provider.shutdown()  # exports what is left

            session = read_session(url, conversation)
            print(f"session {conversation}: {session['calls']} calls, {session['outcomes']} outcomes, "
                  f"{session['warnings']} warnings, {session['blocks']} blocks")
            # Its last 20 decisions (calls and outcomes), oldest first; observe mode says
            # `would-warn` and `would-block`: the calls had already run.
            calls = [row for row in session["recent"] if row["type"] == "call"]
            for row in calls:
                print(f"  {row['callId']}: {row['decision']} ({row['detector']}, count {row['count']})")
            print("  the last message:", calls[-1]["message"])
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
