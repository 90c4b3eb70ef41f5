//! Qwen Code's chat records.
//!
//! Files: `~/.qwen/projects/<project>/chats/<sessionId>.jsonl` (Qwen Code 0.24). One JSON
//! object per line, `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, …}`, with
//! the model's messages in Gemini's shape (`message: {role, parts: […]}`).
//!
//! | line | becomes |
//! |------|---------|
//! | `assistant`, `message.parts[]` `{functionCall: {id, name, args}}` | a call |
//! | `tool_result`, `message.parts[]` `{functionResponse: {id, name, response}}` | the outcome of call `id`: `response.error` as a failure (a failing shell command included, as Qwen Code's hook reports it), else `response.output` (or the whole `response`) as the result |
//! | `user` with text parts (a prompt) | a run boundary |
//! | `system` with `subtype` `chat_compression` | a compaction |
//! | other `system` subtypes (`ui_telemetry`, `attribution_snapshot`, …), `user` lines without text | ignored |
//! | any other type | an `UnknownEntry` diagnostic |
//!
//! Tools are mapped by Qwen Code's row of the agents' tool table (`run_shell_command` is
//! `Bash` without its `description`, `todo_write` is `TodoWrite`) and judged with the
//! `claude-code` profile, as `loopguard hook qwen` judges them; loopguard's notes appended
//! to a result (`loopguard: WARNING: …`) are dropped, and a call the hook refused
//! (`CRITICAL: …`, `errorType: "execution_denied"`) is a refusal (see `agent_log`).
//! Tokens: the line's `usageMetadata.totalTokenCount`, split between its calls.

use loopguard_core::Value;

use crate::agent_log::{tokens_per_call, AgentLog, Ended};
use crate::common::object_line;
use crate::common::{arguments, content_text, id_field, str_field, ts_of};
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// Qwen Code chat records.
///
/// ```
/// use loopguard_adapters::{qwen::QwenAdapter, Context, LineAdapter};
/// let mut a = QwenAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"uuid":"a","sessionId":"s","type":"assistant","message":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"todo_write","args":{"todos":[]}}}]}}"#, &mut out).unwrap();
/// a.line(2, br#"{"uuid":"b","sessionId":"s","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"todo_write","response":{"output":"ok"}}}]}}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("TodoWrite"));
/// ```
#[derive(Debug)]
pub struct QwenAdapter {
    log: AgentLog,
}

impl QwenAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        QwenAdapter {
            log: AgentLog::new("qwen", &ctx),
        }
    }

    fn parts<'v>(v: &'v Value<'v>) -> &'v [Value<'v>] {
        v.get("message")
            .and_then(|m| m.get("parts"))
            .and_then(Value::as_array)
            .unwrap_or_default()
    }
}

/// `true` for a Qwen Code chat record: a line with a `uuid` or `sessionId` whose message
/// has Gemini-style `parts`, or a `tool_result` line with its `toolCallResult`.
pub(crate) fn is_record(v: &Value<'_>) -> bool {
    (v.get("uuid").is_some() || v.get("sessionId").is_some())
        && (matches!(
            v.get("message").and_then(|m| m.get("parts")),
            Some(Value::Array(_))
        ) || (str_field(v, "type") == Some("tool_result") && v.get("toolCallResult").is_some()))
}

impl LineAdapter for QwenAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a Qwen Code line")? else {
            return Ok(());
        };
        let ts = ts_of(&v, "timestamp");
        match str_field(&v, "type") {
            Some("assistant") => {
                let calls: Vec<&Value<'_>> = Self::parts(&v)
                    .iter()
                    .filter_map(|p| p.get("functionCall"))
                    .collect();
                let tokens = tokens_per_call(
                    v.get("usageMetadata")
                        .and_then(|u| u.get("totalTokenCount"))
                        .and_then(Value::as_f64),
                    calls.len(),
                );
                for (i, c) in calls.into_iter().enumerate() {
                    let Some(name) = str_field(c, "name") else {
                        self.log.tracker.diagnose(
                            no,
                            DiagnosticKind::BadField,
                            format!("message.parts: functionCall {i} has no `name`; skipped"),
                        );
                        continue;
                    };
                    let args = arguments(c.get("args"));
                    self.log
                        .call(no, id_field(c, "id"), name, &args, ts, tokens, out);
                }
            }
            Some("tool_result") => {
                for p in Self::parts(&v) {
                    let Some(r) = p.get("functionResponse") else {
                        continue;
                    };
                    let response = r.get("response").unwrap_or(&Value::Null);
                    let ended = match response.get("error") {
                        Some(e) => Ended::Failed(content_text(e)),
                        None => Ended::Result(
                            response
                                .get("output")
                                .unwrap_or(response)
                                .clone()
                                .into_owned(),
                        ),
                    };
                    let id = id_field(r, "id");
                    self.log.ended(no, id.as_deref(), ended, ts, out);
                }
            }
            Some("user") => {
                let prompt = Self::parts(&v).iter().any(|p| p.get("text").is_some());
                if prompt {
                    self.log.prompt(out);
                }
            }
            Some("system") => {
                if str_field(&v, "subtype") == Some("chat_compression") {
                    self.log.compaction(no, ts, out);
                }
            }
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
