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
//! message reaches the model). A warning is given with the call's result through
//! `postToolUse`'s `additional_context`.
//!
//! Session: `conversation_id`. Runs: `beforeSubmitPrompt`. Compaction: only `preCompact`
//! is reported, which arms the guard for the calls after it.

use serde_json::{json, Value};

use crate::agent::{required, str_field, tool};
use crate::{AgentError, Kind, Normalized};

pub(crate) fn normalize(v: &Value) -> Result<Normalized, AgentError> {
    let event = required(v, "hook_event_name")?;
    let session = required(v, "conversation_id")?;
    let kind = match event {
        "preToolUse" | "beforeShellExecution" | "beforeMCPExecution" => Kind::Pre,
        "postToolUse" | "afterShellExecution" | "afterMCPExecution" => Kind::Post,
        "postToolUseFailure" => Kind::Failure,
        "beforeSubmitPrompt" => Kind::Prompt,
        "preCompact" => Kind::Compact,
        "sessionEnd" => Kind::End,
        _ => return Ok(Normalized::ignore(event, session)),
    };
    let mut n = Normalized::ignore(event, session);
    n.kind = kind;
    n.cwd = str_field(v, &["cwd"]).map(str::to_string).or_else(|| {
        v.get("workspace_roots")
            .and_then(|r| r.get(0))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if !matches!(kind, Kind::Pre | Kind::Post | Kind::Failure) {
        return Ok(n);
    }
    let mut t = if event.ends_with("ShellExecution") {
        let command = required(v, "command")?;
        let mut t = tool(&json!({"n": "beforeShellExecution"}), &["n"], &[], &[])?;
        t.agent_name = "Shell".into();
        t.cc_name = "Shell".into();
        t.input = json!({ "command": command });
        t
    } else {
        tool(v, &["tool_name"], &["tool_input"], &["tool_use_id"])?
    };
    if kind == Kind::Post {
        t.response = Some(
            ["tool_output", "output", "result_json"]
                .iter()
                .find_map(|k| v.get(*k))
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    if kind == Kind::Failure {
        let e = str_field(v, &["error_message", "error"]).unwrap_or_default();
        t.error = Some((e.to_string(), false));
    }
    n.tool = Some(t);
    Ok(n)
}
