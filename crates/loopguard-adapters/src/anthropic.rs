//! Anthropic Messages: `{role, content: [blocks]}` without a Claude Code envelope.
//!
//! What exports and logging proxies write, and the Messages API itself:
//!
//! * a JSON array of messages, or JSON Lines with one message per line;
//! * a request body `{"model","system","tools","messages":[…]}`, optionally with the
//!   response next to it (`{"request":{…},"response":{…}}`, or a `response` key);
//! * a response `{"type":"message","role":"assistant","content":[…],"usage":{…}}`;
//! * JSON Lines of any of these (a proxy log: one request or response per line).
//!
//! | block | becomes |
//! |-------|---------|
//! | assistant `{"type":"tool_use","id","name","input"}` | a call, args = `input` |
//! | user `{"type":"tool_result","tool_use_id","content","is_error"?}` | its outcome: `is_error: true` → an error with the content text, else the result [`text_result`] of the text |
//! | a user message without `tool_result` blocks | a run boundary |
//! | `server_tool_use`, text, thinking, images | ignored |
//!
//! A request carries the whole conversation so far, so a log of successive requests
//! repeats earlier turns: a `tool_use` or `tool_result` id seen before is not read again.
//! Tokens of a call: the response's `usage` (`input_tokens + output_tokens + cache_*`)
//! split between its calls. Pairing is the one every adapter shares.

use std::collections::HashSet;

use loopguard_core::Value;
use loopguard_events::Payload;

use crate::common::{
    content_text, document_error, each_numbered, id_field, role_field, str_field, text_result,
    tool_use_parts, ts_of, usage_tokens, Runs,
};
use crate::pairing::{PendingCall, Tracker};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, SourcedEvent};

/// The state of one conversation.
#[derive(Debug)]
struct State {
    tracker: Tracker,
    runs: Runs,
    seen: HashSet<String>,
    /// Prompts of requests read so far, by position and text.
    prompts: HashSet<(usize, String)>,
}

/// `true` when `v` is a message whose content has Messages API blocks.
pub(crate) fn has_tool_blocks(v: &Value<'_>) -> bool {
    v.get("content").and_then(Value::as_array).is_some_and(|c| {
        c.iter().any(|b| {
            matches!(
                str_field(b, "type"),
                Some("tool_use" | "tool_result" | "server_tool_use")
            )
        })
    })
}

impl State {
    fn new(ctx: &Context) -> Self {
        State {
            tracker: Tracker::new(ctx),
            runs: Runs::new("run"),
            seen: HashSet::new(),
            prompts: HashSet::new(),
        }
    }

