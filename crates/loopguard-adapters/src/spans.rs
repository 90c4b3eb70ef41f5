//! Trace spans as tool calls: the model every trace format is read into.
//!
//! OTLP JSON ([`crate::otlp`]), flat span dumps (the Python SDK's console exporter, Arize
//! Phoenix span exports) and `loopguard serve`'s OTLP receiver (JSON and protobuf) all turn
//! their input into [`Span`]s; [`tool_span`] recognises the spans that are tool executions
//! under each telemetry convention, and [`SpanSet`] groups them into sessions and events.
//!
//! Conventions recognised ([`Convention`]):
//!
//! | convention | a tool span is | name | arguments | result |
//! |---|---|---|---|---|
//! | OpenTelemetry GenAI | `gen_ai.operation.name = execute_tool`, or a span named `execute_tool …` | `gen_ai.tool.name` | `gen_ai.tool.call.arguments` | `gen_ai.tool.call.result` |
//! | Pydantic AI / Logfire (instrumentation version 1 and 2) | a span named `running tool` | `gen_ai.tool.name` | `tool_arguments` | `tool_response` |
//! | OpenInference (Phoenix) | `openinference.span.kind = TOOL` | `tool.name` | `input.value` | `output.value` |
//! | Traceloop / OpenLLMetry | `traceloop.span.kind = tool` | `traceloop.entity.name` | `traceloop.entity.input` | `traceloop.entity.output` |
//! | Langfuse (its OpenTelemetry-based SDKs, v3 and later) | `langfuse.observation.type = tool` | the span name | `langfuse.observation.input` | `langfuse.observation.output` (`langfuse.observation.level = ERROR` is an error, with its `status_message`) |
//! | Claude Code's events (OTLP log records) | `claude_code.tool_result` (body; `event.name = tool_result`) | `tool_name` | `tool_input` (with `OTEL_LOG_TOOL_DETAILS=1`; else `tool_parameters`) | none recorded; `success = false` is an error with its `error` |
//! | Codex telemetry (OTLP log records, read as spans by [`crate::otlp`]) | `event.name = codex.tool_result` | `tool_name` | `arguments` | `output` (`success = false` is an error for tools other than shells and polls) |
//!
//! Older names are read too: `gen_ai.tool.arguments` / `gen_ai.tool.result` (drafts of the
//! GenAI conventions), and the call id from `gen_ai.tool.call.id`, `tool_call.id` or
//! `tool.id`. Arguments and results may be JSON text or structured values. A span is an
//! error when its status is ERROR or it has an `error.type`.
//!
//! Sessions: one per `gen_ai.conversation.id` (or OpenInference `session.id`, or Codex's
//! `conversation.id`) found on the tool span or one of its ancestors in the trace,
//! otherwise one per trace. Calls of a
//! session are replayed in start-time order; the run is the trace id.
//!
//! Agents with a tool profile: when the trace comes from a coding agent loopguard knows
//! ([`TraceAgent`]: Claude Code, Copilot CLI, Codex; see [`agent_of`]), its calls carry
//! the `claude-code` tool profile ([`SpanCall::profile`], [`SourcedEvent::profile`]):
//! Copilot's and Codex's shell tools and polls are first mapped onto Claude Code's `Bash`
//! and `BashOutput` as their live hooks map them (the table is in the `trace_agents`
//! source), and results are kept as the agent recorded them (JSON text parsed), so replay
//! and `serve` hash them exactly as the agent's live hook would.

use std::collections::{BTreeMap, HashMap};

use loopguard_core::Value;
use loopguard_events::Payload;

use crate::common::{parse_arguments, text_result, Builder};
pub use crate::trace_agents::{TraceAgent, VOLATILE_LINES};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, SourcedEvent};

/// One span, whatever format it came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Span {
    /// Trace id, lowercase hex when it could be decoded (as written otherwise).
    pub trace_id: String,
    /// Span id, lowercase hex when it could be decoded.
    pub span_id: String,
    /// Parent span id, when the span has one.
    pub parent_id: Option<String>,
    /// Span name.
    pub name: String,
    /// Start, in nanoseconds since the epoch (0 when unknown).
    pub start_ns: u64,
    /// End, in nanoseconds since the epoch (0 when unknown).
    pub end_ns: u64,
    /// `Some(message)` when the span's status is ERROR (the message may be empty).
    pub status_error: Option<String>,
    /// Attributes, with structured values decoded (`kvlistValue` → object, …).
    pub attributes: Vec<(String, Value<'static>)>,
    /// The resource's `service.name`.
    pub service: Option<String>,
    /// 1-based line of the input the span was read from (the record holding it).
    pub line: u64,
}

