//! What the trace-export formats share: reading their records (JSON Lines, one list, or a
//! list inside an API answer) and turning tool records into sessions of events.

use std::collections::HashMap;

use loopguard_core::Value;
use loopguard_events::Payload;

use crate::common::{text_result, Builder};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, SourcedEvent};

/// The records of a document with their numbers: one per line for JSON Lines (the line
/// number), else the items of the top-level list, or of the list under one of `list_keys`
/// in the top-level object (API answers: `{"data":[…]}`), numbered from 1; a single object
/// is record 1.
/// Numbered records and the diagnostics of the parts that were not JSON.
pub(crate) type Records = (Vec<(u64, Value<'static>)>, Vec<Diagnostic>);

pub(crate) fn records(doc: &[u8], list_keys: &[&str]) -> Result<Records, Diagnostic> {
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    let parts = crate::otlp::split_values(doc);
    if parts.is_empty() {
        return Err(Diagnostic::new(
            1,
            DiagnosticKind::NotJson,
            "the input is empty",
        ));
    }
    let mut values = Vec::new();
    for (line, part) in &parts {
        match loopguard_core::json::parse(part) {
            Ok(v) => values.push((*line, v.into_owned())),
            Err(e) => diagnostics.push(Diagnostic::new(
                *line,
                DiagnosticKind::NotJson,
                format!(
                    "not JSON: {} at byte {} of this record",
                    e.kind,
                    e.offset + 1
                ),
            )),
        }
    }
    if values.is_empty() {
        return Err(diagnostics.remove(0));
    }
    if values.len() > 1 {
        return Ok((values, diagnostics));
    }
    let (_, v) = values.remove(0);
    let list = match &v {
        Value::Array(items) => Some(items.clone()),
        Value::Object(_) => list_keys
            .iter()
            .find_map(|k| v.get(k).and_then(Value::as_array).map(<[Value]>::to_vec)),
        _ => None,
    };
    match list {
        Some(items) => out.extend(
            items
                .into_iter()
                .enumerate()
                .map(|(i, r)| (i as u64 + 1, r)),
        ),
        None => out.push((1, v)),
    }
    Ok((out, diagnostics))
}

/// One tool execution read from an export.
#[derive(Clone, Debug)]
pub(crate) struct ToolRecord {
    /// Session key (a trace id, a conversation id, …), put after the context's session.
    pub session: String,
    pub run: Option<String>,
    pub call_id: Option<String>,
    pub tool: String,
    pub args: Value<'static>,
    /// `Ok(result)`, `Err(error message)`, or `None` when not recorded.
    pub outcome: Option<Result<Value<'static>, String>>,
    pub start_ms: u64,
    pub end_ms: u64,
    /// Sort key within the session (start time, or a dotted order), then the line.
    pub order: String,
    pub line: u64,
}

/// A result value in OpenClaw's content shape: text as it is, other values as their JSON.
pub(crate) fn result_of(v: &Value<'_>) -> Value<'static> {
    match v {
        Value::String(s) => text_result(&s.to_string_lossy()),
        other => {
            let mut out = Vec::new();
            crate::common::write_value(&mut out, other);
            text_result(&String::from_utf8_lossy(&out))
        }
    }
}

/// The events of tool records, session by session (in the order sessions first appear),
/// each session's calls sorted by `order` then line; with a note when some records had no
/// result (`what` names the field that would hold it).
pub(crate) fn emit(mut recs: Vec<ToolRecord>, ctx: &Context, what: &str) -> Adapted {
    let mut adapted = Adapted::default();
    let mut first: HashMap<String, usize> = HashMap::new();
    for (i, r) in recs.iter().enumerate() {
        first.entry(r.session.clone()).or_insert(i);
    }
    recs.sort_by(|a, b| {
        (first[&a.session], &a.order, a.line).cmp(&(first[&b.session], &b.order, b.line))
    });
    let mut missing = 0u64;
    let mut first_missing = None;
    let total = recs.len();
    for r in recs {
        let session = if ctx.session.is_empty() {
            r.session.clone()
        } else if r.session.is_empty() {
            ctx.session.clone()
        } else {
            format!("{}/{}", ctx.session, r.session)
        };
        let b = Builder::new(&Context {
            session,
            agent: ctx.agent.clone(),
        });
        let run = r.run.as_deref();
        let id = r.call_id.as_deref();
        adapted
            .events
            .push(b.call(r.line, run, id, &r.tool, r.args.clone(), r.start_ms, None));
        let payload = match r.outcome {
            Some(Ok(v)) => Some(Payload::Result(v)),
            Some(Err(e)) => Some(Payload::Error(Value::from(e))),
            None => {
                missing += 1;
                first_missing.get_or_insert(r.line);
                None
            }
        };
        if let Some(p) = payload {
            let event: SourcedEvent = b.outcome(
                r.line,
                run,
                id,
                &r.tool,
                r.args,
                p,
                r.end_ms.max(r.start_ms),
            );
            adapted.events.push(event);
        }
    }
    if missing > 0 {
        adapted.diagnostics.push(Diagnostic::new(
            0,
            DiagnosticKind::Partial,
            format!(
                "{missing} of {total} tool calls have no result and no error ({what}; first at record/line {}): replayed without an outcome, so the no-progress detectors cannot judge them",
                first_missing.unwrap_or(0)
            ),
        ));
    }
    adapted
}

/// A tool record's `id` and `name`. A record without a name cannot be replayed: it gets a
/// diagnostic naming it (`what`, e.g. "TOOL observation") and its id, and `None`.
pub(crate) fn id_and_name<'v>(
    v: &'v Value<'_>,
    line: u64,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(Option<String>, &'v str)> {
    let id = v.get("id").and_then(Value::as_str).map(str::to_string);
    match v
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(name) => Some((id, name)),
        None => {
            diagnostics.push(Diagnostic::new(
                line,
                DiagnosticKind::BadField,
                format!(
                    "{what} {} has no `name`: skipped",
                    id.as_deref().unwrap_or("(no id)")
                ),
            ));
            None
        }
    }
}

/// A string field under either name.
pub(crate) fn str2<'v>(v: &'v Value<'_>, a: &str, b: &str) -> Option<&'v str> {
    v.get(a)
        .or_else(|| v.get(b))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// A time field under either name, in milliseconds (0 when absent or unreadable).
pub(crate) fn time2(v: &Value<'_>, a: &str, b: &str) -> u64 {
    v.get(a)
        .or_else(|| v.get(b))
        .and_then(crate::common::timestamp_ms)
        .or_else(|| {
            // Timestamps without an offset (LangSmith, Phoenix) are UTC.
            let s = v.get(a).or_else(|| v.get(b))?.as_str()?;
            crate::common::parse_rfc3339(&format!("{s}Z"))
        })
        .unwrap_or(0)
}

/// A sort key from a time in milliseconds (zero-padded, so it sorts as text).
pub(crate) fn time_key(ms: u64) -> String {
    format!("{ms:020}")
}
