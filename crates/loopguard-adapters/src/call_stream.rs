//! The OpenClaw call-stream JSON.
//!
//! The form OpenClaw tool-call streams are extracted in for analysis (transcripts.md §1.7):
//!
//! ```text
//! { "<label>": { "session_id": "...", "runId": "...", "t0": <ms>,
//!     "calls": [ {"seq":N, "kind":"call", "id":"functions.read:3", "name":"read",
//!                 "args":{...}, "runId":"...", "ts":<ms>, "isError":bool,
//!                 "resultText":"...", "tsResult":<ms>, "ordinal":K}, ... ] } }
//! ```
//!
//! Every call record becomes a `call` event followed by its `outcome`: the result is
//! `resultText` in OpenClaw's content shape ([`text_result`]), or, when `isError` is true,
//! an error whose message is `resultText`. The run is the record's `runId` (else the
//! label's). A call without a `resultText` (and without a `tsResult`) never got a result: it
//! is replayed without an outcome and reported as [`DiagnosticKind::Unanswered`]. Each
//! record holds its call and its result, so no pairing is needed. The published shape has no
//! compaction marker; a record `{"kind":"compaction","ts":<ms>}` (optionally with a
//! `runId`) is accepted as one.
//!
//! Labels are read in document order and all go to the session of the [`Context`]; the
//! `line` of an event is the record's 1-based position in its label's `calls` array.
//!
//! ```
//! use loopguard_adapters::{call_stream::CallStream, Context, DocumentAdapter};
//! let doc = br#"{"r1":{"session_id":"s","runId":"run-a","t0":1,"calls":[
//!   {"seq":3,"kind":"call","id":"functions.read:0","name":"Read","args":{"path":"/a"},
//!    "ts":1788622018101,"isError":false,"resultText":"hello","tsResult":1788622018169,"ordinal":0}]}}"#;
//! let ctx = Context { session: "s".into(), agent: None };
//! let adapted = CallStream.adapt(doc, &ctx).unwrap();
//! assert_eq!(adapted.events.len(), 2);
//! assert_eq!(adapted.events[0].event.session.as_ref().unwrap().as_str(), Some("s/r1"));
//! assert_eq!(adapted.events[0].event.tool.as_ref().unwrap().as_str(), Some("read"));
//! assert_eq!(adapted.events[1].event.run.as_ref().unwrap().as_str(), Some("run-a"));
//! ```

use std::collections::HashMap;

use loopguard_core::{json::parse_object_entries, json::ParseErrorKind};
use loopguard_core::{JsString, Value};
use loopguard_events::Payload;

