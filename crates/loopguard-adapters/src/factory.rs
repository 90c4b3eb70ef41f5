//! Factory Droid's sessions.
//!
//! Files: `~/.factory/sessions/<project>/<sessionId>.jsonl` (Droid 0.225). One JSON object
//! per line: a header `{type: "session_start", id, title, cwd, version, …}`, then
//! `{type: "message", id, parentId, timestamp, message: {role, content: […]}}` with
//! Anthropic-style content blocks.
//!
//! | line | becomes |
//! |------|---------|
//! | `message`, role `assistant`, block `{type: "tool_use", id, name, input}` | a call |
//! | `message`, role `user`, block `{type: "tool_result", tool_use_id, content, is_error}` | the outcome of that call: `is_error: true` → a failure with the content's text, else the text as the result |
//! | `message`, role `user`, with text blocks, not a hook's record (`hookEventName`) nor the injected context (an `id` starting `context-`) | a run boundary |
//! | `session_start`, `agent_turn_outcome`, hook records, other messages | ignored |
//! | any other type | an `UnknownEntry` diagnostic |
//!
//! Tools are mapped by Droid's row of the agents' tool table (`Execute` is `Bash` without
//! `riskLevel`, `riskLevelReason` and `summary`; its `[Process exited with code N]` read)
//! and judged with the `claude-code` profile, as `loopguard hook factory` judges them; a
//! call the hook refused (`Error: CRITICAL: …`) is a refusal (see `agent_log`). No
//! compaction record of Droid's is known yet: other line types are reported, not guessed.

use loopguard_core::Value;

use crate::agent_log::{AgentLog, Ended};
use crate::common::object_line;
use crate::common::{arguments, content_text, id_field, str_field, ts_of};
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// Factory Droid sessions.
///
/// ```
/// use loopguard_adapters::{factory::FactoryAdapter, Context, LineAdapter};
/// let mut a = FactoryAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"Execute","input":{"command":"make","summary":"Build"}}]}}"#, &mut out).unwrap();
/// a.line(2, br#"{"type":"message","id":"b","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,"content":"ok\n\n[Process exited with code 0]"}]}}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
/// assert!(out[0].event.args.get("summary").is_none());
/// ```
#[derive(Debug)]
pub struct FactoryAdapter {
    log: AgentLog,
}

impl FactoryAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        FactoryAdapter {
            log: AgentLog::new("factory", &ctx),
        }
    }

    fn message(&mut self, no: u64, v: &Value<'_>, out: &mut Vec<SourcedEvent>) {
        let Some(m) = v.get("message") else {
            return;
        };
        let ts = ts_of(v, "timestamp");
        let blocks = m
            .get("content")
            .and_then(Value::as_array)
            .unwrap_or_default();
        match str_field(m, "role") {
            Some("assistant") => {
                for (i, b) in blocks.iter().enumerate() {
                    if str_field(b, "type") != Some("tool_use") {
                        continue;
                    }
                    let Some(name) = str_field(b, "name") else {
                        self.log.tracker.diagnose(
                            no,
                            DiagnosticKind::BadField,
                            format!("message.content[{i}]: a tool_use without `name`; skipped"),
                        );
                        continue;
                    };
                    let args = arguments(b.get("input"));
                    self.log
                        .call(no, id_field(b, "id"), name, &args, ts, None, out);
                }
            }
            Some("user") => {
                if m.get("hookEventName").is_some() {
                    return;
                }
                let mut results = false;
                for b in blocks {
                    if str_field(b, "type") != Some("tool_result") {
                        continue;
                    }
                    results = true;
                    let text = content_text(b.get("content").unwrap_or(&Value::Null));
                    let ended = if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                        Ended::Failed(text)
                    } else {
                        Ended::Result(Value::from(text))
                    };
                    let id = id_field(b, "tool_use_id");
                    self.log.ended(no, id.as_deref(), ended, ts, out);
                }
                let injected = str_field(v, "id").is_some_and(|i| i.starts_with("context-"));
                let text = blocks.iter().any(|b| str_field(b, "type") == Some("text"));
                if !results && !injected && text {
                    self.log.prompt(out);
                }
            }
            _ => {}
        }
    }
}

/// `true` for a Droid session line: its `session_start` header, or a `message` whose
/// content has `tool_use` or `tool_result` blocks.
pub(crate) fn is_record(v: &Value<'_>) -> bool {
    match str_field(v, "type") {
        Some("session_start") => v.get("id").is_some(),
        Some("message") => v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| matches!(str_field(b, "type"), Some("tool_use" | "tool_result")))
            }),
        _ => false,
    }
}

impl LineAdapter for FactoryAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a Droid session line")? else {
            return Ok(());
        };
        match str_field(&v, "type") {
            Some("message") => self.message(no, &v, out),
            Some("session_start" | "agent_turn_outcome") => {}
            other => {
                return Err(Diagnostic::new(
                    no,
                    DiagnosticKind::UnknownEntry,
                    format!("unknown line type {other:?}; skipped"),
                ))
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        self.log.finish(out)
    }
}
