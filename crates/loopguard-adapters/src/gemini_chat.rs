//! Gemini CLI's chat records.
//!
//! Files: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl` (Gemini CLI 0.61; the
//! `tmp` folder moves with `GEMINI_CLI_HOME`). One JSON object per line: a header
//! `{sessionId, projectHash, startTime, lastUpdated, kind}`, then messages
//! `{id, timestamp, type, content, …}` and updates `{"$set": {…}}`. A message is written
//! again, whole, each time it changes (same `id`): a `gemini` message first without its
//! tool calls, then with them, each call carrying its own result once it ran.
//!
//! | record | becomes |
//! |--------|---------|
//! | `gemini` message, `toolCalls[]` entry `{id, name, args, status, result: [{functionResponse: {response}}]}` with a result | a call and its outcome, once per call `id`: `response.output` (or the whole `response`) as the result when `status` is `success`, `response.error` as a failure otherwise |
//! | a `toolCalls` entry without a result yet | waits for the message to be written again; still without one at the next prompt or the end of the file: replayed alone (the hook saw it before it ran) and reported |
//! | `user` message without `functionResponse` parts (a prompt) | a run boundary |
//! | `$set` with `messages` | each message, as above (calls already read are not read again) |
//! | the header, other `$set` updates, `user` messages carrying tool results, `info`, `error`, `warning` messages | ignored |
//! | a record of another shape | an `UnknownEntry` diagnostic |
//!
//! Tools are mapped by Gemini CLI's row of the agents' tool table (`run_shell_command` is
//! `Bash` without its `description`; its `Exit Code:` read, `Process Group PGID:` dropped)
//! and judged with the `claude-code` profile, as `loopguard hook gemini` judges them; a
//! call the hook refused (`Tool execution blocked: CRITICAL: …`) is a refusal (see
//! `agent_log`). Tokens: the message's `tokens.total`, split between its calls.
//!
//! Older Gemini CLI versions wrote the same messages as one JSON document, `{sessionId,
//! projectHash, startTime, lastUpdated, messages: […]}` (`session-*.json`):
//! [`GeminiChatFile`] reads it with the same rules, `line` being the message's number.

use std::collections::HashSet;

use loopguard_core::Value;

use crate::agent_log::{tokens_per_call, AgentLog, Ended};
use crate::common::object_line;
use crate::common::{arguments, content_text, id_field, str_field, ts_of};
use crate::{
    Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, LineAdapter, SourcedEvent,
};

/// At most this many call ids are remembered (older ones could be read twice).
const SEEN_LIMIT: usize = 65_536;

/// Gemini CLI chat records (JSON Lines).
///
/// ```
/// use loopguard_adapters::{gemini_chat::GeminiChatAdapter, Context, LineAdapter};
/// let mut a = GeminiChatAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"id":"m1","timestamp":"2026-01-01T00:00:00Z","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"ls","description":"List"},"status":"success","result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"Output: a\nProcess Group PGID: 7"}}}]}]}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
/// assert_eq!(out[0].profile, Some("claude-code"));
/// ```
#[derive(Debug)]
pub struct GeminiChatAdapter {
    log: AgentLog,
    done: HashSet<String>,
    /// Calls written without their result yet.
    waiting: Vec<Waiting>,
}

/// A call written without its result yet.
#[derive(Debug)]
struct Waiting {
    id: String,
    line: u64,
    tool: String,
    args: Value<'static>,
    ts: u64,
    tokens: Option<u64>,
}

