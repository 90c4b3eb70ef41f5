//! OpenTelemetry traces as JSON: OTLP JSON and flat span dumps.
//!
//! Read, in one file or mixed:
//! * OTLP JSON `TracesData` / `ExportTraceServiceRequest` (`{"resourceSpans":[…]}`): one
//!   per line (the Collector's `file` exporter, the SDKs' file exporters), one
//!   pretty-printed document, several pretty-printed documents one after the other, or a
//!   JSON array of them;
//! * bare `ResourceSpans` (`{"resource":…,"scopeSpans":[…]}`) and `ScopeSpans`
//!   (`{"scope":…,"spans":[…]}`), as some tools write them;
//! * flat spans (`{"name":…,"context":{"trace_id":…,"span_id":…},"attributes":{…}}`): the
//!   Python SDK's `ConsoleSpanExporter` and Arize Phoenix span exports (whose attributes
//!   are nested objects, read as dotted keys);
//! * OTLP JSON logs (`{"resourceLogs":[{"scopeLogs":[{"logRecords":[…]}]}]}`), for the
//!   agents that record their tool calls as log events rather than spans (Codex's
//!   `codex.tool_result`): each log record is read as a span named after its `event.name`
//!   (or `eventName`), ending at its `timeUnixNano` (else `observedTimeUnixNano`, else the
//!   `event.timestamp` attribute) and starting `duration_ms` earlier.
//!
//! Field names may be camelCase (the OTLP/JSON mapping) or snake_case (protobuf field
//! names); ids hex (OTLP/JSON), base64 (protobuf's generic JSON mapping) or `0x`-prefixed
//! hex (the console exporter); 64-bit integers as strings or numbers; enums as numbers or
//! names (`2`, `"STATUS_CODE_ERROR"`). The spans become calls as [`crate::spans`] says.
//! An event's `line` is the line the record holding its span starts on.

use base64::Engine;
use loopguard_core::{JsString, Object, Value};

use crate::common::parse_rfc3339;
use crate::spans::{Span, SpanSet};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// Reads OTLP JSON and flat span dumps (see the module documentation).
///
/// ```
/// use loopguard_adapters::{otlp::OtlpJson, Context, DocumentAdapter};
/// let doc = br#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"bot"}}]},
///   "scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
///   "name":"execute_tool read","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000",
///   "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},
///                 {"key":"gen_ai.tool.name","value":{"stringValue":"read"}},
///                 {"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\"path\":\"/a\"}"}},
///                 {"key":"gen_ai.tool.call.result","value":{"stringValue":"hello"}}]}]}]}]}"#;
/// let a = OtlpJson.adapt(doc, &Context::default())?;
/// assert_eq!(a.events.len(), 2); // the call and its outcome
/// assert_eq!(a.events[0].event.session.as_ref().and_then(|s| s.as_str()), Some("5b8efff798038103d269b633813fc60c"));
/// # Ok::<(), loopguard_adapters::Diagnostic>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OtlpJson;

impl DocumentAdapter for OtlpJson {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let set = read_spans(doc)?;
        Ok(set.adapt(ctx))
    }
}

/// Reads every span of an OTLP JSON (or flat span) input. Fails only when the input holds
/// no JSON value at all; a record that cannot be read is a diagnostic naming its line.
pub fn read_spans(doc: &[u8]) -> Result<SpanSet, Diagnostic> {
    let mut set = SpanSet::default();
    let mut values = 0;
    for (line, part) in split_values(doc) {
        match loopguard_core::json::parse(part) {
            Ok(v) => {
                values += 1;
                record(&v, line, &mut set);
            }
            Err(e) => set.diagnostics.push(Diagnostic::new(
                line,
                DiagnosticKind::NotJson,
                format!(
                    "not JSON: {} at byte {} of this record",
                    e.kind,
                    e.offset + 1
                ),
            )),
        }
    }
    if values == 0 {
        return Err(set.diagnostics.into_iter().next().unwrap_or_else(|| {
            Diagnostic::new(1, DiagnosticKind::NotJson, "no JSON value in the input")
        }));
    }
    Ok(set)
}

/// Reads the spans of one OTLP JSON value (a request body, say) into `set`, as line `line`.
pub fn read_value(v: &Value<'_>, line: u64, set: &mut SpanSet) {
    record(v, line, set);
}

