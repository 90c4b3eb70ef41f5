#!/usr/bin/env bash
# Installs Schemathesis (PyPI, pinned) into a venv under target/ for the contract test of
# `loopguard serve` (crates/loopguard/tests/serve_schemathesis.rs), which runs it against
# GET /openapi.json. Idempotent: an existing venv with the pinned version is kept.
# Usage: scripts/setup-schemathesis.sh   (venv at target/schemathesis-venv, or $LOOPGUARD_SCHEMATHESIS_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
VENV="${LOOPGUARD_SCHEMATHESIS_VENV:-$PWD/target/schemathesis-venv}"
PY="${PYTHON:-python3}"
if [ -x "$VENV/bin/st" ] && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$VERSION')" 2>/dev/null; then
  echo "schemathesis $VERSION already in $VENV"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$VERSION"
"$VENV/bin/python" -c "import importlib.metadata as m; print('schemathesis', m.version('schemathesis'), 'installed in $VENV')"