use crate::common::{str_field, text_result, timestamp_ms, Builder};
use crate::openclaw::normalize_tool_name;
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads the OpenClaw call-stream JSON (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallStream;

/// A non-empty string field.
fn run_field<'v>(v: &'v Value<'_>, key: &str) -> Option<&'v str> {
    str_field(v, key).filter(|s| !s.trim().is_empty())
}

fn is_compaction(record: &Value<'_>) -> bool {
    str_field(record, "kind") == Some("compaction")
}

/// The session of a label: `<ctx.session>/<label>`, or the label alone when the context
/// names no session.
fn label_session(ctx: &Context, label: &str) -> Context {
    let session = if ctx.session.is_empty() {
        label.to_string()
    } else {
        format!("{}/{label}", ctx.session)
    };
    Context {
        session,
        agent: ctx.agent.clone(),
    }
}

impl CallStream {
    /// Reads one label as a session of its own. Its records are numbered from `first`
    /// (the number of records before it in the document, plus one); returns how many
    /// records it has.
    fn label(
        ctx: &Context,
        label: &JsString<'_>,
        value: &Value<'_>,
        first: u64,
        adapted: &mut Adapted,
    ) -> u64 {
        let name = label.to_string_lossy();
        let Some(calls) = value.get("calls").and_then(Value::as_array) else {
            adapted.diagnostics.push(Diagnostic::new(
                0,
                DiagnosticKind::BadField,
                format!("label {name:?}: no `calls` array; skipped"),
            ));
            return 0;
        };
        let builder = Builder::new(&label_session(ctx, &name));
        let label_run = run_field(value, "runId");

        // The run a compaction without its own `runId` belongs to: that of the next call
        // (the guard it arms watches the calls after it), else of the previous one.
        let mut next_run: Vec<Option<&str>> = vec![None; calls.len()];
        let mut following = None;
        for (i, record) in calls.iter().enumerate().rev() {
            next_run[i] = following;
            if !is_compaction(record) {
                if let Some(r) = run_field(record, "runId") {
                    following = Some(r);
                }
            }
        }

        let mut previous_run = None;
        for (i, record) in calls.iter().enumerate() {
            let line = first + i as u64;
            if record.as_object().is_none() {
                adapted.diagnostics.push(Diagnostic::new(
                    line,
                    DiagnosticKind::BadField,
                    format!("label {name:?}: `calls[{i}]` is not an object; skipped"),
                ));
                continue;
            }
            let ts = record.get("ts").and_then(timestamp_ms).unwrap_or(0);
            match record.get("kind") {
                Some(Value::String(k)) if k.as_wtf8() == b"compaction" => {
                    let run = run_field(record, "runId")
                        .or(next_run[i])
                        .or(previous_run)
                        .or(label_run);
                    adapted.events.push(builder.compaction(line, run, ts));
                    continue;
                }
                None | Some(Value::Null) => {}
                Some(Value::String(k)) if k.as_wtf8() == b"call" => {}
                Some(other) => {
                    let kind = match other {
                        Value::String(s) => format!("{:?}", s.to_string_lossy()),
                        _ => "a non-string".to_string(),
                    };
                    adapted.diagnostics.push(Diagnostic::new(
                        line,
                        DiagnosticKind::UnknownEntry,
                        format!("label {name:?}: record kind {kind} is not known; skipped"),
                    ));
                    continue;
                }
            }
            let tool = match record.get("name") {
                Some(Value::String(s)) => normalize_tool_name(&s.to_string_lossy()),
                _ => {
                    adapted.diagnostics.push(Diagnostic::new(
                        line,
                        DiagnosticKind::BadField,
                        format!("label {name:?}: call without a `name` string; skipped"),
                    ));
                    continue;
                }
            };
            let call_id = str_field(record, "id").filter(|s| !s.is_empty());
            let run = run_field(record, "runId").or(label_run);
            previous_run = run.or(previous_run);
            let has_result_ts = record.get("tsResult").is_some_and(|t| !t.is_null());
            let text = match record.get("resultText") {
                Some(Value::String(s)) => s.to_string_lossy().into_owned(),
                None | Some(Value::Null) if has_result_ts => String::new(),
                None | Some(Value::Null) => {
                    // A call is a call: replayed, its outcome missing (docs/transcripts.md §5).
                    let id = call_id.map_or_else(String::new, |id| format!(" {id:?}"));
                    adapted.diagnostics.push(Diagnostic::new(
                        line,
                        DiagnosticKind::Unanswered,
                        format!(
                            "label {name:?}: call{id} to {tool} has no result; replayed \
                             without an outcome"
                        ),
                    ));
                    let args = record
                        .get("args")
                        .map_or_else(Value::empty_object, |a| a.clone().into_owned());
                    adapted
                        .events
                        .push(builder.call(line, run, call_id, &tool, args, ts, None));
                    continue;
                }
                Some(_) => {
                    adapted.diagnostics.push(Diagnostic::new(
                        line,
                        DiagnosticKind::BadField,
                        format!("label {name:?}: `resultText` is not a string; skipped"),
                    ));
                    continue;
                }
            };
            let args = match record.get("args") {
                Some(a) => a.clone().into_owned(),
                None => Value::empty_object(),
            };
            let payload = if record.get("isError").and_then(Value::as_bool) == Some(true) {
                Payload::Error(Value::from(text))
            } else {
                Payload::Result(text_result(&text))
            };
            let ts_result = record.get("tsResult").and_then(timestamp_ms).unwrap_or(ts);
            adapted
                .events
                .push(builder.call(line, run, call_id, &tool, args.clone(), ts, None));
            adapted
                .events
                .push(builder.outcome(line, run, call_id, &tool, args, payload, ts_result));
        }
        calls.len() as u64
    }
}

impl DocumentAdapter for CallStream {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let doc = doc.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(doc);
        // Labels in document order; a repeated label keeps its last value, in the place
        // of its first occurrence (as `JSON.parse` would).
        let mut labels: Vec<(JsString<'_>, Value<'_>)> = Vec::new();
        let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
        parse_object_entries(doc, |k, v| match index.get(k.as_wtf8()) {
            Some(&i) => labels[i].1 = v,
            None => {
                index.insert(k.as_wtf8().to_vec(), labels.len());
                labels.push((k, v));
            }
        })
        .map_err(|e| {
            let message = match e.kind {
                ParseErrorKind::ExpectedObject => {
                    "a call-stream document is a JSON object {label: {session_id, calls: [...]}}"
                        .to_string()
                }
                kind => format!("not JSON: {kind} at byte {}", e.offset + 1),
            };
            Diagnostic::new(1, DiagnosticKind::NotJson, message)
        })?;
        let mut adapted = Adapted::default();
        let mut records = 0u64;
        for (label, value) in &labels {
            records += Self::label(ctx, label, value, records + 1, &mut adapted);
        }
        Ok(adapted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn ctx() -> Context {
        Context {
            session: "s1".into(),
            agent: Some("ops".into()),
        }
    }

    #[test]
    fn a_call_becomes_a_call_and_its_outcome() {
        let doc = br#"{"L":{"session_id":"ignored","runId":"label-run","t0":1788700000000,"calls":[
            {"seq":4,"kind":"call","id":"functions.exec:0","name":" BASH ","args":{"command":"ls"},
             "ts":1788700001000,"isError":false,"resultText":"a\nb","tsResult":1788700001500,"ordinal":0}]}}"#;
        let a = CallStream.adapt(doc, &ctx()).unwrap();
        assert!(a.diagnostics.is_empty());
        let [call, outcome] = &a.events[..] else {
            panic!("{:?}", a.events)
        };
        assert_eq!(call.event.kind, EventKind::Call);
        assert_eq!(outcome.event.kind, EventKind::Outcome);
        for e in [call, outcome] {
            assert_eq!(e.line, 1);
            assert_eq!(e.event.session.as_ref().unwrap().as_str(), Some("s1/L"));
            assert_eq!(e.event.agent.as_ref().unwrap().as_str(), Some("ops"));
            // No runId on the record: the label's.
            assert_eq!(e.event.run.as_ref().unwrap().as_str(), Some("label-run"));
            assert_eq!(
                e.event.call_id.as_ref().unwrap().as_str(),
                Some("functions.exec:0")
            );
            assert_eq!(e.event.tool.as_ref().unwrap().as_str(), Some("exec"));
            assert_eq!(
                e.event.args,
                Value::parse(br#"{"command":"ls"}"#).unwrap().into_owned()
            );
        }
        assert_eq!(call.event.timestamp_ms, 1788700001000);
        assert_eq!(outcome.event.timestamp_ms, 1788700001500);
        assert_eq!(
            outcome.event.payload,
            Some(Payload::Result(text_result("a\nb")))
        );
        assert_eq!(call.event.payload, None);
    }

    #[test]
    fn errors_missing_fields_and_fallbacks() {
        let doc = br#"{"L":{"calls":[
            {"name":"read","isError":true,"resultText":"File not found","ts":"2026-09-05T15:26:58.101Z"},
            {"name":"read","args":"raw","resultText":"x"},
            {"name":"read","resultText":{"text":"x"}},
            {"name":"read"}
        ]}}"#;
        let a = CallStream.adapt(doc, &ctx()).unwrap();
        // Two calls with outcomes, and the last call (no result) alone.
        assert_eq!(a.events.len(), 5);
        assert_eq!(a.events[4].event.kind, EventKind::Call);
        assert_eq!(a.events[4].line, 4);
        assert_eq!(
            a.events[1].event.payload,
            Some(Payload::Error(Value::from("File not found")))
        );
        // No tsResult: the outcome gets the call's time.
        assert_eq!(a.events[1].event.timestamp_ms, 1788622018101);
        // No run anywhere, no id.
        assert_eq!(a.events[0].event.run, None);
        assert_eq!(a.events[0].event.call_id, None);
        // Arguments are used as they are.
        assert_eq!(a.events[2].event.args, Value::from("raw"));
        assert_eq!(a.events[2].event.timestamp_ms, 0);
        let kinds: Vec<(u64, DiagnosticKind)> =
            a.diagnostics.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (3, DiagnosticKind::BadField),
                (4, DiagnosticKind::Unanswered)
            ]
        );
    }

    #[test]
    fn a_repeated_label_keeps_its_last_value_in_its_first_place() {
        let doc = br#"{"b":{"calls":[{"name":"one","resultText":""}]},
                       "a":{"calls":[{"name":"two","resultText":""}]},
                       "b":{"calls":[{"name":"three","resultText":""}]}}"#;
        let a = CallStream.adapt(doc, &ctx()).unwrap();
        let tools: Vec<String> = a
            .events
            .iter()
            .step_by(2)
            .map(|e| e.event.tool.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(tools, ["three", "two"]);
    }

    #[test]
    fn a_bom_is_skipped_and_bad_documents_are_one_diagnostic() {
        let a = CallStream
            .adapt(b"\xEF\xBB\xBF{\"L\":{\"calls\":[]}}", &ctx())
            .unwrap();
        assert!(a.events.is_empty() && a.diagnostics.is_empty());
        let d = CallStream.adapt(b"[]", &ctx()).unwrap_err();
        assert_eq!((d.line, d.kind), (1, DiagnosticKind::NotJson));
        assert!(d.message.contains("call-stream"));
        let d = CallStream.adapt(b"{\"L\":", &ctx()).unwrap_err();
        assert!(d.message.contains("not JSON"), "{}", d.message);
        let a = CallStream.adapt(br#"{"L":5}"#, &ctx()).unwrap();
        assert_eq!(a.diagnostics[0].kind, DiagnosticKind::BadField);
    }
}