/// The top-level JSON values of `doc` with the line each starts on: JSON Lines, several
/// pretty-printed values back to back, or one document. Text between values that is not
/// JSON becomes a part of its own (reported as not JSON by the caller).
pub(crate) fn split_values(doc: &[u8]) -> Vec<(u64, &[u8])> {
    let doc = doc.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(doc);
    // JSON Lines (the first line is a whole value): line by line, so a line cut off in
    // the middle of a string costs that line only.
    let mut lines = doc.split(|b| *b == b'\n').enumerate();
    if lines
        .find(|(_, l)| !l.trim_ascii().is_empty())
        .is_some_and(|(_, l)| loopguard_core::json::parse(l.trim_ascii()).is_ok())
    {
        return doc
            .split(|b| *b == b'\n')
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.trim_ascii()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
    }
    let mut parts = Vec::new();
    let mut line = 1u64;
    let mut i = 0;
    while i < doc.len() {
        let b = doc[i];
        if b == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let start_line = line;
        if b == b'{' || b == b'[' {
            let mut depth = 0usize;
            let mut in_string = false;
            let mut escaped = false;
            while i < doc.len() {
                let c = doc[i];
                if c == b'\n' {
                    line += 1;
                }
                if in_string {
                    match c {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'"' => in_string = false,
                        _ => {}
                    }
                } else {
                    match c {
                        b'"' => in_string = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                i += 1;
            }
        } else {
            // Not a value's start: the rest of the line is one bad part.
            while i < doc.len() && doc[i] != b'\n' {
                i += 1;
            }
        }
        parts.push((start_line, &doc[start..i]));
    }
    parts
}

/// Field `a` (camelCase) or `b` (snake_case).
fn field<'v, 'a>(v: &'v Value<'a>, a: &str, b: &str) -> Option<&'v Value<'a>> {
    v.get(a).or_else(|| v.get(b))
}

fn record(v: &Value<'_>, line: u64, set: &mut SpanSet) {
    match v {
        Value::Array(items) => {
            for item in items {
                record(item, line, set);
            }
        }
        Value::Object(_) => {
            if let Some(rs) = field(v, "resourceSpans", "resource_spans") {
                each(Some(rs), line, set, "resourceSpans", |v, set| {
                    resource_spans(v, line, set)
                });
            } else if let Some(rl) = field(v, "resourceLogs", "resource_logs") {
                each(Some(rl), line, set, "resourceLogs", |v, set| {
                    resource_logs(v, line, set)
                });
            } else if field(v, "scopeLogs", "scope_logs").is_some() {
                resource_logs(v, line, set);
            } else if field(v, "scopeSpans", "scope_spans").is_some()
                || field(
                    v,
                    "instrumentationLibrarySpans",
                    "instrumentation_library_spans",
                )
                .is_some()
            {
                resource_spans(v, line, set);
            } else if v.get("spans").is_some() && v.get("name").is_none() {
                scope_spans(v, line, None, set);
            } else if v.get("name").is_some()
                && (v.get("context").is_some()
                    || field(v, "traceId", "trace_id").is_some()
                    || v.get("attributes").is_some())
            {
                span(v, line, None, set);
            } else if v.as_object().is_some_and(|o| {
                !o.is_empty() && o.iter().all(|(_, x)| matches!(x, Value::Array(_)))
            }) {
                // Phoenix: named lists of spans (`{"<trace name>": [spans…]}`).
                for (_, list) in v.as_object().into_iter().flat_map(Object::iter) {
                    record(list, line, set);
                }
            } else {
                set.diagnostics.push(Diagnostic::new(
                    line,
                    DiagnosticKind::UnknownEntry,
                    "a JSON object that is neither OTLP (`resourceSpans`, `scopeSpans`, `resourceLogs`) nor a span (`name` with `context` or `traceId`): skipped",
                ));
            }
        }
        _ => set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::UnknownEntry,
            "a JSON value that is not an object: skipped",
        )),
    }
}

/// Calls `f` for each item of a list field; a missing or null field is an empty list, and
/// anything else is reported (naming the field) and skipped.
fn each<'a>(
    list: Option<&Value<'a>>,
    line: u64,
    set: &mut SpanSet,
    what: &str,
    mut f: impl FnMut(&Value<'a>, &mut SpanSet),
) {
    match list {
        Some(Value::Array(items)) => items.iter().for_each(|i| f(i, set)),
        None | Some(Value::Null) => {}
        Some(_) => set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::BadField,
            format!("`{what}` is not a list: skipped"),
        )),
    }
}

