"""What the real observability SDKs send for a looping agent, captured on loopback.

Each SDK (from PyPI, scripts/setup-otel.sh) records a scripted agent that calls the tool
`read_file` with the same path CALLS times, and sends what it records to a capture server
on 127.0.0.1 started here (offline: nothing leaves the machine). The capture is written
as the file `loopguard replay` reads:

  traceloop OUT   traceloop-sdk (`Traceloop.init`, `@tool`): its OTLP/HTTP exporter's
                  protobuf requests, decoded with the OTLP protobuf definitions into OTLP
                  JSON Lines (one ExportTraceServiceRequest per line)
  phoenix OUT     arize-phoenix-otel (`phoenix.otel.register`, OpenInference's
                  `@tracer.tool`): the same, OTLP JSON Lines
  langfuse OUT    langfuse (its OpenTelemetry-based client, `as_type="tool"` observations):
                  the same, OTLP JSON Lines of what it posts to /api/public/otel/v1/traces
  langsmith OUT   langsmith (`@traceable(run_type="tool")`): the runs its client posts to
                  /runs/multipart, each run's `patch` applied to its `post` as LangSmith's
                  server stores them, written as a JSON array of runs

It prints "tool calls: N" on stderr.
"""

import email.parser
import email.policy
import gzip
import json
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CALLS = 25
PATH = "/srv/app/config.yaml"


class Capture:
    """A loopback HTTP server keeping every request body (decompressed)."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                # LangSmith asks for the server's info first: no special features.
                self.reply(b"{}")

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                enc = (self.headers.get("content-encoding") or "").lower()
                if enc == "gzip":
                    body = gzip.decompress(body)
                elif enc == "deflate":
                    body = zlib.decompress(body)
                with capture.lock:
                    capture.requests.append((self.path, self.headers.get("content-type", ""), body))
                self.reply(b"{}")

            def reply(self, body):
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def otlp_json_lines(self, out):
        from google.protobuf.json_format import MessageToJson
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        n = 0
        with open(out, "w", encoding="utf-8") as f:
            for path, ctype, body in self.requests:
                if not path.endswith("/v1/traces"):
                    continue
                if "json" in ctype:
                    f.write(json.dumps(json.loads(body)) + "\n")
                else:
                    f.write(MessageToJson(ExportTraceServiceRequest.FromString(body), indent=None) + "\n")
                n += 1
        if n == 0:
            sys.exit(f"the SDK sent no traces: {[(p, c) for p, c, _ in self.requests]}")


def traceloop(out):
    cap = Capture()
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import tool, workflow

    Traceloop.init(app_name="loop-agent", api_endpoint=cap.url, disable_batch=True,
                   telemetry_enabled=False)

    @tool(name="read_file")
    def read_file(path):
        return "port: 8080\n"

    @workflow(name="looping_agent")
    def run():
        for _ in range(CALLS):
            read_file(path=PATH)

    run()
    Traceloop.get_default_span_processor().force_flush()
    cap.otlp_json_lines(out)


def phoenix(out):
    cap = Capture()
    from phoenix.otel import register

    provider = register(project_name="loop-agent", endpoint=f"{cap.url}/v1/traces",
                        batch=False, set_global_tracer_provider=False, verbose=False)
    tracer = provider.get_tracer("loop-agent")

    @tracer.tool(name="read_file", description="Reads a file.")
    def read_file(path: str) -> str:
        return "port: 8080\n"

    with tracer.start_as_current_span("looping_agent", openinference_span_kind="agent"):
        for _ in range(CALLS):
            read_file(path=PATH)
    provider.force_flush()
    cap.otlp_json_lines(out)


def langfuse(out):
    cap = Capture()
    from langfuse import Langfuse

    client = Langfuse(public_key="pk-lf-local", secret_key="sk-lf-local", host=cap.url,
                      flush_at=1)
    with client.start_as_current_observation(name="looping_agent", as_type="agent"):
        for _ in range(CALLS):
            with client.start_as_current_observation(
                name="read_file", as_type="tool", input={"path": PATH}
            ) as obs:
                obs.update(output="port: 8080\n")
    client.flush()
    client.shutdown()
    cap.otlp_json_lines(out)


def langsmith(out):
    cap = Capture()
    import langsmith as ls
    from langsmith import traceable

    import os

    os.environ["LANGSMITH_TRACING"] = "true"
    client = ls.Client(api_url=cap.url, api_key="lsv2_local")

    @traceable(run_type="tool", name="read_file", client=client)
    def read_file(path: str) -> str:
        return "port: 8080\n"

    @traceable(run_type="chain", name="looping_agent", client=client)
    def run():
        for _ in range(CALLS):
            read_file(PATH)

    run()
    client.flush()
    runs = {}
    order = []

    def merge(op, run_id, field, value):
        if run_id not in runs:
            runs[run_id] = {}
            order.append(run_id)
        if field is None:
            runs[run_id].update(value)
        else:
            runs[run_id][field] = value

    for path, ctype, body in cap.requests:
        if path.endswith("/runs/multipart"):
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body
            )
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                op, run_id, *field = name.split(".")
                merge(op, run_id, field[0] if field else None, json.loads(part.get_content()
                                                                         if isinstance(part.get_content(), str)
                                                                         else part.get_content().decode()))
        elif path.endswith("/runs/batch"):
            batch = json.loads(body)
            for op in ("post", "patch"):
                for r in batch.get(op) or []:
                    merge(op, r["id"], None, r)
    if not runs:
        sys.exit(f"the SDK sent no runs: {[(p, c) for p, c, _ in cap.requests]}")
    with open(out, "w", encoding="utf-8") as f:
        json.dump([dict(runs[i], id=i) for i in order], f, indent=1, default=str)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    {"traceloop": traceloop, "phoenix": phoenix, "langfuse": langfuse, "langsmith": langsmith}[kind](out)
    print(f"tool calls: {CALLS}", file=sys.stderr)


if __name__ == "__main__":
    main()