impl GeminiChatAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        GeminiChatAdapter {
            log: AgentLog::new("gemini", &ctx),
            done: HashSet::new(),
            waiting: Vec::new(),
        }
    }

    /// One message (a line, or an entry of `$set.messages` or of an older chat file).
    fn message(&mut self, no: u64, v: &Value<'_>, out: &mut Vec<SourcedEvent>) {
        let ts = ts_of(v, "timestamp");
        match str_field(v, "type") {
            Some("gemini") => self.gemini(no, v, ts, out),
            Some("user") => {
                let results = v
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()));
                if !results {
                    self.flush_waiting(out);
                    self.log.prompt(out);
                }
            }
            _ => {}
        }
    }

    fn gemini(&mut self, no: u64, v: &Value<'_>, ts: u64, out: &mut Vec<SourcedEvent>) {
        let Some(calls) = v.get("toolCalls").and_then(Value::as_array) else {
            return;
        };
        let tokens = tokens_per_call(
            v.get("tokens")
                .and_then(|t| t.get("total"))
                .and_then(Value::as_f64),
            calls.len(),
        );
        for (i, c) in calls.iter().enumerate() {
            let Some(id) = id_field(c, "id") else {
                self.log.tracker.diagnose(
                    no,
                    DiagnosticKind::BadField,
                    format!("toolCalls[{i}]: no `id`; skipped"),
                );
                continue;
            };
            if self.done.contains(&id) {
                continue;
            }
            let Some(name) = str_field(c, "name") else {
                self.log.tracker.diagnose(
                    no,
                    DiagnosticKind::BadField,
                    format!("toolCalls[{i}] ({id}): no `name`; skipped"),
                );
                self.done.insert(id);
                continue;
            };
            let Some(response) = response_of(c) else {
                // Not run yet: the message is written again when it has.
                if !self.waiting.iter().any(|w| w.id == id) {
                    self.waiting.push(Waiting {
                        id,
                        line: no,
                        tool: name.to_string(),
                        args: arguments(c.get("args")),
                        ts,
                        tokens,
                    });
                }
                continue;
            };
            self.waiting.retain(|w| w.id != id);
            if self.done.len() >= SEEN_LIMIT {
                self.done.clear();
            }
            self.done.insert(id.clone());
            let args = arguments(c.get("args"));
            let call_ts = ts_of(c, "timestamp").max(ts);
            self.log
                .call(no, Some(id.clone()), name, &args, ts, tokens, out);
            let ended = if str_field(c, "status") == Some("success") {
                Ended::Result(
                    response
                        .get("output")
                        .cloned()
                        .unwrap_or_else(|| response.clone())
                        .into_owned(),
                )
            } else {
                let err = response.get("error").unwrap_or(response);
                let text = match err {
                    Value::String(_) | Value::Array(_) => content_text(err),
                    other => str_field(other, "message")
                        .map(str::to_string)
                        .unwrap_or_else(|| {
                            let mut b = Vec::new();
                            crate::common::write_value(&mut b, other);
                            String::from_utf8_lossy(&b).into_owned()
                        }),
                };
                Ended::Failed(text)
            };
            self.log.ended(no, Some(&id), ended, call_ts, out);
        }
    }

    /// Calls still without a result: replayed alone when their turn ends (the pairing
    /// reports them).
    fn flush_waiting(&mut self, out: &mut Vec<SourcedEvent>) {
        for w in std::mem::take(&mut self.waiting) {
            self.done.insert(w.id.clone());
            self.log
                .call(w.line, Some(w.id), &w.tool, &w.args, w.ts, w.tokens, out);
        }
    }
}

/// The `response` of a tool call's first `functionResponse`.
fn response_of<'v>(c: &'v Value<'v>) -> Option<&'v Value<'v>> {
    c.get("result")?
        .as_array()?
        .iter()
        .find_map(|r| r.get("functionResponse"))?
        .get("response")
}

/// `true` for a record of Gemini CLI's chat files: the header, a `$set` update, or a
/// message of one of its types.
pub(crate) fn is_record(v: &Value<'_>) -> bool {
    if v.get("$set").is_some() {
        return true;
    }
    if v.get("projectHash").is_some() && v.get("sessionId").is_some() {
        return true;
    }
    v.get("id").is_some()
        && v.get("content").is_some()
        && matches!(str_field(v, "type"), Some("gemini"))
}

