//! Codex CLI (`@openai/codex`).
//!
//! Payloads follow Codex's generated hook schemas (`codex-rs/hooks/schema/generated/
//! *.command.input.schema.json` in github.com/openai/codex): every event carries
//! `session_id`, `turn_id`, `cwd`, `model`, `transcript_path`, `hook_event_name`; the tool
//! events `tool_name` (`Bash` for shell commands, `apply_patch`, MCP tools),
//! `tool_input`, `tool_use_id`, and `PostToolUse` `tool_response`. `PreCompact` and
//! `PostCompact` carry `trigger`. Answers use the output schemas: `PreToolUse`
//! `hookSpecificOutput.permissionDecision: "deny"` with `permissionDecisionReason` (shown
//! to the model) and `additionalContext`; any event `continue: false` with `stopReason`.
//!
//! Session: `session_id` (the thread). Runs: `UserPromptSubmit`. Compaction:
//! `PostCompact` arms the post-compaction guard (`PreCompact` is ignored: the compaction
//! has not happened yet). Polls: `write_stdin` with empty `chars`.
//!
//! Codex runs only hooks the user trusted: `codex exec` skips an untrusted hook without a
//! word (trust it once in the TUI's `/hooks`, or pass `--dangerously-bypass-hook-trust`).

use serde_json::Value;

use crate::{AgentError, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    super::claude_like(v, &["PostCompact"])
}
