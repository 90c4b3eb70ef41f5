//! Qwen Code (`@qwen-code/qwen-code`).
//!
//! Qwen Code's hooks are Claude Code's (`packages/core/src/hooks/hookEventHandler.ts` in
//! github.com/QwenLM/qwen-code): `session_id`, `hook_event_name`, `tool_name` (Qwen's own
//! names: `run_shell_command`, `read_file`, `todo_write`, …), `tool_input`, `tool_use_id`
//! and `tool_call_id`, `tool_response` (for `run_shell_command`, `llmContent` with
//! `Command:`/`Directory:`/`Output:`/`Exit Code:` lines), `error`/`is_interrupt` of
//! `PostToolUseFailure`; `PreCompact`/`PostCompact` with `trigger`. Answers are Claude
//! Code's. Settings: `hooks` in `~/.qwen/settings.json` or `.qwen/settings.json`; Qwen Code
//! also runs `type: "http"` hooks, which can post to `loopguard serve`.
//!
//! Session: `session_id`. Runs: `UserPromptSubmit`. Compaction: `PostCompact`.
//! The shell `description` is reworded by the model on every call and is not hashed.

use serde_json::Value;

use crate::{AgentError, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    super::claude_like(v, &["PostCompact"])
}
