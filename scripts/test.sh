#!/usr/bin/env bash
# The README's test command: installs what the tests need on a fresh machine, then runs every
# test. .ci/run calls it after the formatting, lint and documentation checks.
#
# Installs (each step is skipped when already there):
#   - Chromium (Debian package) for the HTML report test, which then must run, not skip;
#   - redis-server (Debian package) for the `loopguard serve` tests (they start their own on a
#     free loopback port);
#   - the MCP Python SDK in target/mcp-venv for the `loopguard mcp` tests;
#   - the Codex, Gemini CLI and Qwen Code CLIs from npm in target/agents for the agent hook
#     end-to-end tests (scripts/setup-agents.sh; pinned versions);
#   - the OpenTelemetry Python SDK, its OTLP/HTTP exporter, Pydantic AI, the OpenAI Agents SDK
#     and Rotel (a collector) in target/otel-venv, and the Traceloop, LangSmith, Langfuse and
#     Phoenix SDKs in target/otel-sdks-venv, for the trace tests (crates/loopguard/tests/otel.rs);
#   - Claude Code (npm, pinned) in target/claude-code for crates/loopguard/tests/claude_e2e.rs
#     and the plugin validator (scripts/setup-claude.sh);
#   - Schemathesis (PyPI, pinned) in target/schemathesis-venv for the contract test of
#     `loopguard serve` (scripts/setup-schemathesis.sh);
#   - Prometheus and promtool (Debian package) for the tests of deploy/
#     (scripts/setup-prometheus.sh).
# Then runs `cargo test --workspace`, the Python package's suite (scripts/test-python.sh: a fresh
# venv under target/, the frameworks from PyPI, pytest), the npm package's suite
# (scripts/test-node.sh: the packed tarball in a project under target/, node --test) and the Claude Code plugin through Claude
# Code's own validator (scripts/validate-claude-plugin.sh). Needs root or sudo for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== headless Chromium for the HTML report test"
if ! command -v chromium >/dev/null 2>&1; then
  as_root=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then as_root=sudo; fi
  $as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium >/dev/null
fi
chromium --version
export LOOPGUARD_REQUIRE_CHROMIUM=1

echo "== redis-server for the loopguard serve tests"
bash scripts/setup-redis.sh

echo "== the MCP Python SDK for the loopguard mcp tests (venv under target/)"
bash scripts/setup-mcp.sh

echo "== the agent CLIs for the agent hook end-to-end tests (npm, under target/agents)"
bash scripts/setup-agents.sh

echo "== Claude Code from npm (pinned, into target/claude-code) for the end-to-end hook test"
bash scripts/setup-claude.sh >/dev/null

echo "== the OpenTelemetry SDK, Pydantic AI, Rotel and the observability SDKs for the trace tests (venvs under target/)"
bash scripts/setup-otel.sh

echo "== Schemathesis for the contract test of loopguard serve (venv under target/)"
bash scripts/setup-schemathesis.sh

echo "== Prometheus and promtool for the tests of the ops assets in deploy/ (apt-get)"
bash scripts/setup-prometheus.sh

echo "== cargo test --workspace"
cargo test --workspace

echo "== the Python package: build, install into a fresh venv, pytest (scripts/test-python.sh)"
bash scripts/test-python.sh

echo "== the npm package: build, pack, install into a project under target/, node --test (scripts/test-node.sh)"
bash scripts/test-node.sh

echo "== the Claude Code plugin, through Claude Code's own validator"
bash scripts/validate-claude-plugin.sh
