//! What every adapter needs: building events, pairing results with calls, reading
//! timestamps, and parsing the JSON-in-a-string arguments some APIs use.

use std::collections::VecDeque;

use loopguard_core::{json5::parse as parse_json5, json5::NodeValue as Json5Value};
use loopguard_core::{JsString, Object, Value};
use loopguard_events::{Event, EventKind, Payload};

use crate::{Context, Diagnostic, DiagnosticKind, SourcedEvent};

/// Builds the events of one session.
///
/// ```
/// use loopguard_adapters::{common::Builder, Context};
/// use loopguard_core::Value;
/// let b = Builder::new(&Context { session: "s1".into(), agent: Some("main".into()) });
/// let e = b.call(3, Some("run-1"), Some("call_1"), "read", Value::from("x"), 1_700_000_000_000, Some(40));
/// assert_eq!(e.line, 3);
/// assert_eq!(e.event.tool.as_ref().unwrap().as_str(), Some("read"));
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    session: JsString<'static>,
    agent: Option<JsString<'static>>,
}

fn name(s: &str) -> JsString<'static> {
    JsString::from(s.to_string())
}

impl Builder {
    /// A builder for the session and agent of `ctx`.
    pub fn new(ctx: &Context) -> Self {
        Builder {
            session: name(&ctx.session),
            agent: ctx.agent.as_deref().map(name),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn event(
        &self,
        kind: EventKind,
        run: Option<&str>,
        call_id: Option<&str>,
        tool: Option<&str>,
        args: Value<'static>,
        payload: Option<Payload<'static>>,
        ts_ms: u64,
    ) -> Event<'static> {
        Event {
            kind,
            session: Some(self.session.clone()),
            parent_session: None,
            run: run.map(name),
            agent: self.agent.clone(),
            call_id: call_id.map(name),
            tool: tool.map(name),
            args,
            payload,
            timestamp_ms: ts_ms,
            usage: None,
        }
    }

    /// A `call` event.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &self,
        line: u64,
        run: Option<&str>,
        call_id: Option<&str>,
        tool: &str,
        args: Value<'static>,
        ts_ms: u64,
        tokens: Option<u64>,
    ) -> SourcedEvent {
        SourcedEvent {
            event: self.event(EventKind::Call, run, call_id, Some(tool), args, None, ts_ms),
            line,
            tokens,
            profile: None,
        }
    }

    /// An `outcome` event.
    #[allow(clippy::too_many_arguments)]
    pub fn outcome(
        &self,
        line: u64,
        run: Option<&str>,
        call_id: Option<&str>,
        tool: &str,
        args: Value<'static>,
        payload: Payload<'static>,
        ts_ms: u64,
    ) -> SourcedEvent {
        SourcedEvent {
            event: self.event(
                EventKind::Outcome,
                run,
                call_id,
                Some(tool),
                args,
                Some(payload),
                ts_ms,
            ),
            line,
            tokens: None,
            profile: None,
        }
    }

    /// A `compaction` event.
    pub fn compaction(&self, line: u64, run: Option<&str>, ts_ms: u64) -> SourcedEvent {
        SourcedEvent {
            // `{}` like a parsed compaction line, so events read back identically.
            event: self.event(
                EventKind::Compaction,
                run,
                None,
                None,
                Value::Object(Object::default()),
                None,
                ts_ms,
            ),
            line,
            tokens: None,
            profile: None,
        }
    }
}

/// Calls waiting for their results, paired by position and call id.
///
/// Ids repeat across runs (Kimi through llama.cpp numbers calls `functions.read:3` afresh
/// each run), so a result takes the *oldest* waiting call with its id; a result without an
/// id takes the oldest waiting call. At most `limit` calls wait; older ones are dropped
/// and returned so the adapter can report them.
///
/// ```
/// use loopguard_adapters::common::Pending;
/// let mut p = Pending::new(100);
/// p.push(Some("a".into()), 1);
/// p.push(Some("a".into()), 2);
/// p.push(None, 3);
/// assert_eq!(p.take(Some("a")), Some(1));
/// assert_eq!(p.take(None), Some(2));
/// assert_eq!(p.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Pending<T> {
    queue: VecDeque<(Option<String>, T)>,
    limit: usize,
}

impl<T> Pending<T> {
    /// An empty queue holding at most `limit` calls.
    pub fn new(limit: usize) -> Self {
        Pending {
            queue: VecDeque::new(),
            limit: limit.max(1),
        }
    }

