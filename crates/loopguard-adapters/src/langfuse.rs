//! Langfuse observation and trace exports.
//!
//! Langfuse records an agent's tool executions as observations of type `TOOL` (`name`,
//! `input`, `output`, `level`, `statusMessage`, `startTime`, `endTime`, `traceId`,
//! `parentObservationId`). Read: a list of observations (JSON, JSON Lines, or the public
//! API's `GET /api/public/observations` answer `{"data":[…],"meta":{…}}`), and traces with
//! their `observations` (`GET /api/public/traces/{id}`, a list of those, or
//! `{"data":[…]}`), and the trace download of Langfuse's UI and API, one object
//! `{"trace": {…}, "observations": […]}` (whose trace may repeat the same observations
//! under `trace.observations`: they are read once, from the top-level list when it is
//! there). snake_case field names (`trace_id`, `start_time`, …) are read too.
//!
//! A session per trace (`<context session>/<sessionId or traceId>`); a `TOOL` observation
//! is a call whose arguments are its `input` (JSON text parsed), its result the `output`, an
//! error when `level` is `ERROR` (the message is `statusMessage`).

use loopguard_core::Value;

use crate::common::arguments;
use crate::records::{emit, id_and_name, records, result_of, str2, time2, time_key, ToolRecord};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads Langfuse exports (see the module documentation).
///
/// ```
/// use loopguard_adapters::{langfuse::Langfuse, Context, DocumentAdapter};
/// let doc = br#"{"data":[{"id":"o1","traceId":"t1","type":"TOOL","name":"search","input":{"q":"x"},
///   "output":"3 hits","level":"DEFAULT","startTime":"2026-09-05T15:26:58.101Z"}],"meta":{"page":1}}"#;
/// let a = Langfuse.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Langfuse;

/// A Langfuse observation: a `type` among Langfuse's observation types and a trace id.
pub(crate) fn is_observation(v: &Value<'_>) -> bool {
    matches!(
        v.get("type").and_then(Value::as_str),
        Some(
            "TOOL"
                | "SPAN"
                | "GENERATION"
                | "EVENT"
                | "AGENT"
                | "CHAIN"
                | "RETRIEVER"
                | "EVALUATOR"
                | "EMBEDDING"
                | "GUARDRAIL"
        )
    ) && (v.get("traceId").is_some() || v.get("trace_id").is_some())
}

/// A Langfuse trace download: `{"trace": {id, …}, "observations": […]}`.
pub(crate) fn is_trace_download(v: &Value<'_>) -> bool {
    v.get("trace").is_some_and(|t| t.get("id").is_some())
        && matches!(v.get("observations"), Some(Value::Array(_)))
}

/// A Langfuse trace holding its observations.
pub(crate) fn is_trace(v: &Value<'_>) -> bool {
    if is_trace_download(v) {
        return true;
    }
    matches!(v.get("observations"), Some(Value::Array(o)) if o.iter().any(is_observation) || o.is_empty())
        && v.get("id").is_some()
}

impl DocumentAdapter for Langfuse {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let (items, mut diagnostics) = records(doc, &["data"])?;
        let mut recs = Vec::new();
        for (line, item) in &items {
            if is_trace(item) {
                let trace = match item.get("trace") {
                    Some(t) if is_trace_download(item) => t,
                    _ => item,
                };
                let session = str2(trace, "sessionId", "session_id")
                    .or_else(|| trace.get("id").and_then(Value::as_str))
                    .map(str::to_string);
                for o in item
                    .get("observations")
                    .and_then(Value::as_array)
                    .unwrap_or(&[])
                {
                    observation(o, *line, session.as_deref(), &mut recs, &mut diagnostics);
                }
            } else if is_observation(item) {
                observation(item, *line, None, &mut recs, &mut diagnostics);
            } else {
                diagnostics.push(Diagnostic::new(
                    *line,
                    DiagnosticKind::UnknownEntry,
                    "neither a Langfuse observation (`type`, `traceId`) nor a trace with `observations`: skipped",
                ));
            }
        }
        let mut adapted = emit(recs, ctx, "Langfuse `output`");
        diagnostics.append(&mut adapted.diagnostics);
        adapted.diagnostics = diagnostics;
        Ok(adapted)
    }
}

fn observation(
    o: &Value<'_>,
    line: u64,
    session: Option<&str>,
    recs: &mut Vec<ToolRecord>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if o.get("type").and_then(Value::as_str) != Some("TOOL") {
        return;
    }
    let Some((id, name)) = id_and_name(o, line, "TOOL observation", diagnostics) else {
        return;
    };
    let trace = str2(o, "traceId", "trace_id").unwrap_or("no-trace-id");
    let start = time2(o, "startTime", "start_time");
    let outcome = if o.get("level").and_then(Value::as_str) == Some("ERROR") {
        Some(Err(str2(o, "statusMessage", "status_message")
            .unwrap_or("the observation's level is ERROR")
            .to_string()))
    } else {
        o.get("output")
            .filter(|v| !v.is_null())
            .map(|v| Ok(result_of(v)))
    };
    recs.push(ToolRecord {
        session: session.unwrap_or(trace).to_string(),
        run: Some(trace.to_string()),
        call_id: id,
        tool: name.to_string(),
        args: arguments(o.get("input")),
        outcome,
        start_ms: start,
        end_ms: time2(o, "endTime", "end_time"),
        order: time_key(start),
        line,
    });
}
