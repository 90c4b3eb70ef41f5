//! ATIF trajectories (Harbor's Agent Trajectory Interchange Format, `ATIF-v1.x`).
//!
//! A trajectory is `{"schema_version":"ATIF-v1.…","session_id":…,"agent":{…},"steps":[…]}`;
//! an agent step lists its `tool_calls` (`tool_call_id`, `function_name`, `arguments`) and
//! its `observation.results` (`source_call_id`, `content`), pairing each result with its
//! call by id. Embedded `subagent_trajectories` are sessions of their own. A JSON Lines
//! file of trajectories is read one per line.
//!
//! The session is `<context session>/<session_id>`; the run is the session id; the line is
//! the step's 1-based position (the record number for JSON Lines). A call whose result is
//! missing is replayed without an outcome (noted). ATIF has no error flag of its own: a
//! result whose `extra` says `"is_error": true` or `"success": false` is an error.

use loopguard_core::Value;

use crate::common::{arguments, content_text, text_result};
use crate::records::{emit, records, str2, time2, ToolRecord};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads ATIF trajectories (see the module documentation).
///
/// ```
/// use loopguard_adapters::{atif::Atif, Context, DocumentAdapter};
/// let doc = br#"{"schema_version":"ATIF-v1.4","session_id":"s1","agent":{"name":"a","version":"1"},
///   "steps":[{"step_id":1,"source":"agent","message":"","tool_calls":[{"tool_call_id":"c1","function_name":"shell",
///   "arguments":{"cmd":"ls"}}],"observation":{"results":[{"source_call_id":"c1","content":"a.txt"}]}}]}"#;
/// let a = Atif.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Atif;

/// An ATIF trajectory: an `ATIF-…` schema version, or `steps` whose items have `source`
/// and `step_id`.
pub(crate) fn is_trajectory(v: &Value<'_>) -> bool {
    if v.get("schema_version")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("ATIF"))
    {
        return true;
    }
    matches!(v.get("steps"), Some(Value::Array(s)) if s.iter().any(|st| st.get("source").is_some() && st.get("step_id").is_some()))
}

impl DocumentAdapter for Atif {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let (items, mut diagnostics) = records(doc, &[])?;
        let jsonl = items.len() > 1;
        let mut recs = Vec::new();
        for (line, item) in &items {
            if !is_trajectory(item) {
                diagnostics.push(Diagnostic::new(
                    *line,
                    DiagnosticKind::UnknownEntry,
                    "not an ATIF trajectory (`schema_version` ATIF-…, `steps`): skipped",
                ));
                continue;
            }
            trajectory(item, jsonl.then_some(*line), &mut recs, &mut diagnostics, 0);
        }
        let mut adapted = emit(recs, ctx, "ATIF `observation.results`");
        diagnostics.append(&mut adapted.diagnostics);
        adapted.diagnostics = diagnostics;
        Ok(adapted)
    }
}

fn trajectory(
    t: &Value<'_>,
    record: Option<u64>,
    recs: &mut Vec<ToolRecord>,
    diagnostics: &mut Vec<Diagnostic>,
    depth: usize,
) {
    let session = str2(t, "session_id", "trajectory_id")
        .unwrap_or("trajectory")
        .to_string();
    for (i, step) in t
        .get("steps")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let line = record.unwrap_or(i as u64 + 1);
        let ts = time2(step, "timestamp", "timestamp");
        let results = step
            .get("observation")
            .and_then(|o| o.get("results"))
            .and_then(Value::as_array)
            .unwrap_or(&[]);
        for (j, call) in step
            .get("tool_calls")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let id = call.get("tool_call_id").and_then(Value::as_str);
            let Some(name) = call.get("function_name").and_then(Value::as_str) else {
                diagnostics.push(Diagnostic::new(
                    line,
                    DiagnosticKind::BadField,
                    format!(
                        "step {}: tool_calls[{j}] has no `function_name`: skipped",
                        i + 1
                    ),
                ));
                continue;
            };
            // The result with this call's id; without ids, the result at the same place.
            let result = match id {
                Some(id) => results
                    .iter()
                    .find(|r| r.get("source_call_id").and_then(Value::as_str) == Some(id)),
                None => results.get(j),
            };
            let outcome = result.map(|r| {
                let extra = r.get("extra");
                let failed = extra.is_some_and(|e| {
                    e.get("is_error").and_then(Value::as_bool) == Some(true)
                        || e.get("success").and_then(Value::as_bool) == Some(false)
                });
                let text = r.get("content").map(content_text).unwrap_or_default();
                if failed {
                    Err(text)
                } else {
                    Ok(text_result(&text))
                }
            });
            recs.push(ToolRecord {
                session: session.clone(),
                run: Some(session.clone()),
                call_id: id.map(str::to_string),
                tool: name.to_string(),
                args: arguments(call.get("arguments")),
                outcome,
                start_ms: ts,
                end_ms: ts,
                order: format!("{:010}-{:06}", i, j),
                line,
            });
        }
    }
    if depth < 16 {
        for sub in t
            .get("subagent_trajectories")
            .and_then(Value::as_array)
            .unwrap_or(&[])
        {
            trajectory(sub, record, recs, diagnostics, depth + 1);
        }
    }
}