impl Span {
    /// The attribute `key`, when set.
    pub fn attr(&self, key: &str) -> Option<&Value<'static>> {
        self.attributes
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The attribute `key` when it is a non-empty string.
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attr(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// How the span is named in messages: its name, id and line.
    pub fn describe(&self) -> String {
        format!(
            "span '{}' (span id {}, line {})",
            self.name,
            if self.span_id.is_empty() {
                "none"
            } else {
                &self.span_id
            },
            self.line
        )
    }
}

/// The telemetry convention a tool span follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Convention {
    /// OpenTelemetry GenAI semantic conventions (`execute_tool`).
    GenAi,
    /// Pydantic AI / Logfire (`running tool`, `tool_arguments`, `tool_response`).
    PydanticAi,
    /// OpenInference (`openinference.span.kind = TOOL`), as Arize Phoenix records it.
    OpenInference,
    /// Traceloop / OpenLLMetry (`traceloop.span.kind = tool`).
    Traceloop,
    /// Langfuse's OpenTelemetry-based SDKs (`langfuse.observation.type = tool`).
    Langfuse,
    /// Claude Code's events: `claude_code.tool_result` log records (`tool_name`,
    /// `tool_use_id`, `tool_input`, `success`, `error`; no output).
    ClaudeCodeEvent,
    /// Codex's telemetry: `codex.tool_result` log records (`tool_name`, `call_id`,
    /// `arguments`, `output`, `success`).
    Codex,
}

impl Convention {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Convention::GenAi => "OpenTelemetry GenAI",
            Convention::PydanticAi => "Pydantic AI",
            Convention::OpenInference => "OpenInference",
            Convention::Traceloop => "Traceloop",
            Convention::Langfuse => "Langfuse",
            Convention::ClaudeCodeEvent => "Claude Code events",
            Convention::Codex => "Codex telemetry",
        }
    }

    /// The attributes holding the arguments, most current first.
    pub fn argument_keys(self) -> &'static [&'static str] {
        match self {
            Convention::GenAi => &[
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.arguments",
                "tool_arguments",
            ],
            Convention::PydanticAi => &["tool_arguments", "gen_ai.tool.call.arguments"],
            Convention::OpenInference => &["input.value"],
            Convention::Traceloop => &["traceloop.entity.input"],
            Convention::Langfuse => &["langfuse.observation.input"],
            Convention::ClaudeCodeEvent => &["tool_input", "tool_parameters"],
            Convention::Codex => &["arguments"],
        }
    }

    /// The attributes holding the result, most current first.
    pub fn result_keys(self) -> &'static [&'static str] {
        match self {
            Convention::GenAi => &[
                "gen_ai.tool.call.result",
                "gen_ai.tool.result",
                "tool_response",
            ],
            Convention::PydanticAi => &["tool_response", "gen_ai.tool.call.result"],
            Convention::OpenInference => &["output.value"],
            Convention::Traceloop => &["traceloop.entity.output"],
            Convention::Langfuse => &["langfuse.observation.output"],
            Convention::ClaudeCodeEvent => &["tool_output", "tool_result"],
            Convention::Codex => &["output"],
        }
    }
}

