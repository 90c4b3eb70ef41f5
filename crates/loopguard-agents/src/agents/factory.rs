//! Factory Droid.
//!
//! Droid's hooks follow Claude Code's (docs.factory.ai, "Hooks reference"): the same event
//! names (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `PreCompact`, `SessionStart`
//! with `source: "compact"`, `SessionEnd`), `session_id`, `tool_name` (`Execute` for shell
//! commands, `Read`, `Edit`, …), `tool_input`, `tool_response`, and Claude Code's answers.
//! Settings: `hooks` in `~/.factory/settings.json` or `.factory/settings.json`.
//!
//! Session: `session_id`. Runs: `UserPromptSubmit`. Compaction: `SessionStart` with
//! `source: "compact"` arms the guard; `PreCompact` arms it too (Droid's compaction cannot
//! be blocked by a hook), the second of the two finds it armed and changes nothing.

use serde_json::Value;

use crate::{AgentError, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    super::claude_like(v, &["PreCompact", "PostCompact"])
}
