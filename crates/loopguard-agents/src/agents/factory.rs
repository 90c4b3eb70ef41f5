//! Factory Droid.
//!
//! Droid's hooks follow Claude Code's (docs.factory.ai, "Hooks reference"): the same event
//! names (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `PreCompact`, `SessionStart`
//! with `source: "compact"`, `SessionEnd`), `session_id`, `tool_name` (`Execute` for shell
//! commands, `Read`, `Edit`, …), `tool_input`, `tool_response`, and Claude Code's answers.
//! Settings: `hooks` in `~/.factory/settings.json` or `.factory/settings.json`.
//!
//! Seen from the real Droid 0.225.2 (crates/loopguard/tests/agents_e2e.rs): `PreToolUse`
//! carries no `tool_use_id`; a warning reaches the model only as `PostToolUse`'s
//! `additionalContext` (so it is given with the call's result); `PostToolUse` follows only
//! a call that succeeded, and nothing follows a command that exits non-zero (no
//! `PostToolUseFailure` either), so a loop of failing commands is seen as calls without
//! outcomes: `generic_repeat` warns, but the no-progress rules, which compare outcomes,
//! cannot block it. A `PreToolUse` answer with `continue: false` beside the deny stops
//! Droid, so an aborted run ends there.
//!
//! Session: `session_id`. Runs: `UserPromptSubmit`. Compaction: `SessionStart` with
//! `source: "compact"` arms the guard; `PreCompact` arms it too (Droid's compaction cannot
//! be blocked by a hook), the second of the two finds it armed and changes nothing.

use crate::protocol::{AgentError, AgentEvent, Answer, Fields, Protocol, Rendered};

/// Factory Droid's protocol.
pub struct Factory;

impl Protocol for Factory {
    fn name(&self) -> &'static str {
        "factory"
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        super::claude_like(f, &["PreCompact", "PostCompact"])
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        super::claude_code::render(&ev.event, a)
    }

    fn defers_warnings(&self) -> bool {
        // Droid 0.225 does not show `PreToolUse`'s `additionalContext`; `PostToolUse`'s it does.
        true
    }
}