/// A span recognised as a tool execution.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpan<'s> {
    /// The span.
    pub span: &'s Span,
    /// The convention it follows.
    pub convention: Convention,
    /// The tool's name.
    pub tool: String,
    /// The tool call id, when recorded.
    pub call_id: Option<String>,
    /// The arguments attribute and its value, when recorded.
    pub args: Option<(&'static str, &'s Value<'static>)>,
    /// The result attribute and its value, when recorded.
    pub result: Option<(&'static str, &'s Value<'static>)>,
    /// The error, when the span failed.
    pub error: Option<String>,
}

/// The span as a tool execution, when it is one (see the module documentation).
///
/// ```
/// use loopguard_adapters::spans::{tool_span, Convention, Span};
/// use loopguard_core::Value;
/// let span = Span {
///     name: "execute_tool read".into(),
///     attributes: vec![
///         ("gen_ai.operation.name".into(), Value::from("execute_tool")),
///         ("gen_ai.tool.name".into(), Value::from("read")),
///     ],
///     ..Span::default()
/// };
/// let tool = tool_span(&span).expect("a tool span");
/// assert_eq!((tool.convention, tool.tool.as_str()), (Convention::GenAi, "read"));
/// assert!(tool.args.is_none());
/// ```
pub fn tool_span(span: &Span) -> Option<ToolSpan<'_>> {
    let convention = convention_of(span)?;
    let tool = match convention {
        Convention::GenAi | Convention::PydanticAi => span
            .attr_str("gen_ai.tool.name")
            .map(str::to_string)
            .or_else(|| {
                span.name
                    .strip_prefix("execute_tool ")
                    .map(|n| n.trim().to_string())
            }),
        Convention::OpenInference => span.attr_str("tool.name").map(str::to_string),
        Convention::Traceloop => span
            .attr_str("traceloop.entity.name")
            .map(str::to_string)
            .or_else(|| span.name.strip_suffix(".tool").map(str::to_string)),
        Convention::Codex | Convention::ClaudeCodeEvent => {
            span.attr_str("tool_name").map(str::to_string)
        }
        Convention::Langfuse => None,
    }
    .filter(|n| !n.is_empty())
    .unwrap_or_else(|| span.name.clone());
    let call_id = [
        "gen_ai.tool.call.id",
        "tool_call.id",
        "tool.id",
        "call_id",
        "tool_use_id",
    ]
    .iter()
    .find_map(|k| span.attr(k).and_then(id_text));
    let pick = |keys: &'static [&'static str]| {
        keys.iter()
            .find_map(|k| span.attr(k).filter(|v| !v.is_null()).map(|v| (*k, v)))
    };
    let error_type = span.attr_str("error.type");
    let error = match (&span.status_error, error_type) {
        (Some(m), _) if !m.is_empty() => Some(m.clone()),
        (_, Some(t)) => Some(t.to_string()),
        (Some(_), None) => Some(
            span.attr_str("exception.message")
                .unwrap_or("the span's status is ERROR")
                .to_string(),
        ),
        (None, None) if convention == Convention::Codex => codex_failure(span, &tool),
        (None, None)
            if convention == Convention::ClaudeCodeEvent
                && matches!(span.attr("success"), Some(Value::Bool(false)))
                    | span.attr_str("success").is_some_and(|v| v == "false") =>
        {
            Some(
                span.attr_str("error")
                    .unwrap_or("the tool failed (`success` is false)")
                    .to_string(),
            )
        }
        (None, None)
            if convention == Convention::Langfuse
                && span
                    .attr_str("langfuse.observation.level")
                    .is_some_and(|l| l.eq_ignore_ascii_case("error")) =>
        {
            Some(
                span.attr_str("langfuse.observation.status_message")
                    .unwrap_or("the observation's level is ERROR")
                    .to_string(),
            )
        }
        (None, None) => None,
    };
    Some(ToolSpan {
        span,
        convention,
        tool,
        call_id,
        args: pick(convention.argument_keys()),
        result: pick(convention.result_keys()),
        error,
    })
}

/// A failed Codex tool (`success` false): the output as the error, except for shells and
/// polls, whose failures are results with an exit code (as in Codex's rollouts).
fn codex_failure(span: &Span, tool: &str) -> Option<String> {
    let failed = match span.attr("success") {
        Some(Value::Bool(b)) => !b,
        Some(Value::String(s)) => s.to_string_lossy().eq_ignore_ascii_case("false"),
        _ => false,
    };
    if !failed || crate::trace_agents::is_shell_or_poll(TraceAgent::Codex, tool) {
        return None;
    }
    Some(
        span.attr_str("output")
            .unwrap_or("the tool failed (`success` is false)")
            .to_string(),
    )
}

fn id_text(v: &Value<'_>) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.to_string_lossy().into_owned()),
        Value::Number(n) if n.is_finite() => Some(n.to_string()),
        _ => None,
    }
}

fn convention_of(span: &Span) -> Option<Convention> {
    if span.name == "codex.tool_result" || span.attr_str("event.name") == Some("codex.tool_result")
    {
        return Some(Convention::Codex);
    }
    if span.name == "claude_code.tool_result" {
        return Some(Convention::ClaudeCodeEvent);
    }
    let op = span.attr_str("gen_ai.operation.name");
    if span.name == "running tool"
        || (op == Some("execute_tool")
            && (span.attr("tool_arguments").is_some() || span.attr("tool_response").is_some()))
    {
        return Some(Convention::PydanticAi);
    }
    if op == Some("execute_tool") || span.name.starts_with("execute_tool ") {
        return Some(Convention::GenAi);
    }
    if span
        .attr_str("openinference.span.kind")
        .is_some_and(|k| k.eq_ignore_ascii_case("tool"))
    {
        return Some(Convention::OpenInference);
    }
    if span
        .attr_str("traceloop.span.kind")
        .is_some_and(|k| k.eq_ignore_ascii_case("tool"))
    {
        return Some(Convention::Traceloop);
    }
    if span
        .attr_str("langfuse.observation.type")
        .is_some_and(|k| k.eq_ignore_ascii_case("tool"))
    {
        return Some(Convention::Langfuse);
    }
    None
}

