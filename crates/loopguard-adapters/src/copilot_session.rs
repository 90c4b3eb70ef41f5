//! GitHub Copilot CLI's session events.
//!
//! Files: `~/.copilot/session-state/<sessionId>/events.jsonl` (Copilot CLI 1.0; the folder
//! moves with `COPILOT_HOME`). One event per line, `{type, data, id, timestamp, parentId}`.
//!
//! | event | becomes |
//! |-------|---------|
//! | `tool.execution_start` `{toolCallId, toolName, arguments}` | a call |
//! | `tool.execution_complete` `{toolCallId, success, result: {content}, error: {message, code}}` | the outcome of that call: `result.content` as the result when `success` is `true`, `error.message` as a failure otherwise |
//! | `user.message` | a run boundary |
//! | `session.compaction_complete` | a compaction |
//! | every other `session.`, `hook.`, `assistant.`, `system.`, `user.`, `tool.`, `subagent.`, `skill.` event | ignored |
//! | an event of another family | an `UnknownEntry` diagnostic |
//!
//! Tools are mapped by Copilot's row of the agents' tool table (`bash` and `powershell` are
//! `Bash` without `description` and `initial_wait`, with the exit code of the trailing
//! `<shellId: N completed with exit code C>` line kept and the line dropped; `read_bash`
//! polls are `BashOutput`) and judged with the `claude-code` profile, as `loopguard hook
//! copilot` judges them; a call the hook refused (`Denied by preToolUse hook: CRITICAL: …`)
//! is a refusal (see `agent_log`).

use loopguard_core::Value;

use crate::agent_log::{AgentLog, Ended};
use crate::common::{arguments, content_text, id_field, parse_line, str_field, ts_of};
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// Event families Copilot CLI writes that carry no tool call of their own.
const FAMILIES: &[&str] = &[
    "session.",
    "hook.",
    "assistant.",
    "system.",
    "user.",
    "tool.",
    "subagent.",
    "skill.",
    "abort",
];

/// Copilot CLI session events.
///
/// ```
/// use loopguard_adapters::{copilot_session::CopilotSessionAdapter, Context, LineAdapter};
/// let mut a = CopilotSessionAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"bash","arguments":{"command":"make","description":"Build"}},"id":"e1","timestamp":"2026-01-01T00:00:00Z","parentId":null}"#, &mut out).unwrap();
/// a.line(2, br#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"ok\n<shellId: 3 completed with exit code 0>"}},"id":"e2","timestamp":"2026-01-01T00:00:01Z","parentId":"e1"}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
/// ```
#[derive(Debug)]
pub struct CopilotSessionAdapter {
    log: AgentLog,
}

impl CopilotSessionAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        CopilotSessionAdapter {
            log: AgentLog::new("copilot", &ctx),
        }
    }
}

/// `true` for a Copilot CLI session event: a dotted `type`, a `data` object and a
/// `parentId` key.
pub(crate) fn is_event(v: &Value<'_>) -> bool {
    str_field(v, "type").is_some_and(|t| t.contains('.'))
        && matches!(v.get("data"), Some(Value::Object(_)))
        && v.as_object().is_some_and(|o| o.get("parentId").is_some())
}

impl LineAdapter for CopilotSessionAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        if text.trim_ascii().is_empty() {
            return Ok(());
        }
        let v = parse_line(no, text)?;
        if v.as_object().is_none() {
            return Err(Diagnostic::new(
                no,
                DiagnosticKind::BadField,
                "a Copilot CLI event must be a JSON object",
            ));
        }
        let Some(ty) = str_field(&v, "type") else {
            return Err(Diagnostic::new(
                no,
                DiagnosticKind::UnknownEntry,
                "an event without a `type`; skipped",
            ));
        };
        let ts = ts_of(&v, "timestamp");
        let data = v.get("data").unwrap_or(&Value::Null);
        match ty {
            "tool.execution_start" => {
                let Some(name) = str_field(data, "toolName") else {
                    return Err(Diagnostic::new(
                        no,
                        DiagnosticKind::BadField,
                        "field `data.toolName`: missing; the call is skipped",
                    ));
                };
                let args = arguments(data.get("arguments"));
                self.log
                    .call(no, id_field(data, "toolCallId"), name, &args, ts, None, out);
            }
            "tool.execution_complete" => {
                let ended = if data.get("success").and_then(Value::as_bool) == Some(true) {
                    let result = data.get("result").unwrap_or(&Value::Null);
                    Ended::Result(match result.get("content") {
                        Some(c) => Value::from(content_text(c)),
                        None => result.clone().into_owned(),
                    })
                } else {
                    let error = data.get("error").unwrap_or(&Value::Null);
                    Ended::Failed(
                        str_field(error, "message")
                            .map(str::to_string)
                            .unwrap_or_else(|| content_text(error)),
                    )
                };
                let id = id_field(data, "toolCallId");
                self.log.ended(no, id.as_deref(), ended, ts, out);
            }
            "user.message" => self.log.prompt(out),
            "session.compaction_complete" => self.log.compaction(no, ts, out),
            t if FAMILIES.iter().any(|f| t.starts_with(f)) => {}
            other => {
                return Err(Diagnostic::new(
                    no,
                    DiagnosticKind::UnknownEntry,
                    format!("unknown event type {other:?}; skipped"),
                ))
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        self.log.finish(out)
    }
}
