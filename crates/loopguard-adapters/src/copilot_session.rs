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
//! | every other event (`session.*`, `hook.*`, `assistant.*`, `model.*`, `mcp.*`, …: Copilot writes a call and its result only as `tool.execution_*`) | ignored |
//! | a line without a `type` | an `UnknownEntry` diagnostic |
//!
//! Tools are mapped by Copilot's row of the agents' tool table (`bash` and `powershell` are
//! `Bash` without `description` and `initial_wait`, with the exit code of the trailing
//! `<shellId: N completed with exit code C>` line kept and the line dropped; `read_bash`
//! polls are `BashOutput`) and judged with the `claude-code` profile, as `loopguard hook
//! copilot` judges them; a call the hook refused (`Denied by preToolUse hook: CRITICAL: …`)
//! is a refusal (see `agent_log`).

use loopguard_core::Value;

use crate::agent_log::{AgentLog, Ended};
use crate::common::{arguments, content_text, id_field, str_field, ts_of};
use crate::common::{line_type, object_line};
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

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

/// `true` for a Copilot CLI session event: a dotted `type` and a `data` object beside an
/// `id`, `parentId` or `timestamp` (Managed Agents events, also dotted, have no `data`).
pub(crate) fn is_event(v: &Value<'_>) -> bool {
    str_field(v, "type").is_some_and(|t| t.contains('.'))
        && matches!(v.get("data"), Some(Value::Object(_)))
        && v.as_object().is_some_and(|o| {
            ["id", "parentId", "timestamp"]
                .iter()
                .any(|k| o.get(k).is_some())
        })
}

impl LineAdapter for CopilotSessionAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a Copilot CLI event")? else {
            return Ok(());
        };
        let ty = line_type(no, &v, "an event")?;
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
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        self.log.finish(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copilot CLI 1.0.76 writes events of other families too (`model.call_start`,
    /// `mcp.tools.list_changed`, `ephemeral` streaming deltas): ignored, never reported.
    #[test]
    fn other_event_families_are_ignored_and_calls_read() {
        let lines = [
            r#"{"type":"mcp.tools.list_changed","data":{"serverName":"github-mcp-server"},"ephemeral":true,"id":"a","timestamp":"2026-07-30T01:56:52.973Z","parentId":"p"}"#,
            r#"{"type":"user.message","data":{"content":"go"},"id":"b","timestamp":"2026-07-30T01:56:54.006Z","parentId":"a"}"#,
            r#"{"type":"model.call_start","data":{"turnId":"0","model":"m"},"ephemeral":true,"id":"c","timestamp":"2026-07-30T01:56:54.159Z","parentId":"b"}"#,
            r#"{"type":"assistant.tool_call_delta","data":{"toolCallId":"t1","toolName":"skill","inputDelta":"{"},"ephemeral":true,"id":"d","timestamp":"2026-07-30T01:56:57.223Z","parentId":"c"}"#,
            r#"{"type":"tool.execution_start","data":{"toolCallId":"t1","toolName":"skill","arguments":{"skill":"s"}},"id":"e","timestamp":"2026-07-30T01:56:57.308Z","parentId":"d"}"#,
            r#"{"type":"tool.execution_complete","data":{"toolCallId":"t1","success":true,"result":{"content":"loaded","detailedContent":"long"}},"id":"f","timestamp":"2026-07-30T01:56:57.310Z","parentId":"e"}"#,
        ];
        let mut a = CopilotSessionAdapter::new(Context::default());
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(events.len(), 2);
        assert_eq!(
            events[0].event.tool.as_ref().and_then(|t| t.as_str()),
            Some("skill")
        );
        let v = |s: &str| Value::parse(s.as_bytes()).unwrap().into_owned();
        assert!(is_event(&v(lines[0])));
        // Without `parentId` (as some writers leave it out), still an event.
        assert!(is_event(&v(
            r#"{"type":"user.message","data":{},"timestamp":"t"}"#
        )));
        // Managed Agents events are dotted too, but have no `data`.
        assert!(!is_event(&v(
            r#"{"type":"agent.tool_use","id":"x","name":"bash"}"#
        )));
    }
}
