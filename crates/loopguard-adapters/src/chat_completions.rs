//! OpenAI Chat Completions `messages[]`.
//!
//! Input: a JSON array of messages, or an object with a `messages` array (a request body,
//! or a log that stores one). A JSON Lines file of message objects is read by
//! [`ChatCompletionsLines`]; [`ChatCompletions`] falls back to it when the document is not a
//! single JSON value.
//!
//! | message | becomes |
//! |---------|---------|
//! | `{"role":"assistant","tool_calls":[{"id","function":{"name","arguments"}}]}` | one call per entry; `arguments` (a JSON *string*) is parsed leniently with [`parse_arguments`](crate::common::parse_arguments); an object is taken as it is |
//! | legacy `{"role":"assistant","function_call":{"name","arguments"}}` | a call without id |
//! | `{"role":"tool","tool_call_id","content"}` | the result of the call with that id, as [`text_result`] of the content text |
//! | legacy `{"role":"function","name","content"}` | the result of the oldest waiting legacy call of that name |
//! | `{"role":"user"}` | a run boundary (`run-1`, `run-2`, …) |
//! | `system`, `developer`, other roles | ignored |
//!
//! The format has no error flag, so every result stays a result, and no compaction marker.
//! `line` is the 1-based message index (the file line for JSON Lines). A message's optional
//! `timestamp` (ISO string or epoch number) is used when present.
//!
//! A run boundary starts a new run only when the current one made calls, so the consecutive
//! user messages of one prompt share a run. At a run boundary, calls still waiting for a
//! result are replayed without an outcome and reported as `Unanswered` (a tool message
//! cannot answer a call of an earlier turn).
//!
//! Calls are paired with their results by the one pairing every adapter shares (by id in
//! any order, by position when ids are missing or repeat).

use loopguard_core::Value;
use loopguard_events::Payload;

use crate::common::{
    arguments, content_text, document_error, each_numbered, parse_line, role_field, str_field,
    text_result, ts_of, PendingCall, Runs, Tracker,
};
use crate::{
    Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, LineAdapter, SourcedEvent,
};

/// The pairing key of a legacy `function_call` (no id): the tool's name.
fn legacy_key(name: &str) -> String {
    format!("\0function:{name}")
}

/// The state of a Chat Completions conversation, one message at a time.
#[derive(Debug)]
pub(crate) struct ChatState {
    pub(crate) tracker: Tracker,
    runs: Runs,
}

impl ChatState {
    pub(crate) fn new(ctx: &Context) -> Self {
        ChatState {
            tracker: Tracker::new(ctx),
            runs: Runs::new("run"),
        }
    }

    /// One message; an unusable message returns a diagnostic and changes nothing.
    pub(crate) fn message(
        &mut self,
        no: u64,
        m: &Value<'_>,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        if m.as_object().is_none() {
            return Err(Diagnostic::new(
                no,
                DiagnosticKind::BadField,
                "a chat message must be a JSON object",
            ));
        }
        let role = role_field(no, m)?;
        let ts = ts_of(m, "timestamp");
        match role {
            "assistant" => self.assistant(no, m, ts, out),
            "tool" => self.tracker.tool_message(no, m, ts, out),
            "function" => {
                let key = str_field(m, "name").map(legacy_key);
                let text = content_text(m.get("content").unwrap_or(&Value::Null));
                let key = key.unwrap_or_else(|| legacy_key(""));
                self.tracker
                    .result(no, Some(&key), Payload::Result(text_result(&text)), ts, out);
            }
            "user" => {
                self.tracker.end_turn(out);
                self.runs.boundary();
            }
            _ => {}
        }
        Ok(())
    }

    fn assistant(&mut self, no: u64, m: &Value<'_>, ts: u64, out: &mut Vec<SourcedEvent>) {
        let run = self.runs.current();
        match m.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                for (i, tc) in calls.iter().enumerate() {
                    if self.tracker.tool_call(no, i, tc, &run, ts, None, out) {
                        self.runs.used();
                    }
                }
            }
            Some(_) => self.tracker.diagnose(
                no,
                DiagnosticKind::BadField,
                "field `tool_calls`: not an array",
            ),
        }
        if let Some(f) = m.get("function_call").filter(|f| !f.is_null()) {
            match str_field(f, "name") {
                Some(name) => {
                    let args = arguments(f.get("arguments"));
                    let mut call = PendingCall::new(no, &run, None, name, args);
                    call.ts = ts;
                    self.tracker.call(Some(legacy_key(name)), call, out);
                    self.runs.used();
                }
                None => self.tracker.diagnose(
                    no,
                    DiagnosticKind::BadField,
                    "field `function_call.name`: missing",
                ),
            }
        }
    }
}