/// The coding agent a tool span came from, when loopguard knows it: from the resource's
/// `service.name`, else `gen_ai.agent.name` or `gen_ai.system` on the span or an ancestor
/// (`lineage`), read by [`TraceAgent::from_service`]; a Codex `codex.tool_result` record
/// is Codex's whatever its service. `None` when the source is not a known agent: its tools
/// are then judged as given.
///
/// ```
/// use loopguard_adapters::spans::{agent_of, Span, TraceAgent};
/// let span = Span { service: Some("github-copilot".into()), ..Span::default() };
/// assert_eq!(agent_of(&span, |_| None), Some(TraceAgent::Copilot));
/// let other = Span { service: Some("my-agent".into()), ..Span::default() };
/// assert_eq!(agent_of(&other, |_| None), None);
/// ```
pub fn agent_of(span: &Span, lineage: impl Fn(&[&str]) -> Option<String>) -> Option<TraceAgent> {
    span.service
        .as_deref()
        .and_then(TraceAgent::from_service)
        .or_else(|| {
            lineage(&["gen_ai.agent.name"])
                .as_deref()
                .and_then(TraceAgent::from_service)
        })
        .or_else(|| {
            lineage(&["gen_ai.system"])
                .as_deref()
                .and_then(TraceAgent::from_service)
        })
        .or_else(|| (convention_of(span) == Some(Convention::Codex)).then_some(TraceAgent::Codex))
}

/// The tool profile (by name) of the agent a tool span came from: `claude-code` for every
/// [`TraceAgent`] (Copilot's and Codex's shell tools are mapped onto Claude Code's before
/// the profile sees them), `None` for other sources.
///
/// ```
/// use loopguard_adapters::spans::{agent_profile, Span};
/// let span = Span { service: Some("claude-code".into()), ..Span::default() };
/// assert_eq!(agent_profile(&span, |_| None), Some("claude-code"));
/// let other = Span { service: Some("my-agent".into()), ..Span::default() };
/// assert_eq!(agent_profile(&other, |_| None), None);
/// ```
pub fn agent_profile(
    span: &Span,
    lineage: impl Fn(&[&str]) -> Option<String>,
) -> Option<&'static str> {
    agent_of(span, lineage).map(|_| "claude-code")
}

/// A tool call read from a span, ready to replay or to send to a guard.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanCall {
    /// The session it belongs to (conversation id or trace id, see the module docs).
    pub session: String,
    /// The trace id (the run).
    pub trace_id: String,
    /// The agent's name (`gen_ai.agent.name`, or Pydantic AI's legacy `agent_name`, on the
    /// span or an ancestor), when known.
    pub agent: Option<String>,
    /// The resource's `service.name`.
    pub service: Option<String>,
    /// The convention the span follows.
    pub convention: Convention,
    /// The tool profile of the agent it came from, when known ([`agent_profile`]).
    pub profile: Option<&'static str>,
    /// The coding agent it came from, when known ([`agent_of`]).
    pub source_agent: Option<TraceAgent>,
    /// The `call` and, when the span recorded a result or an error, the `outcome`.
    pub events: Vec<SourcedEvent>,
}

/// A set of spans (a file, or the buffered spans of some traces) to turn into calls.
#[derive(Clone, Debug, Default)]
pub struct SpanSet {
    /// The spans, in input order.
    pub spans: Vec<Span>,
    /// Problems found while reading them.
    pub diagnostics: Vec<Diagnostic>,
}

/// How many tool spans lacked something, for the per-input note.
#[derive(Default)]
struct Missing {
    count: u64,
    first: Option<String>,
    keys: Vec<&'static str>,
}

impl Missing {
    fn add(&mut self, tool: &ToolSpan<'_>, keys: &'static [&'static str]) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(tool.span.describe());
        }
        for k in keys.iter().take(1) {
            if !self.keys.contains(k) {
                self.keys.push(k);
            }
        }
    }
}

