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

use loopguard_core::{JsString, Value};
use serde_json::{json, Map};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered,
};

/// Cline's protocol.
pub struct Cline;

impl Protocol for Cline {
    fn name(&self) -> &'static str {
        "cline"
    }

    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "taskId": session, "hookName": "PreToolUse", "workspaceRoots": [cwd],
            "preToolUse": {"toolName": "read_file", "parameters": {"path": "loopguard-doctor"}},
        })
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f.required("hookName")?;
        let session = f.required("taskId")?;
        let kind = match event.as_str() {
            "PreToolUse" => Kind::Pre,
            "PostToolUse" => Kind::Post,
            "UserPromptSubmit" | "TaskStart" | "TaskResume" => Kind::Prompt,
            "PreCompact" => Kind::Compact,
            "TaskComplete" | "TaskCancel" => Kind::End,
            _ => return Ok(AgentEvent::ignore(&event, &session)),
        };
        let mut ev = AgentEvent::new(kind, &event, &session);
        ev.cwd = f
            .get("workspaceRoots")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .and_then(Value::as_str)
            .map(str::to_string);
        if matches!(kind, Kind::Pre | Kind::Post) {
            let body = f.object(if kind == Kind::Pre {
                "preToolUse"
            } else {
                "postToolUse"
            })?;
            ev.tool = Some(body.tool(&["toolName"], &["parameters"], &[])?);
            if kind == Kind::Post {
                let result = super::or_null(body.get("result"));
                ev.outcome = Some(
                    if body.get("success").and_then(Value::as_bool) == Some(false) {
                        let text = match &result {
                            Value::String(s) => s.clone(),
                            other => {
                                let mut out = Vec::new();
                                loopguard_core::json::write_json_value(&mut out, other);
                                JsString::from(String::from_utf8_lossy(&out).into_owned())
                            }
                        };
                        CallOutcome::Error {
                            text,
                            interrupt: false,
                        }
                    } else {
                        CallOutcome::Result(result)
                    },
                );
            }
        }
        Ok(ev)
    }

    fn render(&self, _ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        let mut o = Map::new();
        let cancel = a.deny.as_ref().or(a.stop.as_ref());
        o.insert("cancel".into(), json!(cancel.is_some()));
        if let Some(c) = &a.context {
            o.insert("contextModification".into(), json!(c));
        }
        if let Some(reason) = cancel {
            o.insert("errorMessage".into(), json!(reason));
        }
        Rendered::json(serde_json::Value::Object(o))
    }

    fn allow(&self) -> Rendered {
        // Cline treats anything but a JSON answer as a failure and cancels the call.
        Rendered::json(json!({"cancel": false}))
    }
}
