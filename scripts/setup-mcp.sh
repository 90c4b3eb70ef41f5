#!/usr/bin/env bash
# Installs the reference MCP Python SDK (`mcp` from PyPI) into a venv under target/ for the
# loopguard-mcp tests and benchmark. Idempotent: an existing venv with the pinned version is kept.
# Usage: scripts/setup-mcp.sh            (venv at target/mcp-venv, or $LOOPGUARD_MCP_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
MCP_VERSION="${MCP_VERSION:-2.3.0}"
VENV="${LOOPGUARD_MCP_VENV:-$PWD/target/mcp-venv}"
PY="${PYTHON:-python3}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  echo "mcp $MCP_VERSION already in $VENV"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
"$VENV/bin/python" -c "import importlib.metadata as m; print('mcp', m.version('mcp'), 'installed in $VENV')"