    /// Adds a call; returns the oldest call if the queue was full.
    pub fn push(&mut self, id: Option<String>, call: T) -> Option<T> {
        let dropped = if self.queue.len() >= self.limit {
            self.queue.pop_front().map(|(_, c)| c)
        } else {
            None
        };
        self.queue.push_back((id.filter(|i| !i.is_empty()), call));
        dropped
    }

    /// Takes the call a result with `id` belongs to.
    pub fn take(&mut self, id: Option<&str>) -> Option<T> {
        let index = match id.filter(|i| !i.is_empty()) {
            Some(id) => self
                .queue
                .iter()
                .position(|(i, _)| i.as_deref() == Some(id))?,
            None => 0,
        };
        self.queue.remove(index).map(|(_, c)| c)
    }

    /// Calls still waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// `true` when no call waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Removes and returns every waiting call, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.queue.drain(..).map(|(_, c)| c)
    }

    /// Removes and returns every waiting call with its id, oldest first.
    pub fn drain_keyed(&mut self) -> impl Iterator<Item = (Option<String>, T)> + '_ {
        self.queue.drain(..)
    }
}

/// A timestamp in milliseconds since the epoch from a JSON value: a number (milliseconds,
/// or seconds when it is below 10^11) or an RFC 3339 / ISO 8601 string.
///
/// ```
/// use loopguard_adapters::common::timestamp_ms;
/// use loopguard_core::Value;
/// assert_eq!(timestamp_ms(&Value::from("2026-09-05T15:26:58.101Z")), Some(1788622018101));
/// assert_eq!(timestamp_ms(&Value::from(1788622018101.0)), Some(1788622018101));
/// assert_eq!(timestamp_ms(&Value::from(1788622018.5)), Some(1788622018500));
/// assert_eq!(timestamp_ms(&Value::from("yesterday")), None);
/// ```
pub fn timestamp_ms(v: &Value<'_>) -> Option<u64> {
    match v {
        Value::Number(n) if n.is_finite() && *n > 0.0 => {
            let ms = if *n < 1e11 { n * 1000.0 } else { *n };
            Some(ms.round() as u64)
        }
        Value::String(s) => parse_rfc3339(&s.to_string_lossy()),
        _ => None,
    }
}

/// Parses an RFC 3339 timestamp (`2026-09-05T15:26:58.101Z`, `…+02:00`, space separator
/// accepted) to milliseconds since the epoch.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    use time::format_description::well_known::Rfc3339;
    let s = s.trim();
    let parsed = time::OffsetDateTime::parse(s, &Rfc3339).ok().or_else(|| {
        // Accept a space instead of `T`, as some exporters write.
        let fixed = s.replacen(' ', "T", 1);
        time::OffsetDateTime::parse(&fixed, &Rfc3339).ok()
    })?;
    let ms = parsed.unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).ok()
}

/// Parses tool arguments given as a JSON string (OpenAI's `arguments`), leniently.
///
/// Valid JSON is parsed exactly as OpenClaw would. Otherwise JSON5 is tried (models write
/// single quotes and trailing commas), then the text inside a Markdown code fence. When
/// nothing works the raw string itself is the argument value, so identical malformed
/// arguments still hash identically.
///
/// ```
/// use loopguard_adapters::common::parse_arguments;
/// use loopguard_core::Value;
/// assert_eq!(parse_arguments(r#"{"a":1}"#), Value::parse(br#"{"a":1}"#).unwrap());
/// assert_eq!(parse_arguments("{'a': 1,}"), Value::parse(br#"{"a":1}"#).unwrap());
/// assert_eq!(parse_arguments("not json"), Value::from("not json".to_string()));
/// assert_eq!(parse_arguments(""), Value::parse(b"{}").unwrap());
/// ```
pub fn parse_arguments(text: &str) -> Value<'static> {
    let t = text.trim();
    if t.is_empty() {
        return Value::Object(Object::default());
    }
    if let Ok(v) = loopguard_core::json::parse(t.as_bytes()) {
        return v.into_owned();
    }
    if let Ok(node) = parse_json5(t) {
        return node_to_value(&node.value);
    }
    if let Some(inner) = strip_code_fence(t) {
        if let Ok(v) = loopguard_core::json::parse(inner.as_bytes()) {
            return v.into_owned();
        }
    }
    Value::from(text.to_string())
}

fn strip_code_fence(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("```")?;
    let rest = rest.split_once('\n').map_or(rest, |(_, r)| r);
    Some(rest.trim_end().strip_suffix("```")?.trim())
}

