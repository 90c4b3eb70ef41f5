#!/usr/bin/env bash
# loopguard as a Claude Code hook (docs/claude-code.md): `loopguard hook install` adds the
# hook to Claude Code's settings.json, and every tool call Claude Code makes then goes
# through the command it registered. This script installs it into a throwaway home, then
# plays Claude Code: it pipes the hook payloads of a looping Bash call into that command.
# The 11th identical call gets a warning for the model, the 21st is denied.
#
# Run it: examples/hook-install/install.sh
#   (LOOPGUARD=path/to/loopguard to use another binary than the `loopguard` on PATH)
set -euo pipefail
loopguard="${LOOPGUARD:-loopguard}"

# A throwaway home: the settings file, the hook's state database and its log live there,
# and the project the payloads name (no config file anywhere: OpenClaw's defaults).
export HOME XDG_STATE_HOME XDG_CONFIG_HOME
HOME=$(mktemp -d)
XDG_STATE_HOME="$HOME/.local/state" XDG_CONFIG_HOME="$HOME/.config"
unset CLAUDE_PROJECT_DIR   # Claude Code sets it for hooks; the payload's cwd is the project here
mkdir "$HOME/project"
trap 'rm -rf "$HOME"' EXIT

"$loopguard" hook install
# The command registered for PreToolUse, PostToolUse, ... (an absolute path to the binary).
hook=$(sed -n 's/.*"command": "\(.*hook claude-code.*\)",*$/\1/p' "$HOME/.claude/settings.json" | head -n 1)
echo "settings.json runs: $hook"

# Claude Code runs the command with the event's JSON on stdin and reads its answer on stdout.
send() { sh -c "$hook" <<<"$1"; }
common='"session_id":"6c1e2f3a-demo","transcript_path":"'"$HOME"'/t.jsonl","cwd":"'"$HOME"'/project","permission_mode":"default"'
input='{"command":"cargo test 2>&1 | tail -3","description":"Run the tests"}'

send "{$common,\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"why is the build red?\"}"
for n in $(seq 1 21); do
  answer=$(send "{$common,\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":$input,\"tool_use_id\":\"toolu_$n\"}")
  echo "call $n: ${answer:-(no answer: the call runs)}"
  case "$answer" in *'"permissionDecision":"deny"'*) break ;; esac   # Claude Code does not run it
  # The call ran: PostToolUse with its result (the same every time).
  send "{$common,\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\",\"tool_input\":$input,\"tool_use_id\":\"toolu_$n\",\"tool_response\":{\"stdout\":\"test result: FAILED. 41 passed; 1 failed\",\"stderr\":\"\",\"interrupted\":false,\"isImage\":false}}" >/dev/null
done

"$loopguard" hook uninstall
