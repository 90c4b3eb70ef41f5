#!/usr/bin/env bash
# Installs the real OpenTelemetry instrumentation the trace tests run (docs/traces/) into a venv
# under target/: the Python OpenTelemetry SDK, its OTLP/HTTP exporter (protobuf), and Pydantic AI
# (pydantic-ai-slim: its agents emit GenAI tool spans; the tests drive them with a scripted
# FunctionModel, offline), and the OpenAI Agents SDK (openai-agents: its tracing exports
# function spans; the tests drive it with a scripted Model, offline) with OpenInference's
# instrumentation of it (openinference-instrumentation-openai-agents: TOOL spans), and Rotel
# (`rotel`: an OpenTelemetry collector shipped as a wheel; the tests put it between the SDK's
# exporter and `loopguard serve`).
# A second venv holds the observability SDKs whose own output the tests read (their pins
# conflict with the first venv's OpenTelemetry): Traceloop (traceloop-sdk), LangSmith
# (langsmith), Langfuse (langfuse) and Arize Phoenix (arize-phoenix-otel, OpenInference).
# Idempotent: a venv holding the pinned versions is kept.
# Usage: scripts/setup-otel.sh   (venvs at target/otel-venv and target/otel-sdks-venv, or
#                                 $LOOPGUARD_OTEL_VENV and $LOOPGUARD_OTEL_SDKS_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
OTEL_VERSION="${OTEL_VERSION:-1.45.2}"
PYDANTIC_AI_VERSION="${PYDANTIC_AI_VERSION:-2.68.0}"
OPENAI_AGENTS_VERSION="${OPENAI_AGENTS_VERSION:-0.24.0}"
OPENINFERENCE_VERSION="${OPENINFERENCE_VERSION:-2.6.0}"
ROTEL_VERSION="${ROTEL_VERSION:-0.0.1a15}"
TRACELOOP_VERSION="${TRACELOOP_VERSION:-0.62.4}"
LANGSMITH_VERSION="${LANGSMITH_VERSION:-0.14.17}"
LANGFUSE_VERSION="${LANGFUSE_VERSION:-5.0.4}"
PHOENIX_OTEL_VERSION="${PHOENIX_OTEL_VERSION:-0.17.2}"
VENV="${LOOPGUARD_OTEL_VENV:-$PWD/target/otel-venv}"
SDKS_VENV="${LOOPGUARD_OTEL_SDKS_VENV:-$PWD/target/otel-sdks-venv}"
PY="${PYTHON:-python3}"
sdks_check() {
  "$SDKS_VENV/bin/python" - <<PYEOF 2>/dev/null
import importlib.metadata as m, sys
want = {"traceloop-sdk": "$TRACELOOP_VERSION", "langsmith": "$LANGSMITH_VERSION",
        "langfuse": "$LANGFUSE_VERSION", "arize-phoenix-otel": "$PHOENIX_OTEL_VERSION"}
sys.exit(any(m.version(k) != v for k, v in want.items()))
PYEOF
}
if [ -x "$SDKS_VENV/bin/python" ] && sdks_check; then
  echo "traceloop-sdk $TRACELOOP_VERSION, langsmith $LANGSMITH_VERSION, langfuse $LANGFUSE_VERSION, arize-phoenix-otel $PHOENIX_OTEL_VERSION already in $SDKS_VENV"
else
  "$PY" -m venv "$SDKS_VENV"
  "$SDKS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "traceloop-sdk==$TRACELOOP_VERSION" "langsmith==$LANGSMITH_VERSION" \
    "langfuse==$LANGFUSE_VERSION" "arize-phoenix-otel==$PHOENIX_OTEL_VERSION"
  sdks_check
  echo "traceloop-sdk $TRACELOOP_VERSION, langsmith $LANGSMITH_VERSION, langfuse $LANGFUSE_VERSION, arize-phoenix-otel $PHOENIX_OTEL_VERSION installed in $SDKS_VENV"
fi
check() {
  "$VENV/bin/python" - <<PYEOF 2>/dev/null
import importlib.metadata as m, sys
want = {"opentelemetry-sdk": "$OTEL_VERSION", "opentelemetry-exporter-otlp-proto-http": "$OTEL_VERSION",
        "pydantic-ai-slim": "$PYDANTIC_AI_VERSION", "openai-agents": "$OPENAI_AGENTS_VERSION",
        "openinference-instrumentation-openai-agents": "$OPENINFERENCE_VERSION",
        "rotel": "$ROTEL_VERSION"}
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
  "openinference-instrumentation-openai-agents==$OPENINFERENCE_VERSION" \
  "rotel==$ROTEL_VERSION"
check
echo "OpenTelemetry SDK $OTEL_VERSION, pydantic-ai-slim $PYDANTIC_AI_VERSION, openai-agents $OPENAI_AGENTS_VERSION, openinference $OPENINFERENCE_VERSION, rotel $ROTEL_VERSION installed in $VENV"