/// Converts a JSON5 node (from [`parse_json5`]) to a [`Value`].
pub fn node_to_value(n: &Json5Value) -> Value<'static> {
    match n {
        Json5Value::Null => Value::Null,
        Json5Value::Bool(b) => Value::Bool(*b),
        Json5Value::Number(x) => Value::Number(*x),
        Json5Value::String(s) => Value::from(s.clone()),
        Json5Value::Array(items) => {
            Value::Array(items.iter().map(|i| node_to_value(&i.value)).collect())
        }
        Json5Value::Object(entries) => Value::Object(Object::from_entries(
            entries
                .iter()
                .map(|e| (JsString::from(e.key.clone()), node_to_value(&e.value.value)))
                .collect(),
        )),
    }
}

/// A tool result in OpenClaw's shape, `{"content":[{"type":"text","text":…}]}`, from text.
///
/// Results of other agents are text; putting them in this shape makes the default
/// outcome hash (`{details, text}`) apply to them as it does to OpenClaw's own tools.
pub fn text_result(text: &str) -> Value<'static> {
    let block = Value::Object(Object::from_entries(vec![
        ("type".into(), Value::from("text")),
        ("text".into(), Value::from(text.to_string())),
    ]));
    Value::Object(Object::from_entries(vec![(
        "content".into(),
        Value::Array(vec![block]),
    )]))
}

/// The text of a content value: a string, or the `text` of `{type:"text"}` blocks joined
/// by newlines.
pub fn content_text(v: &Value<'_>) -> String {
    match v {
        Value::String(s) => s.to_string_lossy().into_owned(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| match (b.get("type"), b.get("text")) {
                (Some(Value::String(_)), Some(Value::String(t))) => {
                    Some(t.to_string_lossy().into_owned())
                }
                _ => b.as_str().map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A string field of an object, when it is a string.
pub fn str_field<'v>(v: &'v Value<'_>, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// Parses one JSONL line into a value, or a `NotJson` diagnostic. (The driver turns it
/// into `Truncated` when it is the file's last line and has no newline.)
pub fn parse_line(no: u64, text: &[u8]) -> Result<Value<'_>, crate::Diagnostic> {
    loopguard_core::json::parse(text).map_err(|e| {
        crate::Diagnostic::new(
            no,
            crate::DiagnosticKind::NotJson,
            format!("not JSON: {} at byte {}", e.kind, e.offset + 1),
        )
    })
}

/// One line of a JSONL log read as a JSON object: `Ok(None)` for a blank line, an error
/// naming the line for anything that is not JSON or not an object. `what` names such a line
/// in the error (`"a Claude Code line"` gives "a Claude Code line must be a JSON object").
pub(crate) fn object_line<'t>(
    no: u64,
    text: &'t [u8],
    what: &str,
) -> Result<Option<Value<'t>>, crate::Diagnostic> {
    if text.trim_ascii().is_empty() {
        return Ok(None);
    }
    let v = parse_line(no, text)?;
    if v.as_object().is_none() {
        return Err(crate::Diagnostic::new(
            no,
            crate::DiagnosticKind::BadField,
            format!("{what} must be a JSON object"),
        ));
    }
    Ok(Some(v))
}

/// A log line's `type`, or an `UnknownEntry` diagnostic naming the line (`what`: "a line"
/// gives "a line without a `type`; skipped").
pub(crate) fn line_type<'v>(
    no: u64,
    v: &'v Value<'_>,
    what: &str,
) -> Result<&'v str, crate::Diagnostic> {
    str_field(v, "type").ok_or_else(|| {
        crate::Diagnostic::new(
            no,
            crate::DiagnosticKind::UnknownEntry,
            format!("{what} without a `type`; skipped"),
        )
    })
}

pub(crate) use crate::pairing::{PendingCall, Tracker};

/// The tokens of a Messages API `usage` object (Anthropic, Claude Code), when it has any
/// count (saturating at `u64::MAX`).
pub(crate) fn usage_tokens(usage: &Value<'_>) -> Option<u64> {
    let mut total: Option<u64> = None;
    for key in [
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ] {
        if let Some(n) = usage.get(key).and_then(Value::as_f64) {
            if n.is_finite() && n >= 0.0 {
                // `as` saturates, and so does the sum: a corrupt count must not panic.
                total = Some(total.unwrap_or(0).saturating_add(n as u64));
            }
        }
    }
    total
}

/// The `role` of message `m` on line `no`, or the diagnostic saying it has none.
pub(crate) fn role_field<'v>(no: u64, m: &'v Value<'_>) -> Result<&'v str, crate::Diagnostic> {
    str_field(m, "role").ok_or_else(|| {
        crate::Diagnostic::new(
            no,
            crate::DiagnosticKind::BadField,
            "field `role`: missing or not a string",
        )
    })
}

