"""Codex-shaped tool events sent by the OpenTelemetry Python SDK's OTLP/HTTP log exporter.

Codex records each tool call as a log event `codex.tool_result` (attributes `tool_name`,
`call_id`, `arguments`, `duration_ms`, `success`, `output`, and the session's
`conversation.id`, `model`, `app.version`: `codex-rs/otel/src/events/session_telemetry.rs`),
exported over OTLP/HTTP with `service.name = codex_exec`. This script emits the same records
for an agent whose `exec_command` runs `cargo test` 25 times (Codex's unified-exec output,
with a chunk id and wall time that change every time), through the SDK's LoggerProvider and
its OTLP/HTTP log exporter (protobuf, gzip), to URL.

usage: codex_logs.py URL TOKEN CONVERSATION_ID
"""

import json
import sys
import time

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

CALLS = 25


def main():
    url, token, conversation = sys.argv[1], sys.argv[2], sys.argv[3]
    provider = LoggerProvider(resource=Resource.create({"service.name": "codex_exec"}))
    exporter = OTLPLogExporter(endpoint=url, headers={"Authorization": f"Bearer {token}"},
                               compression=Compression.Gzip, timeout=30)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("codex_otel")
    now = time.time_ns()
    for i in range(CALLS):
        output = (f"Chunk ID: {0xa1b2c3 + i * 7919:06x}\nWall time: {1 + i % 3}.{(i * 137) % 10000:04} seconds\n"
                  f"Process exited with code 101\nOriginal token count: {40 + i}\nOutput:\nerror: test failed")
        logger.emit(LogRecord(
            timestamp=now + i * 1_000_000_000,
            observed_timestamp=now + i * 1_000_000_000,
            attributes={
                "event.name": "codex.tool_result",
                "tool_name": "exec_command",
                "call_id": f"call_{i:03}",
                "arguments": json.dumps({"cmd": "cargo test", "workdir": "/repo", "yield_time_ms": 10000 + i}),
                "duration_ms": str(1200 + i * 17),
                "success": "false",
                "output": output,
                "conversation.id": conversation,
                "model": "gpt-5.1-codex",
                "app.version": "0.93.0",
            },
        ))
    provider.shutdown()
    print(f"tool calls: {CALLS}", file=sys.stderr)


if __name__ == "__main__":
    main()