fn resource_spans(rs: &Value<'_>, line: u64, set: &mut SpanSet) {
    let service = resource_service(rs, line, set);
    let scopes = field(rs, "scopeSpans", "scope_spans").or_else(|| {
        field(
            rs,
            "instrumentationLibrarySpans",
            "instrumentation_library_spans",
        )
    });
    each(scopes, line, set, "scopeSpans", |ss, set| {
        scope_spans(ss, line, service.as_deref(), set)
    });
}

fn scope_spans(ss: &Value<'_>, line: u64, service: Option<&str>, set: &mut SpanSet) {
    each(ss.get("spans"), line, set, "spans", |s, set| {
        span(s, line, service, set)
    });
}

fn resource_service(r: &Value<'_>, line: u64, set: &mut SpanSet) -> Option<String> {
    r.get("resource")
        .and_then(|r| r.get("attributes"))
        .map(|a| attributes(a, line, &mut set.diagnostics))
        .and_then(|attrs| {
            attrs
                .into_iter()
                .rev()
                .find(|(k, _)| k == "service.name")
                .and_then(|(_, v)| v.as_str().map(str::to_string))
        })
}

fn resource_logs(rl: &Value<'_>, line: u64, set: &mut SpanSet) {
    let service = resource_service(rl, line, set);
    each(
        field(rl, "scopeLogs", "scope_logs"),
        line,
        set,
        "scopeLogs",
        |scope, set| {
            each(
                field(scope, "logRecords", "log_records"),
                line,
                set,
                "logRecords",
                |r, set| log_record(r, line, service.as_deref(), set),
            )
        },
    );
}

/// Reads one OTLP log record as a span (see the module documentation).
fn log_record(r: &Value<'_>, line: u64, service: Option<&str>, set: &mut SpanSet) {
    if !matches!(r, Value::Object(_)) {
        set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::BadField,
            "a log record that is not an object: skipped",
        ));
        return;
    }
    let attrs = r
        .get("attributes")
        .map(|a| attributes(a, line, &mut set.diagnostics))
        .unwrap_or_default();
    let event_name = field(r, "eventName", "event_name").and_then(Value::as_str);
    let body = r
        .get("body")
        .and_then(|b| b.get("stringValue").or_else(|| b.get("string_value")))
        .and_then(Value::as_str);
    let name = log_name(&attrs, event_name, body);
    let what = format!("log record '{name}' at line {line}");
    // Logs outside a span carry empty ids: not a problem, the session comes from
    // `conversation.id` then.
    let mut trace_id = String::new();
    if let Some(v) = field(r, "traceId", "trace_id").filter(|v| v.as_str() != Some("")) {
        trace_id = decode_id(v, 16, "traceId", &what, line, &mut set.diagnostics);
    }
    let mut span_id = String::new();
    if let Some(v) = field(r, "spanId", "span_id").filter(|v| v.as_str() != Some("")) {
        span_id = decode_id(v, 8, "spanId", &what, line, &mut set.diagnostics);
    }
    let out = log_record_span(LogRecord {
        service: service.map(str::to_string),
        trace_id,
        span_id,
        time_ns: time_ns(field(r, "timeUnixNano", "time_unix_nano")),
        observed_ns: time_ns(field(r, "observedTimeUnixNano", "observed_time_unix_nano")),
        event_name,
        body,
        attributes: attrs,
        line,
    });
    if out.end_ns == 0 && out.name == "codex.tool_result" {
        set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::Partial,
            format!("{what}: no readable time; ordered by its place in the input"),
        ));
    }
    set.spans.push(out);
}

