//! LangSmith run exports.
//!
//! LangSmith records each step of a LangChain / LangGraph agent as a run; tool executions
//! are runs with `run_type: "tool"` (`name`, `inputs`, `outputs`, `error`, `start_time`,
//! `end_time`, `trace_id`, `dotted_order`, `parent_run_id`). Read: a list of runs (JSON,
//! JSON Lines as `Client.list_runs` writes them one per line, or `{"runs":[…]}`), and runs
//! with their `child_runs` nested.
//!
//! A session per trace (`trace_id`, else the root of `dotted_order`); calls in
//! `dotted_order` (which sorts by start time within a trace), else start time. The arguments
//! are `inputs` (a lone `input` key is unwrapped, its JSON text parsed); the result is
//! `outputs` (a lone `output` key unwrapped); an `error` makes the call an error.

use loopguard_core::Value;

use crate::common::arguments;
use crate::records::{emit, id_and_name, records, result_of, str2, time2, time_key, ToolRecord};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads LangSmith run exports (see the module documentation).
///
/// ```
/// use loopguard_adapters::{langsmith::LangSmith, Context, DocumentAdapter};
/// let doc = br#"[{"id":"r1","name":"search","run_type":"tool","inputs":{"input":"{\"q\": \"x\"}"},
///   "outputs":{"output":"3 hits"},"error":null,"trace_id":"t1","dotted_order":"20260905T152658101000Zr1",
///   "start_time":"2026-09-05T15:26:58.101000"}]"#;
/// let a = LangSmith.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2);
/// assert_eq!(a.events[0].event.args, loopguard_core::Value::parse(br#"{"q":"x"}"#).unwrap());
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LangSmith;

/// A LangSmith run: a `run_type` and a `dotted_order` or `trace_id`.
pub(crate) fn is_run(v: &Value<'_>) -> bool {
    v.get("run_type").and_then(Value::as_str).is_some()
        && (v.get("dotted_order").is_some() || v.get("trace_id").is_some())
}

impl DocumentAdapter for LangSmith {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let (items, mut diagnostics) = records(doc, &["runs", "data"])?;
        let mut recs = Vec::new();
        for (line, item) in &items {
            if !is_run(item) {
                diagnostics.push(Diagnostic::new(
                    *line,
                    DiagnosticKind::UnknownEntry,
                    "not a LangSmith run (`run_type` with `trace_id` or `dotted_order`): skipped",
                ));
                continue;
            }
            run(item, *line, &mut recs, &mut diagnostics, 0);
        }
        let mut adapted = emit(recs, ctx, "LangSmith `outputs`");
        diagnostics.append(&mut adapted.diagnostics);
        adapted.diagnostics = diagnostics;
        Ok(adapted)
    }
}

/// A lone `input` / `output` key unwrapped.
fn unwrap_single<'v>(v: &'v Value<'v>, key: &str) -> &'v Value<'v> {
    match v {
        Value::Object(o) if o.len() == 1 => o.get(key).unwrap_or(v),
        _ => v,
    }
}

fn run(
    r: &Value<'_>,
    line: u64,
    recs: &mut Vec<ToolRecord>,
    diagnostics: &mut Vec<Diagnostic>,
    depth: usize,
) {
    if depth < 64 {
        for child in r.get("child_runs").and_then(Value::as_array).unwrap_or(&[]) {
            run(child, line, recs, diagnostics, depth + 1);
        }
    }
    if r.get("run_type").and_then(Value::as_str) != Some("tool") {
        return;
    }
    let Some((id, name)) = id_and_name(r, line, "tool run", diagnostics) else {
        return;
    };
    let dotted = r.get("dotted_order").and_then(Value::as_str);
    let trace = str2(r, "trace_id", "traceId")
        .map(str::to_string)
        .or_else(|| {
            // The root run's id is the last 36 characters of the first dotted segment.
            let root = dotted?.split('.').next()?;
            Some(root.get(root.len().saturating_sub(36)..)?.to_string())
        })
        .unwrap_or_else(|| "no-trace-id".to_string());
    let start = time2(r, "start_time", "startTime");
    let args = match r.get("inputs") {
        Some(inputs) => arguments(Some(unwrap_single(inputs, "input"))),
        None => arguments(None),
    };
    let outcome = match (r.get("error").and_then(Value::as_str), r.get("outputs")) {
        (Some(e), _) if !e.is_empty() => Some(Err(e.to_string())),
        (_, Some(out)) if !out.is_null() => Some(Ok(result_of(unwrap_single(out, "output")))),
        _ => None,
    };
    recs.push(ToolRecord {
        session: trace.clone(),
        run: Some(trace),
        call_id: id,
        tool: name.to_string(),
        args,
        outcome,
        start_ms: start,
        end_ms: time2(r, "end_time", "endTime"),
        order: dotted.map_or_else(|| time_key(start), str::to_string),
        line,
    });
}
