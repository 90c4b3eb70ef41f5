#!/usr/bin/env bash
# Tests the `loopguard` npm package as a user gets it: builds and packs it
# (scripts/build-node.sh), installs the tarball into a fresh project under target/node-test
# together with the frameworks the integrations support (exact versions pinned in
# bindings/node/test/package.json; npm's cache in target/npm-cache), and runs node's test runner
# on bindings/node/test/*.test.mjs there. Called by scripts/test.sh; runs locally too.
#
#   scripts/test-node.sh                 # everything
#   scripts/test-node.sh remote          # only the test files whose name holds "remote"
#
# Needs node 20+ and npm (the npm registry), a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

command -v node >/dev/null || { echo "test-node.sh: node is not installed (node 20+ is needed)" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "test-node.sh: node $(node --version) is too old; loopguard needs node 20+" >&2
  exit 1
fi
echo "== node $(node --version), npm $(npm --version)"

echo "== build and pack the package (scripts/build-node.sh)"
tarball=$(bash scripts/build-node.sh | tail -n 1)
echo "   $tarball ($(du -h "$tarball" | cut -f1))"
# The OpenClaw plugin's install test installs it into the plugin's folder, as its guide says.
export LOOPGUARD_NODE_TARBALL="$repo/$tarball"

# Guard.remote is tested against a real `loopguard serve`.
cargo build -q -p loopguard
export LOOPGUARD_SERVE_BIN="$repo/target/debug/loopguard"

proj=target/node-test
rm -rf "$proj"
mkdir -p "$proj"
cp bindings/node/test/package.json "$proj/"
cp bindings/node/test/*.mjs bindings/node/test/*.ts "$proj/"
# The OpenClaw, opencode and pi plugins, beside the tests (they import `loopguard` from the project).
mkdir -p "$proj/openclaw-plugin"
cp plugins/openclaw/index.mjs plugins/openclaw/openclaw.plugin.json plugins/openclaw/package.json "$proj/openclaw-plugin/"
mkdir -p "$proj/opencode-plugin"
cp plugins/opencode/loopguard.js "$proj/opencode-plugin/"
mkdir -p "$proj/pi-extension"
cp plugins/pi/loopguard.js "$proj/pi-extension/"
echo "== npm install: the tarball and the pinned frameworks into $proj"
start=$(date +%s)
(cd "$proj" && npm install --no-audit --no-fund --loglevel=error --cache "$repo/target/npm-cache" \
  "$repo/$tarball" >/dev/null)
echo "   installed in $(( $(date +%s) - start )) s"
# The installed package holds no compiler output but its prebuilt addon.
test -f "$proj/node_modules/loopguard/loopguard.linux-x64-gnu.node"

# The real agent programs the plugins' end-to-end tests run (*-e2e.test.mjs), pinned.
echo "== the agent programs (scripts/setup-node-agents.sh)"
start=$(date +%s)
LOOPGUARD_NODE_AGENTS=$(bash scripts/setup-node-agents.sh | tail -n 1)
export LOOPGUARD_NODE_AGENTS
echo "   ready in $(( $(date +%s) - start )) s"

export LOOPGUARD_REPO="$repo"
# The OpenAI Agents SDK would print every trace span to the console.
export OPENAI_AGENTS_DISABLE_TRACING=1
files=("$proj"/*.test.mjs)
if [ $# -gt 0 ]; then
  files=()
  for f in "$proj"/*.test.mjs; do
    for want in "$@"; do
      case "$(basename "$f")" in *"$want"*) files+=("$f") ;; esac
    done
  done
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "test-node.sh: no test file matches: $*" >&2
  exit 1
fi
echo "== node --test (${#files[@]} files)"
start=$(date +%s)
(cd "$proj" && node --test --test-concurrency=1 "${files[@]#$proj/}")
echo "   tests ran in $(( $(date +%s) - start )) s"