impl LineAdapter for GeminiChatAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a Gemini CLI chat record")? else {
            return Ok(());
        };
        if let Some(set) = v.get("$set") {
            if let Some(messages) = set.get("messages").and_then(Value::as_array) {
                for m in messages {
                    self.message(no, m, out);
                }
            }
            return Ok(());
        }
        if v.get("projectHash").is_some() && v.get("sessionId").is_some() {
            return Ok(());
        }
        match str_field(&v, "type") {
            Some("gemini" | "user") => self.message(no, &v, out),
            Some("info" | "error" | "warning") => {}
            other => {
                return Err(Diagnostic::new(
                    no,
                    DiagnosticKind::UnknownEntry,
                    format!("unknown Gemini CLI record (type {other:?}); skipped"),
                ))
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        self.flush_waiting(out);
        self.log.finish(out)
    }
}

/// Older Gemini CLI chat files: one JSON document with a `messages` array.
#[derive(Clone, Copy, Debug, Default)]
pub struct GeminiChatFile;

/// `true` for an older Gemini CLI chat file (`sessionId`, `projectHash`, `messages`).
pub(crate) fn is_chat_file(v: &Value<'_>) -> bool {
    v.get("projectHash").is_some()
        && v.get("sessionId").is_some()
        && matches!(v.get("messages"), Some(Value::Array(_)))
}

impl DocumentAdapter for GeminiChatFile {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let v =
            loopguard_core::json::parse(doc).map_err(|e| crate::common::document_error(doc, &e))?;
        let Some(messages) = v.get("messages").and_then(Value::as_array) else {
            return Err(Diagnostic::new(
                1,
                DiagnosticKind::BadField,
                "field `messages`: a Gemini CLI chat file needs a `messages` array",
            ));
        };
        let mut a = GeminiChatAdapter::new(ctx.clone());
        let mut events = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            a.message(i as u64 + 1, m, &mut events);
        }
        let diagnostics = a.finish(&mut events);
        Ok(Adapted {
            events,
            diagnostics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn gemini(id: &str, call: &str, result: Option<&str>) -> String {
        let result = result.map_or(String::new(), |r| {
            format!(r#","status":"success","result":[{{"functionResponse":{{"id":"{call}","name":"read_file","response":{{"output":"{r}"}}}}}}]"#)
        });
        format!(
            r#"{{"id":"{id}","timestamp":"2026-01-01T00:00:00Z","type":"gemini","content":"","toolCalls":[{{"id":"{call}","name":"read_file","args":{{"path":"a"}}{result}}}]}}"#
        )
    }

    #[test]
    fn a_call_is_read_once_when_its_message_is_written_again_with_the_result() {
        let lines = [
            gemini("m1", "c1", None),
            gemini("m1", "c1", Some("x")),
            gemini("m1", "c1", Some("x")),
            r#"{"$set":{"lastUpdated":"2026-01-01T00:00:01Z"}}"#.to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut a = GeminiChatAdapter::new(Context::default());
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let kinds: Vec<_> = events.iter().map(|e| e.event.kind).collect();
        assert_eq!(kinds, [EventKind::Call, EventKind::Outcome]);
    }

    #[test]
    fn a_call_that_never_got_its_result_is_replayed_alone_at_the_next_prompt() {
        let lines = [
            gemini("m1", "c1", None),
            r#"{"id":"u2","timestamp":"2026-01-01T00:00:02Z","type":"user","content":[{"text":"next"}]}"#.to_string(),
            gemini("m2", "c2", Some("y")),
            r#"{"kind":"main","sessionId":"s","projectHash":"h"}"#.to_string(),
            r#"{"type":"surprise","id":"z"}"#.to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut a = GeminiChatAdapter::new(Context::default());
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        let runs: Vec<String> = events
            .iter()
            .map(|e| e.event.run.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(runs, ["run-1", "run-2", "run-2"]);
        let kinds: Vec<_> = diags.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (5, DiagnosticKind::UnknownEntry),
                (1, DiagnosticKind::Unanswered)
            ]
        );
    }
}
