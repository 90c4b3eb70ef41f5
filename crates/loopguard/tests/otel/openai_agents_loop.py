"""A real OpenAI Agents SDK agent whose scripted model loops, its trace written as JSON Lines.

The model is a scripted `agents.models.interface.Model` (offline, no network): it calls the
function tool `read_file` with the same arguments CALLS times, then answers. The SDK's own
tracing hands each trace and span to a processor that writes `export()` one per line (the
processor docs/traces/openai-agents.md shows); the SDK's default uploader is replaced, so
nothing leaves the machine.

With --openinference-otlp-json PATH, OpenInference's instrumentation of the Agents SDK
(openinference-instrumentation-openai-agents) also records the run as OpenTelemetry spans
(TOOL spans with `tool.name`, `input.value`, `output.value`), written as OTLP JSON Lines by the
SDK's own OTLP encoder.

Usage: openai_agents_loop.py OUT.jsonl [--calls N] [--openinference-otlp-json PATH]
"""

import argparse
import json
import sys

from agents import (
    Agent,
    ModelSettings,
    Runner,
    add_trace_processor,
    function_tool,
    set_trace_processors,
)
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.tracing.processor_interface import TracingProcessor
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


class JsonLines(TracingProcessor):
    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")

    def on_trace_start(self, trace):
        pass

    def on_trace_end(self, trace):
        self.f.write(json.dumps(trace.export()) + "\n")

    def on_span_start(self, span):
        pass

    def on_span_end(self, span):
        self.f.write(json.dumps(span.export()) + "\n")
        self.f.flush()

    def shutdown(self):
        self.f.close()

    def force_flush(self):
        self.f.flush()


class Scripted(Model):
    def __init__(self, calls):
        self.calls = calls
        self.n = 0

    async def get_response(self, *args, **kwargs):
        if self.n < self.calls:
            self.n += 1
            item = ResponseFunctionToolCall(
                id=f"fc_{self.n}",
                call_id=f"call_{self.n}",
                name="read_file",
                arguments='{"path": "/srv/app/config.yaml"}',
                type="function_call",
                status="completed",
            )
        else:
            item = ResponseOutputMessage(
                id="msg_done",
                content=[ResponseOutputText(text="done", type="output_text", annotations=[])],
                role="assistant",
                status="completed",
                type="message",
            )
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("not streamed in this test")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--calls", type=int, default=25)
    p.add_argument("--openinference-otlp-json")
    a = p.parse_args()
    processor = JsonLines(a.out)
    set_trace_processors([processor])
    provider = None
    if a.openinference_otlp_json:
        from google.protobuf.json_format import MessageToJson
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

        class OtlpJsonLines(SpanExporter):
            def __init__(self, path):
                self.out = open(path, "w", encoding="utf-8")

            def export(self, spans):
                self.out.write(MessageToJson(encode_spans(spans), indent=None) + "\n")
                self.out.flush()
                return SpanExportResult.SUCCESS

            def shutdown(self):
                self.out.close()

        provider = TracerProvider(resource=Resource.create({"service.name": "agents-app"}))
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLines(a.openinference_otlp_json)))
        # The instrumentor sets its own processor: the JSON Lines one is added back after it.
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        add_trace_processor(processor)

    @function_tool
    def read_file(path: str) -> str:
        """Reads a file."""
        return "port: 8080\n"

    model = Scripted(a.calls)
    agent = Agent(name="looper", instructions="read the config", model=model, tools=[read_file],
                  model_settings=ModelSettings())
    result = Runner.run_sync(agent, "read the config", max_turns=a.calls + 5)
    processor.shutdown()
    if provider:
        provider.shutdown()
    print(f"tool calls: {model.n}, output: {result.final_output}", file=sys.stderr)


if __name__ == "__main__":
    main()