    /// Any record: a message, a request, a response, or a request/response pair.
    fn record(
        &mut self,
        no: u64,
        v: &Value<'_>,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        match v {
            Value::Array(items) => {
                for m in items {
                    self.record(no, m, out)?;
                }
                Ok(())
            }
            Value::Object(_) => {
                if let Some(req) = v.get("request") {
                    self.record(no, req, out)?;
                    if let Some(resp) = v.get("response") {
                        self.record(no, resp, out)?;
                    }
                    return Ok(());
                }
                if let Some(Value::Array(messages)) = v.get("messages") {
                    for (i, m) in messages.iter().enumerate() {
                        if str_field(m, "role") == Some("user") && !has_tool_blocks(m) {
                            let text = content_text(m.get("content").unwrap_or(&Value::Null));
                            if !self.prompts.insert((i, text)) {
                                continue; // this prompt was read in an earlier request
                            }
                        }
                        self.message(no, m, out)?;
                    }
                    if let Some(resp) = v.get("response") {
                        self.record(no, resp, out)?;
                    }
                    return Ok(());
                }
                self.message(no, v, out)
            }
            _ => Err(Diagnostic::new(
                no,
                DiagnosticKind::BadField,
                "expected a message object",
            )),
        }
    }

    fn message(
        &mut self,
        no: u64,
        m: &Value<'_>,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let role = role_field(no, m)?;
        let ts = ts_of(m, "timestamp");
        let blocks = m.get("content").and_then(Value::as_array);
        match role {
            "assistant" => {
                let Some(blocks) = blocks else { return Ok(()) };
                let uses: Vec<&Value<'_>> = blocks
                    .iter()
                    .filter(|b| str_field(b, "type") == Some("tool_use"))
                    .collect();
                let tokens = m.get("usage").and_then(usage_tokens);
                let n = uses.len().max(1) as u64;
                for (i, b) in uses.into_iter().enumerate() {
                    let id = id_field(b, "id");
                    if let Some(id) = &id {
                        if !self.seen.insert(format!("use:{id}")) {
                            continue;
                        }
                    }
                    let Some((name, args)) = tool_use_parts(&mut self.tracker, no, "content", i, b)
                    else {
                        continue;
                    };
                    let mut call =
                        PendingCall::new(no, &self.runs.current(), id.clone(), name, args);
                    call.ts = ts;
                    call.tokens = tokens.map(|t| t / n);
                    self.tracker.call(id, call, out);
                    self.runs.used();
                }
            }
            "user" => {
                let results: Vec<&Value<'_>> = blocks
                    .map(|c| {
                        c.iter()
                            .filter(|b| str_field(b, "type") == Some("tool_result"))
                            .collect()
                    })
                    .unwrap_or_default();
                if results.is_empty() {
                    self.tracker.end_turn(out);
                    self.runs.boundary();
                    return Ok(());
                }
                for r in results {
                    let id = id_field(r, "tool_use_id");
                    if let Some(id) = &id {
                        if !self.seen.insert(format!("result:{id}")) {
                            continue;
                        }
                    }
                    let text = content_text(r.get("content").unwrap_or(&Value::Null));
                    let payload = if r.get("is_error").and_then(Value::as_bool) == Some(true) {
                        Payload::Error(Value::from(text))
                    } else {
                        Payload::Result(text_result(&text))
                    };
                    self.tracker.result(no, id.as_deref(), payload, ts, out);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Anthropic Messages as a JSON document (an array of messages, a request, a response, a
/// request/response pair) or as JSON Lines of those.
///
/// ```
/// use loopguard_adapters::{anthropic::AnthropicMessages, Context, DocumentAdapter};
/// let doc = br#"[{"role":"user","content":"list files"},
///   {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}]},
///   {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.py"}]}]"#;
/// let a = AnthropicMessages.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct AnthropicMessages;

impl DocumentAdapter for AnthropicMessages {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let mut state = State::new(ctx);
        let mut adapted = Adapted::default();
        match loopguard_core::json::parse(doc) {
            Ok(v) => {
                // A top-level array is one conversation: its index is the line.
                match &v {
                    Value::Array(items) => {
                        each_numbered(items, &mut adapted, |no, m, out| state.record(no, m, out));
                    }
                    other => {
                        if let Err(d) = state.record(1, other, &mut adapted.events) {
                            adapted.diagnostics.push(d);
                        }
                    }
                }
            }
            Err(e) => {
                // JSON Lines.
                let mut any = false;
                for (i, line) in doc.split(|b| *b == b'\n').enumerate() {
                    let line = line.trim_ascii();
                    if line.is_empty() {
                        continue;
                    }
                    let no = i as u64 + 1;
                    match loopguard_core::json::parse(line) {
                        Ok(v) => {
                            any = true;
                            if let Err(d) = state.record(no, &v, &mut adapted.events) {
                                adapted.diagnostics.push(d);
                            }
                        }
                        Err(e) => adapted.diagnostics.push(Diagnostic::new(
                            no,
                            DiagnosticKind::NotJson,
                            format!("not JSON: {} at byte {}", e.kind, e.offset + 1),
                        )),
                    }
                }
                if !any {
                    return Err(document_error(doc, &e));
                }
            }
        }
        Ok(state.tracker.finish_document(adapted))
    }
}

/// Anthropic Messages as JSON Lines, one message (or request, or response) per line.
///
/// ```
/// use loopguard_adapters::{anthropic::AnthropicLines, Context, LineAdapter};
/// let mut a = AnthropicLines::new(Context::default());
/// let mut out = Vec::new();
/// a.line(1, br#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"path":"a"}}]}"#, &mut out)?;
/// a.line(2, br#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","is_error":true}]}"#, &mut out)?;
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Debug)]
pub struct AnthropicLines {
    state: State,
}

crate::common::json_lines_adapter!(AnthropicLines, state: State, record);