/// OpenAI Chat Completions `messages[]` as a JSON document.
///
/// ```
/// use loopguard_adapters::{chat_completions::ChatCompletions, Context, DocumentAdapter};
/// let doc = br#"[{"role":"user","content":"hi"},
///   {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"/a\"}"}}]},
///   {"role":"tool","tool_call_id":"c1","content":"text"}]"#;
/// let a = ChatCompletions.adapt(doc, &Context::default()).unwrap();
/// assert_eq!(a.events.len(), 2);
/// assert!(a.diagnostics.is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ChatCompletions;

impl DocumentAdapter for ChatCompletions {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = match loopguard_core::json::parse(doc) {
            Ok(v) => v,
            Err(e) => {
                if looks_like_json_lines(doc) {
                    return Ok(adapt_lines(doc, ctx));
                }
                return Err(document_error(doc, &e));
            }
        };
        let messages = match &value {
            Value::Array(items) => items.as_slice(),
            Value::Object(_) => match value.get("messages") {
                Some(Value::Array(items)) => items.as_slice(),
                _ => {
                    return Err(Diagnostic::new(
                        1,
                        DiagnosticKind::BadField,
                        "field `messages`: missing or not an array",
                    ))
                }
            },
            _ => {
                return Err(Diagnostic::new(
                    1,
                    DiagnosticKind::BadField,
                    "expected an array of messages or an object with `messages`",
                ))
            }
        };
        let mut state = ChatState::new(ctx);
        let mut adapted = Adapted::default();
        each_numbered(messages, &mut adapted, |no, m, out| {
            state.message(no, m, out)
        });
        Ok(state.tracker.finish_document(adapted))
    }
}

/// `true` when the first non-blank line of `doc` is a JSON object on its own.
fn looks_like_json_lines(doc: &[u8]) -> bool {
    doc.split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty())
        .is_some_and(|l| matches!(loopguard_core::json::parse(l), Ok(Value::Object(_))))
}

/// Reads a JSON Lines document with [`ChatCompletionsLines`].
fn adapt_lines(doc: &[u8], ctx: &Context) -> Adapted {
    let mut adapter = ChatCompletionsLines::new(ctx.clone());
    let mut adapted = Adapted::default();
    let mut lines = doc.split(|b| *b == b'\n').peekable();
    let mut no = 0;
    while let Some(line) = lines.next() {
        no += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        if let Err(mut d) = adapter.line(no, line, &mut adapted.events) {
            let last = lines.peek().is_none();
            if last && d.kind == DiagnosticKind::NotJson {
                d.kind = DiagnosticKind::Truncated;
            }
            adapted.diagnostics.push(d);
        }
    }
    adapted
        .diagnostics
        .extend(adapter.finish(&mut adapted.events));
    adapted.diagnostics.sort_by_key(|d| d.line);
    adapted
}

/// OpenAI Chat Completions messages as JSON Lines, one message object per line.
///
/// ```
/// use loopguard_adapters::{chat_completions::ChatCompletionsLines, Context, LineAdapter};
/// let mut a = ChatCompletionsLines::new(Context::default());
/// let mut out = Vec::new();
/// a.line(1, br#"{"role":"assistant","function_call":{"name":"ls","arguments":"{}"}}"#, &mut out).unwrap();
/// a.line(2, br#"{"role":"function","name":"ls","content":"a b"}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out.len(), 2);
/// ```
#[derive(Debug)]
pub struct ChatCompletionsLines {
    state: ChatState,
}

impl ChatCompletionsLines {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        ChatCompletionsLines {
            state: ChatState::new(&ctx),
        }
    }
}

