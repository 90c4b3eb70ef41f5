//! Claude Managed Agents session events.
//!
//! A Managed Agents session is a stream of events (`GET /v1/sessions/{id}/events`, its
//! `data` list, the SSE stream's `data:` payloads, or one event per line). Tool executions
//! are `agent.tool_use` (built-in tools), `agent.mcp_tool_use` (MCP tools, with
//! `mcp_server_name`) and `agent.custom_tool_use` (the caller's tools), each with `id`,
//! `name` and `input`; their results are `agent.tool_result` (`tool_use_id`),
//! `agent.mcp_tool_result` (`mcp_tool_use_id`) and `user.custom_tool_result`
//! (`custom_tool_use_id`), with `content` blocks and `is_error`.
//!
//! All events go to the context's session (one file is one session); calls are paired with
//! their results by id and replayed in file order; MCP tools are named
//! `<mcp_server_name>.<name>`. `processed_at` is the timestamp.
//!
//! Event logs that wrap each event as `{"role", "kind", "time", "raw": {event}}` (as
//! programs that record a session's stream beside their own messages do) are read through
//! `raw`, the wrapper's `time` standing in for a missing `processed_at`.

use std::collections::HashMap;

use loopguard_core::Value;

use crate::common::{content_text, text_result};
use crate::records::{emit, records, time2, ToolRecord};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads Claude Managed Agents session events (see the module documentation).
///
/// ```
/// use loopguard_adapters::{managed_agents::ManagedAgents, Context, DocumentAdapter};
/// let doc = br#"{"data":[
///   {"type":"agent.tool_use","id":"sevt_1","name":"bash","input":{"command":"ls"},"processed_at":"2026-09-05T15:26:58.101Z"},
///   {"type":"agent.tool_result","id":"sevt_2","tool_use_id":"sevt_1","content":[{"type":"text","text":"a.txt"}],"is_error":false}]}"#;
/// let a = ManagedAgents.adapt(doc, &Context { session: "sesn_1".into(), agent: None })?;
/// assert_eq!(a.events.len(), 2);
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ManagedAgents;

const USES: [&str; 3] = [
    "agent.tool_use",
    "agent.mcp_tool_use",
    "agent.custom_tool_use",
];
const RESULTS: [(&str, &str); 3] = [
    ("agent.tool_result", "tool_use_id"),
    ("agent.mcp_tool_result", "mcp_tool_use_id"),
    ("user.custom_tool_result", "custom_tool_use_id"),
];

/// A Managed Agents session event (`agent.*`, `user.*`, `session.*`, `span.*`).
pub(crate) fn is_event(v: &Value<'_>) -> bool {
    if let Some(raw) = wrapped(v) {
        return is_event(raw);
    }
    v.get("type").and_then(Value::as_str).is_some_and(|t| {
        ["agent.", "user.", "session.", "span."]
            .iter()
            .any(|p| t.starts_with(p))
    }) && (v.get("processed_at").is_some() || v.get("id").is_some())
}

/// The event inside a `{"role", "kind", "time", "raw": {…}}` wrapper.
fn wrapped<'v, 'a>(v: &'v Value<'a>) -> Option<&'v Value<'a>> {
    let raw = v.get("raw")?;
    (raw.as_object().is_some() && (v.get("kind").is_some() || v.get("role").is_some()))
        .then_some(raw)
}

impl DocumentAdapter for ManagedAgents {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        // The SSE stream: keep the `data:` payloads.
        let text = String::from_utf8_lossy(doc);
        let sse: Vec<u8>;
        let doc = if text.lines().any(|l| l.starts_with("data:")) {
            sse = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|l| format!("{}\n", l.trim()))
                .collect::<String>()
                .into_bytes();
            &sse[..]
        } else {
            doc
        };
        let (items, mut diagnostics) = records(doc, &["data", "events"])?;
        let mut recs: Vec<ToolRecord> = Vec::new();
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (line, item) in &items {
            let e = wrapped(item).unwrap_or(item);
            if !is_event(e) {
                diagnostics.push(Diagnostic::new(
                    *line,
                    DiagnosticKind::UnknownEntry,
                    "not a Managed Agents session event (`type` agent.* / user.* / session.*): skipped",
                ));
                continue;
            }
            let ty = e.get("type").and_then(Value::as_str).unwrap_or("");
            let ts = match time2(e, "processed_at", "processed_at") {
                0 => time2(item, "time", "timestamp"),
                t => t,
            };
            if USES.contains(&ty) {
                let id = e.get("id").and_then(Value::as_str).map(str::to_string);
                let Some(name) = e.get("name").and_then(Value::as_str) else {
                    diagnostics.push(Diagnostic::new(
                        *line,
                        DiagnosticKind::BadField,
                        format!("{ty} without a `name`: skipped"),
                    ));
                    continue;
                };
                let tool = match e.get("mcp_server_name").and_then(Value::as_str) {
                    Some(server) => format!("{server}.{name}"),
                    None => name.to_string(),
                };
                if let Some(id) = &id {
                    by_id.insert(id.clone(), recs.len());
                }
                recs.push(ToolRecord {
                    session: String::new(),
                    run: None,
                    call_id: id,
                    tool,
                    args: crate::common::arguments(e.get("input")),
                    outcome: None,
                    start_ms: ts,
                    end_ms: ts,
                    order: format!("{:012}", recs.len()),
                    line: *line,
                });
            } else if let Some((_, key)) = RESULTS.iter().find(|(t, _)| *t == ty) {
                let target = e.get(key).and_then(Value::as_str);
                let Some(index) = target.and_then(|t| by_id.get(t).copied()) else {
                    diagnostics.push(Diagnostic::new(
                        *line,
                        DiagnosticKind::Orphan,
                        format!(
                            "{ty} for `{key}` {} with no tool use before it: not replayed",
                            target.unwrap_or("(missing)")
                        ),
                    ));
                    continue;
                };
                let text = e.get("content").map(content_text).unwrap_or_default();
                let rec = &mut recs[index];
                rec.end_ms = ts.max(rec.start_ms);
                rec.outcome = Some(
                    if e.get("is_error").and_then(Value::as_bool) == Some(true) {
                        Err(text)
                    } else {
                        Ok(text_result(&text))
                    },
                );
            }
        }
        let mut adapted = emit(
            recs,
            ctx,
            "a matching agent.tool_result / agent.mcp_tool_result / user.custom_tool_result",
        );
        diagnostics.append(&mut adapted.diagnostics);
        adapted.diagnostics = diagnostics;
        Ok(adapted)
    }
}
