//! GitHub Copilot CLI (`@github/copilot`) and the VS Code agent's `.github/hooks/*.json`.
//!
//! Two payload spellings (docs.github.com, "GitHub Copilot CLI hooks reference"):
//!
//! * Copilot CLI's own: camelCase events `preToolUse`, `postToolUse`,
//!   `userPromptSubmitted`, `sessionStart`, `sessionEnd`, `errorOccurred`, `agentStop`, with
//!   `timestamp`, `cwd`, `toolName` (`bash`, `view`, `edit`, …), `toolArgs` (a JSON
//!   string), `toolResult` (`{resultType, textResultForLlm}`), and `sessionId` where
//!   given. Answer: a top-level `{"permissionDecision":"deny","permissionDecisionReason":…}`.
//! * The "VS Code compatible" one: Claude Code's PascalCase events with `tool_name`,
//!   `tool_input`, `tool_result`/`tool_response`, `session_id` (or `sessionId`): answered
//!   the Claude Code way (`hookSpecificOutput.permissionDecision`).
//!
//! The event name is the payload's `hook_event_name`/`hookEventName` where given. Copilot
//! CLI's camelCase payloads do not name their event (1.0.102, seen from the real CLI in
//! crates/loopguard/tests/agents_e2e.rs), so it is read from their fields: `toolResult`
//! is a `postToolUse`, `toolName` with `error` a `postToolUseFailure` (a tool that failed;
//! `PostToolUseFailureHookInput` in the package's SDK types), `toolName` alone a
//! `preToolUse`, `prompt` a `userPromptSubmitted`, `reason` a `sessionEnd`. A failing shell command is a `postToolUse` with `resultType:
//! "success"`; its exit code is in the result's last line.
//!
//! Asking (`loopguard.onCritical: "ask"`): `{"permissionDecision":"ask",
//! "permissionDecisionReason":…}` prompts the user for approval in an interactive session
//! (the Copilot SDK's hooks reference, "Permission decisions").
//!
//! Stopping: Copilot CLI's hook answers cannot end a turn (`preToolUse` reads
//! `permissionDecision`, `modifiedArgs`, `additionalContext`, `suppressOutput`;
//! `postToolUse` `modifiedResult` and `additionalContext`; only a user prompt can be
//! refused). After loopguard ends a run, every later call of it is denied with the stop
//! reason, so nothing runs again, and the agent ends when the model gives up.
//!
//! Session: `sessionId` / `session_id`; without one, the working directory. Runs:
//! `userPromptSubmitted`. Compaction: none reported. Polls: `read_bash`, and `write_bash`
//! with empty `input`.

use loopguard_core::{JsString, Value};
use serde_json::{json, Map};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered,
};

/// GitHub Copilot's protocol.
pub struct Copilot;

impl Protocol for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "sessionId": session, "hookEventName": "preToolUse", "cwd": cwd,
            "toolName": "view", "toolArgs": {"path": "loopguard-doctor"},
        })
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f
            .str_of(&["hook_event_name", "hookEventName", "event"])
            .unwrap_or_else(|| {
                if f.get("toolResult").is_some() {
                    "postToolUse".into()
                } else if f.get("toolName").is_some() && f.get("error").is_some() {
                    "postToolUseFailure".into()
                } else if f.get("toolName").is_some() {
                    "preToolUse".into()
                } else if f.get("prompt").is_some() {
                    "userPromptSubmitted".into()
                } else if f.get("reason").is_some() {
                    "sessionEnd".into()
                } else {
                    "unknown".into()
                }
            });
        let session = f
            .str_of(&["sessionId", "session_id"])
            .or_else(|| f.str_of(&["cwd"]).map(|c| format!("cwd:{c}")))
            .ok_or(AgentError::Missing("sessionId"))?;
        let claude_shaped = event.starts_with(|c: char| c.is_ascii_uppercase());
        let (kind, failure) = match event.as_str() {
            "preToolUse" | "PreToolUse" => (Kind::Pre, false),
            "postToolUse" | "PostToolUse" => (Kind::Post, false),
            "postToolUseFailure" | "PostToolUseFailure" => (Kind::Post, true),
            "userPromptSubmitted" | "UserPromptSubmit" => (Kind::Prompt, false),
            "sessionEnd" | "SessionEnd" => (Kind::End, false),
            "PreCompact" | "preCompact" => (Kind::Compact, false),
            _ => return Ok(AgentEvent::ignore(&event, &session)),
        };
        let mut ev = AgentEvent::new(kind, &event, &session);
        ev.claude_shaped = claude_shaped;
        ev.cwd = f.str_of(&["cwd"]);
        if matches!(kind, Kind::Pre | Kind::Post) {
            ev.tool = Some(f.tool(
                &["toolName", "tool_name"],
                &["toolArgs", "tool_input", "toolInput"],
                &["toolCallId", "tool_use_id", "toolUseId"],
            )?);
        }
        if failure {
            let text = f.str_of(&["error", "error_message"]).unwrap_or_default();
            ev.outcome = Some(CallOutcome::Error {
                text: JsString::from(text),
                interrupt: false,
            });
        } else if kind == Kind::Post {
            let r = super::or_null(f.first(&["toolResult", "tool_result", "tool_response"]));
            ev.outcome = Some(
                if r.get("resultType").and_then(Value::as_str) == Some("failure") {
                    let text = r
                        .get("textResultForLlm")
                        .and_then(Value::as_js_str)
                        .cloned()
                        .unwrap_or_else(|| JsString::from(""));
                    CallOutcome::Error {
                        text,
                        interrupt: false,
                    }
                } else {
                    CallOutcome::Result(r)
                },
            );
        }
        Ok(ev)
    }

    fn asks(&self) -> bool {
        true
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        if ev.claude_shaped {
            return super::claude_code::render(&ev.event, a);
        }
        let mut o = Map::new();
        if let Some(reason) = a.deny.as_ref().or(a.stop.as_ref()) {
            if ev.kind == Kind::Pre {
                o.insert("permissionDecision".into(), json!("deny"));
                o.insert("permissionDecisionReason".into(), json!(reason));
            }
        } else if let (Some(reason), Kind::Pre) = (&a.ask, ev.kind) {
            // Copilot prompts the user in an interactive session.
            o.insert("permissionDecision".into(), json!("ask"));
            o.insert("permissionDecisionReason".into(), json!(reason));
        }
        if let Some(c) = &a.context {
            o.insert("additionalContext".into(), json!(c));
        }
        let mut out = super::json_or_nothing(o);
        if let Some(s) = &a.stop {
            out.stderr.push(s.clone());
        }
        out
    }
}
