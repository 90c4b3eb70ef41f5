#!/usr/bin/env bash
# Installs Claude Code (the @anthropic-ai/claude-code npm package, pinned) into target/claude-code
# for the end-to-end hook test (crates/loopguard/tests/claude_e2e.rs) and the plugin validator
# (scripts/validate-claude-plugin.sh). Nothing global; idempotent: an install of the pinned
# version is kept. Prints the path of the `claude` program on its last line.
# Usage: scripts/setup-claude.sh    (prefix target/claude-code, or $LOOPGUARD_CLAUDE_PREFIX)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${CLAUDE_CODE_VERSION:-2.1.197}"
prefix="${LOOPGUARD_CLAUDE_PREFIX:-$PWD/target/claude-code}"
claude="$prefix/node_modules/.bin/claude"
installed="$(node -e "try{process.stdout.write(require('$prefix/node_modules/@anthropic-ai/claude-code/package.json').version)}catch(e){}" 2>/dev/null || true)"
if [ "$installed" != "$version" ] || [ ! -x "$claude" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$version" >/dev/null
fi
echo "Claude Code $version in $prefix" >&2
echo "$claude"
