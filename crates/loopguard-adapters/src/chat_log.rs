//! Wrapped chat logs: a JSON array of records, each holding a Chat Completions message list.
//!
//! Evaluation harnesses store one session per record: tau-bench's results file is
//! `[{"task_id":0,"reward":1.0,"info":{…},"traj":[messages],"trial":0}, …]`, others use
//! `messages`, `history` or `conversation`. Each record is a session of its own, named
//! `<file>/<id>` after its first id field (`task_id`, `id`, `instance_id`, `session_id`,
//! `conversation_id`; with `trial` when the record has one, `#<n>` when an id repeats) or
//! its 1-based index. Messages are read as [`crate::chat_completions`] reads them
//! (`tool_calls` and `tool` messages); a record whose messages carry Anthropic content
//! blocks (`tool_use` / `tool_result`) is read as [`crate::anthropic`] reads them. `line` is
//! the record's 1-based index.

use std::collections::HashMap;

use loopguard_core::Value;

use crate::chat_completions::ChatState;
use crate::common::document_error;
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// The keys a record's message list may be under, in the order they are tried.
pub const MESSAGE_KEYS: &[&str] = &["traj", "messages", "history", "conversation"];

/// The keys naming a record, in the order they are tried.
const ID_KEYS: &[&str] = &[
    "task_id",
    "id",
    "instance_id",
    "session_id",
    "conversation_id",
];

/// The message list of a record, when it has one of [`MESSAGE_KEYS`] holding messages.
pub(crate) fn record_messages<'v>(r: &'v Value<'v>) -> Option<&'v [Value<'v>]> {
    MESSAGE_KEYS.iter().find_map(|k| match r.get(k) {
        Some(Value::Array(items)) if items.iter().any(|m| m.get("role").is_some()) => {
            Some(items.as_slice())
        }
        _ => None,
    })
}

fn id_text(v: &Value<'_>) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.to_string_lossy().into_owned()),
        Value::Number(n) if n.is_finite() => Some(n.to_string()),
        _ => None,
    }
}

/// A wrapped chat log (see the module documentation).
///
/// ```
/// use loopguard_adapters::{chat_log::ChatLog, Context, DocumentAdapter};
/// let doc = br##"[{"task_id":3,"trial":0,"reward":0.0,"traj":[
///   {"role":"user","content":"cancel my order"},
///   {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"#W1\"}"}}]},
///   {"role":"tool","tool_call_id":"c1","name":"get_order","content":"{}"}]}]"##;
/// let a = ChatLog.adapt(doc, &Context { session: "results".into(), agent: None })?;
/// assert_eq!(a.events.len(), 2);
/// assert_eq!(a.events[0].event.session.as_ref().and_then(|s| s.as_str()), Some("results/3-trial0"));
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ChatLog;

impl DocumentAdapter for ChatLog {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
        let records: Vec<&Value<'_>> = match &value {
            Value::Array(items) => items.iter().collect(),
            Value::Object(_) => vec![&value],
            _ => return Err(bad(1, "expected an array of records")),
        };
        let mut adapted = Adapted::default();
        let mut names: HashMap<String, usize> = HashMap::new();
        for (i, r) in records.into_iter().enumerate() {
            let no = i as u64 + 1;
            let Some(messages) = record_messages(r) else {
                adapted.diagnostics.push(bad(
                    no,
                    format!(
                        "record {no}: no message list under {}",
                        MESSAGE_KEYS.join(", ")
                    ),
                ));
                continue;
            };
            let mut id = ID_KEYS
                .iter()
                .find_map(|k| r.get(k).and_then(id_text))
                .unwrap_or_else(|| no.to_string());
            if let Some(trial) = r.get("trial").and_then(id_text) {
                id = format!("{id}-trial{trial}");
            }
            let seen = names.entry(id.clone()).or_default();
            *seen += 1;
            if *seen > 1 {
                id = format!("{id}#{seen}");
            }
            let session = if ctx.session.is_empty() {
                id
            } else {
                format!("{}/{id}", ctx.session)
            };
            let rctx = Context {
                session,
                agent: ctx.agent.clone(),
            };
            if messages.iter().any(crate::anthropic::has_tool_blocks) {
                // Anthropic content blocks: read the list as Messages.
                let mut out = Vec::new();
                crate::common::write_value(&mut out, &Value::Array(messages.to_vec()));
                let mut a = crate::anthropic::AnthropicMessages.adapt(&out, &rctx)?;
                for e in &mut a.events {
                    e.line = no;
                }
                for d in &mut a.diagnostics {
                    d.line = no;
                }
                adapted.events.extend(a.events);
                adapted.diagnostics.extend(a.diagnostics);
                continue;
            }
            let mut state = ChatState::new(&rctx);
            for m in messages {
                if let Err(d) = state.message(no, m, &mut adapted.events) {
                    adapted.diagnostics.push(d);
                }
            }
            adapted
                .diagnostics
                .extend(state.tracker.finish(&mut adapted.events));
        }
        adapted.diagnostics.sort_by_key(|d| d.line);
        Ok(adapted)
    }
}

fn bad(no: u64, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(no, DiagnosticKind::BadField, message)
}
