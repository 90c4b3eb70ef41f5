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
//! A failing command arrives as `PostToolUseFailure` whose `error` is the whole result
//! text. Qwen Code 0.24 reads `PreToolUse`'s `additionalContext` but never shows it to the
//! model, so a warning is given with the call's result (`PostToolUse` /
//! `PostToolUseFailure` `additionalContext`, which it appends to the tool's response).
//!
//! Session: `session_id`. Runs: `UserPromptSubmit` with a non-empty `prompt` (Qwen Code
//! also sends it, empty, before each turn that carries tool results). Compaction:
//! `PostCompact`.
//! The shell `description` is reworded by the model on every call and is not hashed.

use serde_json::Value;

use crate::{AgentError, Kind, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let n = super::claude_like(v, &["PostCompact"])?;
    // Qwen Code 0.24 fires `UserPromptSubmit` again before every model turn that carries
    // tool results, with an empty `prompt` (and the same `prompt_id`): that is the same
    // prompt going on, not a new run (seen from the real CLI in
    // crates/loopguard/tests/agents_e2e.rs).
    if n.kind == Kind::Prompt && v.get("prompt").and_then(Value::as_str) == Some("") {
        return Ok(Normalized::ignore(&n.event, &n.session));
    }
    Ok(n)
}