/// The record's event name: its `event.name` attribute, else `eventName`; a short name
/// that the body qualifies (Claude Code: `event.name = tool_result`, body
/// `claude_code.tool_result`) is the body.
fn log_name(
    attrs: &[(String, Value<'static>)],
    event_name: Option<&str>,
    body: Option<&str>,
) -> String {
    let name = attrs
        .iter()
        .rev()
        .find(|(k, _)| k == "event.name")
        .and_then(|(_, v)| v.as_str())
        .filter(|s| !s.is_empty())
        .or(event_name.filter(|s| !s.is_empty()))
        .unwrap_or("log record");
    match body {
        Some(b)
            if !name.contains('.') && b.strip_suffix(name).is_some_and(|p| p.ends_with('.')) =>
        {
            b.to_string()
        }
        _ => name.to_string(),
    }
}

/// An OTLP log record, decoded (from JSON here, from protobuf by `loopguard serve`).
#[derive(Clone, Debug, Default)]
pub struct LogRecord<'a> {
    /// The resource's `service.name`.
    pub service: Option<String>,
    /// Trace id, lowercase hex (empty when the record is outside a trace).
    pub trace_id: String,
    /// Span id, lowercase hex (empty when none).
    pub span_id: String,
    /// `timeUnixNano` (0 when unset).
    pub time_ns: u64,
    /// `observedTimeUnixNano` (0 when unset).
    pub observed_ns: u64,
    /// The record's `eventName` field, when set.
    pub event_name: Option<&'a str>,
    /// The record's body, when it is a string.
    pub body: Option<&'a str>,
    /// Attributes, structured values decoded.
    pub attributes: Vec<(String, Value<'static>)>,
    /// The input line it was read from.
    pub line: u64,
}

/// A log record as a span: named after its `event.name` attribute (or `eventName`), ending at
/// its time (else its observed time, else its `event.timestamp` attribute) and starting
/// `duration_ms` earlier. Codex's `codex.tool_result` records are tool calls
/// ([`crate::spans::Convention::Codex`]).
///
/// ```
/// use loopguard_adapters::otlp::{log_record_span, LogRecord};
/// use loopguard_core::Value;
/// let span = log_record_span(LogRecord {
///     time_ns: 2_000_000_000,
///     attributes: vec![
///         ("event.name".into(), Value::from("codex.tool_result")),
///         ("duration_ms".into(), Value::from("500")),
///     ],
///     ..LogRecord::default()
/// });
/// assert_eq!((span.name.as_str(), span.start_ns, span.end_ns), ("codex.tool_result", 1_500_000_000, 2_000_000_000));
/// ```
pub fn log_record_span(r: LogRecord<'_>) -> Span {
    let mut out = Span {
        trace_id: r.trace_id,
        span_id: r.span_id,
        line: r.line,
        service: r.service,
        name: log_name(&r.attributes, r.event_name, r.body),
        attributes: r.attributes,
        ..Span::default()
    };
    let end = match (r.time_ns, r.observed_ns) {
        (0, 0) => time_ns(out.attr("event.timestamp")),
        (0, t) | (t, _) => t,
    };
    let duration_ns = out
        .attr("duration_ms")
        .and_then(|d| match d {
            Value::Number(n) => Some(*n),
            Value::String(s) => s.to_string_lossy().trim().parse::<f64>().ok(),
            _ => None,
        })
        .filter(|d| d.is_finite() && *d >= 0.0)
        .map_or(0, |d| (d * 1_000_000.0) as u64);
    out.end_ns = end;
    out.start_ns = end.saturating_sub(duration_ns);
    out
}

/// Reads one span (OTLP or flat) into `set`.
fn span(s: &Value<'_>, line: u64, service: Option<&str>, set: &mut SpanSet) {
    if !matches!(s, Value::Object(_)) {
        set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::BadField,
            "a span that is not an object: skipped",
        ));
        return;
    }
    let name = s
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ctx = s.get("context");
    let get = |a: &str, b: &str| field(s, a, b).or_else(|| ctx.and_then(|c| field(c, a, b)));
    let mut out = Span {
        name,
        line,
        service: service.map(str::to_string),
        ..Span::default()
    };
    let what = |out: &Span| format!("span '{}' at line {line}", out.name);
    match get("traceId", "trace_id") {
        Some(v) => {
            out.trace_id = decode_id(v, 16, "traceId", &what(&out), line, &mut set.diagnostics)
        }
        None => set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::Partial,
            format!(
                "{}: no `traceId`; its calls go to session 'no-trace-id'",
                what(&out)
            ),
        )),
    }
    if let Some(v) = get("spanId", "span_id") {
        out.span_id = decode_id(v, 8, "spanId", &what(&out), line, &mut set.diagnostics);
    }
    if let Some(v) = field(s, "parentSpanId", "parent_span_id").or_else(|| s.get("parent_id")) {
        let id = match v {
            // The console exporter writes the parent's id; Phoenix a string or null.
            Value::Null => String::new(),
            v => decode_id(
                v,
                8,
                "parentSpanId",
                &what(&out),
                line,
                &mut set.diagnostics,
            ),
        };
        out.parent_id = (!id.is_empty()).then_some(id);
    }
    out.start_ns =
        time_ns(get("startTimeUnixNano", "start_time_unix_nano").or_else(|| s.get("start_time")));
    out.end_ns =
        time_ns(get("endTimeUnixNano", "end_time_unix_nano").or_else(|| s.get("end_time")));
    if out.start_ns == 0 {
        set.diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::Partial,
            format!(
                "{}: no readable start time; ordered by its place in the input",
                what(&out)
            ),
        ));
    }
    out.status_error = status_error(s);
    if let Some(a) = s.get("attributes") {
        out.attributes = attributes(a, line, &mut set.diagnostics);
    }
    // Flat dumps carry the resource on every span.
    if out.service.is_none() {
        if let Some(Value::Object(r)) = s.get("resource") {
            let attrs = r
                .get("attributes")
                .unwrap_or(s.get("resource").unwrap_or(&Value::Null));
            let attrs = attributes(attrs, line, &mut set.diagnostics);
            out.service = attrs
                .into_iter()
                .find(|(k, _)| k == "service.name")
                .and_then(|(_, v)| v.as_str().map(str::to_string));
        }
    }
    // Phoenix writes the span kind outside the attributes.
    if out.attr("openinference.span.kind").is_none() {
        if let Some(kind) = s.get("span_kind").and_then(Value::as_str) {
            out.attributes.push((
                "openinference.span.kind".into(),
                Value::from(kind.to_string()),
            ));
        }
    }
    set.spans.push(out);
}

