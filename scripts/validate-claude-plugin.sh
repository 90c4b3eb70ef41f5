#!/usr/bin/env bash
# Checks the Claude Code plugin (plugins/loopguard) and its marketplace entry
# (.claude-plugin/marketplace.json) with Claude Code itself, from the @anthropic-ai/claude-code
# npm package that scripts/setup-claude.sh installs into target/claude-code (pinned; nothing
# global), run with a temporary HOME (no login; no network beyond the npm registry): `claude plugin validate --strict` on both, then
# the marketplace added and the plugin installed as a user would, and its 8 hooks loaded.
# crates/loopguard/tests/plugin.rs checks the same files against the documented shapes and
# runs their commands on real payloads; this adds the real validator and installer.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

claude="$(bash scripts/setup-claude.sh | tail -n 1)"
export HOME="$tmp/home"
mkdir -p "$HOME"

echo "Claude Code $("$claude" --version)"
"$claude" plugin validate plugins/loopguard --strict
"$claude" plugin validate . --strict

# Installed as a user would: the local marketplace added, the plugin installed (Claude Code
# copies plugins/loopguard into its cache) and its hooks loaded.
"$claude" plugin marketplace add "$PWD"
"$claude" plugin install loopguard@loopguard
details="$("$claude" plugin details loopguard@loopguard)"
echo "$details"
expected="Hooks (8)  PreToolUse, PostToolUse, PostToolUseFailure, PostToolBatch, UserPromptSubmit, PostCompact, SessionStart, SessionEnd"
if ! grep -qF "$expected" <<<"$details"; then
  echo "validate-claude-plugin: Claude Code did not load the plugin's hooks as expected: $expected" >&2
  exit 1
fi
cmp plugins/loopguard/hooks/hooks.json "$HOME"/.claude/plugins/cache/loopguard/loopguard/*/hooks/hooks.json
echo "validate-claude-plugin: ok"
