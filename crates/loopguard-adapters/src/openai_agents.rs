//! OpenAI Agents SDK trace exports.
//!
//! The Agents SDK's tracing exports traces (`{"object":"trace","id":…,"workflow_name":…}`)
//! and spans (`{"object":"trace.span","id":…,"trace_id":…,"parent_id":…,"started_at":…,
//! "ended_at":…,"span_data":{…},"error":…}`), in batches `{"data":[…]}` (what its backend
//! exporter posts) or one per line (a custom `TracingProcessor` writing `export()`).
//! Tool executions are spans whose `span_data.type` is `function` (`name`, `input` as JSON
//! text, `output`, `mcp_data`).
//!
//! A session per trace (`<context session>/<trace_id>`), calls in start order; a span with
//! an `error` (`{message, data}`) is an error.

use loopguard_core::Value;

use crate::common::arguments;
use crate::records::{emit, records, result_of, str2, time2, time_key, ToolRecord};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads OpenAI Agents SDK trace exports (see the module documentation).
///
/// ```
/// use loopguard_adapters::{openai_agents::OpenAiAgents, Context, DocumentAdapter};
/// let doc = br#"{"data":[{"object":"trace","id":"trace_1","workflow_name":"Agent workflow"},
///   {"object":"trace.span","id":"span_1","trace_id":"trace_1","parent_id":null,
///    "started_at":"2026-09-05T15:26:58.101Z","ended_at":"2026-09-05T15:26:58.201Z",
///    "span_data":{"type":"function","name":"get_weather","input":"{\"city\":\"Paris\"}","output":"sunny"},"error":null}]}"#;
/// let a = OpenAiAgents.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAiAgents;

/// An Agents SDK trace or span export.
pub(crate) fn is_export(v: &Value<'_>) -> bool {
    matches!(
        v.get("object").and_then(Value::as_str),
        Some("trace" | "trace.span")
    ) || (v.get("span_data").is_some() && v.get("trace_id").is_some())
}

impl DocumentAdapter for OpenAiAgents {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let (items, mut diagnostics) = records(doc, &["data", "spans"])?;
        let mut recs = Vec::new();
        let mut items: Vec<(u64, Value<'static>)> = items;
        // Several `{"data":[…]}` batches, one per line: each batch's items.
        if items.iter().any(|(_, v)| v.get("data").is_some()) {
            items = items
                .into_iter()
                .flat_map(|(line, v)| match v.get("data").and_then(Value::as_array) {
                    Some(d) => d.iter().map(|i| (line, i.clone())).collect::<Vec<_>>(),
                    None => vec![(line, v)],
                })
                .collect();
        }
        for (line, item) in &items {
            if !is_export(item) {
                diagnostics.push(Diagnostic::new(
                    *line,
                    DiagnosticKind::UnknownEntry,
                    "not an Agents SDK trace or span (`object`: trace / trace.span): skipped",
                ));
                continue;
            }
            let Some(data) = item.get("span_data") else {
                continue; // a trace record
            };
            if data.get("type").and_then(Value::as_str) != Some("function") {
                continue;
            }
            let id = str2(item, "id", "span_id").map(str::to_string);
            let Some(name) = data
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            else {
                diagnostics.push(Diagnostic::new(
                    *line,
                    DiagnosticKind::BadField,
                    format!(
                        "function span {} has no `span_data.name`: skipped",
                        id.as_deref().unwrap_or("(no id)")
                    ),
                ));
                continue;
            };
            let trace = str2(item, "trace_id", "traceId").unwrap_or("no-trace-id");
            let start = time2(item, "started_at", "startedAt");
            let outcome = match item.get("error").filter(|e| !e.is_null()) {
                Some(e) => Some(Err(e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the span has an error")
                    .to_string())),
                None => data
                    .get("output")
                    .filter(|o| !o.is_null())
                    .map(|o| Ok(result_of(o))),
            };
            recs.push(ToolRecord {
                session: trace.to_string(),
                run: Some(trace.to_string()),
                call_id: id,
                tool: name.to_string(),
                args: arguments(data.get("input")),
                outcome,
                start_ms: start,
                end_ms: time2(item, "ended_at", "endedAt"),
                order: time_key(start),
                line: *line,
            });
        }
        let mut adapted = emit(recs, ctx, "Agents SDK `span_data.output`");
        diagnostics.append(&mut adapted.diagnostics);
        adapted.diagnostics = diagnostics;
        Ok(adapted)
    }
}
