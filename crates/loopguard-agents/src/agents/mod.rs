//! One module per agent: its payload read into a [`Normalized`](crate::Normalized) event,
//! and the guard's decision written back in its answer (see [`crate::render`]).

pub mod claude_code;
pub(crate) mod cline;
pub(crate) mod codex;
pub(crate) mod copilot;
pub(crate) mod cursor;
pub(crate) mod factory;
pub(crate) mod gemini;
pub(crate) mod kiro;
pub(crate) mod qwen;
pub(crate) mod windsurf;

use serde_json::Value;

use crate::agent::{required, str_field, tool};
use crate::{AgentError, Kind, Normalized};

/// Claude Code's payload shape, which Codex, Qwen Code, Factory Droid and the VS Code
/// variant of Copilot's hooks share: `session_id`, `hook_event_name`, `tool_name`,
/// `tool_input`, `tool_use_id`, `tool_response`, `error`/`is_interrupt`. `compact_events`
/// are the event names (with a `SessionStart` `source`) that arm the post-compaction
/// guard.
pub(crate) fn claude_like(v: &Value, compact_events: &[&str]) -> Result<Normalized, AgentError> {
    let event = required(v, "hook_event_name")?;
    let session = required(v, "session_id")?;
    let kind = match event {
        "PreToolUse" => Kind::Pre,
        "PostToolUse" => Kind::Post,
        "PostToolUseFailure" => Kind::Failure,
        "UserPromptSubmit" => Kind::Prompt,
        "SessionEnd" => Kind::End,
        "SessionStart" if v.get("source").and_then(Value::as_str) == Some("compact") => {
            Kind::Compact
        }
        e if compact_events.contains(&e) => Kind::Compact,
        _ => return Ok(Normalized::ignore(event, session)),
    };
    let mut n = Normalized::ignore(event, session);
    n.kind = kind;
    n.cwd = str_field(v, &["cwd"]).map(str::to_string);
    n.claude_shaped = true;
    if matches!(kind, Kind::Pre | Kind::Post | Kind::Failure) {
        let mut t = tool(
            v,
            &["tool_name"],
            &["tool_input"],
            &["tool_use_id", "tool_call_id"],
        )?;
        if kind == Kind::Post {
            t.response = Some(v.get("tool_response").cloned().unwrap_or(Value::Null));
        }
        if kind == Kind::Failure {
            let e = str_field(v, &["error", "error_message"]).unwrap_or_default();
            let interrupt = v
                .get("is_interrupt")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            t.error = Some((e.to_string(), interrupt));
        }
        n.tool = Some(t);
    }
    Ok(n)
}