/// The name and input (`{}` when absent or null) of Messages API `tool_use` block `block`,
/// at `{path}[{i}]` on line `no`; a block without a name is reported to `tracker` instead.
pub(crate) fn tool_use_parts<'b>(
    tracker: &mut Tracker,
    no: u64,
    path: &str,
    i: usize,
    block: &'b Value<'_>,
) -> Option<(&'b str, Value<'static>)> {
    let Some(name) = str_field(block, "name") else {
        tracker.diagnose(
            no,
            crate::DiagnosticKind::BadField,
            format!("{path}[{i}]: tool_use without a `name`"),
        );
        return None;
    };
    let args = match block.get("input") {
        None | Some(Value::Null) => empty(),
        Some(input) => input.clone().into_owned(),
    };
    Some((name, args))
}

/// Reads the items of a document, numbered from 1 as their lines, with `step`: an item
/// that fails is reported in `adapted` and the next one is read.
pub(crate) fn each_numbered<T>(
    items: impl IntoIterator<Item = T>,
    adapted: &mut crate::Adapted,
    mut step: impl FnMut(u64, T, &mut Vec<SourcedEvent>) -> Result<(), crate::Diagnostic>,
) {
    for (i, item) in items.into_iter().enumerate() {
        if let Err(d) = step(i as u64 + 1, item, &mut adapted.events) {
            adapted.diagnostics.push(d);
        }
    }
}

/// A JSON Lines adapter over one per-session state: `$ty` holds it in `$field` (built by
/// `$state::new(&ctx)`), each parsed line goes to `$field.$method(no, &value, out)`, and
/// the state's `tracker` settles the end.
macro_rules! json_lines_adapter {
    ($ty:ident, $field:ident: $state:ident, $method:ident) => {
        impl $ty {
            /// An adapter for the session and agent of `ctx`.
            pub fn new(ctx: $crate::Context) -> Self {
                $ty {
                    $field: $state::new(&ctx),
                }
            }
        }

        impl $crate::LineAdapter for $ty {
            fn line(
                &mut self,
                no: u64,
                text: &[u8],
                out: &mut Vec<$crate::SourcedEvent>,
            ) -> Result<(), $crate::Diagnostic> {
                let v = $crate::common::parse_line(no, text)?;
                self.$field.$method(no, &v, out)
            }

            fn finish(&mut self, out: &mut Vec<$crate::SourcedEvent>) -> Vec<$crate::Diagnostic> {
                self.$field.tracker.finish(out)
            }
        }
    };
}
pub(crate) use json_lines_adapter;

/// Run ids `<prefix>-1`, `<prefix>-2`, …: a boundary starts a new run only when the current
/// one made calls.
#[derive(Clone, Debug)]
pub(crate) struct Runs {
    prefix: &'static str,
    no: u64,
    dirty: bool,
}

impl Runs {
    pub(crate) fn new(prefix: &'static str) -> Self {
        Runs {
            prefix,
            no: 1,
            dirty: false,
        }
    }

    /// The current run id.
    pub(crate) fn current(&self) -> String {
        format!("{}-{}", self.prefix, self.no)
    }

    /// A run boundary (a user prompt).
    pub(crate) fn boundary(&mut self) {
        if self.dirty {
            self.no += 1;
            self.dirty = false;
        }
    }

    /// The current run made a call.
    pub(crate) fn used(&mut self) {
        self.dirty = true;
    }
}

/// A `NotJson` diagnostic for a whole document, naming the text line of the error.
pub(crate) fn document_error(doc: &[u8], e: &loopguard_core::json::ParseError) -> Diagnostic {
    let end = e.offset.min(doc.len());
    let line = 1 + doc[..end].iter().filter(|b| **b == b'\n').count() as u64;
    Diagnostic::new(
        line,
        DiagnosticKind::NotJson,
        format!("not JSON: {} at byte {}", e.kind, e.offset + 1),
    )
}

/// An empty `{}`.
pub(crate) fn empty() -> Value<'static> {
    Value::Object(Object::default())
}

