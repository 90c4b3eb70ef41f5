#!/usr/bin/env bash
# Installs the coding-agent CLIs the end-to-end hook tests drive (crates/loopguard/tests/
# agents_e2e.rs) into target/agents, at pinned versions, from npm (nothing global). Each test
# starts its agent against a scripted model server on 127.0.0.1 with a temporary HOME: no
# account, no network beyond this install. Skipped when the pinned versions are already there.
#
#   target/agents/node_modules/.bin/codex    (@openai/codex)
#   target/agents/node_modules/.bin/gemini   (@google/gemini-cli)
#   target/agents/node_modules/.bin/qwen     (@qwen-code/qwen-code)
#   target/agents/node_modules/.bin/copilot  (@github/copilot; it unpacks itself, about
#                                             235 MB, into target/agents/copilot-cache here,
#                                             once, so the tests do not each unpack it)
#   target/agents/node_modules/@factory/cli-linux-x64/bin/droid  (Factory's Droid: the
#       platform package itself, pinned; @factory/cli's own postinstall would download the
#       binary from Factory's servers, and its 0.225.1 names a platform version npm lacks)
set -euo pipefail
cd "$(dirname "$0")/.."

codex="${CODEX_VERSION:-0.171.0}"
gemini="${GEMINI_CLI_VERSION:-0.61.0}"
qwen="${QWEN_CODE_VERSION:-0.24.4}"
copilot="${COPILOT_CLI_VERSION:-1.0.102}"
droid="${FACTORY_DROID_VERSION:-0.225.2}"
dir=target/agents
stamp="$dir/.versions"
want="codex=$codex gemini=$gemini qwen=$qwen copilot=$copilot droid=$droid"
export COPILOT_PKG_CACHE_HOME="$PWD/$dir/copilot-cache"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
  && [ -x "$dir/node_modules/.bin/codex" ] && [ -x "$dir/node_modules/.bin/gemini" ] \
  && [ -x "$dir/node_modules/.bin/qwen" ] && [ -x "$dir/node_modules/.bin/copilot" ] \
  && [ -x "$dir/node_modules/@factory/cli-linux-x64/bin/droid" ] \
  && compgen -G "$dir/copilot-cache/pkg/*/$copilot/.extraction-complete" >/dev/null; then
  echo "setup-agents: already installed ($want)"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-agents: npm is needed (Node.js 20 or newer)" >&2
  exit 1
fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private":true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
  "@openai/codex@$codex" "@google/gemini-cli@$gemini" "@qwen-code/qwen-code@$qwen" \
  "@github/copilot@$copilot" "@factory/cli-linux-x64@$droid" >/dev/null
"$dir/node_modules/.bin/copilot" --version >/dev/null # unpacks it into copilot-cache
echo "$want" >"$stamp"
for b in codex gemini qwen copilot; do
  echo "setup-agents: $b $("$dir/node_modules/.bin/$b" --version 2>/dev/null | head -1)"
done
echo "setup-agents: droid $("$dir/node_modules/@factory/cli-linux-x64/bin/droid" --version 2>/dev/null | head -1)"
