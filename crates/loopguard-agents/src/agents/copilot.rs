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
//! Stopping: Copilot CLI's hook answers cannot end a turn (`preToolUse` reads
//! `permissionDecision`, `modifiedArgs`, `additionalContext`, `suppressOutput`;
//! `postToolUse` `modifiedResult` and `additionalContext`; only a user prompt can be
//! refused). After loopguard ends a run, every later call of it is denied with the stop
//! reason, so nothing runs again, and the agent ends when the model gives up.
//!
//! Session: `sessionId` / `session_id`; without one, the working directory. Runs:
//! `userPromptSubmitted`. Compaction: none reported. Polls: `read_bash`, and `write_bash`
//! with empty `input`.

use serde_json::Value;

use crate::agent::{str_field, tool};
use crate::{AgentError, Kind, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let event = str_field(v, &["hook_event_name", "hookEventName", "event"]).map(str::to_string);
    let event = event.unwrap_or_else(|| {
        if v.get("toolResult").is_some() {
            "postToolUse".into()
        } else if v.get("toolName").is_some() && v.get("error").is_some() {
            "postToolUseFailure".into()
        } else if v.get("toolName").is_some() {
            "preToolUse".into()
        } else if v.get("prompt").is_some() {
            "userPromptSubmitted".into()
        } else if v.get("reason").is_some() {
            "sessionEnd".into()
        } else {
            "unknown".into()
        }
    });
    let session = str_field(v, &["sessionId", "session_id"])
        .map(str::to_string)
        .or_else(|| str_field(v, &["cwd"]).map(|c| format!("cwd:{c}")))
        .ok_or(crate::AgentError::Field("sessionId", "a string"))?;
    let claude_shaped = event.starts_with(|c: char| c.is_ascii_uppercase());
    let kind = match event.as_str() {
        "preToolUse" | "PreToolUse" => Kind::Pre,
        "postToolUse" | "PostToolUse" => Kind::Post,
        "postToolUseFailure" | "PostToolUseFailure" => Kind::Failure,
        "userPromptSubmitted" | "UserPromptSubmit" => Kind::Prompt,
        "sessionEnd" | "SessionEnd" => Kind::End,
        "PreCompact" | "preCompact" => Kind::Compact,
        _ => return Ok(Normalized::ignore(&event, &session)),
    };
    let mut n = Normalized::ignore(&event, &session);
    n.kind = kind;
    n.claude_shaped = claude_shaped;
    n.cwd = str_field(v, &["cwd"]).map(str::to_string);
    if matches!(kind, Kind::Pre | Kind::Post | Kind::Failure) {
        let mut t = tool(
            v,
            &["toolName", "tool_name"],
            &["toolArgs", "tool_input", "toolInput"],
            &["toolCallId", "tool_use_id", "toolUseId"],
        )?;
        if kind == Kind::Post {
            let r = ["toolResult", "tool_result", "tool_response"]
                .iter()
                .find_map(|k| v.get(*k))
                .cloned()
                .unwrap_or(Value::Null);
            if r.get("resultType").and_then(Value::as_str) == Some("failure") {
                let text = str_field(&r, &["textResultForLlm"]).unwrap_or_default();
                t.error = Some((text.to_string(), false));
                n.kind = Kind::Failure;
            } else {
                t.response = Some(r);
            }
        }
        if kind == Kind::Failure {
            let e = str_field(v, &["error", "error_message"]).unwrap_or_default();
            t.error = Some((e.to_string(), false));
        }
        n.tool = Some(t);
    }
    Ok(n)
}
