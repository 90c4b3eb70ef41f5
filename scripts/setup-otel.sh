#!/usr/bin/env bash
# Installs the real OpenTelemetry instrumentation the trace tests run (issue 22) into a venv
# under target/: the Python OpenTelemetry SDK, its OTLP/HTTP exporter (protobuf), and Pydantic AI
# (pydantic-ai-slim: its agents emit GenAI tool spans; the tests drive them with a scripted
# FunctionModel, offline), and the OpenAI Agents SDK (openai-agents: its tracing exports
# function spans; the tests drive it with a scripted Model, offline) with OpenInference's
# instrumentation of it (openinference-instrumentation-openai-agents: TOOL spans). Idempotent: a venv holding the pinned versions is kept.
# Usage: scripts/setup-otel.sh            (venv at target/otel-venv, or $LOOPGUARD_OTEL_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
OTEL_VERSION="${OTEL_VERSION:-1.45.2}"
PYDANTIC_AI_VERSION="${PYDANTIC_AI_VERSION:-2.68.0}"
OPENAI_AGENTS_VERSION="${OPENAI_AGENTS_VERSION:-0.24.0}"
OPENINFERENCE_VERSION="${OPENINFERENCE_VERSION:-2.6.0}"
VENV="${LOOPGUARD_OTEL_VENV:-$PWD/target/otel-venv}"
PY="${PYTHON:-python3}"
check() {
  "$VENV/bin/python" - <<PYEOF 2>/dev/null
import importlib.metadata as m, sys
want = {"opentelemetry-sdk": "$OTEL_VERSION", "opentelemetry-exporter-otlp-proto-http": "$OTEL_VERSION",
        "pydantic-ai-slim": "$PYDANTIC_AI_VERSION", "openai-agents": "$OPENAI_AGENTS_VERSION",
        "openinference-instrumentation-openai-agents": "$OPENINFERENCE_VERSION"}
sys.exit(any(m.version(k) != v for k, v in want.items()))
PYEOF
}
if [ -x "$VENV/bin/python" ] && check; then
  echo "OpenTelemetry SDK $OTEL_VERSION, pydantic-ai-slim $PYDANTIC_AI_VERSION, openai-agents $OPENAI_AGENTS_VERSION, openinference $OPENINFERENCE_VERSION already in $VENV"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "opentelemetry-sdk==$OTEL_VERSION" \
  "opentelemetry-exporter-otlp-proto-http==$OTEL_VERSION" \
  "pydantic-ai-slim==$PYDANTIC_AI_VERSION" \
  "openai-agents==$OPENAI_AGENTS_VERSION" \
  "openinference-instrumentation-openai-agents==$OPENINFERENCE_VERSION"
check
echo "OpenTelemetry SDK $OTEL_VERSION, pydantic-ai-slim $PYDANTIC_AI_VERSION, openai-agents $OPENAI_AGENTS_VERSION, openinference $OPENINFERENCE_VERSION installed in $VENV"
