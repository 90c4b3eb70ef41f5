//! Cline.
//!
//! Payloads follow Cline's hooks documentation (docs.cline.bot, "Hooks"): every hook gets
//! `clineVersion`, `hookName`, `timestamp`, `taskId`, `workspaceRoots`, `userId` and one
//! object named after the event: `preToolUse: {toolName, parameters}`,
//! `postToolUse: {toolName, parameters, result, success, executionTimeMs}`,
//! `userPromptSubmit: {prompt}`, `preCompact: {…}`. Shell commands are `execute_command`
//! with `command` and `requires_approval`.
//!
//! Answers are always one JSON object `{"cancel": bool, "contextModification"?: …,
//! "errorMessage"?: …}`: Cline treats any other output as a failed hook and cancels the
//! call, so loopguard prints `{"cancel":false}` even when it fails open. A deny is
//! `cancel: true` with the reason as `errorMessage`; a warning is `contextModification`.
//!
//! Session: `taskId`. Runs: `UserPromptSubmit`, `TaskStart`, `TaskResume`. Compaction:
//! only `PreCompact` is reported, which arms the guard for the calls after it.
//! `TaskComplete` and `TaskCancel` end the session.

use serde_json::Value;

use crate::agent::{required, tool};
use crate::{AgentError, Kind, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let event = required(v, "hookName")?;
    let session = required(v, "taskId")?;
    let kind = match event {
        "PreToolUse" => Kind::Pre,
        "PostToolUse" => Kind::Post,
        "UserPromptSubmit" | "TaskStart" | "TaskResume" => Kind::Prompt,
        "PreCompact" => Kind::Compact,
        "TaskComplete" | "TaskCancel" => Kind::End,
        _ => return Ok(Normalized::ignore(event, session)),
    };
    let mut n = Normalized::ignore(event, session);
    n.kind = kind;
    n.cwd = v
        .get("workspaceRoots")
        .and_then(|r| r.get(0))
        .and_then(Value::as_str)
        .map(str::to_string);
    if matches!(kind, Kind::Pre | Kind::Post) {
        let key = if kind == Kind::Pre {
            "preToolUse"
        } else {
            "postToolUse"
        };
        let body = v.get(key).ok_or(AgentError::Field(
            if kind == Kind::Pre {
                "preToolUse"
            } else {
                "postToolUse"
            },
            "an object",
        ))?;
        let mut t = tool(body, &["toolName"], &["parameters"], &[])?;
        if kind == Kind::Post {
            let result = body.get("result").cloned().unwrap_or(Value::Null);
            if body.get("success").and_then(Value::as_bool) == Some(false) {
                let text = match &result {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                t.error = Some((text, false));
                n.kind = Kind::Failure;
            } else {
                t.response = Some(result);
            }
        }
        n.tool = Some(t);
    }
    Ok(n)
}
