//! Cursor's agent.
//!
//! Payloads follow Cursor's hooks documentation (cursor.com/docs/agent/hooks): every event
//! carries `conversation_id`, `generation_id`, `hook_event_name`, `workspace_roots`; the
//! tool events `preToolUse`/`postToolUse`/`postToolUseFailure` carry `tool_name`,
//! `tool_input`, `tool_use_id` and (after) `tool_output`/`error_message`; the older
//! `beforeShellExecution` carries `command` and `cwd`, `beforeMCPExecution` `tool_name`
//! and `tool_input`, `afterShellExecution` `command` and `output`; `beforeSubmitPrompt`
//! starts a prompt; `preCompact` precedes a compaction.
//!
//! Answers: `{"permission":"deny","user_message":…,"agent_message":…}` denies (the agent
//! message reaches the model); `{"permission":"ask",…}` (`loopguard.onCritical: "ask"`)
//! asks the user, showing the user message. A warning is given with the call's result through
//! `postToolUse`'s `additional_context`.
//!
//! Session: `conversation_id`. Runs: `beforeSubmitPrompt`. Compaction: only `preCompact`
//! is reported, which arms the guard for the calls after it.

use loopguard_core::{JsString, Object, Value};
use serde_json::{json, Map};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered, ToolUse,
};

/// Cursor's protocol.
pub struct Cursor;

impl Protocol for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn probe(&self, session: &str, cwd: &str) -> serde_json::Value {
        serde_json::json!({
            "conversation_id": session, "hook_event_name": "preToolUse", "cwd": cwd,
            "tool_name": "Read", "tool_input": {"file_path": "loopguard-doctor"},
            "tool_use_id": "loopguard-doctor-1",
        })
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f.required("hook_event_name")?;
        let session = f.required("conversation_id")?;
        let kind = match event.as_str() {
            "preToolUse" | "beforeShellExecution" | "beforeMCPExecution" => Kind::Pre,
            "postToolUse" | "afterShellExecution" | "afterMCPExecution" | "postToolUseFailure" => {
                Kind::Post
            }
            "beforeSubmitPrompt" => Kind::Prompt,
            "preCompact" => Kind::Compact,
            "sessionEnd" => Kind::End,
            _ => return Ok(AgentEvent::ignore(&event, &session)),
        };
        let mut ev = AgentEvent::new(kind, &event, &session);
        ev.cwd = f.str_of(&["cwd"]).or_else(|| {
            f.get("workspace_roots")
                .and_then(Value::as_array)
                .and_then(|r| r.first())
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        if kind != Kind::Pre && kind != Kind::Post {
            return Ok(ev);
        }
        ev.tool = Some(if event.ends_with("ShellExecution") {
            let command = f.required("command")?;
            ToolUse {
                name: JsString::from("Shell"),
                input: Value::Object(Object::from_entries(vec![(
                    JsString::from("command"),
                    Value::from(command),
                )])),
                id: None,
            }
        } else {
            f.tool(&["tool_name"], &["tool_input"], &["tool_use_id"])?
        });
        if event == "postToolUseFailure" {
            let text = f.str_of(&["error_message", "error"]).unwrap_or_default();
            ev.outcome = Some(CallOutcome::Error {
                text: JsString::from(text),
                interrupt: false,
            });
        } else if kind == Kind::Post {
            let r = f.first(&["tool_output", "output", "result_json"]);
            ev.outcome = Some(CallOutcome::Result(super::or_null(r)));
        }
        Ok(ev)
    }

    fn render(&self, ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        let mut o = Map::new();
        if let Some(reason) = a.deny.as_ref().or(a.stop.as_ref()) {
            if ev.kind == Kind::Pre {
                o.insert("permission".into(), json!("deny"));
                o.insert(
                    "user_message".into(),
                    json!(a.notice.clone().unwrap_or_else(|| reason.clone())),
                );
                o.insert("agent_message".into(), json!(reason));
            }
        }
        if let (Some(reason), true, Kind::Pre) = (&a.ask, o.is_empty(), ev.kind) {
            // Cursor puts the call to the user, showing `user_message`.
            o.insert("permission".into(), json!("ask"));
            o.insert(
                "user_message".into(),
                json!(a
                    .notice
                    .clone()
                    .map_or_else(|| reason.clone(), |n| format!("{n}: {reason}"))),
            );
            o.insert("agent_message".into(), json!(reason));
        }
        if let Some(c) = &a.context {
            o.insert("additional_context".into(), json!(c));
        }
        super::json_or_nothing(o)
    }

    fn asks(&self) -> bool {
        true
    }

    fn defers_warnings(&self) -> bool {
        true
    }
}
