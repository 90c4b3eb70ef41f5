//! Kiro CLI.
//!
//! Payloads follow Kiro CLI's hooks documentation (kiro.dev/docs/cli/hooks): the hook
//! gets `hook_event_name` (`agentSpawn`, `userPromptSubmit`, `preToolUse`, `postToolUse`,
//! `stop`), `cwd`, and for tool events `tool_name` (`execute_bash`, `fs_read`,
//! `fs_write`, `@server/tool` for MCP, …), `tool_input` and, after the call,
//! `tool_response`. Hooks are configured per agent, in `hooks` of the agent's JSON file
//! (`~/.kiro/agents/NAME.json` or `.kiro/agents/NAME.json`).
//!
//! Answers: a `preToolUse` hook blocks the call by exiting with status 2; its standard
//! error is returned to the model as the reason. Other output of tool hooks is not shown
//! to the model, so a warning goes to standard error only.
//!
//! Session: **Kiro sends no session id.** loopguard keys the session on the working
//! directory (`kiro:cwd:/path`), the closest stable thing the payload has: two Kiro sessions
//! in the same directory at the same time share one loop history. A new prompt
//! (`userPromptSubmit`) starts a new run, so calls of earlier prompts stop counting; `stop`
//! is not an end (the session may go on). Compaction: none reported.

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered,
};

/// Kiro CLI's protocol.
pub struct Kiro;

impl Protocol for Kiro {
    fn name(&self) -> &'static str {
        "kiro"
    }

    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "session_id": session, "hook_event_name": "preToolUse", "cwd": cwd,
            "tool_name": "fs_read", "tool_input": {"path": "loopguard-doctor"},
            "tool_use_id": "loopguard-doctor-1",
        })
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f.required("hook_event_name")?;
        let cwd = f.required("cwd")?;
        let session = f
            .str_of(&["session_id", "sessionId"])
            .unwrap_or_else(|| format!("cwd:{cwd}"));
        let kind = match event.as_str() {
            "preToolUse" => Kind::Pre,
            "postToolUse" => Kind::Post,
            "userPromptSubmit" => Kind::Prompt,
            _ => return Ok(AgentEvent::ignore(&event, &session)),
        };
        let mut ev = AgentEvent::new(kind, &event, &session);
        ev.cwd = Some(cwd);
        if matches!(kind, Kind::Pre | Kind::Post) {
            ev.tool = Some(f.tool(&["tool_name"], &["tool_input"], &["tool_use_id"])?);
            if kind == Kind::Post {
                ev.outcome = Some(CallOutcome::Result(super::or_null(f.get("tool_response"))));
            }
        }
        Ok(ev)
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        super::exit_status_answer(ev, a)
    }

    fn answers_in_json(&self) -> bool {
        false
    }
}