/// `Some(message)` when the span's status is ERROR.
fn status_error(s: &Value<'_>) -> Option<String> {
    let status = s.get("status");
    let code = status
        .and_then(|st| st.get("code").or_else(|| st.get("status_code")))
        .or_else(|| s.get("status_code"));
    let is_error = match code {
        Some(Value::Number(n)) => *n == 2.0,
        Some(Value::String(c)) => {
            let c = c.to_string_lossy();
            c == "2" || c.eq_ignore_ascii_case("error") || c == "STATUS_CODE_ERROR"
        }
        _ => false,
    };
    is_error.then(|| {
        status
            .and_then(|st| st.get("message").or_else(|| st.get("description")))
            .or_else(|| s.get("status_message"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    })
}

/// A time in nanoseconds: a number or a numeric string of nanoseconds, or an RFC 3339
/// string.
fn time_ns(v: Option<&Value<'_>>) -> u64 {
    match v {
        Some(Value::Number(n)) if n.is_finite() && *n > 0.0 => *n as u64,
        Some(Value::String(s)) => {
            let s = s.to_string_lossy();
            s.trim()
                .parse::<u64>()
                .ok()
                .or_else(|| precise_rfc3339_ns(&s))
                .unwrap_or(0)
        }
        _ => 0,
    }
}

fn precise_rfc3339_ns(s: &str) -> Option<u64> {
    use time::format_description::well_known::Rfc3339;
    let t = s.trim();
    let parsed = time::OffsetDateTime::parse(t, &Rfc3339)
        .ok()
        .or_else(|| time::OffsetDateTime::parse(&t.replacen(' ', "T", 1), &Rfc3339).ok());
    match parsed {
        Some(p) => u64::try_from(p.unix_timestamp_nanos()).ok(),
        // Phoenix writes times without an offset: UTC.
        None => parse_rfc3339(&format!("{t}Z")).map(|ms| ms * 1_000_000),
    }
}

/// An id as lowercase hex: hex (optionally `0x`-prefixed) of the right length, or base64
/// of the right number of bytes. Anything else is kept as written, with a note.
fn decode_id(
    v: &Value<'_>,
    bytes: usize,
    what: &str,
    span: &str,
    line: u64,
    diagnostics: &mut Vec<Diagnostic>,
) -> String {
    let text = match v {
        Value::String(s) => s.to_string_lossy().into_owned(),
        Value::Number(n) if n.is_finite() => format!("{n}"),
        _ => {
            diagnostics.push(Diagnostic::new(
                line,
                DiagnosticKind::Partial,
                format!("{span}: `{what}` is not a string; ignored"),
            ));
            return String::new();
        }
    };
    if let Some(hex) = decode_id_text(&text, bytes) {
        return hex;
    }
    if !text.is_empty() {
        diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::Partial,
            format!(
                "{span}: `{what}` \"{text}\" is neither {} hex digits nor base64 of {bytes} bytes; used as written",
                bytes * 2
            ),
        ));
    }
    text
}

