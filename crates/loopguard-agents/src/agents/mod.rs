//! One module per agent, each a [`Protocol`](crate::Protocol): its payload read into an
//! [`AgentEvent`](crate::AgentEvent), and the guard's answer written the way it reads one.

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

use loopguard_core::{JsString, Value};
use serde_json::Map;

use crate::protocol::{AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Rendered};

/// Claude Code's payload shape, which Codex, Qwen Code and Factory Droid share:
/// `session_id`, `hook_event_name`, `cwd`, `tool_name`, `tool_input`, `tool_use_id` (or
/// `tool_call_id`), `tool_response`, `error`/`is_interrupt`. `compact_events` are the
/// event names (besides a `SessionStart` with `source: "compact"`) that arm the
/// post-compaction guard.
pub(crate) fn claude_like<'a>(
    f: &Fields<'_, 'a>,
    compact_events: &[&str],
) -> Result<AgentEvent<'a>, AgentError> {
    let event = f.required("hook_event_name")?;
    let session = f.required("session_id")?;
    let kind = match event.as_str() {
        "PreToolUse" => Kind::Pre,
        "PostToolUse" | "PostToolUseFailure" => Kind::Post,
        "UserPromptSubmit" => Kind::Prompt,
        "SessionEnd" => Kind::End,
        "SessionStart" if f.get("source").and_then(Value::as_str) == Some("compact") => {
            Kind::Compact
        }
        e if compact_events.contains(&e) => Kind::Compact,
        _ => return Ok(AgentEvent::ignore(&event, &session)),
    };
    let mut ev = AgentEvent::new(kind, &event, &session);
    ev.cwd = f.str_of(&["cwd"]);
    ev.claude_shaped = true;
    if matches!(kind, Kind::Pre | Kind::Post) {
        ev.tool = Some(f.tool(
            &["tool_name"],
            &["tool_input"],
            &["tool_use_id", "tool_call_id"],
        )?);
    }
    if event == "PostToolUse" {
        ev.outcome = Some(CallOutcome::Result(or_null(f.get("tool_response"))));
    } else if event == "PostToolUseFailure" {
        let text = f.str_of(&["error", "error_message"]).unwrap_or_default();
        let interrupt = f
            .get("is_interrupt")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        ev.outcome = Some(CallOutcome::Error {
            text: JsString::from(text),
            interrupt,
        });
    }
    Ok(ev)
}

/// A field's value, `null` when absent.
pub(crate) fn or_null<'a>(v: Option<&Value<'a>>) -> Value<'a> {
    v.cloned().unwrap_or(Value::Null)
}

/// One JSON object on standard output, or nothing when it is empty.
pub(crate) fn json_or_nothing(o: Map<String, serde_json::Value>) -> Rendered {
    if o.is_empty() {
        Rendered::default()
    } else {
        Rendered::json(serde_json::Value::Object(o))
    }
}

/// Windsurf's and Kiro's answer: a call is refused by exit status 2, the reason on
/// standard error (which the agent shows); a warning goes to standard error too.
pub(crate) fn exit_status_answer(ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
    let mut out = Rendered::default();
    if let Some(reason) = a.deny.as_ref().or(a.stop.as_ref()) {
        if ev.kind == Kind::Pre {
            out.exit_code = 2;
        }
        out.stderr.push(reason.clone());
    } else if let Some(c) = &a.context {
        out.stderr.push(c.clone());
    }
    out
}