impl LineAdapter for ChatCompletionsLines {
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
        self.state.message(no, &v, out)
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        self.state.tracker.finish(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn ctx() -> Context {
        Context {
            session: "s".into(),
            agent: None,
        }
    }

    fn adapt(doc: &str) -> Adapted {
        ChatCompletions.adapt(doc.as_bytes(), &ctx()).unwrap()
    }

    fn tool(e: &SourcedEvent) -> String {
        e.event.tool.as_ref().unwrap().to_string()
    }

    #[test]
    fn parallel_calls_pair_by_id_in_any_order() {
        let a = adapt(
            r#"{"messages":[
            {"role":"system","content":"x"},
            {"role":"user","content":"go"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"a","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}},
              {"id":"b","type":"function","function":{"name":"ls","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"b","content":"B"},
            {"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"A"}]}]}"#,
        );
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
        let names: Vec<_> = a.events.iter().map(tool).collect();
        assert_eq!(names, ["ls", "ls", "read", "read"]);
        assert_eq!(a.events[0].line, 3);
        assert_eq!(a.events[1].line, 4);
        assert_eq!(a.events[2].event.kind, EventKind::Call);
        assert_eq!(
            a.events[3].event.payload,
            Some(Payload::Result(text_result("A")))
        );
        assert_eq!(a.events[0].event.run.as_ref().unwrap().to_string(), "run-1");
    }

    #[test]
    fn invalid_arguments_are_kept_as_text() {
        let a = adapt(
            r#"[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"x","arguments":"{not json"}}]},
               {"role":"tool","tool_call_id":"a","content":"r"}]"#,
        );
        assert_eq!(a.events[0].event.args, Value::from("{not json".to_string()));
    }

    #[test]
    fn legacy_function_call_pairs_by_name() {
        let a = adapt(
            r#"[{"role":"assistant","function_call":{"name":"f","arguments":"{'a': 1,}"}},
               {"role":"function","name":"f","content":"ok"}]"#,
        );
        assert!(a.diagnostics.is_empty());
        assert_eq!(a.events.len(), 2);
        assert!(a.events[0].event.call_id.is_none());
        assert_eq!(a.events[0].event.args, Value::parse(br#"{"a":1}"#).unwrap());
    }

    #[test]
    fn unanswered_orphans_and_runs() {
        let a = adapt(
            r#"[{"role":"user","content":"1"},
               {"role":"assistant","tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]},
               {"role":"user","content":"2"},
               {"role":"tool","tool_call_id":"a","content":"late"},
               {"role":"assistant","tool_calls":[{"id":"c","function":{"name":"y","arguments":"{}"}}]},
               {"role":"tool","tool_call_id":"c","content":"ok"},
               {"content":"no role"}]"#,
        );
        let kinds: Vec<_> = a.diagnostics.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (2, DiagnosticKind::Unanswered),
                (4, DiagnosticKind::Orphan),
                (7, DiagnosticKind::BadField)
            ]
        );
        // The unanswered call is replayed alone when its turn ends (the next prompt).
        assert_eq!(a.events.len(), 3);
        assert_eq!(a.events[0].event.kind, loopguard_events::EventKind::Call);
        assert_eq!(a.events[0].event.run.as_ref().unwrap().to_string(), "run-1");
        assert_eq!(a.events[1].event.run.as_ref().unwrap().to_string(), "run-2");
    }

    #[test]
    fn json_lines_and_bad_documents() {
        let doc = "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}]}\n\n{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"r\"}\n{\"role\":";
        let a = adapt(doc);
        assert_eq!(a.events.len(), 2);
        assert_eq!(a.events[1].line, 3);
        assert_eq!(a.diagnostics.len(), 1);
        assert_eq!(a.diagnostics[0].kind, DiagnosticKind::Truncated);
        let e = ChatCompletions.adapt(b"[1,", &ctx()).unwrap_err();
        assert_eq!(e.kind, DiagnosticKind::NotJson);
        let e = ChatCompletions.adapt(b"{\"x\":1}", &ctx()).unwrap_err();
        assert_eq!(e.kind, DiagnosticKind::BadField);
    }
}