/// Tool arguments: a JSON string parsed leniently, an absent or `null` value as `{}`,
/// anything else as it is.
pub(crate) fn arguments(v: Option<&Value<'_>>) -> Value<'static> {
    match v {
        None | Some(Value::Null) => empty(),
        Some(Value::String(s)) => parse_arguments(&s.to_string_lossy()),
        Some(other) => other.clone().into_owned(),
    }
}

/// A timestamp field, 0 when absent or unreadable.
pub(crate) fn ts_of(v: &Value<'_>, key: &str) -> u64 {
    v.get(key).and_then(timestamp_ms).unwrap_or(0)
}

/// A string field that is present and not empty.
pub(crate) fn id_field(v: &Value<'_>, key: &str) -> Option<String> {
    str_field(v, key)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Writes `v` as JSON.
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value<'_>) {
    loopguard_core::json::write_json_value(out, v);
}

/// The detection message of a call loopguard itself refused, when `text` is the refusal an
/// agent recorded for it: the first line holds `CRITICAL: …` or `loopguard stopped the
/// agent (…` after at most a short label of the agent's own ending with `: ` (`Tool
/// execution blocked: `, `Denied by preToolUse hook: `, `Error: `, `Command blocked by
/// PreToolUse hook: `), and is one of the engine's critical messages (it says the call is
/// blocked, or the run ended). The message runs to the end of that line (Codex appends the
/// command after `. Command:`). A tool's own output is not a refusal, even when it starts
/// with `CRITICAL:`.
///
/// ```
/// use loopguard_adapters::common::loopguard_refusal;
/// let m = "CRITICAL: Called x with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.";
/// let t = format!("Tool execution blocked: {m}");
/// assert_eq!(loopguard_refusal(&t).as_deref(), Some(m));
/// assert_eq!(loopguard_refusal("FAIL\nCRITICAL: disk full"), None);
/// assert_eq!(loopguard_refusal("the log says CRITICAL: disk full"), None);
/// // A tool's own output that starts `CRITICAL:` is not one of loopguard's messages.
/// assert_eq!(loopguard_refusal("CRITICAL: disk full on /dev/sda1"), None);
/// ```
pub fn loopguard_refusal(text: &str) -> Option<String> {
    let first = text.trim_start().lines().next()?;
    let at = ["CRITICAL: ", "loopguard stopped the agent ("]
        .iter()
        .filter_map(|m| first.find(m))
        .min()?;
    let label = &first[..at];
    if !(label.is_empty() || (label.len() <= 60 && label.ends_with(": "))) {
        return None;
    }
    // A label is words and spaces (`Denied by preToolUse hook: `), not a sentence.
    if !label
        .trim_end_matches(": ")
        .chars()
        .all(|c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '_')
    {
        return None;
    }
    let message = first[at..].trim_end();
    // One of the engine's critical messages (docs/detectors.md): each says the call is
    // blocked or the run ended, in these words.
    const ENDS: [&str; 5] = [
        "Session execution blocked",
        "the call is blocked.",
        "This call is blocked.",
        "Aborting to prevent runaway resource use.",
        "Stop retrying that missing tool",
    ];
    const RUN_ENDED: [&str; 3] = [
        "CRITICAL: A second critical loop in this run (",
        "CRITICAL: This run was ended after a second critical loop",
        "loopguard stopped the agent (",
    ];
    let ours = ENDS.iter().any(|e| message.contains(e))
        || RUN_ENDED.iter().any(|p| message.starts_with(p));
    ours.then(|| message.to_string())
}

/// The outcome of a call loopguard refused, as OpenClaw records its own veto (a result
/// that has no hash and changes nothing: see docs/events.md "Enforce and observe"), when
/// `text` is that refusal ([`loopguard_refusal`]).
pub(crate) fn refusal_payload(text: &str) -> Option<Payload<'static>> {
    loopguard_refusal(text)
        .map(|m| Payload::Result(loopguard_core::veto_result(&JsString::from(m))))
}

/// `text` without the notes loopguard's hooks add to a tool's result for the model (a
/// line starting `loopguard: `, or Gemini CLI's `<hook_context>loopguard: …`, and what
/// follows it): the tool's own output, as the hook saw it before adding them.
///
/// ```
/// use loopguard_adapters::common::without_loopguard_notes;
/// assert_eq!(without_loopguard_notes("FAIL\n\nloopguard: WARNING: x"), "FAIL");
/// assert_eq!(without_loopguard_notes("ok\n\n<hook_context>loopguard: WARNING: x</hook_context>"), "ok");
/// assert_eq!(without_loopguard_notes("ok"), "ok");
/// ```
pub fn without_loopguard_notes(text: &str) -> &str {
    let mut at = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("loopguard: ") || t.starts_with("<hook_context>loopguard: ") {
            at = Some(offset);
            break;
        }
        offset += line.len();
    }
    match at {
        Some(i) => text[..i].trim_end(),
        None => text,
    }
}
