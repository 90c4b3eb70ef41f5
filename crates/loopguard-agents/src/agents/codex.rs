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
//! Session: `session_id`. Sub-agents: inside a thread-spawned sub-agent (`spawn_agent`)
//! the tool, prompt and compaction hooks also carry `agent_id` (the sub-agent's thread id,
//! `thread_spawn_subagent_hook_context` in `codex-rs/core`) and `agent_type` (its role),
//! the input schemas' optional fields; its calls go to the sub-agent's own session, linked
//! to `session_id`'s. Runs: `UserPromptSubmit`. Compaction:
//! `PostCompact` arms the post-compaction guard (`PreCompact` is ignored: the compaction
//! has not happened yet). Polls: `write_stdin` with empty `chars`.
//!
//! Codex runs only hooks the user trusted: `codex exec` skips an untrusted hook without a
//! word (trust it once in the TUI's `/hooks`, or pass `--dangerously-bypass-hook-trust`).

use crate::protocol::{AgentError, AgentEvent, Answer, Fields, Kind, Protocol, Rendered};
use serde_json::{json, Map};

/// Codex CLI's protocol.
pub struct Codex;

impl Protocol for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let mut ev = super::claude_like(f, &["PostCompact"])?;
        // A thread-spawned sub-agent's hooks carry `agent_id` (its thread id) and
        // `agent_type` beside the session's `session_id`: its calls are the sub-agent's.
        ev.subagent = f.str_of(&["agent_id"]).filter(|a| !a.is_empty());
        Ok(ev)
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        if ev.kind == Kind::Pre {
            // Codex rejects a PreToolUse answer holding `continue: false` or `stopReason`
            // as invalid and then runs the call (codex-rs/hooks/src/engine/output_parser.rs,
            // `unsupported_pre_tool_use_universal`): a denied call of a stopped run is only
            // denied.
            let only = Answer {
                stop: None,
                logged: Vec::new(),
                ..a.clone()
            };
            return super::claude_code::render(&ev.event, &only);
        }
        if let Some(stop) = &a.stop {
            // `continue: false` ends Codex's turn; a `decision: "block"` beside it would
            // only replace the tool's output.
            let mut o = Map::new();
            o.insert("continue".into(), json!(false));
            o.insert("stopReason".into(), json!(stop));
            if let Some(m) = &a.notice {
                o.insert("systemMessage".into(), json!(m));
            }
            return Rendered::json(serde_json::Value::Object(o));
        }
        super::claude_code::render(&ev.event, a)
    }
}
