//! Gemini CLI (`@google/gemini-cli`).
//!
//! Payloads follow Gemini CLI's hooks reference (`docs/hooks/reference.md` and
//! `packages/core/src/hooks/hookEventHandler.ts` in github.com/google-gemini/gemini-cli):
//! every event carries `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
//! `timestamp`; `BeforeTool` adds `tool_name` (`run_shell_command`, `read_file`,
//! `replace`, `mcp_<server>_<tool>`, …) and `tool_input`; `AfterTool` adds
//! `tool_response` (`{llmContent, returnDisplay, error?}`); `PreCompress` adds `trigger`;
//! `BeforeAgent` adds `prompt`. There is no call id.
//!
//! Answers: `BeforeTool` is denied by a top-level `{"decision":"deny","reason":…}` (the
//! reason reaches the model as the tool's error; Claude Code's `hookSpecificOutput` deny
//! is ignored by Gemini CLI and the command would run). `BeforeTool` cannot add context,
//! so a warning is kept and given with the call's result through `AfterTool`'s
//! `hookSpecificOutput.additionalContext`. `continue: false` with `stopReason` stops the
//! agent.
//!
//! Session: `session_id`. Runs: `BeforeAgent` (one per prompt). Compaction: Gemini CLI
//! only reports `PreCompress` (advisory, it cannot be blocked), so that arms the
//! post-compaction guard for the calls after it. Shell results carry a `Process Group
//! PGID: N` line that changes on every call (dropped), and the model rewords the
//! `description` argument on every call (not hashed).

use serde_json::{json, Map};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered,
};

/// Gemini CLI's protocol.
pub struct Gemini;

impl Protocol for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "session_id": session, "hook_event_name": "BeforeTool", "cwd": cwd,
            "tool_name": "read_file", "tool_input": {"file_path": "loopguard-doctor"},
        })
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f.required("hook_event_name")?;
        let session = f.required("session_id")?;
        let kind = match event.as_str() {
            "BeforeTool" => Kind::Pre,
            "AfterTool" => Kind::Post,
            "BeforeAgent" => Kind::Prompt,
            "PreCompress" => Kind::Compact,
            "SessionEnd" => Kind::End,
            _ => return Ok(AgentEvent::ignore(&event, &session)),
        };
        let mut ev = AgentEvent::new(kind, &event, &session);
        ev.cwd = f.str_of(&["cwd"]);
        if matches!(kind, Kind::Pre | Kind::Post) {
            ev.tool = Some(f.tool(&["tool_name"], &["tool_input"], &[])?);
            if kind == Kind::Post {
                ev.outcome = Some(CallOutcome::Result(super::or_null(f.get("tool_response"))));
            }
        }
        Ok(ev)
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        let mut o = Map::new();
        if let Some(reason) = &a.deny {
            o.insert("decision".into(), json!("deny"));
            o.insert("reason".into(), json!(reason));
        }
        if let Some(s) = &a.stop {
            o.insert("continue".into(), json!(false));
            o.insert("stopReason".into(), json!(s));
        }
        if let Some(c) = &a.context {
            o.insert(
                "hookSpecificOutput".into(),
                json!({"hookEventName": ev.event, "additionalContext": c}),
            );
        }
        if let Some(m) = &a.notice {
            o.insert("systemMessage".into(), json!(m));
        }
        super::json_or_nothing(o)
    }

    fn defers_warnings(&self) -> bool {
        true
    }
}
