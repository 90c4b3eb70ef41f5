"""A real Pydantic AI agent, instrumented with OpenTelemetry, whose scripted model loops.

The model is Pydantic AI's FunctionModel (offline, no network): it calls the tool
`read_file` with the same arguments CALLS times, then answers. Pydantic AI's own
instrumentation records each tool execution as a span; where they go:

  --otlp-json-file PATH   one OTLP JSON ExportTraceServiceRequest per export, one per line,
                          encoded by the SDK's own OTLP encoder (ids base64: protobuf JSON)
  --console-file PATH     the SDK's ConsoleSpanExporter (pretty-printed spans back to back)
  --otlp-http URL         the SDK's OTLP/HTTP exporter (protobuf), gzip-compressed with --gzip
  --token TOKEN           with --otlp-http: `Authorization: Bearer TOKEN`

--version picks Pydantic AI's instrumentation format (2: `running tool`, `tool_arguments`;
3 and later, 5 the default: `execute_tool`, `gen_ai.tool.call.arguments`).
"""

import argparse
import sys

from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings


class OtlpJsonFileExporter(SpanExporter):
    """OTLP JSON Lines: each export is one ExportTraceServiceRequest on one line."""

    def __init__(self, path):
        self.out = open(path, "w", encoding="utf-8")

    def export(self, spans):
        self.out.write(MessageToJson(encode_spans(spans), indent=None) + "\n")
        self.out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.out.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=25)
    p.add_argument("--version", type=int, default=5)
    p.add_argument("--otlp-json-file")
    p.add_argument("--console-file")
    p.add_argument("--otlp-http")
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--token")
    p.add_argument("--service", default="loop-agent")
    a = p.parse_args()

    provider = TracerProvider(resource=Resource.create({"service.name": a.service}))
    console = None
    if a.otlp_json_file:
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(a.otlp_json_file)))
    if a.console_file:
        console = open(a.console_file, "w", encoding="utf-8")
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    if a.otlp_http:
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
        exporter = OTLPSpanExporter(
            endpoint=a.otlp_http,
            headers=headers,
            compression=Compression.Gzip if a.gzip else Compression.NoCompression,
            timeout=30,
        )
        provider.add_span_processor(SimpleSpanProcessor(exporter))

    calls = {"n": 0}

    def scripted(messages, info: AgentInfo) -> ModelResponse:
        if calls["n"] < a.calls:
            calls["n"] += 1
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "/srv/app/config.yaml"},
                                                     tool_call_id=f"call_{calls['n']}")])
        return ModelResponse(parts=[TextPart("done")])

    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, version=a.version))
    agent = Agent(FunctionModel(scripted), name="looper")

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Reads a file."""
        return "port: 8080\n"

    from pydantic_ai.usage import UsageLimits

    result = agent.run_sync("read the config", usage_limits=UsageLimits(request_limit=a.calls + 5))
    provider.shutdown()
    if console:
        console.close()
    print(f"tool calls: {calls['n']}, output: {result.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
