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
//! `PostCompact`. Sub-agents: a payload sent from inside a subagent carries its `agent_id`
//! (Qwen Code 0.24's `createBaseInput` adds the id of the agent context the hook fires
//! in); its calls go to the sub-agent's own session, linked to `session_id`'s.
//!
//! Stopping: Qwen Code 0.24 checks a `PreToolUse` deny before `continue: false`, and on
//! every tool event it only turns `continue: false` into the call's error; the turn goes
//! on. What ends the turn is `continue: false` (or `decision: "block"`) on
//! `UserPromptSubmit`, which it also fires, with an empty prompt, before each model turn
//! that carries tool results (`GeminiClient.sendMessageStream` in its core package). So
//! the call that ends a run is denied, and that empty-prompt `UserPromptSubmit`
//! ([`Kind::Continuation`]) is answered with `continue: false`: the model is not asked
//! again (checked with the real CLI in crates/loopguard/tests/agents_e2e.rs).
//! The shell `description` is reworded by the model on every call and is not hashed.

use loopguard_core::Value;

use crate::protocol::{AgentError, AgentEvent, Answer, Fields, Kind, Protocol, Rendered};

/// Qwen Code's protocol.
pub struct Qwen;

impl Protocol for Qwen {
    fn name(&self) -> &'static str {
        "qwen"
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let mut ev = super::claude_like(f, &["PostCompact"])?;
        // Qwen Code 0.24 fires `UserPromptSubmit` again before every model turn that carries
        // tool results, with an empty `prompt` (and the same `prompt_id`): that is the same
        // prompt going on, not a new run (seen from the real CLI in
        // crates/loopguard/tests/agents_e2e.rs), and the place to stop an aborted run.
        if ev.kind == Kind::Prompt && f.get("prompt").and_then(Value::as_str) == Some("") {
            ev.kind = Kind::Continuation;
        }
        // Inside a subagent (the `agent` tool), every hook payload carries the subagent's
        // `agent_id` beside the parent's `session_id` (`createBaseInput` in its
        // hookEventHandler, from the agent context the subagent runs in): its calls are the
        // sub-agent's, linked to the session as Claude Code's are.
        ev.subagent = f.str_of(&["agent_id"]).filter(|a| !a.is_empty());
        Ok(ev)
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        super::claude_code::render(&ev.event, a)
    }

    fn defers_warnings(&self) -> bool {
        // Qwen Code 0.24 reads `PreToolUse`'s `additionalContext` but never shows it;
        // `PostToolUse`/`PostToolUseFailure`'s it does.
        true
    }
}
