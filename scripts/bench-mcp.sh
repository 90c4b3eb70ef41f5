#!/usr/bin/env bash
# Latency added by `loopguard mcp` per tools/call (stdio, and streamable HTTP on one kept-alive
# connection through `--listen ADDR -- COMMAND`), against the same client calling the same
# server directly in the same run. Needs scripts/setup-mcp.sh (the MCP Python SDK).
# Usage: scripts/bench-mcp.sh [CALLS_PER_SIDE]   (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${LOOPGUARD_MCP_VENV:-$PWD/target/mcp-venv}"
[ -x "$VENV/bin/python" ] || { echo "no MCP Python SDK at $VENV: run scripts/setup-mcp.sh" >&2; exit 1; }
cargo build --release -q -p loopguard
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$VENV/bin/python" crates/loopguard-mcp/tests/python/bench.py "$PWD/target/release/loopguard" "${1:-2000}"