impl SpanSet {
    /// The tool calls of the spans, session by session (sessions in the order of their
    /// first call, calls in start-time order), with notes about what was missing.
    /// `session_prefix` is put before each session's name (`<prefix>/<trace id>`) when
    /// it is not empty; `agent` overrides the agent found in the trace.
    pub fn calls(
        &self,
        session_prefix: &str,
        agent: Option<&str>,
    ) -> (Vec<SpanCall>, Vec<Diagnostic>) {
        let mut diagnostics = Vec::new();
        let by_id: HashMap<(&str, &str), &Span> = self
            .spans
            .iter()
            .filter(|s| !s.span_id.is_empty())
            .map(|s| ((s.trace_id.as_str(), s.span_id.as_str()), s))
            .collect();
        // Walks the span and its ancestors (bounded: a parent cycle must not hang).
        let lineage = |s: &Span, key: &[&str]| -> Option<String> {
            let mut cur = Some(s);
            for _ in 0..64 {
                let span = cur?;
                if let Some(v) = key.iter().find_map(|k| span.attr_str(k)) {
                    return Some(v.to_string());
                }
                cur = span
                    .parent_id
                    .as_deref()
                    .and_then(|p| by_id.get(&(span.trace_id.as_str(), p)).copied());
            }
            None
        };
        let mut no_args = Missing::default();
        let mut no_result = Missing::default();
        let mut tools: Vec<(usize, ToolSpan<'_>)> = self
            .spans
            .iter()
            .filter_map(tool_span)
            .enumerate()
            .collect();
        tools.sort_by_key(|(i, t)| (t.span.trace_id.clone(), t.span.start_ns, t.span.line, *i));
        let mut sessions: BTreeMap<String, Vec<SpanCall>> = BTreeMap::new();
        let mut first_seen: Vec<(u64, u64, String)> = Vec::new();
        for (_, t) in &tools {
            let span = t.span;
            let key = lineage(
                span,
                &["gen_ai.conversation.id", "session.id", "conversation.id"],
            )
            .unwrap_or_else(|| {
                if span.trace_id.is_empty() {
                    "no-trace-id".to_string()
                } else {
                    span.trace_id.clone()
                }
            });
            let session = if session_prefix.is_empty() {
                key
            } else {
                format!("{session_prefix}/{key}")
            };
            let trace_agent = lineage(span, &["gen_ai.agent.name", "agent_name", "agent.name"]);
            let ctx = Context {
                session: session.clone(),
                agent: agent.map(str::to_string).or_else(|| trace_agent.clone()),
            };
            let b = Builder::new(&ctx);
            let source_agent = agent_of(span, |keys| lineage(span, keys));
            let profile = source_agent.map(|_| "claude-code");
            let run = (!span.trace_id.is_empty()).then_some(span.trace_id.as_str());
            let args = match t.args {
                Some((key, v)) => span_arguments(t, key, v, &mut diagnostics),
                None => {
                    no_args.add(t, t.convention.argument_keys());
                    Value::empty_object()
                }
            };
            // Copilot's and Codex's shell tools and polls as Claude Code's (their hooks' mapping).
            let (tool_name, args) = match source_agent {
                Some(a) => crate::trace_agents::map_call(a, &t.tool, &args),
                None => (t.tool.clone(), args),
            };
            let tool_name = tool_name.as_str();
            let start_ms = span.start_ns / 1_000_000;
            let end_ms = (span.end_ns / 1_000_000).max(start_ms);
            let mut events = vec![b.call(
                span.line,
                run,
                t.call_id.as_deref(),
                tool_name,
                args.clone(),
                start_ms,
                None,
            )];
            let payload = match (&t.error, t.result) {
                (Some(e), _) => Some(Payload::Error(Value::from(e.clone()))),
                (None, Some((_, v))) if source_agent.is_some() => {
                    let agent = source_agent.unwrap_or(TraceAgent::ClaudeCode);
                    Some(Payload::Result(crate::trace_agents::map_result(
                        agent,
                        tool_name,
                        &raw_result(v),
                    )))
                }
                (None, Some((_, v))) => Some(Payload::Result(result_value(v))),
                (None, None) => {
                    no_result.add(t, t.convention.result_keys());
                    None
                }
            };
            if let Some(p) = payload {
                events.push(b.outcome(
                    span.line,
                    run,
                    t.call_id.as_deref(),
                    tool_name,
                    args,
                    p,
                    end_ms,
                ));
            }
            for e in &mut events {
                e.profile = profile;
            }
            if !sessions.contains_key(&session) {
                first_seen.push((span.start_ns, span.line, session.clone()));
            }
            sessions.entry(session.clone()).or_default().push(SpanCall {
                session,
                trace_id: span.trace_id.clone(),
                agent: trace_agent,
                service: span.service.clone(),
                convention: t.convention,
                profile,
                source_agent,
                events,
            });
        }
        for calls in sessions.values_mut() {
            calls.sort_by_key(|c| {
                let e = &c.events[0];
                (e.event.timestamp_ms, e.line)
            });
        }
        first_seen.sort();
        let mut out = Vec::new();
        for (_, _, s) in first_seen {
            out.extend(sessions.remove(&s).unwrap_or_default());
        }
        if no_args.count > 0 {
            diagnostics.push(Diagnostic::new(
                0,
                DiagnosticKind::Partial,
                format!(
                    "{} of {} tool spans have no arguments ({}; first: {}): they are judged by tool name only, as if called with {{}}",
                    no_args.count,
                    tools.len(),
                    no_args.keys.join(", "),
                    no_args.first.unwrap_or_default()
                ),
            ));
        }
        if no_result.count > 0 {
            diagnostics.push(Diagnostic::new(
                0,
                DiagnosticKind::Partial,
                format!(
                    "{} of {} tool spans have no result and no error ({}; first: {}): replayed without an outcome, so the no-progress detectors cannot judge them",
                    no_result.count,
                    tools.len(),
                    no_result.keys.join(", "),
                    no_result.first.unwrap_or_default()
                ),
            ));
        }
        (out, diagnostics)
    }

    /// The spans' tool calls as a document's events and diagnostics (see [`SpanSet::calls`]).
    pub fn adapt(self, ctx: &Context) -> Adapted {
        let (calls, notes) = self.calls(&ctx.session, ctx.agent.as_deref());
        let mut diagnostics = self.diagnostics;
        diagnostics.extend(notes);
        if calls.is_empty() && !self.spans.is_empty() {
            diagnostics.push(Diagnostic::new(
                0,
                DiagnosticKind::Partial,
                format!(
                    "{} spans read, none of them a tool execution (looked for GenAI `execute_tool`, Pydantic AI `running tool`, OpenInference TOOL, Traceloop and Langfuse tool spans, and Codex `codex.tool_result` records)",
                    self.spans.len()
                ),
            ));
        }
        Adapted {
            events: calls.into_iter().flat_map(|c| c.events).collect(),
            diagnostics,
        }
    }
}

/// The arguments of a tool span: JSON text parsed (a text that is not JSON is kept as the
/// text, with a note), structured values as they are. Traceloop's `{"args":[],
/// "kwargs":{…}}` wrapper is unwrapped to its keyword arguments.
fn span_arguments(
    t: &ToolSpan<'_>,
    key: &str,
    v: &Value<'static>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Value<'static> {
    let value = match v {
        Value::String(s) => {
            let text = s.to_string_lossy();
            let parsed = parse_arguments(&text);
            if matches!(&parsed, Value::String(p) if p.to_string_lossy() == text) {
                diagnostics.push(Diagnostic::new(
                    t.span.line,
                    DiagnosticKind::Partial,
                    format!(
                        "{}: `{key}` is not JSON; its text is used as the arguments",
                        t.span.describe()
                    ),
                ));
            }
            parsed
        }
        other => other.clone(),
    };
    if t.convention == Convention::Traceloop {
        if let (Some(Value::Array(a)), Some(kw @ Value::Object(_))) =
            (value.get("args"), value.get("kwargs"))
        {
            if a.is_empty() {
                return kw.clone();
            }
        }
    }
    value
}

/// A result as the agent recorded it, for its tool profile to map: JSON text parsed (an
/// object or array), anything else as it is.
fn raw_result(v: &Value<'static>) -> Value<'static> {
    if let Value::String(s) = v {
        let text = s.to_string_lossy();
        let t = text.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            if let Ok(parsed) = Value::parse(text.as_bytes()) {
                return parsed.into_owned();
            }
        }
    }
    v.clone()
}

/// A result in OpenClaw's content shape: text as it is, structured values as their JSON.
fn result_value(v: &Value<'static>) -> Value<'static> {
    match v {
        Value::String(s) => text_result(&s.to_string_lossy()),
        other => {
            let mut out = Vec::new();
            crate::common::write_value(&mut out, other);
            text_result(&String::from_utf8_lossy(&out))
        }
    }
}