/// `text` as lowercase hex when it is hex (optionally `0x`-prefixed) of `bytes` bytes, or
/// base64 of `bytes` bytes.
///
/// ```
/// use loopguard_adapters::otlp::decode_id_text;
/// assert_eq!(decode_id_text("EEE19B7EC3C1B174", 8).as_deref(), Some("eee19b7ec3c1b174"));
/// assert_eq!(decode_id_text("7uGbfsPBsXQ=", 8).as_deref(), Some("eee19b7ec3c1b174"));
/// assert_eq!(decode_id_text("0xeee19b7ec3c1b174", 8).as_deref(), Some("eee19b7ec3c1b174"));
/// assert_eq!(decode_id_text("nope", 8), None);
/// ```
pub fn decode_id_text(text: &str, bytes: usize) -> Option<String> {
    let t = text.trim();
    let hex = t.strip_prefix("0x").unwrap_or(t);
    if hex.len() == bytes * 2 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(hex.to_ascii_lowercase());
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(t)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(t))
        .ok()?;
    (decoded.len() == bytes).then(|| decoded.iter().map(|b| format!("{b:02x}")).collect())
}

/// Attributes: an OTLP `KeyValue` list (`[{key, value:{stringValue:…}}]`) or a plain
/// object (flat dumps; nested objects become dotted keys, as Phoenix nests them).
fn attributes(
    a: &Value<'_>,
    line: u64,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(String, Value<'static>)> {
    let mut out = Vec::new();
    match a {
        Value::Array(items) => {
            for kv in items {
                let Some(key) = kv.get("key").and_then(Value::as_str) else {
                    diagnostics.push(Diagnostic::new(
                        line,
                        DiagnosticKind::BadField,
                        "an attribute without a string `key` (left out; the rest of the span was read)",
                    ));
                    continue;
                };
                let value = kv.get("value").map_or(Value::Null, any_value);
                out.push((key.to_string(), value));
            }
        }
        Value::Object(o) => flatten("", o, &mut out),
        Value::Null => {}
        _ => diagnostics.push(Diagnostic::new(
            line,
            DiagnosticKind::BadField,
            "`attributes` is neither a list nor an object: skipped",
        )),
    }
    out
}

fn flatten(prefix: &str, o: &Object<'_>, out: &mut Vec<(String, Value<'static>)>) {
    for (k, v) in o.iter() {
        let key = if prefix.is_empty() {
            k.to_string_lossy().into_owned()
        } else {
            format!("{prefix}.{}", k.to_string_lossy())
        };
        match v {
            Value::Object(inner) if !inner.is_empty() => flatten(&key, inner, out),
            _ => out.push((key, v.clone().into_owned())),
        }
    }
}

/// An OTLP `AnyValue` as a plain value: `kvlistValue` → object, `arrayValue` → array,
/// `intValue` (string or number) → number, `bytesValue` → its base64 text.
pub fn any_value(v: &Value<'_>) -> Value<'static> {
    let Value::Object(_) = v else {
        // Not wrapped: already a plain value.
        return v.clone().into_owned();
    };
    if let Some(s) = field(v, "stringValue", "string_value") {
        return s.clone().into_owned();
    }
    if let Some(b) = field(v, "boolValue", "bool_value") {
        return match b {
            Value::String(s) => Value::Bool(s.to_string_lossy() == "true"),
            other => other.clone().into_owned(),
        };
    }
    for (a, b) in [("intValue", "int_value"), ("doubleValue", "double_value")] {
        if let Some(n) = field(v, a, b) {
            return match n {
                Value::String(s) => {
                    let s = s.to_string_lossy();
                    s.parse::<f64>()
                        .map(Value::Number)
                        .unwrap_or_else(|_| Value::from(s.into_owned()))
                }
                other => other.clone().into_owned(),
            };
        }
    }
    if let Some(arr) = field(v, "arrayValue", "array_value") {
        return Value::Array(
            arr.get("values")
                .and_then(Value::as_array)
                .unwrap_or(&[])
                .iter()
                .map(any_value)
                .collect(),
        );
    }
    if let Some(kv) = field(v, "kvlistValue", "kvlist_value") {
        let entries = kv
            .get("values")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(|e| {
                let k = e.get("key")?.as_str()?;
                Some((
                    JsString::from(k.to_string()),
                    e.get("value").map_or(Value::Null, any_value),
                ))
            })
            .collect();
        return Value::Object(Object::from_entries(entries));
    }
    if let Some(b) = field(v, "bytesValue", "bytes_value") {
        return b.clone().into_owned();
    }
    if v.as_object().is_some_and(Object::is_empty) {
        return Value::Null;
    }
    v.clone().into_owned()
}
